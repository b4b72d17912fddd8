"""Judges for the worker tests: module-level, so that a spawned worker can import them."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from scorer.leaderboard.worker import Done, Task


def sleepy(task: Task, index: int, path: Path) -> Done:
    """Write this worker's pid to `path`, leave a file in its temporary folder, then hang."""
    path.write_text(str(os.getpid()))
    with open(os.path.join(tempfile.gettempdir(), "unpacked.csv"), "wb") as handle:
        handle.write(b"\0" * (1 << 20))
    time.sleep(600)
    raise AssertionError("not reached: the worker is killed first")


def hanging(task: Task, index: int, path: Path) -> Done:
    """Leave a file in this worker's temporary folder, then hang (the file judged untouched)."""
    with open(os.path.join(tempfile.gettempdir(), "unpacked.csv"), "wb") as handle:
        handle.write(b"\0" * (1 << 20))
    time.sleep(600)
    raise AssertionError("not reached: the worker is killed first")
