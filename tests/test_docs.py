"""The documents are tested: every command of README.md and examples.md, every code."""

from __future__ import annotations

import doctest
import importlib.util
import re
import shlex
from pathlib import Path
from types import ModuleType

import pytest
from doctools import FENCE, console_commands
from typer.testing import CliRunner

from scorer.cli import app
from scorer.errors import Code

ROOT = Path(__file__).resolve().parent.parent


#: Sections whose commands build on each other in an empty folder: their own tests run them in
#: order (tests/test_adapters.py, tests/test_leaderboard_docs.py).
SEQUENTIAL = ("## Platforms and the wide format", "## Leaderboards")


def own_sections(name: str) -> str:
    """A document without its sequential sections."""
    parts = re.split(r"\n(?=## )", (ROOT / name).read_text(encoding="utf-8"))
    return "\n".join(part for part in parts if not part.startswith(SEQUENTIAL))


def console_blocks(name: str) -> list[tuple[str, str]]:
    """(command, expected output) for every `$ ` line of a document, outside the sequential
    sections."""
    return console_commands(own_sections(name))


def scorer_args(command: str) -> list[str] | None:
    """The arguments of the `scorer` call a command line ends with (after any set-up)."""
    last = command.split(" && ")[-1]
    words = shlex.split(last)
    if Path(words[0]).name != "scorer":
        return None
    return words[1:]


DOCUMENTED = [
    pytest.param(command, output, id=f"{name}:{command[:60]}")
    for name in ("README.md", "examples.md")
    for command, output in console_blocks(name)
    if scorer_args(command) is not None
]


@pytest.mark.parametrize(("command", "output"), DOCUMENTED)
def test_documented_command_prints_what_the_document_shows(
    command: str, output: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    args = scorer_args(command)
    assert args is not None
    result = CliRunner().invoke(app, args)
    assert result.output.rstrip("\n") == output
    expected_exit = 1 if output.startswith("Error: submission rejected") else 0
    assert result.exit_code == expected_exit


def test_every_document_has_scorer_commands() -> None:
    names = {p.id.split(":")[0] for p in DOCUMENTED}  # type: ignore[union-attr]
    assert names == {"README.md", "examples.md"}


def test_quickstart_is_two_commands_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = [
        line[2:]
        for block in FENCE.findall(quickstart)
        for line in block.split("\n")
        if line.startswith("$ ")
    ]
    assert len(commands) == 2
    setup_and_score, setup_and_test = commands
    assert setup_and_score.startswith("python3 -m venv .venv && ")
    assert scorer_args(setup_and_score) == [
        "score",
        "data/sample_submission.csv",
        "--solution",
        "data/solution.csv",
    ]
    assert setup_and_test.startswith("python3 -m venv .venv && ")
    assert setup_and_test.endswith("-m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert setup_and_test in ci.splitlines()


def test_python_examples_in_examples_md_run() -> None:
    text = own_sections("examples.md")
    test = doctest.DocTestParser().get_doctest(text, {}, "examples.md", "examples.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.tries > 0
    assert runner.failures == 0


def test_every_error_code_is_documented_in_task_md() -> None:
    task = (ROOT / "task.md").read_text(encoding="utf-8")
    missing = [code.value for code in Code if f"`{code.value}`" not in task]
    assert missing == []


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bundled_data_is_what_its_script_writes(tmp_path: Path) -> None:
    _load(ROOT / "data" / "make_data.py").main(tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(ROOT / "data")
        for p in (ROOT / "data").rglob("*")
        if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts
    )
    assert written == committed
    for relative in written:
        assert (ROOT / "data" / relative).read_bytes() == (tmp_path / relative).read_bytes()
