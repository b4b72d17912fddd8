"""Shared test set-up."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.testing
from postgres_cluster import Unavailable, cluster

import scorer
from scorer.cli import app
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.demo import make_demo
from scorer.leaderboard.manifest import read_log
from scorer.leaderboard.worker import Task
from scorer.read import DEFAULT_LIMITS
from scorer.scoring import NoLost


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster for the session (`postgres_cluster`); its URL."""
    try:
        with cluster() as url:
            yield url
    except Unavailable as why:
        pytest.skip(f"PostgreSQL cannot be started here: {why}")


@pytest.fixture(scope="session", autouse=True)
def _command_built_once() -> Iterator[None]:
    """Typer rebuilds the click command on every `CliRunner.invoke` (0.1 s, most of a call's
    time in the corpus and fuzz tests); build it once for the whole session."""
    command = typer.main.get_command(app)

    def get(target: typer.Typer) -> Any:
        return command if target is app else typer.main.get_command(target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", get)
        yield


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
