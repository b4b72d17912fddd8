"""A leaderboard batch that one bad file can never stop: a gzip bomb in the middle of the log
and a worker killed by a signal are recorded as failed with their reasons, every other
submission is scored, the batch exits 0, and a rerun does not judge the same bytes again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_worker import bomb
from typer.testing import CliRunner

from scorer.cli import app
from scorer.leaderboard import batch
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.worker import Done, Task, judge

runner = CliRunner()
GIB = 1 << 30


@pytest.fixture()
def hostile(tmp_path: Path) -> Path:
    """The demo competition with a 5 MB gzip bomb (3 GiB of rows) as team mallory's upload,
    in the middle of the log."""
    make_demo(tmp_path)
    bomb(tmp_path / "submissions" / "bomb.csv.gz", 3 * GIB)
    manifest = tmp_path / "manifest.csv"
    lines = manifest.read_text().splitlines()
    middle = len(lines) // 2
    lines.insert(middle, "mallory,submissions/bomb.csv.gz,2024-05-01T15:30:00Z,")
    manifest.write_text("\n".join(lines) + "\n")
    return tmp_path


def board(root: Path, *more: str) -> Any:
    args = ["leaderboard", "score", str(root / "manifest.csv"), "--solution"]
    args += [str(root / "solution.csv"), "--db", str(root / "board.db"), "--json", *more]
    return runner.invoke(app, args)


def test_a_gzip_bomb_in_the_middle_fails_alone_and_is_not_judged_again(hostile: Path) -> None:
    first = board(hostile, "--workers", "2", "--max-memory", str(GIB))
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert (data["total"], data["scored"], data["rejected"], data["failed"]) == (13, 10, 2, 1)
    (failed,) = [s for s in data["failures"] if s["status"] == "failed"]
    assert failed["path"] == "submissions/bomb.csv.gz"
    assert failed["error"]["code"] == "out_of_memory"
    assert "memory budget of 1 GiB (--max-memory)" in failed["error"]["message"]

    again = json.loads(board(hostile, "--workers", "2", "--max-memory", str(GIB)).stdout)
    assert again["scored"] == 0  # nothing judged again, the bomb included
    (cached,) = [s for s in again["submissions"] if s["path"] == "submissions/bomb.csv.gz"]
    assert (cached["status"], cached["cached"]) == ("failed", True)
    with sqlite3.connect(hostile / "board.db") as db:
        rows = db.execute("SELECT count(*) FROM verdicts WHERE status = 'failed'").fetchone()
    assert rows == (1,)

    retried = board(hostile, "--workers", "1", "--max-memory", str(GIB), "--retry-failed")
    assert retried.exit_code == 0
    redone = json.loads(retried.stdout)
    assert redone["failed"] == 1  # judged again, and failed again
    (fresh,) = [s for s in redone["submissions"] if s["path"] == "submissions/bomb.csv.gz"]
    assert fresh["cached"] is False


def killed_on_nudge(task: Task, index: int, path: Path) -> Done:
    """A worker that a signal kills while it judges golf's nudge.csv (the OOM killer, say)."""
    if path.name == "nudge.csv" and path.parent.name == "golf":
        os.kill(os.getpid(), signal.SIGKILL)
    return judge(task, index, path)


def test_a_worker_killed_by_a_signal_fails_its_submission_and_the_batch_goes_on(
    hostile: Path,
) -> None:
    isolation = batch.Isolation(workers=2, budget=GIB, timeout=600, judge=killed_on_nudge)
    result = batch.score_log(
        hostile / "manifest.csv",
        hostile / "solution.csv",
        hostile / "board.db",
        isolation=isolation,
    )
    failed = {o.path: o.error for o in result.outcomes if o.status == "failed"}
    assert set(failed) == {"submissions/golf/nudge.csv", "submissions/bomb.csv.gz"}
    assert failed["submissions/golf/nudge.csv"] == {
        "code": "worker_died",
        "message": "the submission killed its worker (signal SIGKILL)",
        "role": None,
        "file": None,
        "total": 0,
        "problems": [],
    }
    assert result.counts["scored"] == 9 and result.counts["rejected"] == 2
    assert result.bugs == []  # the exit code stays 0: not a bug of the scorer
