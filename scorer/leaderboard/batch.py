"""Score every submission of a log into the database, rescoring only what changed."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from scorer import __version__
from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS, Competition, Split, Stage
from scorer.contract import Role, Solution, read_solution, reading
from scorer.errors import (
    Code,
    FileSystemError,
    ScorerError,
    SubmissionError,
    UsageError,
    single,
)
from scorer.leaderboard.manifest import Submission, read_log
from scorer.leaderboard.schema import SPLITS, STAGE_CODES, Status
from scorer.leaderboard.store import Fingerprint, Store
from scorer.read import DEFAULT_LIMITS, Limits, Rejected, digest, snapshot
from scorer.scoring import NoLost

#: Called once before the first submission (done = 0, outcome None), then after each one.
Progress = Callable[[int, int, "Outcome | None"], None]


@dataclass(frozen=True)
class Outcome:
    """What happened to one submission in a run. `cached`: its stored verdict was reused."""

    team: str
    path: str
    status: Status
    cached: bool
    public: float | None
    error: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        # The public score only: a run's output is safe to publish during the competition.
        return {
            "team": self.team,
            "path": self.path,
            "status": str(self.status),
            "cached": self.cached,
            "public": self.public,
        }


@dataclass(frozen=True)
class BatchResult:
    """Every submission's outcome, in log order, and the submissions the log no longer lists."""

    outcomes: tuple[Outcome, ...]
    removed: int

    @property
    def counts(self) -> dict[str, int]:
        statuses = [o.status for o in self.outcomes]
        return {
            "total": len(self.outcomes),
            "scored": sum(1 for o in self.outcomes if o.status == Status.SCORED and not o.cached),
            "cached": sum(1 for o in self.outcomes if o.cached),
            "rejected": statuses.count(Status.REJECTED),
            "failed": statuses.count(Status.FAILED),
            "removed": self.removed,
        }

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in (Status.REJECTED, Status.FAILED)]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.counts,
            "submissions": [o.to_dict() for o in self.outcomes],
            "failures": [{**o.to_dict(), "error": o.error} for o in self.failures],
        }


def config_of(no_lost: NoLost, limits: Limits, competition: Competition = LOST_ITEMS) -> str:
    """Every option that can change a score or a verdict, the competition's rules included,
    as stable JSON (part of the key)."""
    return json.dumps(
        {
            "competition": competition.to_dict(),
            "no_lost": str(no_lost),
            "limits": dataclasses.asdict(limits),
        },
        sort_keys=True,
    )


def file_hash(path: Path, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """sha256 of a regular file's bytes; None when it is missing, not a regular file,
    unreadable or over the size limit (the scorer then rejects it, and it is checked again
    on every run). A pipe is never opened."""
    try:
        return digest(path, path.name, limits)
    except (Rejected, ScorerError, OSError):
        return None


def score_log(
    log: Path,
    solution: Path,
    db: Path,
    *,
    competition: Competition = LOST_ITEMS,
    no_lost: NoLost | str = NoLost.ZERO,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> BatchResult:
    """Read a log (manifest CSV or folder), then score it into the database at `db`."""
    entries = read_log(log)
    with Store(db) as store:
        return score_entries(
            entries,
            solution,
            store,
            competition=competition,
            no_lost=no_lost,
            limits=limits,
            progress=progress,
        )


def score_entries(
    entries: Sequence[Submission],
    solution: Path,
    store: Store,
    *,
    competition: Competition = LOST_ITEMS,
    no_lost: NoLost | str = NoLost.ZERO,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> BatchResult:
    """Score each submission whose content, solution, scorer version or options changed since
    its stored verdict; reuse the rest. One broken file never stops the batch: it is recorded
    as rejected (the participant's problem) or failed (the system refused to read it, or a
    scorer bug) and the batch goes on.
    A broken solution stops it before any submission is touched (`HostError`)."""
    policy = NoLost.of(no_lost)
    truth = _Truth(solution, competition, limits, store)
    fingerprint = Fingerprint(truth.digest, __version__, config_of(policy, limits, competition))
    if not store.has_solution(truth.digest):
        truth.load()  # a new solution: check it before anything is recorded under its hash
    run, removed = store.sync(entries, fingerprint)
    outcomes: list[Outcome] = []
    if progress is not None:
        progress(0, len(entries), None)
    for entry in entries:
        outcome = _one(entry, store, truth, fingerprint, policy, limits)
        outcomes.append(outcome)
        if progress is not None:
            progress(len(outcomes), len(entries), outcome)
    result = BatchResult(outcomes=tuple(outcomes), removed=removed)
    store.finish_run(run, result.counts)
    return result


class _Truth:
    """The solution, hashed at once but read only when a submission needs scoring: from a
    private copy whose bytes are the hashed ones."""

    def __init__(self, path: Path, competition: Competition, limits: Limits, store: Store) -> None:
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
                solution = read_solution(copy, self.limits, competition=self.competition)
            if not solution.has_split:
                raise UsageError(
                    f"{self.path.name}: a leaderboard needs a public/private split; add a "
                    "'stage' (public/private) or 'Usage' (Public/Private) column"
                )
            users = solution.users.sort("user_id")
            ids = users.get_column("user_id").to_numpy().astype(np.int64)
            named = {str(k): v for k, v in STAGE_CODES.items() if k is not None}
            stages = (
                users.select(
                    pl.col("stage").replace_strict(
                        named, default=STAGE_CODES[None], return_dtype=pl.Int8
                    )
                )
                .to_series()
                .to_numpy()
            )
            self.store.add_solution(self.digest, ids, stages)
            self._solution, self._ids, self._stages = solution, ids, stages
        return self._solution, self._ids, self._stages


def _one(
    entry: Submission,
    store: Store,
    truth: _Truth,
    fingerprint: Fingerprint,
    policy: NoLost,
    limits: Limits,
) -> Outcome:
    """One submission's verdict: reused when its bytes (sha256) and the fingerprint are
    those of its stored verdict, else scored from a private copy made while hashing it, so
    the hash stored is the hash of exactly the bytes scored, whatever happens to the file."""
    known = store.cached(entry.team, entry.key)
    if entry.refusal is not None:  # a link out of the team's folder, a pipe: never opened
        report = single(entry.path.name, Code.NOT_A_FILE, f"{entry.path.name}: {entry.refusal}")
        refused = SubmissionError(report).to_dict()
        _save(store, known.id, Status.REJECTED, None, fingerprint, None, refused, None, 0.0)
        return Outcome(entry.team, entry.key, Status.REJECTED, False, None, refused)
    content = file_hash(entry.path, limits)
    if (
        content is not None
        and known.content_hash == content
        and known.fingerprint == fingerprint
        and known.status in (Status.SCORED, Status.REJECTED)
    ):
        store.mark_checked(known.id)
        return Outcome(entry.team, entry.key, known.status, True, known.public, known.error)
    solution, ids, stages = truth.load()
    started = time.perf_counter()
    scores: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    per_user: dict[Split, np.ndarray] | None = None
    public: float | None = None
    content = None  # until the private copy is made: then the hash of what is scored
    try:
        with tempfile.TemporaryDirectory(prefix="scorer-submission-") as folder:
            with reading(Role.SUBMISSION):
                copy, content = snapshot(entry.path, entry.path.name, Path(folder), limits)
            result = score_submission(copy, solution, no_lost=policy, limits=limits)
    except SubmissionError as exc:
        status, error = Status.REJECTED, exc.to_dict()
    except (FileSystemError, OSError) as exc:  # the system's refusal, tried again next run
        status = Status.FAILED
        failure = exc if isinstance(exc, FileSystemError) else FileSystemError.of(exc)
        error = {"error": "system", "message": str(failure)}
    except Exception as exc:  # a scorer bug on one file must not stop the batch
        status = Status.FAILED
        error = {"error": "internal", "message": f"{type(exc).__name__}: {exc}"}
    else:
        status, public = Status.SCORED, result.public
        scores = result.to_dict()
        values = aligned(result.per_user, ids, str(result.competition.metric))
        # A split's users are the solution's users of the stage of the same name.
        per_user = {split: values[stages == STAGE_CODES[Stage(split)]] for split in SPLITS}
    seconds = time.perf_counter() - started
    _save(store, known.id, status, content, fingerprint, scores, error, per_user, seconds)
    return Outcome(entry.team, entry.key, status, False, public, error)


def _save(
    store: Store,
    ident: int,
    status: Status,
    digest: str | None,
    fingerprint: Fingerprint,
    scores: dict[str, Any] | None,
    error: dict[str, Any] | None,
    per_user: dict[Split, np.ndarray] | None,
    seconds: float,
) -> None:
    store.save(
        ident,
        status=status,
        content_hash=digest,
        fingerprint=fingerprint,
        scores=scores,
        error=error,
        per_user=per_user,
        seconds=seconds,
    )


def aligned(per_user: pl.DataFrame, ids: np.ndarray, metric: str = "ndcg") -> np.ndarray:
    """Per-user values of the competition's metric placed at each user's position among the
    solution's sorted user ids; NaN for users the scorer left out (ignored, or excluded by
    the no-lost policy)."""
    users = per_user.get_column("user_id").to_numpy()
    values = np.full(ids.size, np.nan)
    values[np.searchsorted(ids, users)] = per_user.get_column(metric).to_numpy()
    return values
