"""The private board foretold from the public one: each team's 90 % interval of private rank
and private score, from public per-user scores only (`forecast.forecast`), and after the
reveal the rank it got beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.competition import Split
from scorer.leaderboard.forecast import forecast
from scorer.leaderboard.store import PerUser, Record


@dataclass(frozen=True)
class Outlook:
    """One team's forecast, in public board order. `private_rank`: the rank it got, once
    the private board is revealed (None before)."""

    team: str
    public_rank: int
    rank_low: int
    rank_high: int
    rank_median: int
    score_low: float
    score_high: float
    private_rank: int | None = None

    @property
    def inside(self) -> bool | None:
        """Whether the rank it got lies in the forecast's interval (None before the reveal)."""
        if self.private_rank is None:
            return None
        return self.rank_low <= self.private_rank <= self.rank_high

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "team": self.team,
            "public_rank": self.public_rank,
            "rank_low": self.rank_low,
            "rank_high": self.rank_high,
            "rank_median": self.rank_median,
            "score_low": self.score_low,
            "score_high": self.score_high,
        }
        if self.private_rank is not None:
            data |= {"private_rank": self.private_rank, "inside": self.inside}
        return data


@dataclass(frozen=True)
class Forecasted:
    """The forecast of a board: every ranked team's outlook, and how it was made."""

    rows: tuple[Outlook, ...]
    level: float
    resamples: int
    seed: int
    groups: int
    public_users: int
    private_users: int

    @property
    def covered(self) -> int | None:
        """How many teams got a private rank inside their interval (None before the reveal)."""
        found = [row.inside for row in self.rows]
        return None if any(i is None for i in found) else sum(1 for i in found if i)

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "method": METHOD,
            "resamples": self.resamples,
            "seed": self.seed,
            "groups": self.groups,
            "public_users": self.public_users,
            "private_users": self.private_users,
            "covered": self.covered,
            "rows": [row.to_dict() for row in self.rows],
        }


#: The method, as outputs state it (task.md, "The forecast" says it in full).
METHOD = (
    "two-level bootstrap over the public users: a resample of them stands for all users, a "
    "draw of the private board's size from it for the private users; each team's better "
    "candidate counts"
)


def foretell(
    teams: Sequence[str],
    candidates: Sequence[Sequence[np.ndarray]],
    private_users: int,
    *,
    resamples: int,
    seed: int,
    realised: dict[str, int] | None = None,
) -> Forecasted | None:
    """The forecast of `teams` (public board order), each with the public per-user scores
    of its candidates (the submissions that may count on its private board: those it
    selected, else its best public ones), on the same users. `realised`: each team's
    private rank, once revealed. None when no team or no public user."""
    if not teams or private_users < 1:
        return None
    columns = [array for arrays in candidates for array in arrays]
    owners = np.array([i for i, arrays in enumerate(candidates) for _ in arrays], dtype=np.int64)
    matrix = np.column_stack(columns)
    matrix = np.ascontiguousarray(matrix[np.isfinite(matrix).all(axis=1)])
    if matrix.shape[0] == 0:
        return None
    found = forecast(matrix, owners, private_users, resamples=resamples, seed=seed)
    rows = tuple(
        Outlook(
            team=team,
            public_rank=i + 1,
            rank_low=int(found.rank_low[i]),
            rank_high=int(found.rank_high[i]),
            rank_median=int(found.rank_median[i]),
            score_low=float(found.score_low[i]),
            score_high=float(found.score_high[i]),
            private_rank=None if realised is None else realised.get(team),
        )
        for i, team in enumerate(teams)
    )
    return Forecasted(
        rows=rows,
        level=found.level,
        resamples=found.resamples,
        seed=found.seed,
        groups=found.groups,
        public_users=int(matrix.shape[0]),
        private_users=private_users,
    )


def foretold(
    store: PerUser,
    teams: Sequence[str],
    chosen: dict[str, list[Record]],
    realised: dict[str, int] | None,
    *,
    resamples: int,
    seed: int,
) -> Forecasted | None:
    """`foretell` for the teams of a public board (in its order), each with its candidate
    submissions (`boards.candidates`), their public per-user scores read from `store`; the
    private board's size from the per-user scores of one candidate (their number only)."""
    idents = [r.id for team in teams for r in chosen[team]]
    arrays = store.per_user(idents, Split.PUBLIC)
    if not all(i in arrays for i in idents):
        return None
    private_users = len(store.per_user(idents[:1], Split.PRIVATE).get(idents[0], ()))
    by_team = [[arrays[r.id] for r in chosen[team]] for team in teams]
    return foretell(
        teams, by_team, private_users, resamples=resamples, seed=seed, realised=realised
    )
