"""The documents are tested: every command of README.md, examples.md and task.md as printed,
every Python example, every relative link, every error code."""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from support.doctools import (
    Command,
    DocumentRun,
    Result,
    clean_copy,
    commands,
    documented,
    environment,
    expected_status,
    matches,
    rewrite,
    run,
    run_document,
    tracked,
)
from support.paths import ROOT

from scorer.errors import Code

DOCUMENTS = ("README.md", "examples.md", "task.md")
PYTHON = re.compile(r"```(?:pycon|python)\n(.*?)```", re.S)
FENCED = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")

RunOf = Callable[[str], DocumentRun]


@pytest.fixture(scope="module")
def run_of(tmp_path_factory: pytest.TempPathFactory) -> RunOf:
    """Each document run once for the module, when a test first needs it: all its commands as
    one bash script, from the root of a clean copy of the repository (tests/support/doctools.py)."""
    done: dict[str, DocumentRun | str] = {}

    def get(name: str) -> DocumentRun:
        if name not in done:
            try:
                done[name] = run_document(name, tmp_path_factory.mktemp(name))
            except RuntimeError as error:  # kept, so that the other commands do not rerun it
                done[name] = str(error)
        found = done[name]
        if isinstance(found, str):
            pytest.fail(f"{name}: {found}")
        return found

    return get


COMMANDS = [
    pytest.param(name, n, id=f"{name}:{command.line}:{command.text[:50]}")
    for name in DOCUMENTS
    for n, command in enumerate(documented(name))
]


@pytest.mark.parametrize(("name", "index"), COMMANDS)
def test_documented_command_prints_what_the_document_shows(
    run_of: RunOf, name: str, index: int
) -> None:
    done = run_of(name)
    command, result = done.commands[index], done.results[index]
    if not matches(result.output, command.expected):
        assert result.output == command.expected, f"{name}:{command.line}: $ {command.text}"
    assert result.status == expected_status(command.expected), result.output


def test_every_document_activates_the_environment_then_runs_scorer() -> None:
    for name in DOCUMENTS:
        lines = [command.text for command in documented(name)]
        assert lines[0] == "source .venv/bin/activate", name
        assert any(re.search(r"(^|&& )scorer ", line) for line in lines), name


def test_the_only_commands_outside_console_blocks_are_the_benchmarks() -> None:
    """A command is tested because it is in a ```console block; the README's benchmark
    commands (long runs that download the peer tools) are the one exception, in a ```sh block."""
    outside = [
        line
        for name in DOCUMENTS
        for fence, body in FENCED.findall((ROOT / name).read_text(encoding="utf-8"))
        if fence != "console"
        for line in body.splitlines()
        if line.startswith("$ ")
    ]
    assert outside
    assert all("bench/" in line for line in outside), outside


def files_in(folder: Path) -> set[str]:
    """Every file under a folder, as git names them, without the bytecode Python writes (which
    .gitignore ignores) and without following the `.venv` link."""
    found = set()
    for top, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if f != "__pycache__"]
        found |= {(Path(top) / n).relative_to(folder).as_posix() for n in names}
    return found


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_document_writes_nothing_into_the_repository(run_of: RunOf, name: str) -> None:
    """Run twice from the same clone, a document's commands must work twice: they write in
    folders of their own, never in the repository."""
    assert files_in(run_of(name).copy) == set(tracked(ROOT))


def test_a_new_terminal_finds_scorer_only_once_the_environment_is_active(tmp_path: Path) -> None:
    """The harness runs commands as in a reader's new terminal (the bug of issue 13 was a
    README that never activated its environment), and the copy's package is the one that runs."""
    copy = clean_copy(ROOT, tmp_path / "repo")
    (tmp_path / "tmp").mkdir()
    lines = [
        "scorer --version",
        "source .venv/bin/activate",
        "scorer --version",
        "python -c 'import scorer; print(scorer.__file__)'",
    ]
    before, _, after, package = run(lines, copy, environment(copy, tmp_path / "tmp"))
    assert before.status == 127
    assert "scorer: command not found" in before.output
    assert after.status == 0
    assert after.output.startswith("scorer ")
    assert package.output == str(copy / "scorer" / "__init__.py")


def test_the_shell_keeps_its_state_and_each_command_its_output_and_status(
    tmp_path: Path,
) -> None:
    lines = ["x=1 && printf 'no newline'", "echo $x; echo err >&2; false", "cd / && false"]
    first, second, third = run(lines, tmp_path, {"PATH": os.environ["PATH"]})
    assert first == Result("no newline", 0, tmp_path.resolve())
    assert second == Result("1\nerr", 1, tmp_path.resolve())
    assert third == Result("", 1, Path("/"))


def test_rewrite_replaces_only_the_output_of_the_given_commands() -> None:
    text = "# Doc\n\n```console\n$ one\nold\n$ two\n$ three\nkept\n```\n"
    one, two, three = commands(text)
    assert (one.expected, two.expected, three.expected) == ("old", "", "kept")
    done = [(one, Result("new\nlines", 0, Path())), (two, Result("added", 0, Path()))]
    assert rewrite(text, done) == (
        "# Doc\n\n```console\n$ one\nnew\nlines\n$ two\nadded\n$ three\nkept\n```\n"
    )


def test_matches_tolerates_temporary_folders_and_the_last_bits_only() -> None:
    assert matches("Wrote /tmp/tmp.AbC123xyz9/a.csv", "Wrote /tmp/tmp.k3vQ9xLm2P/a.csv")
    assert not matches("Wrote /tmp/other/a.csv", "Wrote /tmp/tmp.k3vQ9xLm2P/a.csv")
    assert matches('{"x": 0.5912031190351437}', '{"x": 0.5912031190351438}')
    assert not matches('{"x": 0.5912031190351437}', '{"x": 0.5912031190361437}')
    assert matches(
        "wrote /tmp/tmp.AbC123xyz9/s.prepared in 0.02 s",
        "wrote /tmp/tmp.k3vQ9xLm2P/s.prepared in 1.37 s",
    )
    assert not matches("wrote s.prepared in 0.02 s", "wrote t.prepared in 0.02 s")
    assert not matches("1,000 users in 0.02 s, 3 pairs", "1,000 users in 0.03 s, 3 pairs")
    # a commitment's hash is new on every run; a file's sha256 is not
    assert matches(f"(commitment {'a' * 64})", f"(commitment {'b' * 64})")
    assert not matches(f"(sha256 {'a' * 64})", f"(sha256 {'b' * 64})")
    assert [expected_status(s) for s in ("Error: submission rejected: …", "Error: x", "ok")] == [
        1,
        2,
        0,
    ]


def test_python_examples_run_where_the_commands_left_off(
    run_of: RunOf, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python examples of examples.md, in order and sharing their names; each runs in the
    folder the shell was in after the last command before it (the platforms' examples read the
    files those commands wrote), among the files the document's whole run left there."""
    done = run_of("examples.md")
    text = (ROOT / "examples.md").read_text(encoding="utf-8")
    names: dict[str, object] = {}
    tries = 0
    for block in PYTHON.finditer(text):
        if ">>> " not in block.group(1):
            continue
        before = [
            r for c, r in zip(done.commands, done.results, strict=True) if c.span[0] < block.start()
        ]
        monkeypatch.chdir(before[-1].cwd if before else done.copy)
        line = text.count("\n", 0, block.start()) + 1
        test = doctest.DocTestParser().get_doctest(
            block.group(1), names, f"examples.md:{line}", str(ROOT / "examples.md"), line
        )
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, clear_globs=False)
        assert runner.failures == 0, block.group(1)
        names = test.globs  # a DocTest copies the names it is given: carry its own on
        tries += runner.tries
    assert tries > 0


def quickstart() -> list[Command]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [c for c in commands(readme, "README.md") if c.section == "## Quickstart"]


def test_quickstart_is_two_commands_and_ci_runs_the_second() -> None:
    setup_and_score, setup_and_test = (command.text for command in quickstart())
    assert setup_and_score.startswith("python3 -m venv .venv && ")
    assert shlex.split(setup_and_score.split(" && ")[-1]) == [
        ".venv/bin/scorer",
        "score",
        "data/sample_submission.csv",
        "--solution",
        "data/solution.csv",
    ]
    assert setup_and_test.startswith("python3 -m venv .venv && ")
    assert setup_and_test.endswith("-m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert setup_and_test in ci.splitlines()


@pytest.mark.slow
def test_quickstart_first_command_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """A new user's first command, exactly as printed, in a clean copy with no environment yet:
    it makes a brand-new .venv, installs the copy into it with its dependencies (from PyPI, as
    in CI), and scores the sample submission with the installed command."""
    first = quickstart()[0]
    copy = clean_copy(ROOT, tmp_path / "repo", venv=False)
    (tmp_path / "tmp").mkdir()
    env = environment(copy, tmp_path / "tmp", package=False)
    # pip as a new user has it: no configuration file (a machine's own index or constraints
    # make pip print warnings the README does not show); PIP_* variables still apply.
    env["PIP_CONFIG_FILE"] = os.devnull
    [result] = run([first.text], copy, env)
    if not matches(result.output, first.expected):
        assert result.output == first.expected
    assert result.status == 0


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a document's headings."""
    headings = re.findall(r"^#+ (.*)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_relative_link_leads_somewhere(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)  # code is not a link
    for link in [t for t in LINK.findall(prose) if not re.match(r"[a-z]+:", t)]:
        path, _, anchor = link.partition("#")
        target = (ROOT / name).parent / path if path else ROOT / name
        assert target.exists(), link
        if anchor:
            assert anchor in anchors(target.read_text(encoding="utf-8")), link


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
