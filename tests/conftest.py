"""Set-up shared by every test. The fixtures of one area are in its own conftest.py
(`serve/`: a PostgreSQL cluster; `leaderboard/`: the demo and a copy of a scored world)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
import typer.testing

from scorer.cli import app


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
