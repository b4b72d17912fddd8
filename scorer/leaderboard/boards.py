"""The public and private boards: which submission counts for a team, ranks, ties, shake-up."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from scorer.board import BoardRules, Ladder
from scorer.competition import LOST_ITEMS, Competition, Split
from scorer.leaderboard.climb import laddered, on_top
from scorer.leaderboard.confidence import LEVEL, RESAMPLES, SEED, TEST, analyse
from scorer.leaderboard.manifest import MAX_SELECTED
from scorer.leaderboard.outlook import Forecasted, foretold
from scorer.leaderboard.schema import Phase, Status
from scorer.leaderboard.stale import Stale, iso, staleness
from scorer.leaderboard.store import Record, Run, Store


class Pick(StrEnum):
    """Why a submission counts on the private board."""

    SELECTED = "selected"  # the team selected it (at most MAX_SELECTED)
    BEST_PUBLIC = "best public"  # nothing selected: the team's best public submissions


@dataclass(frozen=True)
class Row:
    """One team on one board. `p_next`/`p_adjusted`: the test against the next team below,
    as computed and corrected for the board's number of tests (None on the last row);
    `tier`: 1 at the top, one more below each gap that is beyond noise and the board's
    `tie_margin` (`confidence.tiers`). `public_rank`, `shake` (public rank - private rank:
    positive is a climb) and `pick` are set on the private board only."""

    rank: int
    team: str
    score: float
    low: float | None
    high: float | None
    p_next: float | None
    p_adjusted: float | None
    tier: int
    submission: str
    submitted_at: datetime
    entries: int
    public_rank: int | None = None
    shake: int | None = None
    pick: Pick | None = None

    def to_dict(self, *, paths: bool = True) -> dict[str, Any]:
        """Without `paths` (a public output), the submission's path is left out."""
        data: dict[str, Any] = {
            "rank": self.rank,
            "team": self.team,
            "score": self.score,
            "low": self.low,
            "high": self.high,
            "p_next": self.p_next,
            "p_adjusted": self.p_adjusted,
            "tier": self.tier,
            "submission": self.submission,
            "submitted_at": iso(self.submitted_at),
            "entries": self.entries,
        }
        if not paths:
            del data["submission"]
        if self.public_rank is not None:
            data |= {"public_rank": self.public_rank, "shake": self.shake, "pick": str(self.pick)}
        return data


@dataclass(frozen=True)
class Board:
    name: Split
    rows: tuple[Row, ...]
    users: int
    #: The metric the board ranks by, as reports name it (`ndcg@20`).
    metric: str = LOST_ITEMS.label(LOST_ITEMS.metric)

    def to_dict(self, *, paths: bool = True) -> dict[str, Any]:
        return {"users": self.users, "rows": [row.to_dict(paths=paths) for row in self.rows]}


@dataclass(frozen=True)
class Unranked:
    """A team with no score on the boards: never ranked, listed with why. `unscored`: its
    submissions that were judged valid but hold no score for the board (no user of the split
    was scored: every one ignored, or empty under `exclude`)."""

    team: str
    rejected: int
    failed: int
    unscored: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = {"team": self.team, "rejected": self.rejected, "failed": self.failed}
        return data | ({"unscored": self.unscored} if self.unscored else {})


@dataclass(frozen=True)
class Boards:
    """Everything a leaderboard page shows. In the public phase `private` is None and no
    private figure was read to build the rest. `as_of`: when the run they come from finished
    (None before any run finished); `competition`: its name."""

    phase: Phase
    public: Board
    private: Board | None
    unranked: tuple[Unranked, ...]
    resamples: int
    seed: int
    competition: str = LOST_ITEMS.name
    rules: BoardRules = field(default_factory=BoardRules)
    forecast: Forecasted | None = None
    #: Before the reveal, under `ladder`: each scored submission's public score as shown.
    climbed: dict[int, float] | None = None
    as_of: datetime | None = None
    stale: Stale | None = None

    def to_dict(self) -> dict[str, Any]:
        paths = self.phase is Phase.FINAL  # a public output names no file
        data: dict[str, Any] = {
            "phase": str(self.phase),
            "competition": self.competition,
            "metric": self.public.metric,
            "as_of": iso(self.as_of) if self.as_of is not None else None,
            "stale": self.stale.to_dict() if self.stale is not None else None,
            "confidence": {
                "level": LEVEL,
                "method": "bootstrap over users, percentile interval",
                "resamples": self.resamples,
                "seed": self.seed,
                "test": TEST,
                "correction": str(self.rules.correction),
                "alpha": self.rules.alpha,
                "tie_margin": self.rules.tie_margin,
                "tiers": "a new tier below each gap between neighbours whose corrected "
                "p-value is under alpha and which is at least tie_margin",
            },
            "public": self.public.to_dict(paths=paths),
        }
        if self.private is not None:
            data["private"] = self.private.to_dict(paths=paths)
        data["unranked"] = [team.to_dict() for team in self.unranked]
        if self.forecast is not None:
            data["forecast"] = self.forecast.to_dict()
        return data


class Source(Protocol):
    """What the boards are built from: the leaderboard's own store (`Store`) gives it, and
    so does a server's store (`serve.boards.Verdicts`)."""

    def published(self) -> Run | None: ...

    def unfinished(self) -> Run | None: ...

    def records(self, *, private: bool = True) -> list[Record]: ...

    def per_user(self, idents: Iterable[int], split: Split) -> dict[int, np.ndarray]: ...

    def competition(self) -> Competition: ...


def load(
    db: Path,
    phase: Phase | str = Phase.PUBLIC,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    forecast: bool = False,
) -> Boards:
    """Build the boards of a database for a phase (with the forecast, `build`'s)."""
    with Store(db, create=False) as store:
        return build(store, Phase(phase), resamples=resamples, seed=seed, forecast=forecast)


def build(
    store: Source,
    phase: Phase,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    before: datetime | None = None,
    revealed: bool = False,
    forecast: bool = False,
) -> Boards:
    """The boards of the shown run; `before`: of the submissions made before it only (a
    frozen board). Public scores are shown as `[board]` says until the reveal (`revealed`: a
    server's public board after it). `forecast`: with the forecast of the private board
    (`outlook`), beside the ranks got once they are revealed."""
    shown = store.published()
    records = store.records(private=phase is Phase.FINAL)
    if before is not None:
        records = [r for r in records if r.submitted_at < before]
    scored = [r for r in records if r.status == Status.SCORED and r.public is not None]
    by_team: dict[str, list[Record]] = {}
    for record in scored:
        by_team.setdefault(record.team, []).append(record)
    climbed = None
    rules = store.competition().board
    if rules.ladder is Ladder.PARAMETER_FREE and phase is Phase.PUBLIC and not revealed:
        climbed = laddered(store, by_team)  # before the reveal: the Ladder's scores
        public_picks = [on_top(rows, climbed) for rows in by_team.values()]
    else:
        public_picks = [min(team, key=_public_key) for team in by_team.values()]
    public_picks.sort(key=lambda r: (-_score(r.public), r.submitted_at, r.team))
    counts = {team: len(rows) for team, rows in by_team.items()}
    public = _board(store, Split.PUBLIC, public_picks, counts, resamples, seed)
    private = None
    if phase is Phase.FINAL:
        public_rank = {row.team: row.rank for row in public.rows}
        counted = [_private_pick(rows) for rows in by_team.values()]
        picks = [(r, pick) for r, pick in counted if r.private is not None]
        picks.sort(key=lambda rp: (-_score(rp[0].private), rp[0].submitted_at, rp[0].team))
        board = _board(store, Split.PRIVATE, [r for r, _ in picks], counts, resamples, seed)
        rows = tuple(
            replace(
                row,
                public_rank=public_rank[row.team],
                shake=public_rank[row.team] - row.rank,
                pick=pick,
            )
            for row, (_, pick) in zip(board.rows, picks, strict=True)
        )
        private = Board(name=Split.PRIVATE, rows=rows, users=board.users, metric=board.metric)
    foreseen = None
    if forecast and public.rows:
        chosen = {team: candidates(rows)[0] for team, rows in by_team.items()}
        got = None if private is None else {row.team: row.rank for row in private.rows}
        order = [row.team for row in public.rows]
        foreseen = foretold(store, order, chosen, got, resamples=resamples, seed=seed)
    if phase is Phase.PUBLIC and not revealed:
        public = rounded(public, store.competition().board)
    return Boards(
        phase=phase,
        public=public,
        private=private,
        unranked=_unranked(records, set(by_team)),
        resamples=resamples,
        seed=seed,
        competition=store.competition().name,
        rules=store.competition().board,
        forecast=foreseen,
        climbed=climbed,
        as_of=shown.finished_at if shown is not None else None,
        stale=staleness(shown, store.unfinished()),
    )


def rounded(board: Board, rules: BoardRules) -> Board:
    """A public board as shown before the reveal: every score and interval end rounded to
    `public_digits` (the ranks, tests and tiers come from the exact scores)."""
    if rules.public_digits is None:
        return board
    rows = tuple(
        replace(
            row, score=rules.shown(row.score), low=rules.shown(row.low), high=rules.shown(row.high)
        )
        for row in board.rows
    )
    return replace(board, rows=rows)


def _score(value: float | None) -> float:
    return value if value is not None else float("-inf")


def _public_key(record: Record) -> tuple[float, datetime, str]:
    """Best public score first; between equal scores the earlier submission."""
    return (-_score(record.public), record.submitted_at, record.path)


def candidates(rows: Sequence[Record]) -> tuple[list[Record], Pick]:
    """The submissions that may count on a team's private board, and why: those it selected,
    or, when it selected none, its MAX_SELECTED best public ones. A selected submission that
    was rejected is not among `rows` (only scored ones are)."""
    chosen = [r for r in rows if r.selected]
    if chosen:
        return chosen, Pick.SELECTED
    return sorted(rows, key=_public_key)[:MAX_SELECTED], Pick.BEST_PUBLIC


def _private_pick(rows: Sequence[Record]) -> tuple[Record, Pick]:
    """The submission that counts on the private board: the better (private) candidate."""
    chosen, pick = candidates(rows)
    best = min(chosen, key=lambda r: (-_score(r.private), r.submitted_at, r.path))
    return best, pick


def _board(
    store: Source,
    name: Split,
    picks: Sequence[Record],
    counts: dict[str, int],
    resamples: int,
    seed: int,
) -> Board:
    """Rank the picked submissions (already in board order) and attach their intervals and the
    test of each against the next one; per-user scores are read for this board's split only."""
    low: list[float | None] = [None] * len(picks)
    high: list[float | None] = [None] * len(picks)
    p_next: list[float | None] = [None] * len(picks)
    p_adjusted: list[float | None] = [None] * len(picks)
    tier = [1] * len(picks)
    users = 0
    competition = store.competition()
    arrays = store.per_user((r.id for r in picks), name)
    if picks and all(r.id in arrays for r in picks):
        matrix = np.column_stack([arrays[r.id] for r in picks])
        values = np.ascontiguousarray(matrix[np.isfinite(matrix).all(axis=1)])
        users = int(values.shape[0])
        found = analyse(values, resamples=resamples, seed=seed, rules=competition.board)
        low = [_finite(x) for x in found.low]
        high = [_finite(x) for x in found.high]
        for i, (p, q) in enumerate(zip(found.p_next, found.p_adjusted, strict=True)):
            p_next[i], p_adjusted[i] = _finite(p), _finite(q)
        tier = [int(t) for t in found.tier]
    rows = tuple(
        Row(
            rank=i + 1,
            team=r.team,
            score=_score(r.public if name == Split.PUBLIC else r.private),
            low=low[i],
            high=high[i],
            p_next=p_next[i],
            p_adjusted=p_adjusted[i],
            tier=tier[i],
            submission=r.path,
            submitted_at=r.submitted_at,
            entries=counts[r.team],
        )
        for i, r in enumerate(picks)
    )
    return Board(name=name, rows=rows, users=users, metric=competition.label(competition.metric))


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _unranked(records: Sequence[Record], ranked: set[str]) -> tuple[Unranked, ...]:
    teams: dict[str, list[Record]] = {}
    for record in records:
        if record.team not in ranked:
            teams.setdefault(record.team, []).append(record)
    return tuple(
        Unranked(
            team=team,
            rejected=sum(1 for r in rows if r.status == Status.REJECTED),
            failed=sum(1 for r in rows if r.status == Status.FAILED),
            unscored=sum(1 for r in rows if r.status == Status.SCORED),
        )
        for team, rows in sorted(teams.items())
    )
