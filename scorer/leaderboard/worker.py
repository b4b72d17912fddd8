"""Score submissions in worker processes, each watched for memory and time: a submission that
exhausts its memory budget, hangs, or takes its worker down (a Rust abort, a signal) is a
failed submission with its reason, and the batch goes on with a fresh worker.

Workers are started with `spawn` (polars' thread pool does not survive a `fork`) and live for
the whole batch, so each imports the scorer and receives the solution once. The parent polls
every worker's resident memory (`/proc/PID/status` on Linux) and its time on the current
submission, and kills a worker that goes over either limit.

Several workers share the cores: each is started with `POLARS_MAX_THREADS` set to its share
(`threads`), so that workers x polars threads do not oversubscribe the machine."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnProcess
from pathlib import Path
from typing import Any

from polars.exceptions import PanicException

from scorer.api import score as score_submission
from scorer.competition import Competition, EmptyUsers
from scorer.contract import Solution
from scorer.errors import Failure, SubmissionError, error_object, size
from scorer.leaderboard.processes import die_with, environment, no_ctrl_c
from scorer.leaderboard.schema import Status
from scorer.read import Limits
from scorer.scoring import ScoreResult

#: How often the parent looks at its workers' memory and time, in seconds.
POLL = 0.05

#: How long a worker may take to stop when the batch ends, before it is killed, in seconds.
GRACE = 5.0

#: Resident memory a worker may use on one submission, in bytes (`--max-memory`).
DEFAULT_BUDGET = 4 << 30

#: Seconds a worker may spend on one submission (`--timeout`).
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Task:
    """What every submission of a batch is scored against, sent once to each worker."""

    solution: Solution
    competition: Competition
    no_lost: EmptyUsers
    limits: Limits


@dataclass(frozen=True)
class Done:
    """One submission's verdict: scored (with its result), rejected or failed (with the error
    as `errors.error_object` gives it)."""

    index: int
    status: Status
    result: ScoreResult | None
    error: dict[str, Any] | None
    seconds: float


def judge(task: Task, index: int, path: Path) -> Done:
    """Score one submission in this process; never raises."""
    started = time.perf_counter()
    try:
        result = score_submission(
            path,
            task.solution,
            competition=task.competition,
            no_lost=task.no_lost,
            limits=task.limits,
        )
    except SubmissionError as exc:
        return Done(index, Status.REJECTED, None, exc.to_dict(), time.perf_counter() - started)
    except (Exception, PanicException) as exc:  # a scorer bug on one file must not stop a batch
        error = error_object(Failure.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        return Done(index, Status.FAILED, None, error, time.perf_counter() - started)
    return Done(index, Status.SCORED, result, None, time.perf_counter() - started)


#: How a worker judges one submission: `judge`, or a stand-in in the tests (a module-level
#: function, so that a spawned worker can import it).
Judge = Callable[[Task, int, Path], Done]


def _serve(conn: Connection, judge: Judge) -> None:  # pragma: no cover - a worker
    """A worker's life: receive the task, then judge each (index, path) received until told
    to stop (None). The task comes through the pipe, not with the start: starting is the
    instant Ctrl-C is ignored (`no_ctrl_c`), and sending a solution takes much longer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    die_with(os.getppid())
    try:
        task: Task = conn.recv()
    except (EOFError, OSError, pickle.UnpicklingError):  # the parent stopped while sending
        return
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(judge(task, *job))


@dataclass
class _Slot:
    """One worker process and the submission it is judging, if any."""

    process: SpawnProcess
    conn: Connection
    temporary: Path  # the worker's TMPDIR: the parent removes it, however the worker ended
    job: tuple[int, Path] | None = None
    started: float = field(default=0.0)
    killed: tuple[Failure, str] | None = None  # why the watchdog killed it


class Cancelled(Exception):
    """`Workers.judge` stopped because its `cancel` event was set (a server stopping)."""


class Workers:
    """A fixed number of worker processes judging submissions under a memory budget (bytes of
    resident memory each) and a time limit (seconds a submission). Setting `cancel` stops
    `judge` within `POLL` seconds (`Cancelled`); the workers stop with the pool."""

    def __init__(
        self,
        task: Task,
        *,
        workers: int,
        budget: int,
        timeout: float,
        judge: Judge = judge,
        cancel: threading.Event | None = None,
        sharing: int | None = None,
        scratch: Path | None = None,
    ) -> None:
        """`sharing`: how many workers share the cores, when pools run side by side (a
        server's, one a slot); `scratch`: the folder the workers' own folders are made in
        (the system's temporary folder without it)."""
        if workers < 1:
            raise ValueError(f"workers = {workers}; expected at least 1")
        self.task = task
        self._judge = judge
        self.workers = workers
        self.budget = budget
        self.timeout = timeout
        self.cancel = cancel
        self._context = multiprocessing.get_context("spawn")
        self._slots: list[_Slot] = []
        #: Held while a job is handed out and while the watchdog judges a worker's limits.
        self._lock = threading.Lock()
        #: What each worker's environment adds to this process's (`threads`).
        share = workers if sharing is None else sharing
        self.environment = {} if POLARS_THREADS in os.environ else threads(share)
        self.scratch = scratch

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def judge(self, jobs: Iterable[tuple[int, Path]]) -> Iterator[Done]:
        """Each job's verdict, in the order they finish. Jobs are taken from `jobs` as
        workers become free, one ahead (a caller may prepare each one as it is asked for:
        the next one is prepared while the workers judge). A free worker gets its next job
        before the verdicts just collected are handed to the caller."""
        pending = iter(jobs)
        waiting: deque[tuple[int, Path]] = deque()
        stop = threading.Event()
        # The limits are kept by a thread of their own: this loop also prepares the next job
        # (copies and hashes an upload), and a watchdog paused meanwhile let a bomb's worker
        # run far past its memory and time.
        watchdog = threading.Thread(target=self._keep_limits, args=(stop,), daemon=True)
        watchdog.start()
        try:
            while True:
                self._hand_out(pending, waiting)
                busy = [slot for slot in self._slots if slot.job is not None]
                if not busy:
                    return
                ready = wait([slot.conn for slot in busy], timeout=POLL)
                if self.cancel is not None and self.cancel.is_set():
                    raise Cancelled
                verdicts: list[Done] = []
                for slot in busy:
                    done = self._collect(slot) if slot.conn in ready else self._watch(slot)
                    verdicts.extend([done] if done is not None else [])
                if verdicts:
                    self._hand_out(pending, waiting)
                yield from verdicts
        finally:
            stop.set()
            watchdog.join()

    def _keep_limits(self, stop: threading.Event) -> None:
        """Every `POLL` seconds, kill a busy worker over its time or memory, noting why."""
        while not stop.wait(POLL):
            for slot in list(self._slots):
                with self._lock:
                    if slot.job is None or slot.killed is not None:
                        continue
                    over = self._over(slot)
                    if over is not None:
                        slot.killed = over
                        slot.process.kill()

    def _over(self, slot: _Slot) -> tuple[Failure, str] | None:
        """Which limit a busy worker is over, and how it says so; None within both."""
        if time.monotonic() - slot.started > self.timeout:
            return Failure.TIMED_OUT, f"took more than {self.timeout:g} s (--timeout)"
        rss = resident_bytes(slot.process.pid)
        if rss is not None and rss > self.budget:
            reason = f"needed more than its memory budget of {size(self.budget)} (--max-memory)"
            return Failure.OUT_OF_MEMORY, reason
        return None

    def _hand_out(
        self, pending: Iterator[tuple[int, Path]], waiting: deque[tuple[int, Path]]
    ) -> None:
        """Send waiting jobs to free workers (starting workers up to `workers`), then take
        the next job from `pending` so that one is ready when a worker is free again."""
        while True:
            if not waiting and (job := next(pending, None)) is not None:
                waiting.append(job)
            if not waiting or (slot := self._idle()) is None:
                return
            try:
                slot.conn.send(waiting[0])
            except OSError:  # the worker died between two submissions: replace it
                self._drop(slot)
                continue
            with self._lock:
                slot.job, slot.started = waiting.popleft(), time.monotonic()

    def close(self) -> None:
        """Stop every worker: ask, wait `GRACE` seconds, then kill."""
        for slot in self._slots:
            with contextlib.suppress(OSError):  # a dead worker's pipe
                slot.conn.send(None)
        deadline = time.monotonic() + GRACE
        for slot in self._slots:
            slot.process.join(max(0.0, deadline - time.monotonic()))
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join()
            slot.conn.close()
            shutil.rmtree(slot.temporary, ignore_errors=True)
        self._slots.clear()

    def _drop(self, slot: _Slot) -> None:
        """Forget a worker that is dead or killed, and the files it left."""
        slot.process.join()
        slot.conn.close()
        shutil.rmtree(slot.temporary, ignore_errors=True)
        self._slots.remove(slot)

    def _idle(self) -> _Slot | None:
        for slot in self._slots:
            if slot.job is None:
                return slot
        if len(self._slots) < self.workers:
            self._slots.append(self._start())
            return self._slots[-1]
        return None

    def _start(self) -> _Slot:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(child, self._judge), daemon=True)
        temporary = Path(tempfile.mkdtemp(prefix="scorer-worker-", dir=self.scratch))
        # read by polars when the worker imports it; TMPDIR by every temporary file it makes
        with environment({**self.environment, "TMPDIR": str(temporary)}), no_ctrl_c():
            process.start()
        child.close()
        slot = _Slot(process, parent, temporary)
        with contextlib.suppress(OSError):  # it died at once: `_watch` replaces it
            parent.send(self.task)
        return slot

    def _collect(self, slot: _Slot) -> Done | None:
        """The verdict a worker sent, or a failure if it died instead."""
        try:
            done: Done = slot.conn.recv()
        except (EOFError, OSError):
            slot.process.join()
            if slot.killed is not None:  # the watchdog's doing
                return self._fail(slot, *slot.killed)
            return self._fail(slot, Failure.WORKER_DIED, died(slot.process.exitcode))
        with self._lock:
            slot.job = None
        return done

    def _watch(self, slot: _Slot) -> Done | None:
        """A failure if the busy worker went over its time or memory, or died; else None."""
        with self._lock:
            over = slot.killed or self._over(slot)
        if over is not None:
            return self._fail(slot, *over, kill=True)
        if not slot.process.is_alive():
            return self._collect(slot)
        return None

    def _fail(self, slot: _Slot, failure: Failure, reason: str, *, kill: bool = False) -> Done:
        """A failed verdict for the worker's submission; the worker is replaced."""
        if slot.job is None:  # `judge` watches busy workers only
            raise RuntimeError("a worker failed without a submission")
        index = slot.job[0]
        seconds = time.monotonic() - slot.started
        if kill:
            slot.process.kill()
        self._drop(slot)
        error = error_object(failure, f"the submission {reason}")
        return Done(index, Status.FAILED, None, error, seconds)


def died(exitcode: int | None) -> str:
    """Why a worker is gone, from its exit code (negative: the signal that killed it)."""
    if exitcode is not None and exitcode < 0:
        return f"killed its worker (signal {signal.Signals(-exitcode).name})"
    return f"ended its worker (exit code {exitcode})"


def resident_bytes(pid: int | None) -> int | None:
    """A process's resident memory, or None where the system does not say (not Linux)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def default_workers(budget: int) -> int:
    """As many workers as cores, but no more than the machine's memory holds at `budget`
    each (Linux; elsewhere the cores)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = None
    fits = (memory // budget) if memory else cores()
    return max(1, min(cores(), fits))


#: The environment variable polars reads, once, for the size of its thread pool.
POLARS_THREADS = "POLARS_MAX_THREADS"


def threads(workers: int, available: int | None = None) -> dict[str, str]:
    """The environment that gives each of `workers` workers its share of the `available`
    cores (by default this process's) as polars threads, at least one: {} for a single
    worker, which keeps polars' own choice (a thread a core). Without it every worker starts
    a thread a core, and on 2 cores 2 workers run 4 busy threads."""
    if workers <= 1:
        return {}
    share = max(1, (available if available is not None else cores()) // workers)
    return {POLARS_THREADS: str(share)}
