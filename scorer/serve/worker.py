"""The one worker loop of a server: `scorer serve run` runs it in process, `scorer serve worker`
on any machine that reaches the store's PostgreSQL database.

Each slot claims one job at a time (round robin by team, under a lease renewed while it is
held), reuses the verdict of the same bytes under the same fingerprint or judges the upload
in its isolated process (`judging`), and writes the verdict whole in the transaction that
finishes the job. A worker that dies holds its jobs only until their lease ends: another
claims them then, and the dead claim can write nothing. The worker also builds the boards
from the verdicts and publishes them (`boards.Publisher`)."""

from __future__ import annotations

import dataclasses
import mmap
import shutil
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path

from scorer.competition import Competition
from scorer.errors import Failure, error_object
from scorer.kept import Reference, smaller
from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.runs import KEPT_FAILURES, Saved
from scorer.leaderboard.schema import Status as Judged
from scorer.leaderboard.worker import Cancelled
from scorer.serve.boards import Publisher
from scorer.serve.judging import Judging, Slot
from scorer.serve.log import logged
from scorer.serve.settings import Schedule
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcore import StoreUnavailable
from scorer.serve.sqlkept import reference_of
from scorer.serve.store import WORKER_LEASE, Counted, Entry, Job, utc

#: How often an idle slot looks for a job when nobody wakes it (seconds).
IDLE = 1.0

#: What a team is told of a failure that was the server's, not its file's.
REFUNDED = "the server could not score this submission; it counts toward no limit: upload it again"


#: A verdict the store did not take (`Queue.finish_job`).
NOT_WRITTEN = "judged, but not written: claimed since by another worker, or a new solution came"


def say(line: str) -> None:
    """A line of the worker's own log, on stderr; a verdict's is `log.logged`'s."""
    print(f"scorer serve worker: {line}", file=sys.stderr, flush=True)


def counted(verdict: Saved) -> tuple[Saved, Counted | None]:
    """The verdict as its team is told it, and the limit it counts toward: scored, the day;
    rejected, or failed because of its own file (out of memory or time), the rejected
    limit; failed because of the server, nothing (refunded, and told so)."""
    if verdict.status is Judged.SCORED:
        return verdict, Counted.DAILY
    if verdict.status is Judged.REJECTED:
        return verdict, Counted.REJECTED
    if (verdict.error or {}).get("code") in KEPT_FAILURES:
        return verdict, Counted.REJECTED
    refunded = error_object(Failure.INTERNAL_ERROR, REFUNDED)
    return dataclasses.replace(verdict, error=refunded, per_user={}), None


class NotInPlace(Exception):
    """The store names a solution the worker cannot find (`Worker._judging`)."""


class Worker:
    """Judges a store's uploads in `isolation.workers` slots (at least one) until `cancel`
    is set, with the solution and rules given; `home` is the worker's private folder,
    where each job's copy and each judging process's folder live and are removed."""

    def __init__(
        self,
        store: SqlStore,
        home: Path,
        solution: Path,
        competition: Competition,
        isolation: Isolation,
        lease: timedelta = WORKER_LEASE,
        *,
        schedule: Schedule | None = None,
    ) -> None:
        """`schedule`: the competition's times, acted on while the worker runs."""
        self.store, self.home, self.lease = store, home, lease
        self.cancel = isolation.cancel or threading.Event()
        isolation = dataclasses.replace(isolation, cancel=self.cancel)
        self.slots = max(1, isolation.workers)
        self.solution, self.competition, self.isolation = solution, competition, isolation
        self.judging = Judging(solution, competition, isolation, home, slots=self.slots)
        self.boards = Publisher(store, competition, self.judging.fingerprint, self.cancel)
        self.schedule = schedule
        self._held: set[Job] = set()
        self._lock = threading.Lock()  # guards `_held`
        self._reload = threading.Lock()  # one slot reads a new solution, for all
        self._targets: Reference | None = None  # read at the first upload kept
        self._reading = threading.Lock()  # one slot reads them, for all
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """`run` in a thread of its own (a web process that also judges)."""
        self._thread = threading.Thread(target=self.run, name="scorer-worker", daemon=True)
        self._thread.start()

    def nudge(self) -> None:
        """A job was queued, or the picks changed: look now."""
        self._wake.set()
        self.boards.nudge()

    def stop(self, timeout: float = 30.0) -> None:
        self.cancel.set()
        self._wake.set()
        self.boards.nudge()
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self) -> None:
        """Judge and publish until `cancel` is set; then hand back what is held."""
        many = "one submission" if self.slots == 1 else f"up to {self.slots} submissions"
        say(f"judging {many} at a time")
        with suppress(StoreUnavailable):
            self.store.recover(utc())  # the jobs of a worker that stopped before this one
        threads = [
            threading.Thread(target=self._serve, name=f"scorer-slot-{n}", daemon=True)
            for n in range(self.slots)
        ]
        threads += [
            threading.Thread(target=self._beat, name="scorer-lease", daemon=True),
            threading.Thread(target=self.boards.run, name="scorer-boards", daemon=True),
        ]
        if self.schedule is not None:
            run = self.schedule.run
            threads.append(threading.Thread(target=run, args=(self.cancel,), daemon=True))
        for thread in threads:
            thread.start()
        self.cancel.wait()
        self._wake.set()
        for thread in threads:
            thread.join()

    def _serve(self) -> None:
        """One slot: claim a job, judge it, finish it; again."""
        slot = Slot(self.judging)
        try:
            while not self.cancel.is_set():
                try:
                    judging = self._judging()
                    if slot.judging is not judging:  # a new solution: a new process for it
                        slot.close()
                        slot = Slot(judging)
                    jobs = self.store.claim_jobs(utc(), 1, self.lease)
                except StoreUnavailable as exc:  # the database away: tried again
                    say(f"cannot reach the database ({exc}); trying again")
                    self.cancel.wait(IDLE)
                    continue
                except NotInPlace as exc:  # the organiser's command half done: waited for
                    say(str(exc))
                    self.cancel.wait(IDLE)
                    continue
                except Exception:  # a full disk, a bug: told, tried again
                    traceback.print_exc(file=sys.stderr)
                    self.cancel.wait(IDLE)
                    continue
                if not jobs:
                    self._wake.wait(IDLE)
                    self._wake.clear()
                    continue
                if not self._finish(slot, jobs[0]):
                    self.cancel.wait(IDLE)  # the store refused the verdict: not at once again
        finally:
            slot.close()

    def _judging(self) -> Judging:
        """What uploads are judged against now: the solution the store names (`Queue.rescore`:
        the organiser replaced it), read again, and fetched again from a store that holds
        it, when it is not the one at hand."""
        wanted = self.store.solution()
        if wanted is None or wanted.sha256 == self.judging.fingerprint.solution_hash:
            return self.judging
        with self._reload:
            if wanted.sha256 != self.judging.fingerprint.solution_hash:
                self.store.solution_into(self.solution)
                judging = Judging(
                    self.solution, self.competition, self.isolation, self.home, slots=self.slots
                )
                if judging.fingerprint.solution_hash != wanted.sha256:
                    raise NotInPlace(
                        f"the solution at hand is not the one the store names ({wanted.sha256});"
                        " waiting for it (`scorer serve solution` not finished: run it again)"
                    )
                say(f"judging against the new solution {wanted.sha256}")
                self.judging = judging
                self.boards.fingerprint = judging.fingerprint
        return self.judging

    def _finish(self, slot: Slot, job: Job) -> bool:
        """Judge one job and write its verdict; whether the store took it. A job that
        could not be finished goes back to the queue, counted toward nothing new."""
        scratch = self.home / f"job-{job.id}"
        try:
            with self._holding(job):
                entry = self.store.entry(job.id)
                if entry is None:  # cannot be: a submission is never deleted
                    return True
                name = Path(entry.path).name
                verdict = self.store.reusable(entry.sha256, slot.judging.fingerprint, name)
                if verdict is None:
                    scratch.mkdir(mode=0o700)
                    verdict = self._judge(slot, job, entry.path, entry.sha256, scratch)
                told, limit = counted(verdict)
                written = self.store.finish_job(job, told, limit, utc())
                if not written:  # the verdict that holds is another's, logged where it is written
                    say(f"submission {job.id}: {NOT_WRITTEN}")
                elif told is not verdict:  # the server's failure: the organiser's to read
                    why = (verdict.error or {}).get("message", "")
                    logged(entry.team, job.id, f"failed on the server: {why}", utc())
                else:
                    logged(entry.team, job.id, str(told.status), utc())
                self.boards.nudge()
            if written:
                self._keep_small(entry, scratch)
            return True
        except Cancelled:  # stopping: handed back, for this worker's next start or another
            self._release(job)
            return True
        except StoreUnavailable as exc:
            say(f"submission {job.id}: cannot reach the database ({exc}); handed back")
            self._release(job)
            return False
        except Exception:  # a verdict that cannot be written (a full disk), a bug
            traceback.print_exc(file=sys.stderr)
            say(f"submission {job.id}: its verdict could not be written; handed back")
            self._release(job)
            return False
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _keep_small(self, entry: Entry, scratch: Path) -> None:
        """Put a judged upload's kept form in place of its bytes as received (`sqlkept`):
        the same bytes, in about an eighth of the room, from which any verdict of it is
        judged again. Bytes that the kept form does not shrink, or any failure, leave the
        upload as received; a failure is told."""
        try:
            if self.store.kept(entry.id) is not None:
                return
            scratch.mkdir(mode=0o700, exist_ok=True)
            reference = self._public_targets()
            source = self.store.upload_file(entry.id, entry.path, entry.sha256, scratch)
            with source.open("rb") as handle:
                if not source.stat().st_size:
                    return  # nothing to keep smaller
                with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    blob = smaller(memoryview(data), reference, entry.sha256)
            if blob is not None:
                self.store.keep_small(entry.id, entry.path, blob, reference.sha256, scratch)
        except Exception as exc:  # the upload stays as received, readable as ever
            say(f"submission {entry.id}: kept as received ({type(exc).__name__}: {exc})")

    def _public_targets(self) -> Reference:
        """The targets uploads are kept against, read once: they never change while a
        server runs (`rescore.replace` refuses a solution of other users)."""
        with self._reading:
            if self._targets is None:
                scratch = self.home / "targets"
                scratch.mkdir(mode=0o700, exist_ok=True)
                try:
                    self._targets = reference_of(self.store.targets_file(scratch))
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
            return self._targets

    def _judge(self, slot: Slot, job: Job, path: str, sha256: str, scratch: Path) -> Saved:
        """An upload's verdict; a failure of the server's when its bytes in the store are
        not those it was accepted with (written since by a web role)."""
        try:
            found = self.store.upload_file(job.id, path, sha256, scratch)
        except ValueError as exc:  # `postgres.Tampered`
            error = error_object(Failure.INTERNAL_ERROR, str(exc))
            return Saved(slot.judging.fingerprint, Judged.FAILED, sha256, None, error, 0.0, {})
        return slot.judge(found, sha256)

    def _release(self, job: Job) -> None:
        """Queue a job again now; if the store cannot be reached, its lease frees it."""
        with suppress(Exception):
            self.store.release([job])

    @contextmanager
    def _holding(self, job: Job) -> Iterator[None]:
        with self._lock:
            self._held.add(job)
        try:
            yield
        finally:
            with self._lock:
                self._held.discard(job)

    def _beat(self) -> None:
        """Every third of the lease: renew the jobs held, and queue again those whose lease
        ended (a worker that died)."""
        while not self.cancel.wait(self.lease.total_seconds() / 3):
            try:
                now = utc()
                with self._lock:
                    held = sorted(self._held)
                if held:
                    self.store.renew(held, now, self.lease)
                self.store.requeue_stale(now)
            except StoreUnavailable as exc:  # tried again at the next beat
                say(f"cannot renew the lease ({exc}); trying again")
            except Exception:
                traceback.print_exc(file=sys.stderr)
