"""Worker processes: the same verdicts as scoring in this process, and a submission that
exhausts memory, hangs or loses its worker is failed with its reason while the rest go on."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from scorer.leaderboard.schema import Status
from scorer.leaderboard.worker import Done, Judge, Task, Workers, default_workers, died, judge

GIB = 1 << 30


def test_workers_give_the_verdicts_of_this_process(demo: tuple[Task, list[Path]]) -> None:
    task, paths = demo
    here = [judge(task, i, path) for i, path in enumerate(paths)]
    with Workers(task, workers=2, budget=4 * GIB, timeout=600) as workers:
        there = sorted(workers.judge(list(enumerate(paths))), key=lambda done: done.index)
    assert [d.index for d in there] == list(range(len(paths)))
    assert [d.status for d in there] == [d.status for d in here]
    assert Status.REJECTED in {d.status for d in here}
    for mine, theirs in zip(here, there, strict=True):
        assert mine.error == theirs.error
        if mine.result is not None:
            assert theirs.result is not None
            assert theirs.result.to_dict() == mine.result.to_dict()  # to the bit
            assert theirs.result.per_user.equals(mine.result.per_user)


def greedy(task: Task, index: int, path: Path) -> Done:
    """A worker whose memory grows past any estimate on its second submission (a bug, or a
    corner the planner did not foresee): the budget's watchdog must catch it."""
    if index == 1:
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))  # zero-filled: every page is touched
    return judge(task, index, path)


def test_a_submission_over_the_memory_budget_fails_and_the_batch_goes_on(
    demo: tuple[Task, list[Path]],
) -> None:
    task, paths = demo
    jobs = [(0, paths[0]), (1, paths[1]), (2, paths[1])]
    with Workers(task, workers=1, budget=512 << 20, timeout=600, judge=greedy) as workers:
        done = {d.index: d for d in workers.judge(jobs)}
    assert done[1].status == Status.FAILED
    assert done[1].error is not None
    assert done[1].error["code"] == "out_of_memory"
    assert done[1].error["message"] == (
        "the submission needed more than its memory budget of 512 MiB (--max-memory)"
    )
    assert done[0].status == done[2].status == Status.SCORED  # before and after, one worker


def slow(task: Task, index: int, path: Path) -> Done:
    """A worker that hangs on its submission."""
    time.sleep(60)
    return judge(task, index, path)


def killed(task: Task, index: int, path: Path) -> Done:
    """A worker that a signal kills on its first submission (the OOM killer, say)."""
    if index == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return judge(task, index, path)


def aborted(task: Task, index: int, path: Path) -> Done:
    """A worker that aborts as a Rust panic across FFI does (SIGABRT, exit 134 in a shell)."""
    if index == 0:
        os.abort()
    return judge(task, index, path)


def test_a_submission_over_the_time_limit_fails(demo: tuple[Task, list[Path]]) -> None:
    task, paths = demo
    started = time.monotonic()
    with Workers(task, workers=1, budget=4 * GIB, timeout=0.5, judge=slow) as workers:
        (done,) = workers.judge([(0, paths[0])])
    assert time.monotonic() - started < 30
    assert done.status == Status.FAILED
    assert done.error is not None
    assert (done.error["code"], done.error["message"]) == (
        "timed_out",
        "the submission took more than 0.5 s (--timeout)",
    )


@pytest.mark.parametrize(
    ("stand_in", "why"),
    [
        (killed, "killed its worker (signal SIGKILL)"),
        (aborted, "killed its worker (signal SIGABRT)"),
    ],
    ids=["sigkill", "abort"],
)
def test_a_worker_that_dies_fails_its_submission_only(
    demo: tuple[Task, list[Path]], stand_in: Judge, why: str
) -> None:
    task, paths = demo
    jobs = [(0, paths[0]), (1, paths[0])]
    with Workers(task, workers=1, budget=4 * GIB, timeout=600, judge=stand_in) as workers:
        done = {d.index: d for d in workers.judge(jobs)}
    assert done[0].status == Status.FAILED
    assert done[0].error is not None
    assert (done[0].error["code"], done[0].error["message"]) == (
        "worker_died",
        f"the submission {why}",
    )
    assert done[1].status == Status.SCORED  # by a fresh worker


def test_why_a_worker_is_gone() -> None:
    assert died(-9) == "killed its worker (signal SIGKILL)"
    assert died(134) == "ended its worker (exit code 134)"


def test_workers_fit_the_cores_and_the_memory() -> None:
    cores = len(os.sched_getaffinity(0))
    assert 1 <= default_workers(GIB) <= cores
    assert default_workers(1 << 50) == 1  # a budget bigger than the machine: one worker
