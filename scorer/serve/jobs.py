"""The server's scoring loop: one thread claims the queued uploads and scores them with the
leaderboard engine (its workers, memory budget, deadline and prepared solution) into the
folder's leaderboard database, whose boards the server shows.

Every run of the loop is a leaderboard run over all the server's submissions, as
`scorer serve export` writes them: the cached ones are reused by their sha256, so only the new
ones are judged, and the boards are those `scorer leaderboard score` gives on the export."""

from __future__ import annotations

import dataclasses
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scorer.competition import Competition
from scorer.errors import Failure, error_object
from scorer.leaderboard.batch import Isolation, score_entries
from scorer.leaderboard.manifest import Submission
from scorer.leaderboard.results import Outcome
from scorer.leaderboard.runs import KEPT_FAILURES
from scorer.leaderboard.store import Store as Board
from scorer.leaderboard.worker import Cancelled
from scorer.serve.sql import SqlStore
from scorer.serve.store import FINAL, Counted, Entry, Job, Status

#: The leaderboard database in the server's folder.
BOARD = "board.sqlite"

#: How often the loop looks for work when nobody wakes it (seconds).
IDLE = 1.0

#: What a team is told of a failure that was the server's, not its file's.
REFUNDED = "the server could not score this submission; it counts toward no limit: upload it again"


def utc_now() -> datetime:
    return datetime.now(UTC)


def on_board(entry: Entry) -> bool:
    """Whether a submission is on the boards: all but the queued ones and the refunded
    failures (a failure that was the server's is not the team's submission)."""
    if entry.status is Status.QUEUED:
        return False
    return entry.status is not Status.FAILED or entry.counted is not None


def exported(entry: Entry) -> bool:
    """Whether a submission is in `serve export`'s log, and so in a web process's copy of the
    boards (`mirror`): on the boards, with its verdict."""
    return on_board(entry) and entry.status in FINAL


def submission(entry: Entry, folder: Path) -> Submission:
    """A server's submission as the leaderboard engine's log entry (and the export's row)."""
    return Submission(
        team=entry.team,
        key=entry.name,
        path=folder / entry.path,
        submitted_at=entry.submitted_at,
        selected=entry.selected,
    )


def verdict(outcome: Outcome) -> tuple[Status, float | None, dict[str, Any] | None, Counted | None]:
    """A run's outcome as the store records it: status, public score, what the team is shown,
    and which limit it counts toward."""
    if outcome.status == "scored":
        return Status.SCORED, outcome.public, None, Counted.DAILY
    error = outcome.error or {}
    if outcome.status == "rejected":
        return Status.REJECTED, None, error, Counted.REJECTED
    if error.get("code") in KEPT_FAILURES:  # its own file took the worker down
        return Status.FAILED, None, error, Counted.REJECTED
    return Status.FAILED, None, error_object(Failure.INTERNAL_ERROR, REFUNDED), None


def refund(store: SqlStore, jobs: Iterable[Job]) -> None:
    """A run that broke (a bug of the scorer): told to the organiser on stderr, and each of
    its jobs still without a verdict failed, counted toward no limit."""
    traceback.print_exc(file=sys.stderr)
    failed = error_object(Failure.INTERNAL_ERROR, REFUNDED)
    for job in jobs:
        store.finish_job(job, Status.FAILED, None, failed, None, utc_now())


class Scoring:
    """The loop, in a thread of its own: `start`, `nudge` when there is work, `stop`."""

    def __init__(
        self,
        folder: Path,
        store: SqlStore,
        competition: Competition,
        isolation: Isolation,
        solution: Path,
        published: Callable[[], None] = lambda: None,
    ) -> None:
        self.folder, self.store, self.competition = folder, store, competition
        self.solution = solution
        self.cancel = threading.Event()
        self.isolation = dataclasses.replace(isolation, cancel=self.cancel)
        #: Called after each run that published new boards (the web app's cache).
        self.published = published
        self._wake = threading.Event()
        self._again = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scorer-scoring", daemon=True)

    def start(self) -> None:
        self.store.requeue_stale()  # jobs a stop (kill -9 included) left half done
        self._again.set()  # a first run: the boards of what the folder holds
        self._thread.start()

    def nudge(self, *, rerun: bool = False) -> None:
        """Look for work now; `rerun`: run even with nothing queued (picks changed)."""
        if rerun:
            self._again.set()
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the loop, and any run under way within `worker.POLL` seconds: its jobs stay
        `scoring` and are queued again at the next start."""
        self.cancel.set()
        self._wake.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        with Board(self.folder / BOARD) as board:
            while not self.cancel.is_set():
                self._wake.clear()
                try:
                    jobs = self.store.claim_jobs(utc_now())  # all queued: one run judges them
                    if jobs or self._again.is_set():
                        self._again.clear()
                        self._run(board, jobs)
                        if jobs:
                            self._wake.set()  # more may be queued: no pause before the next
                except Exception:  # the store refused (a full disk): told, tried again
                    traceback.print_exc(file=sys.stderr)
                    self._again.set()
                    self.cancel.wait(IDLE)
                self._wake.wait(IDLE)

    def _run(self, board: Board, jobs: list[Job]) -> None:
        """One leaderboard run over every submission on the boards and the claimed jobs. Each
        job gets its verdict as soon as the run has it (a queue behind it does not delay it);
        the boards show the run once it is over, and are built anew then."""
        entries = [e for e in self.store.entries() if on_board(e)]
        ids = {e.name: e.id for e in entries}
        claimed = {job.id: job for job in jobs}

        def progress(done: int, total: int, outcome: Outcome | None) -> None:
            job = None if outcome is None else claimed.pop(ids[outcome.path], None)
            if outcome is not None and job is not None:
                self.store.finish_job(job, *verdict(outcome), utc_now())

        try:
            score_entries(
                [submission(e, self.folder) for e in entries],
                self.solution,
                board,
                competition=self.competition,
                isolation=self.isolation,
                force=True,  # the solution was checked at init: rejections are the teams'
                content_hashes=[e.sha256 for e in entries],
                progress=progress,
            )
        except Cancelled:
            return  # stopping: the claimed jobs are queued again at the next start
        except Exception:  # a bug of the scorer: told to the organiser, refunded to the teams
            refund(self.store, claimed.values())
            return
        try:
            self.published()
        except Exception:  # the boards are built again when asked for: the verdicts stand
            traceback.print_exc(file=sys.stderr)
