"""A leaderboard batch that one bad file can never stop: in the middle of the log, a gzip bomb
(refused by the read layer) and a file that needs more memory than the budget (its worker
killed), and a worker killed by a signal: each is recorded with its reason, every other
submission is scored, the batch exits 0, and a rerun does not judge the same bytes again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_worker import bomb, hog
from typer.testing import CliRunner

from scorer.cli import app
from scorer.leaderboard import batch
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.worker import Done, Task, judge

runner = CliRunner()
GIB = 1 << 30


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


def test_hostile_files_in_the_middle_fail_alone_and_are_not_judged_again(hostile: Path) -> None:
    budget = str(512 << 20)
    first = board(hostile, "--workers", "2", "--max-memory", budget)
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert (data["total"], data["scored"], data["rejected"], data["failed"]) == (14, 10, 3, 1)
    verdicts = {s["path"]: s for s in data["failures"]}
    bombed = verdicts["submissions/bomb.csv.gz"]
    assert (bombed["status"], bombed["error"]["problems"][0]["code"]) == (
        "rejected",
        "file_too_large",
    )
    hogged = verdicts["submissions/hog.csv"]
    assert (hogged["status"], hogged["error"]["code"]) == ("failed", "out_of_memory")
    assert "memory budget of 512 MiB (--max-memory)" in hogged["error"]["message"]

    again = json.loads(board(hostile, "--workers", "2", "--max-memory", budget).stdout)
    assert again["scored"] == 0  # nothing judged again, the hog included
    (cached,) = [s for s in again["submissions"] if s["path"] == "submissions/hog.csv"]
    assert (cached["status"], cached["cached"]) == ("failed", True)
    with sqlite3.connect(hostile / "board.db") as db:
        rows = db.execute("SELECT count(*) FROM verdicts WHERE status = 'failed'").fetchone()
    assert rows == (1,)

    retried = board(hostile, "--workers", "1", "--max-memory", budget, "--retry-failed")
    assert retried.exit_code == 0
    redone = json.loads(retried.stdout)
    assert redone["failed"] == 1  # judged again, and failed again
    (fresh,) = [s for s in redone["submissions"] if s["path"] == "submissions/hog.csv"]
    assert fresh["cached"] is False


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
    assert set(failed) == {"submissions/golf/worse.csv", "submissions/hog.csv"}
    assert failed["submissions/golf/worse.csv"] == {
        "code": "worker_died",
        "message": "the submission killed its worker (signal SIGKILL)",
        "role": None,
        "file": None,
        "total": 0,
        "problems": [],
    }
    assert result.counts["scored"] == 9 and result.counts["rejected"] == 3
    assert result.host_failures == []  # the exit code stays 0: not a bug of the scorer
