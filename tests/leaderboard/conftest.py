"""Set-up shared by the leaderboard tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import scorer
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.manifest import read_log
from scorer.leaderboard.worker import Task
from scorer.read import DEFAULT_LIMITS
from scorer.scoring import NoLost


@pytest.fixture()
def copy(world: Path, tmp_path: Path) -> Path:
    """A private copy of a module's scored competition (its `world` fixture), for tests
    that change it."""
    target = tmp_path / "lb"
    shutil.copytree(world, target)
    return target


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Task, list[Path]]:
    """The leaderboard demo's solution as a worker's task, and its submissions' paths."""
    root = tmp_path_factory.mktemp("workers")
    make_demo(root)
    task = Task(
        solution=scorer.read_solution(root / "solution.csv"),
        competition=LOST_ITEMS,
        no_lost=NoLost.ZERO,
        limits=DEFAULT_LIMITS,
    )
    return task, [entry.path for entry in read_log(root / "manifest.csv")]
