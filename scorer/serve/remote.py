"""`scorer serve worker`: uploads scored on any machine that reaches the server's PostgreSQL
database. A worker claims queued jobs with `SKIP LOCKED` under a lease it renews while it
judges them, judges them with the leaderboard engine (its isolated workers, memory budget and
deadline), and writes each verdict whole, per-user scores included, in the transaction that
finishes its job. A worker that dies holds its jobs only until its lease ends: another one
claims them then, and the dead one's claim can write nothing."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path

from scorer.competition import Competition
from scorer.leaderboard import runs
from scorer.leaderboard.batch import Isolation, score_entries
from scorer.leaderboard.manifest import Submission
from scorer.leaderboard.results import Outcome
from scorer.leaderboard.store import Store as Board
from scorer.leaderboard.worker import Cancelled
from scorer.serve.jobs import BOARD, IDLE, refund, submission, utc_now, verdict
from scorer.serve.postgres import PostgresStore
from scorer.serve.sql import StoreUnavailable
from scorer.serve.store import WORKER_LEASE, Job, upload_name


def say(line: str) -> None:
    """A line of the worker's log, on stderr (submission ids only: names are the teams')."""
    print(f"scorer serve worker: {line}", file=sys.stderr, flush=True)


class Worker:
    """Claims, judges and finishes jobs until `cancel` is set (`run`), the solution and
    the rules read from the worker's own folder `home` (`site.from_database`)."""

    def __init__(
        self,
        store: PostgresStore,
        home: Path,
        solution: Path,
        competition: Competition,
        isolation: Isolation,
        lease: timedelta = WORKER_LEASE,
    ) -> None:
        self.store, self.home, self.solution = store, home, solution
        self.competition, self.lease = competition, lease
        self.cancel = isolation.cancel or threading.Event()
        self.isolation = dataclasses.replace(isolation, cancel=self.cancel)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """`run` in a thread of its own (a web process that also scores)."""
        self._thread = threading.Thread(target=self.run, name="scorer-worker", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self.cancel.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        most = max(1, self.isolation.workers)
        say(f"judging {'one submission' if most == 1 else f'up to {most} submissions'} at a time")
        with Board(self.home / BOARD) as board:  # this worker's cache of verdicts
            while not self.cancel.is_set():
                try:
                    now = utc_now()
                    self.store.requeue_stale(now)  # the jobs of workers that died
                    jobs = self.store.claim_jobs(now, most, self.lease)
                    if jobs:
                        with self._renewed(jobs):
                            self._judge(board, jobs)
                        continue
                except StoreUnavailable as exc:  # the database away: tried again
                    say(f"cannot reach the database ({exc}); trying again")
                except Exception:  # a full disk, a bug: told, tried again
                    traceback.print_exc(file=sys.stderr)
                self.cancel.wait(IDLE)

    @contextmanager
    def _renewed(self, jobs: list[Job]) -> Iterator[None]:
        """The claim on `jobs` renewed every third of the lease until the block ends."""
        done = threading.Event()

        def beat() -> None:
            while not done.wait(self.lease.total_seconds() / 3):
                try:
                    self.store.renew(jobs, utc_now(), self.lease)
                except StoreUnavailable as exc:  # tried again at the next beat
                    say(f"cannot renew the lease ({exc}); trying again")

        heart = threading.Thread(target=beat, name="scorer-lease", daemon=True)
        heart.start()
        try:
            yield
        finally:
            done.set()
            heart.join()

    def _judge(self, board: Board, jobs: list[Job]) -> None:
        """One leaderboard run over the claimed jobs, each finished as soon as it is judged."""
        inbox = self.home / "in"
        claimed: dict[str, Job] = {}
        entries: list[Submission] = []
        hashes: list[str] = []
        try:
            for job in jobs:
                entry = self.store.entry(job.id)
                if entry is None:  # cannot be: a submission is never deleted
                    continue
                path = inbox / str(job.id) / Path(entry.path).name  # the name its team gave
                path.parent.mkdir(parents=True)
                if not self.store.fetch(upload_name(job.id), path):
                    raise FileNotFoundError(f"submission {job.id}: no file in the database")
                claimed[entry.name] = job
                hashes.append(entry.sha256)
                entries.append(dataclasses.replace(submission(entry, self.home), path=path))

            def progress(done: int, total: int, outcome: Outcome | None) -> None:
                job = None if outcome is None else claimed.pop(outcome.path, None)
                if outcome is not None and job is not None:
                    whole = runs.saved(board, outcome.team, outcome.path)
                    status, public, report, counted = verdict(outcome)
                    written = self.store.finish_job(
                        job, status, public, report, counted, utc_now(), saved=whole
                    )
                    said = status if written else "judged, but claimed since by another worker"
                    say(f"submission {job.id}: {said}")

            score_entries(
                entries,
                self.solution,
                board,
                competition=self.competition,
                isolation=self.isolation,
                force=True,  # the solution was checked at init: rejections are the teams'
                content_hashes=hashes,
                progress=progress,
            )
        except Cancelled:  # stopping: what is not judged is queued again, for another worker
            say(f"stopping: {self.store.release(jobs)} submissions handed back, unjudged")
        except StoreUnavailable:  # its jobs go back now, or when the lease ends
            with suppress(StoreUnavailable):
                self.store.release(jobs)  # on a new connection, if the database answers
            raise
        except Exception:  # a bug of the scorer: told to the organiser, refunded to the teams
            refund(self.store, jobs)  # (a job finished already keeps its verdict)
        finally:
            shutil.rmtree(inbox, ignore_errors=True)
