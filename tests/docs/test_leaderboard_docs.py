"""The leaderboard documents are tested: every code and constant (tests/docs/test_docs.py runs their
commands)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.doctools import console_commands
from support.leaderboards import broken_folder, broken_manifest
from support.paths import ROOT

from scorer.board import BoardRules
from scorer.leaderboard.confidence import LEVEL, RESAMPLES, SEED
from scorer.leaderboard.manifest import MAX_SELECTED, SELECTION_FILE, ManifestError, read_log

TASK = ROOT / "task.md"
#: A row of task.md's error catalogue: code, meaning, example message.
ROW = re.compile(r"^\| `([a-z_]+)` \| .* \| `(.+)` \|$", re.M)


def sections() -> list[tuple[str, str]]:
    """(name, text) of the leaderboard section of README.md and of examples.md."""
    found = []
    for name in ("README.md", "examples.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for part in re.split(r"\n(?=## )", text):
            if part.startswith("## Leaderboard"):
                found.append((name, part))
    return found


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
    for fact in (
        f"{RESAMPLES:,}",
        f"{LEVEL:.0%}",
        f"alpha = {BoardRules().alpha}",
        f"tie_margin = {BoardRules().tie_margin}",
        f'correction = "{BoardRules().correction}"',
        f"seed {SEED}",
        f"at most {MAX_SELECTED}",
        SELECTION_FILE,
        "--phase public",
        "--phase final",
        "sha256",
    ):
        assert fact in text, fact


def test_the_error_catalogue_shows_real_messages_of_the_log(tmp_path: Path) -> None:
    """task.md's catalogue lists the codes only the log has (those the reader reports on a
    broken log and a broken folder that no other part of the catalogue lists) with messages
    the reader really writes; the corpus test checks the other rows against the scorer's own
    output."""
    text = TASK.read_text(encoding="utf-8")
    catalogue = text.split("### Error codes", 1)[1].split("\n## ", 1)[0]
    before, log = catalogue.split("#### The organiser's submission log", 1)
    rows = dict(ROW.findall(log.split("\n### ", 1)[0]))
    elsewhere = {code for code, _ in ROW.findall(before)}
    messages: set[str] = set()
    reported: set[str] = set()
    for source in (broken_manifest(tmp_path), broken_folder(tmp_path / "uploads")):
        with pytest.raises(ManifestError) as caught:
            read_log(source)
        messages |= {i.message for p in caught.value.report.problems for i in p.examples}
        reported |= {str(p.code) for p in caught.value.report.problems}
    assert set(rows) == reported - elsewhere
    for code, message in rows.items():
        assert message in messages, (code, message)
