"""The leaderboard's workers under the watchdog and signals (issue 24): limits kept while the
parent is busy, workers that die with their parent, and no temporary file left behind."""

from __future__ import annotations

import contextlib
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


def children() -> set[int]:
    """This process's children, a killed one too until it is reaped (it stays a zombie)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").glob("*/children"):
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            found.update(int(pid) for pid in task.read_text().split())
    return found


def workers_started_since(before: set[int]) -> list[int]:
    """The children started since `before` was taken, but multiprocessing's resource tracker
    (started with the first spawned worker, it lives as long as this process)."""

    def tracker(pid: int) -> bool:
        try:
            return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            return False

    return [pid for pid in children() - before if not tracker(pid)]


pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux /proc")


def test_the_watchdog_kills_while_the_parent_prepares_the_next_upload(tmp_path: Path) -> None:
    """The limits are kept by a thread of their own: a worker over its time is killed while
    the parent is still busy copying the next upload (it ran 8.9 s past a 3 s limit)."""
    seen_dead = []
    started_before = children()

    def jobs() -> Iterator[tuple[int, Path]]:
        yield 0, tmp_path / "pid"
        # The worker is found among this process's children, not by the pid `sleepy` writes:
        # its time runs from the moment its job is sent, and on a busy machine a worker still
        # loading is killed before it judges. The parent stays here, busy preparing the next
        # upload, until that worker is dead: only a watchdog of its own can kill it meanwhile.
        (worker,) = workers_started_since(started_before)
        seen_dead.append(wait_for(lambda: not alive(worker)))

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


#: `python -c HELD REACHED MARK ARGS…`: `python -m scorer ARGS…` with its work held until
#: Ctrl-C, so that the signal comes while the command is certainly busy, however loaded the
#: machine. "imports": the import of polars stops, Ctrl-C blocked, once it has touched the file
#: MARK; the Ctrl-C that comes is then delivered there, as a real one would be. "workers": the
#: workers judge with `slow_judges.hanging`, which leaves a file in its worker's temporary
#: folder, then hangs until the worker is killed. Ctrl-C is first what it is in a terminal:
#: tests started in the background by a shell without job control inherit it ignored, and a
#: Python started so never raises KeyboardInterrupt.
HELD = """
import functools, runpy, signal, sys
from pathlib import Path

signal.signal(signal.SIGINT, signal.default_int_handler)
reached, mark = sys.argv[1:3]
del sys.argv[1:3]
if reached == "imports":

    class HeldImport:
        def find_spec(self, name, path=None, target=None):
            if name == "polars":
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                Path(mark).touch()
                signal.sigwait({signal.SIGINT})
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                signal.raise_signal(signal.SIGINT)
            return None

    sys.meta_path.insert(0, HeldImport())
else:
    from support.slow_judges import hanging
    from scorer.leaderboard import batch

    batch.Isolation = functools.partial(batch.Isolation, judge=hanging)
runpy.run_module("scorer", run_name="__main__", alter_sys=True)
"""


def interrupted_when(reached: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`scorer leaderboard score --json` on the demo, sent Ctrl-C (SIGINT, to its process
    group, as a terminal sends it) once it has `reached` "imports" (polars is being loaded)
    or "workers" (a worker is judging), held there until the signal comes (`HELD`)."""
    demo = tmp_path / "demo"
    made = subprocess.run(
        [sys.executable, "-m", "scorer", "leaderboard", "demo", str(demo)],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert made.returncode == 0
    arguments = [
        "leaderboard",
        "score",
        str(demo / "manifest.csv"),
        "--solution",
        str(demo / "solution.csv"),
        "--db",
        str(demo / "b.db"),
        "--json",
    ]
    mark, temporary = tmp_path / "loading-polars", tmp_path / "tmp"
    temporary.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", HELD, reached, str(mark), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]),
            "TMPDIR": str(temporary),  # where the workers' folders are made
        },
        start_new_session=True,  # a process group of its own, for Ctrl-C
    )

    def there() -> bool:
        if reached == "imports":
            return mark.exists()
        return any(temporary.glob("scorer-worker-*/unpacked.csv"))

    try:
        assert wait_for(lambda: there() or process.poll() is not None, seconds=120.0)
        assert there(), f"never reached {reached}: {process.communicate()}"
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    return subprocess.CompletedProcess(arguments, process.returncode, out, err)


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
