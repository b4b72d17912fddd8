"""What a verdict is judged against and how it is kept: the solution (`Truth`), the options
that decide a verdict (`planned`, `fingerprint_of`), and a result's per-user scores aligned with
the solution's users by split. The leaderboard's runs and a server's worker share them."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from scorer.competition import USER, Competition, EmptyUsers, Split, Stage
from scorer.contract import Codes, Role, Solution, reading
from scorer.errors import UsageError
from scorer.leaderboard import runs
from scorer.leaderboard.schema import SPLITS, STAGE_CODES
from scorer.leaderboard.store import Fingerprint, Store
from scorer.prepared import solution_at
from scorer.read import Limits, digest, snapshot
from scorer.scoring import ScoreResult
from scorer.version import __version__

if TYPE_CHECKING:
    from scorer.leaderboard.batch import Isolation


def planned(
    competition: Competition, no_lost: EmptyUsers | str | None, limits: Limits, isolation: Isolation
) -> tuple[EmptyUsers, Limits]:
    """The empty-user rule (the competition's, unless `no_lost` overrides it) and the
    limits a submission is read under: within the workers' memory budget."""
    policy = competition.empty_users if no_lost is None else EmptyUsers.of(no_lost)
    if isolation.workers and isolation.budget < limits.max_memory:
        limits = dataclasses.replace(limits, max_memory=isolation.budget)
    return policy, limits


def fingerprint_of(
    solution_hash: str, competition: Competition, policy: EmptyUsers, limits: Limits
) -> Fingerprint:
    """Every option that can change a score or a verdict, the competition's rules included,
    with the solution and the scorer's version."""
    config = competition.fingerprint(no_lost=str(policy), limits=dataclasses.asdict(limits))
    return Fingerprint(solution_hash, __version__, config)


def split_scores(
    result: ScoreResult, ids: np.ndarray, stages: np.ndarray, codes: Codes | None = None
) -> dict[Split, np.ndarray]:
    """A result's per-user scores by split, each aligned with the split's users in the
    solution's order (`aligned`): a split's users are the solution's users of the stage of
    the same name."""
    values = aligned(result, ids, codes)
    return {split: values[stages == STAGE_CODES[Stage(split)]] for split in SPLITS}


def user_stages(solution: Solution) -> tuple[np.ndarray, np.ndarray]:
    """A solution's user ids (ascending) and each one's stage code (`STAGE_CODES`)."""
    users = solution.users.sort(USER)
    ids = users.get_column(USER).to_numpy().astype(np.int64)
    named = {str(k): v for k, v in STAGE_CODES.items() if k is not None}
    stages = (
        users.select(
            pl.col("stage").replace_strict(named, default=STAGE_CODES[None], return_dtype=pl.Int8)
        )
        .to_series()
        .to_numpy()
    )
    return ids, stages


class Truth:
    """The solution, hashed at once but read only when a submission needs scoring: from a
    private copy whose bytes are the hashed ones (and recorded in a leaderboard's `store`)."""

    def __init__(
        self, path: Path, competition: Competition, limits: Limits, store: Store | None = None
    ) -> None:
        self.path = path
        self.competition = competition
        self.limits = limits
        self.store = store
        with reading(Role.SOLUTION):  # a folder, a pipe, a missing file: the file's HostError
            self.digest = digest(path, path.name, limits)
        self._solution: Solution | None = None
        self._ids: np.ndarray | None = None
        self._stages: np.ndarray | None = None

    def load(self) -> tuple[Solution, np.ndarray, np.ndarray]:
        """The solution, its user ids (ascending) and their stage codes."""
        if self._solution is None or self._ids is None or self._stages is None:
            with tempfile.TemporaryDirectory(prefix="scorer-solution-") as folder:
                with reading(Role.SOLUTION):
                    copy, copied = snapshot(self.path, self.path.name, Path(folder), self.limits)
                if copied != self.digest:
                    raise UsageError(
                        f"{self.path}: the solution file changed during the run; run again"
                    )
                solution = solution_at(copy, self.limits, competition=self.competition)
            if not solution.has_split:
                splits = self.competition.splits
                columns = " or ".join(repr(name) for name in splits.columns)
                raise UsageError(
                    f"{self.path.name}: a leaderboard needs a public/private split; add a "
                    f"{columns} column ({splits.public}/{splits.private})"
                )
            ids, stages = user_stages(solution)
            if self.store is not None:  # a leaderboard's: its boards map users by it
                runs.add_solution(self.store, self.digest, ids, stages)
            self._solution, self._ids, self._stages = solution, ids, stages
        return self._solution, self._ids, self._stages


def aligned(result: ScoreResult, ids: np.ndarray, codes: Codes | None = None) -> np.ndarray:
    """Per-user values of the competition's metric placed at each user's position among the
    solution's sorted user ids (for text ids, their `codes`); NaN for users the scorer left
    out (ignored, or excluded by the no-lost policy)."""
    competition = result.competition
    written = result.per_user.get_column(competition.columns.user)
    if codes is not None:
        written = codes.encode(written.alias(USER).to_frame()).get_column(USER)
    users = written.to_numpy()
    values = np.full(ids.size, np.nan)
    values[np.searchsorted(ids, users)] = result.per_user.get_column(competition.metric).to_numpy()
    return values
