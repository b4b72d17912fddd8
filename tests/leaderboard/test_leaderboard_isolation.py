"""A leaderboard batch that one bad file can never stop: in the middle of the log, a gzip bomb
and a file over the memory budget (both refused by name before they cost memory), a worker
whose memory grows past the budget anyway (killed) and a worker killed by a signal: each is
recorded with its reason, every other submission is scored, the batch exits 0, and a rerun
does not judge the same bytes again."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scorer.cli import app
from scorer.leaderboard import batch
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.results import BatchResult
from scorer.leaderboard.worker import Done, Task, judge

runner = CliRunner()
GIB = 1 << 30


def bomb(path: Path, expanded: int) -> Path:
    """A small .csv.gz that expands to `expanded` bytes of valid-looking rows: one member
    compressed once, then repeated (a gzip file may hold many members)."""
    rows = b"10000,500001,1\n" * (1 << 22)  # 60 MiB
    member = gzip.compress(rows, compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(b"user_id,edition_id,rank\n"))
        for _ in range(expanded // len(rows) + 1):
            out.write(member)
    return path


def hog(path: Path, size: int) -> Path:
    """A plain CSV of `size` bytes whose every row is one user's: within every size and row
    cap, it takes several times its size in memory to judge."""
    block = b"10000,500001,1\n" * (1 << 20)
    with path.open("wb") as out:
        out.write(b"user_id,edition_id,rank\n")
        for _ in range(size // len(block)):
            out.write(block)
    return path


@pytest.fixture()
def hostile(tmp_path: Path) -> Path:
    """The demo competition with two uploads of team mallory in the middle of the log: a 5 MB
    gzip bomb (3 GiB of rows) and a 400 MB file of one user's rows."""
    make_demo(tmp_path)
    bomb(tmp_path / "submissions" / "bomb.csv.gz", 3 * GIB)
    hog(tmp_path / "submissions" / "hog.csv", 400 << 20)
    manifest = tmp_path / "manifest.csv"
    lines = manifest.read_text().splitlines()
    middle = len(lines) // 2
    lines.insert(middle, "mallory,submissions/bomb.csv.gz,2024-05-01T15:30:00Z,")
    lines.insert(middle, "mallory,submissions/hog.csv,2024-05-01T15:20:00Z,")
    manifest.write_text("\n".join(lines) + "\n")
    return tmp_path


def board(root: Path, *more: str) -> Any:
    args = ["leaderboard", "score", str(root / "manifest.csv"), "--solution"]
    args += [str(root / "solution.csv"), "--db", str(root / "board.db"), "--json", *more]
    return runner.invoke(app, args)


def test_hostile_files_in_the_middle_are_refused_alone_and_the_batch_goes_on(
    hostile: Path,
) -> None:
    """Both are refused by name before they cost memory: the hog from the budget's estimate
    (it would be read in parts, but this budget is smaller than the parts machinery), the
    bomb as it expands (its gzip trailer claims 60 MiB, which the typed reader would read
    within the budget; it is stopped past 100 times its compressed bytes read)."""
    budget = str(512 << 20)
    first = board(hostile, "--workers", "2", "--max-memory", budget)
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert (data["total"], data["scored"], data["rejected"], data["failed"]) == (14, 10, 4, 0)
    verdicts = {s["path"]: s["error"]["problems"][0]["code"] for s in data["failures"]}
    assert verdicts["submissions/bomb.csv.gz"] == "file_too_large"
    assert verdicts["submissions/hog.csv"] == "too_large_for_memory"
    again = json.loads(board(hostile, "--workers", "2", "--max-memory", budget).stdout)
    assert again["scored"] == 0 and again["cached"] + again["rejected"] == 14


def greedy(task: Task, index: int, path: Path) -> Done:
    """A worker whose memory grows past any estimate on golf's worse.csv (a bug, a corner the
    planner did not foresee): the budget's watchdog must catch it."""
    if path.name == "worse.csv":
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))  # zero-filled: every page is touched
    return judge(task, index, path)


def test_a_worker_over_the_memory_budget_fails_its_submission_once(hostile: Path) -> None:
    isolation = batch.Isolation(workers=2, budget=GIB, timeout=600, judge=greedy)

    def run(**options: Any) -> BatchResult:
        return batch.score_log(
            hostile / "manifest.csv",
            hostile / "solution.csv",
            hostile / "board.db",
            isolation=isolation,
            **options,
        )

    first = run()
    failed = {o.path: o.error for o in first.outcomes if o.status == "failed"}
    assert list(failed) == ["submissions/golf/worse.csv"]
    error = failed["submissions/golf/worse.csv"]
    assert error is not None and error["code"] == "out_of_memory"
    assert error["message"] == (
        "the submission needed more than its memory budget of 1 GiB (--max-memory)"
    )
    assert first.counts["scored"] == 9 and first.host_failures == []
    again = run()  # the same bytes are not judged again
    assert [o.path for o in again.outcomes if not o.cached] == []
    with sqlite3.connect(hostile / "board.db") as db:
        rows = db.execute("SELECT count(*) FROM verdicts WHERE status = 'failed'").fetchone()
    assert rows == (1,)
    retried = run(retry_failed=True)  # unless asked
    assert [o.path for o in retried.outcomes if not o.cached] == ["submissions/golf/worse.csv"]


def killed_on_worse(task: Task, index: int, path: Path) -> Done:
    """A worker that a signal kills while it judges golf's worse.csv (the OOM killer, say;
    the worker sees a private copy of the file, under the file's name)."""
    if path.name == "worse.csv":
        os.kill(os.getpid(), signal.SIGKILL)
    return judge(task, index, path)


def test_a_worker_killed_by_a_signal_fails_its_submission_and_the_batch_goes_on(
    hostile: Path,
) -> None:
    isolation = batch.Isolation(workers=2, budget=512 << 20, timeout=600, judge=killed_on_worse)
    result = batch.score_log(
        hostile / "manifest.csv",
        hostile / "solution.csv",
        hostile / "board.db",
        isolation=isolation,
    )
    failed = {o.path: o.error for o in result.outcomes if o.status == "failed"}
    assert set(failed) == {"submissions/golf/worse.csv"}
    assert failed["submissions/golf/worse.csv"] == {
        "code": "worker_died",
        "message": "the submission killed its worker (signal SIGKILL)",
        "role": None,
        "file": None,
        "total": 0,
        "problems": [],
    }
    assert result.counts["scored"] == 9 and result.counts["rejected"] == 4
    assert result.host_failures == []  # the exit code stays 0: not a bug of the scorer
