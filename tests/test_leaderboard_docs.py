"""The leaderboard documents are tested: every command of the examples, every code and constant."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from doctools import console_commands
from test_leaderboard import broken_folder, broken_manifest
from typer.testing import CliRunner

from scorer.cli import app
from scorer.leaderboard.confidence import ALPHA, LEVEL, RESAMPLES, SEED
from scorer.leaderboard.manifest import (
    MANIFEST_CODES,
    MAX_SELECTED,
    SELECTION_FILE,
    ManifestError,
    read_log,
)

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "task.md"
NUMBER = re.compile(r"\d+\.\d{7,}(?:e-?\d+)?")
#: A row of task.md's error catalogue: code, meaning, example message.
ROW = re.compile(r"^\| `([a-z_]+)` \| .* \| `(.+)` \|$", re.M)


def same(output: str, expected: str) -> bool:
    """Equal text, except that numbers printed with every digit (JSON, CSV) may differ in the
    last bits: a change in a summation order of the core is not a change in the document."""
    if NUMBER.sub("#", output) != NUMBER.sub("#", expected):
        return False
    pairs = zip(NUMBER.findall(output), NUMBER.findall(expected), strict=True)
    return all(abs(float(a) - float(b)) <= 1e-12 for a, b in pairs)


def sections() -> list[tuple[str, str]]:
    """(name, text) of the leaderboard section of README.md and of examples.md."""
    found = []
    for name in ("README.md", "examples.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for part in re.split(r"\n(?=## )", text):
            if part.startswith("## Leaderboard"):
                found.append((name, part))
    return found


@pytest.mark.parametrize(("name", "text"), sections(), ids=[n for n, _ in sections()])
def test_every_example_prints_what_the_document_shows(
    name: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section's commands depend on each other (a database is filled, then read), so they
    run in order, in one empty folder, as the document says they were run."""
    monkeypatch.chdir(tmp_path)
    commands = console_commands(text)
    assert len(commands) >= 3
    for command, expected in commands:
        words = shlex.split(command)
        if words[0] == "cat":
            output = Path(words[1]).read_text(encoding="utf-8").rstrip("\n")
        else:
            assert words[0] == "scorer", command
            result = CliRunner().invoke(app, words[1:])
            assert result.exit_code == 0, (command, result.output)
            output = result.output.rstrip("\n")
        assert output == expected or same(output, expected), command


def test_both_documents_have_a_leaderboard_section() -> None:
    assert [name for name, _ in sections()] == ["README.md", "examples.md"]


def test_the_examples_show_every_command_and_format() -> None:
    text = dict(sections())["examples.md"]
    commands = " ".join(command for command, _ in console_commands(text))
    for needed in ("leaderboard demo", "leaderboard score", "--json", "--phase final"):
        assert needed in commands
    for fmt in ("csv", "md", "html"):
        assert f"--format {fmt}" in commands


def test_the_method_states_every_rule_and_constant() -> None:
    text = TASK.read_text(encoding="utf-8")
    for code in MANIFEST_CODES:
        assert f"`{code}`" in text, code
    for fact in (
        f"{RESAMPLES:,}",
        f"{LEVEL:.0%}",
        f"{ALPHA}",
        f"seed {SEED}",
        f"at most {MAX_SELECTED}",
        SELECTION_FILE,
        "--phase public",
        "--phase final",
        "sha256",
    ):
        assert fact in text, fact


def test_the_error_catalogue_shows_real_messages_of_the_log(tmp_path: Path) -> None:
    """task.md's catalogue lists the codes only the log has (the manifest codes no other part
    of the catalogue lists) with messages the reader really writes; the corpus test checks the
    other rows against the scorer's own output."""
    text = TASK.read_text(encoding="utf-8")
    catalogue = text.split("### Error codes", 1)[1].split("\n## ", 1)[0]
    before, log = catalogue.split("#### The organiser's submission log", 1)
    rows = dict(ROW.findall(log.split("\n### ", 1)[0]))
    elsewhere = {code for code, _ in ROW.findall(before)}
    assert set(rows) == {str(code) for code in MANIFEST_CODES} - elsewhere
    messages: set[str] = set()
    for source in (broken_manifest(tmp_path), broken_folder(tmp_path / "uploads")):
        with pytest.raises(ManifestError) as caught:
            read_log(source)
        messages |= {i.message for p in caught.value.report.problems for i in p.examples}
    for code, message in rows.items():
        assert message in messages, (code, message)
