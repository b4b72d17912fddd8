"""Every core at work: the cache check hashes files on every core, each worker's polars
threads are its share of the cores, and a free worker gets its next submission before the
parent records the verdict it just sent."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from scorer.leaderboard.batch import hashes
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.manifest import read_log
from scorer.leaderboard.schema import Status
from scorer.leaderboard.worker import POLARS_THREADS, Done, Task, Workers, cores, threads
from scorer.read import DEFAULT_LIMITS

GIB = 1 << 30


def environment(task: Task, index: int, path: Path) -> Done:
    """A worker that tells what its environment and its polars thread pool are."""
    seen = {"variable": os.environ.get(POLARS_THREADS), "pool": pl.thread_pool_size()}
    return Done(index, Status.SCORED, None, seen, 0.0)


def seen(task: Task, workers: int, jobs: int) -> list[dict[str, object]]:
    paths = [Path(f"{i}.csv") for i in range(jobs)]
    with Workers(task, workers=workers, budget=4 * GIB, timeout=600, judge=environment) as pool:
        done = sorted(pool.judge(enumerate(paths)), key=lambda d: d.index)
    return [d.error or {} for d in done]


def test_each_worker_gets_its_share_of_the_cores() -> None:
    assert threads(1, 8) == {}  # one worker: polars' own choice, a thread a core
    assert threads(2, 2) == {POLARS_THREADS: "1"}
    assert threads(2, 8) == {POLARS_THREADS: str(8 // 2)}
    assert threads(4, 2) == {POLARS_THREADS: "1"}  # at least one thread
    assert threads(3, 8) == {POLARS_THREADS: str(8 // 3)}
    assert threads(2) == {POLARS_THREADS: str(max(1, cores() // 2))}


def test_workers_start_with_their_share_and_this_process_keeps_its_own(
    demo: tuple[Task, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = demo
    monkeypatch.delenv(POLARS_THREADS, raising=False)
    share = max(1, cores() // 2)
    assert seen(task, workers=2, jobs=4) == [{"variable": str(share), "pool": share}] * 4
    assert POLARS_THREADS not in os.environ  # set for the workers only
    alone = seen(task, workers=1, jobs=2)
    assert alone == [{"variable": None, "pool": pl.thread_pool_size()}] * 2


def test_a_thread_count_the_host_set_is_kept(
    demo: tuple[Task, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _ = demo
    monkeypatch.setenv(POLARS_THREADS, "3")
    assert seen(task, workers=2, jobs=2) == [{"variable": "3", "pool": 3}] * 2
    assert os.environ[POLARS_THREADS] == "3"


def test_a_free_worker_gets_its_next_job_before_the_verdict_is_recorded(
    demo: tuple[Task, list[Path]],
) -> None:
    """One job is prepared ahead, and a worker that sends a verdict is sent the prepared job
    (and the next one is prepared) before the caller sees the verdict: the worker judges
    while the parent records."""
    task, paths = demo
    events: list[str] = []

    def jobs() -> Iterator[tuple[int, Path]]:
        for i in range(3):
            events.append(f"take {i}")
            yield i, paths[0]

    with Workers(task, workers=1, budget=4 * GIB, timeout=600) as pool:
        for done in pool.judge(jobs()):
            assert done.status == Status.SCORED
            events.append(f"verdict {done.index}")
    assert events == ["take 0", "take 1", "take 2", "verdict 0", "verdict 1", "verdict 2"]


def test_the_cache_check_hashes_every_file_in_order(tmp_path: Path) -> None:
    make_demo(tmp_path)
    entries = read_log(tmp_path / "manifest.csv")
    expected = [hashlib.sha256(entry.path.read_bytes()).hexdigest() for entry in entries]
    assert list(hashes(entries, DEFAULT_LIMITS)) == expected
    refused = [replace(entries[0], refusal="a link out of its team's folder"), *entries[1:]]
    assert list(hashes(refused, DEFAULT_LIMITS)) == [None, *expected[1:]]
