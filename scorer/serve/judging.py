"""How a server's worker judges an upload: the solution read once, each slot's isolated
process kept from one upload to the next, and each verdict whole (its per-user scores by
split), as the store writes it in the transaction that finishes the job.

The engine is the leaderboard's (`leaderboard.worker`: a memory budget and a deadline a
submission, a process that a file takes down replaced), without its run bookkeeping: an
upload's bytes never change once accepted (kept small, they read back the same: `sqlkept`),
so it is judged under the sha256 it was received with."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from scorer.competition import Competition, Split
from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.runs import Saved
from scorer.leaderboard.truth import Truth, fingerprint_of, planned, split_scores
from scorer.leaderboard.worker import Done, Task, Workers
from scorer.read import DEFAULT_LIMITS, Limits


class Judging:
    """What every upload of a server is judged against: the solution (hashed at once, read
    at the first upload that needs it), the rules and the limits, and the `fingerprint`
    that says so. `slots` judge side by side, each its own isolated process."""

    def __init__(
        self,
        solution: Path,
        competition: Competition,
        isolation: Isolation,
        scratch: Path,
        *,
        slots: int = 1,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.competition, self.isolation, self.scratch = competition, isolation, scratch
        self.slots = slots
        self.policy, self.limits = planned(competition, None, limits, isolation)
        self.truth = Truth(solution, competition, self.limits)
        self.fingerprint = fingerprint_of(self.truth.digest, competition, self.policy, self.limits)
        self._task: Task | None = None
        self._lock = threading.Lock()  # slots load the solution once between them

    def task(self) -> Task:
        with self._lock:
            if self._task is None:
                answers, _, _ = self.truth.load()
                self._task = Task(answers, self.competition, self.policy, self.limits)
            return self._task

    def verdict(self, done: Done, content_hash: str) -> Saved:
        """A judged upload's verdict whole: its per-user scores aligned by split as the
        leaderboard's boards read them."""
        per_user: dict[Split, bytes] = {}
        if done.result is not None:
            answers, ids, stages = self.truth.load()
            found = split_scores(done.result, ids, stages, answers.codes)
            per_user = {
                split: np.ascontiguousarray(values, dtype="<f8").tobytes()
                for split, values in found.items()
            }
        return Saved(
            fingerprint=self.fingerprint,
            status=done.status,
            content_hash=content_hash,
            scores=None if done.result is None else done.result.to_dict(),
            error=done.error,
            seconds=done.seconds,
            per_user=per_user,
        )


class Slot:
    """One upload judged at a time, in an isolated process kept for the next one (the
    solution is sent to it once), under the budget and deadline of the server's isolation;
    `isolation.workers == 0` judges in this process (a test's stand-in)."""

    def __init__(self, judging: Judging) -> None:
        self.judging = judging
        self._pool: Workers | None = None

    def judge(self, path: Path, content_hash: str) -> Saved:
        """The verdict of the upload at `path`; `worker.Cancelled` when the server stops."""
        isolation = self.judging.isolation
        task = self.judging.task()
        if isolation.workers == 0:
            done = isolation.judge(task, 0, path)
        else:
            if self._pool is None:
                self._pool = Workers(
                    task,
                    workers=1,
                    budget=isolation.budget,
                    timeout=isolation.timeout,
                    judge=isolation.judge,
                    cancel=isolation.cancel,
                    sharing=self.judging.slots,
                    scratch=self.judging.scratch,
                )
            (done,) = list(self._pool.judge([(0, path)]))
        return self.judging.verdict(done, content_hash)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
