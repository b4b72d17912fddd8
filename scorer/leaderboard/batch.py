"""Score every submission of a log into the database, rescoring only what changed."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scorer.competition import LOST_ITEMS, Competition, EmptyUsers, Split
from scorer.contract import Codes, Role, reading
from scorer.errors import (
    Code,
    Failure,
    FileSystemError,
    ScorerError,
    SubmissionError,
    single,
)
from scorer.leaderboard import runs
from scorer.leaderboard.manifest import Submission, read_log
from scorer.leaderboard.results import WRONG_SOLUTION_CODES, BatchResult, Outcome
from scorer.leaderboard.schema import Status
from scorer.leaderboard.store import Store
from scorer.leaderboard.truth import Truth, fingerprint_of, planned, split_scores
from scorer.leaderboard.worker import (
    DEFAULT_BUDGET,
    DEFAULT_TIMEOUT,
    Done,
    Judge,
    Task,
    Workers,
    cores,
    judge,
)
from scorer.read import DEFAULT_LIMITS, Limits, Rejected, digest, snapshot

#: Called once before the first submission (done = 0, outcome None), then after each one.
Progress = Callable[[int, int, "Outcome | None"], None]


class SolutionMismatch(ScorerError):
    """A run stopped because most submissions miss the solution's users: the organiser's
    solution is likely the wrong file (exit 2); nothing of the run is kept."""

    exit_code = 2
    failure = Failure.SOLUTION_MISMATCH


def file_hash(path: Path, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """sha256 of a regular file's bytes; None when it is missing, not a regular file,
    unreadable or over the size limit (the scorer then rejects it, and it is checked again
    on every run). A pipe is never opened."""
    try:
        return digest(path, path.name, limits)
    except (Rejected, ScorerError, OSError):
        return None


def hashes(entries: Sequence[Submission], limits: Limits) -> Iterator[str | None]:
    """Each submission's `file_hash`, in order (None for one refused unopened), hashed on
    every core: hashlib lets go of the interpreter while it hashes."""
    pool = ThreadPoolExecutor(max_workers=cores())
    try:
        yield from pool.map(
            lambda entry: None if entry.refusal is not None else file_hash(entry.path, limits),
            entries,
        )
    finally:  # a run stopped early: the files not yet hashed never will be
        pool.shutdown(cancel_futures=True)


def score_log(
    log: Path,
    solution: Path,
    db: Path,
    *,
    competition: Competition = LOST_ITEMS,
    no_lost: EmptyUsers | str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    force: bool = False,
    isolation: Isolation | None = None,
    retry_failed: bool = False,
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
            force=force,
            isolation=isolation,
            retry_failed=retry_failed,
        )


@dataclass(frozen=True)
class Isolation:
    """How submissions are judged: in `workers` processes, each killed past `budget` bytes of
    resident memory or `timeout` seconds on one submission (`worker.Workers`); `workers = 0`
    judges them in this process, unguarded (a debugger, a test's monkeypatch)."""

    workers: int = 1
    budget: int = DEFAULT_BUDGET
    timeout: float = DEFAULT_TIMEOUT
    #: How one submission is judged: `worker.judge`, or a stand-in (a module-level function,
    #: so that a spawned worker can import it) in the tests.
    judge: Judge = judge
    #: Set, it stops the run within `worker.POLL` seconds (`worker.Cancelled`): a server
    #: stopping. The run stays unfinished, as after a kill; its verdicts are kept.
    cancel: threading.Event | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.workers < 0 or self.budget < 1 or self.timeout <= 0:
            raise ValueError(f"{self}: expected workers >= 0, budget >= 1 and timeout > 0")


def score_entries(
    entries: Sequence[Submission],
    solution: Path,
    store: Store,
    *,
    competition: Competition = LOST_ITEMS,
    no_lost: EmptyUsers | str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    force: bool = False,
    isolation: Isolation | None = None,
    retry_failed: bool = False,
    content_hashes: Sequence[str] | None = None,
) -> BatchResult:
    """Score each submission whose content, solution, scorer version or options changed since
    its stored verdict; reuse the rest. One broken file never stops the batch: it is recorded
    as rejected (the participant's problem) or failed (the system refused to read it, a
    scorer bug, or its worker ran out of memory or time, or died) and the batch goes on; a
    failed verdict is reused like the others unless `retry_failed`. A submission is judged
    from a private copy made while hashing it, so the hash stored is that of exactly the bytes
    judged, whatever happens to the file meanwhile. A broken solution stops the batch before
    any submission is touched (`HostError`).

    The boards change only when the run finishes. Under a solution other than the shown
    boards', the run stops (`SolutionMismatch`, nothing kept) as soon as more than half of
    the log is rejected for missing or unknown users, unless `force`.

    `content_hashes`: each entry's sha256, when the caller knows it for files that never change (a
    server's uploads, written once): the files are then not hashed again to find the cached
    verdicts; a fresh one is still judged from a private copy, hashed as it is made."""
    isolation = isolation if isolation is not None else Isolation()
    policy, limits = planned(competition, no_lost, limits, isolation)
    truth = Truth(solution, competition, limits, store)
    fingerprint = fingerprint_of(truth.digest, competition, policy, limits)
    if not runs.has_solution(store, truth.digest):
        truth.load()  # a new solution: check it before anything is recorded under its hash
    # The guard against a wrong solution watches every run but one under the solution of the
    # boards shown: there, rejections are the participants'. A solution published before and
    # replaced since is watched again (it emptied the boards when it was not).
    shown = store.published()
    watch = not force and (shown is None or shown.fingerprint.solution_hash != truth.digest)
    run = runs.start(store, fingerprint, len(entries))
    outcomes: dict[int, Outcome] = {}
    verdicts: dict[int, int] = {}
    digests: dict[int, str | None] = {}
    wrong = 0

    def done(index: int, outcome: Outcome, verdict: int) -> None:
        nonlocal wrong
        outcomes[index], verdicts[index] = outcome, verdict
        wrong += outcome.wrong_users
        if watch and wrong * 2 > len(entries):
            runs.stop(store, run)
            raise SolutionMismatch(_mismatch(wrong, len(outcomes), len(entries), truth))
        if progress is not None:
            progress(len(outcomes), len(entries), outcome)

    if progress is not None:
        progress(0, len(entries), None)
    hashed = iter(content_hashes) if content_hashes is not None else hashes(entries, limits)
    for index, (entry, content) in enumerate(zip(entries, hashed, strict=True)):
        if entry.refusal is not None:  # a link out of its team's folder, a pipe: never opened
            continue
        digests[index] = content
        known = runs.cached(
            store, entry.team, entry.key, digests[index], fingerprint, failed=not retry_failed
        )
        if known is not None:
            runs.note_judged(store, run)
            outcome = Outcome(entry.team, entry.key, known.status, True, known.public, known.error)
            done(index, outcome, known.id)
    fresh = [i for i in range(len(entries)) if i not in outcomes]
    if fresh:
        answers, ids, stages = truth.load()
        task = Task(answers, competition, policy, limits)
        with tempfile.TemporaryDirectory(prefix="scorer-batch-") as folder:

            def jobs() -> Iterator[tuple[int, Path]]:
                """Each fresh submission's private copy, made as a worker is free for it; a
                submission refused before it is copied is recorded at once."""
                for i in fresh:
                    prepared = _prepare(entries[i], i, Path(folder) / str(i), limits)
                    if isinstance(prepared, Done):
                        done(
                            i,
                            *_record(
                                entries[i], prepared, None, ids, stages, store, run, answers.codes
                            ),
                        )
                        continue
                    digests[i] = prepared[1]
                    yield i, prepared[0]

            # closing: the workers stop on any exit (a stopped run, Ctrl-C)
            with closing(_judged(task, jobs(), len(fresh), isolation)) as judged:
                for verdict in judged:
                    i = verdict.index
                    shutil.rmtree(Path(folder) / str(i), ignore_errors=True)
                    done(
                        i,
                        *_record(
                            entries[i], verdict, digests[i], ids, stages, store, run, answers.codes
                        ),
                    )
    ordered = tuple(outcomes[i] for i in range(len(entries)))
    result = BatchResult(outcomes=ordered, removed=0, total=len(entries), board=competition.board)
    pairs = [(entry, verdicts[i]) for i, entry in enumerate(entries)]
    removed = runs.finish(store, run, pairs, result.counts)
    return dataclasses.replace(result, removed=removed)


def _prepare(
    entry: Submission, index: int, folder: Path, limits: Limits
) -> tuple[Path, str] | Done:
    """A private copy of a submission and the sha256 of its bytes, or the verdict of one
    that cannot be copied: rejected (a link out of its team's folder, a pipe, a missing or
    oversized file) or failed (the system refused to read it; tried again next run)."""
    if entry.refusal is not None:
        report = single(entry.path.name, Code.NOT_A_FILE, f"{entry.path.name}: {entry.refusal}")
        return Done(index, Status.REJECTED, None, SubmissionError(report).to_dict(), 0.0)
    folder.mkdir()
    try:
        with reading(Role.SUBMISSION):
            return snapshot(entry.path, entry.path.name, folder, limits)
    except SubmissionError as exc:
        return Done(index, Status.REJECTED, None, exc.to_dict(), 0.0)
    except (FileSystemError, OSError) as exc:
        failure = exc if isinstance(exc, FileSystemError) else FileSystemError.of(exc)
        return Done(index, Status.FAILED, None, failure.to_dict(), 0.0)


def _judged(
    task: Task, jobs: Iterator[tuple[int, Path]], count: int, isolation: Isolation
) -> Generator[Done, None, None]:
    """Each job's verdict, from worker processes (in the order they finish) or, with no
    workers, from this process (in order)."""
    if isolation.workers == 0:
        yield from (isolation.judge(task, index, path) for index, path in jobs)
        return
    with Workers(
        task,
        workers=min(isolation.workers, count),
        budget=isolation.budget,
        timeout=isolation.timeout,
        judge=isolation.judge,
        cancel=isolation.cancel,
    ) as pool:
        yield from pool.judge(jobs)


def _record(
    entry: Submission,
    verdict: Done,
    digest: str | None,
    ids: np.ndarray,
    stages: np.ndarray,
    store: Store,
    run: int,
    codes: Codes | None = None,
) -> tuple[Outcome, int]:
    """Store one fresh verdict: its outcome and its verdict id. `codes`: the solution's,
    when its ids are text (`ids` are then its users' codes)."""
    result = verdict.result
    scores: dict[str, Any] | None = None
    per_user: dict[Split, np.ndarray] | None = None
    public: float | None = None
    if result is not None:
        public, scores = result.public, result.to_dict()
        per_user = split_scores(result, ids, stages, codes)
    ident = runs.save(
        store,
        run,
        entry,
        status=verdict.status,
        content_hash=digest,
        scores=scores,
        error=verdict.error,
        per_user=per_user,
        seconds=verdict.seconds,
    )
    return Outcome(entry.team, entry.key, verdict.status, False, public, verdict.error), ident


def _mismatch(wrong: int, judged: int, total: int, truth: Truth) -> str:
    _, ids, _ = truth.load()
    codes = ", ".join(sorted(WRONG_SOLUTION_CODES))
    return (
        f"stopped after {judged} of {total} submissions: {wrong} were rejected for missing or "
        f"unknown users ({codes}), more than half of the log. The solution "
        f"{truth.path.name} ({ids.size:,} users) is likely not the one these submissions "
        "answer (another competition's, round's or split's). Nothing was recorded and the "
        "boards are unchanged: check --solution, or add --force to score anyway"
    )
