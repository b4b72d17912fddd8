"""The leaderboard's workers under the watchdog and signals (issue 24): limits kept while the
parent is busy, workers that die with their parent, and no temporary file left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.paths import ROOT, TESTS
from support.slow_judges import sleepy

from scorer.leaderboard.worker import Task, Workers

#: A task the slow judges never look at.
TASK = Task(solution=None, competition=None, no_lost=None, limits=None)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie, killed and not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def wait_for(check: object, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def worker_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("scorer-worker-*")}


pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux /proc")


def test_the_watchdog_kills_while_the_parent_prepares_the_next_upload(tmp_path: Path) -> None:
    """The limits are kept by a thread of their own: a worker over its time is killed while
    the parent is still busy copying the next upload (it ran 8.9 s past a 3 s limit)."""
    pid_file = tmp_path / "pid"
    seen_dead = []

    def jobs() -> Iterator[tuple[int, Path]]:
        yield 0, pid_file
        assert wait_for(pid_file.exists)
        pid = int(pid_file.read_text())
        time.sleep(4.0)  # the parent copying a large upload: 4 s against a 1 s limit
        seen_dead.append(not alive(pid))

    before = worker_dirs()
    with Workers(TASK, workers=1, budget=1 << 40, timeout=1.0, judge=sleepy) as workers:
        verdicts = list(workers.judge(jobs()))
    assert seen_dead == [True]
    assert [(d.status, d.error["code"] if d.error else None) for d in verdicts] == [
        ("failed", "timed_out")
    ]
    assert worker_dirs() == before  # its temporary folder, with what it wrote there, is gone


def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    """After `kill -9` of the parent no worker goes on judging unwatched."""
    pid_file = tmp_path / "pid"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(TESTS)!r})
        from support.slow_judges import sleepy
        from scorer.leaderboard.worker import Task, Workers
        task = Task(solution=None, competition=None, no_lost=None, limits=None)
        with Workers(task, workers=1, budget=1 << 40, timeout=600, judge=sleepy) as workers:
            list(workers.judge([(0, Path({str(pid_file)!r}))]))
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    try:
        assert wait_for(lambda: pid_file.exists() and pid_file.read_text()), "no worker started"
        worker = int(pid_file.read_text())
        assert alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        assert wait_for(lambda: not alive(worker), seconds=10.0), "the worker outlived its parent"
    finally:
        parent.kill()


def interrupted_when(reached: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`scorer leaderboard score --json` on the demo, sent Ctrl-C (SIGINT) the moment it has
    `reached` "imports" (polars is being loaded) or "workers" (a worker has loaded it)."""
    demo = tmp_path / "demo"
    made = subprocess.run(
        [sys.executable, "-m", "scorer", "leaderboard", "demo", str(demo)],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert made.returncode == 0
    command = [
        sys.executable,
        "-m",
        "scorer",
        "leaderboard",
        "score",
        str(demo / "manifest.csv"),
        "--solution",
        str(demo / "solution.csv"),
        "--db",
        str(demo / "b.db"),
        "--json",
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    def there() -> bool:
        if reached == "imports":
            return "polars" in Path(f"/proc/{process.pid}/maps").read_text()
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        # a worker that has loaded polars: started, and judging (the instant a worker is
        # started, Ctrl-C is ignored, so that the worker starts ignoring it)
        return any("polars" in Path(f"/proc/{pid}/maps").read_text() for pid in children)

    assert wait_for(there), f"never reached {reached}"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@pytest.mark.parametrize("reached", ["imports", "workers"])
def test_ctrl_c_is_one_json_object_with_status_interrupted(reached: str, tmp_path: Path) -> None:
    """Issue 24: Ctrl-C while the modules load gave a bare traceback, and workers printed
    theirs; every interrupted outcome is one JSON object, exit 130, and nothing on stderr."""
    done = interrupted_when(reached, tmp_path)
    assert done.returncode == 130, (done.stdout, done.stderr)
    printed = json.loads(done.stdout)
    assert (printed["status"], printed["error"]["code"]) == ("interrupted", "interrupted")
    assert printed["command"] == "leaderboard score"
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
