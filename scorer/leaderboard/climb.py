"""The Ladder on a board (`[board] ladder = "parameter-free"`): each team's public scores as
shown before the reveal, in the order their verdicts came, and the submission on top."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from scorer.competition import Split
from scorer.leaderboard.ladder import ladder
from scorer.leaderboard.store import PerUser, Record


def order(record: Record) -> tuple[str, str, int]:
    """The order a team learns its public scores in: by verdict, then submission."""
    return (record.scored_at or "", record.submitted_at.isoformat(), record.id)


def laddered(store: PerUser, by_team: dict[str, list[Record]]) -> dict[int, float]:
    """Each scored submission's public score as the Ladder shows it: team by team, over its
    submissions in the order their verdicts came (`order`; a verdict never changes what
    was shown before it), from their public per-user scores."""
    shown: dict[int, float] = {}
    for rows in by_team.values():
        ordered = sorted(rows, key=order)
        arrays = store.per_user([r.id for r in ordered], Split.PUBLIC)
        if not all(r.id in arrays for r in ordered):
            continue  # per-user scores gone (an old database): nothing shown of the team
        shown |= dict(
            zip((r.id for r in ordered), ladder([arrays[r.id] for r in ordered]), strict=True)
        )
    return shown


def on_top(rows: Sequence[Record], shown: dict[int, float]) -> Record:
    """The submission a team's public board row shows under the Ladder: the first to reach
    its highest shown score, with that score as its public one."""
    ranked = sorted((r for r in rows if r.id in shown), key=order)
    best = max(shown[r.id] for r in ranked)
    top = next(r for r in ranked if shown[r.id] == best)
    return replace(top, public=best)
