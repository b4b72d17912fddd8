"""Running the documents' commands exactly as printed, for the tests and to refresh the documents.

A document's ```console blocks hold its commands: each `$ ` line is one command, and the lines
up to the next `$ ` line are what it prints (stdout and stderr together). `run_document` runs
all the commands of a document as ONE bash script, in order, so that `source
.venv/bin/activate`, `cd` and variables such as `$demo` carry from one command to the next, as
in the terminal of a reader who types them one after the other. The script runs from the root
of a clean copy of the repository: the files git tracks, as they are in the working tree (so
edits not yet committed are what is tested), with `.venv` a link to the environment of the
interpreter running this (in CI, the Quickstart's `.venv`).

After an intentional change of an output (a JSON shape, a message), refresh the documents with

    .venv/bin/python tests/support/doctools.py --write README.md examples.md task.md

which runs the commands the same way and rewrites in place the documented output of every
command whose output no longer matches (an output that `matches` accepts is left as written).
Without `--write` it lists the commands that differ. Read the diff before committing: this is
for outputs that changed on purpose; a number that moved is a changed score, to be explained.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```console\n(.*?)```", re.S)
SECTION = re.compile(r"^## .*$", re.M)
#: Sections whose commands a document run leaves out: the Quickstart's make the environment
#: that the other commands run in (tests/docs/test_docs.py runs the first in a new environment, CI
#: runs the second).
NOT_RUN = ("## Quickstart",)
#: A number printed with every digit (JSON, CSV).
NUMBER = re.compile(r"\d+\.\d{7,}(?:e-?\d+)?")
#: A folder made by `mktemp -d`, whose name is new on every run.
MKTEMP = re.compile(r"/tmp/tmp\.[A-Za-z0-9]{6,}")
#: A token `scorer serve` shows once (32 random bytes, URL-safe), another on every run.
TOKEN = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")
#: A commitment to a solution (`scorer serve init`, `scorer verify`): its salt is new on every
#: run, and so is the hash.
COMMITMENT = re.compile(r"(?<=commitment )[0-9a-f]{64}|(?<=published from now on: )[0-9a-f]{64}")
#: A moment a server stamps (a submission's time, its UTC day), another on every run.
MOMENT = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|\+00:00)?")
#: A duration a command reports (`wrote FILE in 0.02 s`), another on every run.
DURATION = re.compile(r"\bin \d+\.\d\d s$", re.M)
#: Variables of the caller's environment that would make a command print otherwise than in a
#: reader's new terminal (colours, a width), run other code (another package, a start-up file
#: for bash) or find `scorer` before the document activates the environment.
DROPPED = (
    "VIRTUAL_ENV",
    "PYTHONHOME",
    "PYTHONPATH",
    "BASH_ENV",
    "ENV",
    "COLUMNS",
    "LINES",
    "FORCE_COLOR",
    "NO_COLOR",
    "CLICOLOR_FORCE",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "PWD",
    "OLDPWD",
)


@dataclass(frozen=True)
class Command:
    """A `$ ` line of a console block and the output the document shows under it."""

    document: str
    line: int  # 1-based, in the document
    section: str  # the `## ` heading it is under ("" before the first)
    text: str  # the command, as typed
    expected: str  # the documented output, without its last newline
    span: tuple[int, int]  # where the output's lines are in the document's text


@dataclass(frozen=True)
class Result:
    """What a command printed (stdout and stderr merged, without the last newline), its exit
    status, and the shell's folder after it."""

    output: str
    status: int
    cwd: Path


@dataclass(frozen=True)
class DocumentRun:
    """The commands of a document that were run, their results, and the copy they ran in."""

    commands: list[Command]
    results: list[Result]
    copy: Path


def commands(text: str, document: str = "") -> list[Command]:
    """Every `$ ` line of every console block of a document's text, in order."""
    headings = [(m.start(), m.group()) for m in SECTION.finditer(text)]
    found = []
    for block in FENCE.finditer(text):
        section = next((h for start, h in reversed(headings) if start < block.start()), "")
        starts, offset = [], block.start(1)
        for line in block.group(1).splitlines(keepends=True):
            if line.startswith("$ "):
                starts.append((offset, line))
            offset += len(line)
        for n, (start, line) in enumerate(starts):
            end = starts[n + 1][0] if n + 1 < len(starts) else block.end(1)
            begin = start + len(line)
            found.append(
                Command(
                    document=document,
                    line=text.count("\n", 0, start) + 1,
                    section=section,
                    text=line[2:].rstrip("\n"),
                    expected=text[begin:end].rstrip("\n"),
                    span=(begin, end),
                )
            )
    return found


def console_commands(text: str) -> list[tuple[str, str]]:
    """(command, expected output) for every `$ ` line of every console block, in order."""
    return [(c.text, c.expected) for c in commands(text)]


def documented(name: str, root: Path = ROOT) -> list[Command]:
    """The commands of a document that a run of it runs: all but the Quickstart's."""
    text = (root / name).read_text(encoding="utf-8")
    return [c for c in commands(text, name) if not c.section.startswith(NOT_RUN)]


def expected_status(output: str) -> int:
    """The exit code a documented output stands for, as README's exit codes say: 1 for a
    rejected submission (the participant's problem), 2 for any other `Error:` (a usage error or
    the organiser's problem), 0 otherwise; a JSON output says it with its `status`, which goes
    with one exit code (task.md, "For robots")."""
    if output.startswith("{"):
        try:
            status = json.loads(output.splitlines()[0] if "\n" in output else output).get("status")
        except (json.JSONDecodeError, AttributeError):
            status = None
        if status in JSON_STATUS:
            return JSON_STATUS[status]
    if output.startswith("Error: submission rejected"):
        return 1
    return 2 if output.startswith("Error:") else 0


#: The exit code of each JSON `status`.
JSON_STATUS = {"ok": 0, "rejected": 1, "error": 2, "interrupted": 130}


#: What `matches` writes in place of what changes on every run, in this order.
CHANGING = (
    (COMMITMENT, "HASH"),
    (MKTEMP, "/tmp/tmp.XXXXXXXXXX"),
    (DURATION, "in # s"),
    (TOKEN, "TOKEN"),
    (MOMENT, "MOMENT"),
)


def _steady(text: str) -> str:
    for pattern, stand_in in CHANGING:
        text = pattern.sub(stand_in, text)
    return text


def matches(output: str, expected: str) -> bool:
    """Equal text, except that a folder made by `mktemp -d` has another name on every run, so
    does a duration at the end of a line (`in 0.02 s`), a token `scorer serve` shows, a
    commitment's hash and a moment a server stamps, and numbers printed with every digit may
    differ in the last bits (by at most 1e-12): a change in a summation order of the core is
    not a change in the document."""
    output, expected = (_steady(s) for s in (output, expected))
    if output == expected:
        return True
    if NUMBER.sub("#", output) != NUMBER.sub("#", expected):
        return False
    pairs = zip(NUMBER.findall(output), NUMBER.findall(expected), strict=True)
    return all(abs(float(a) - float(b)) <= 1e-12 for a, b in pairs)


def tracked(root: Path) -> list[str]:
    """The files git tracks in `root` that the working tree has (one deleted but not yet
    committed is gone from a clone of the next commit too)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (root / name).exists()]


def clean_copy(root: Path, dest: Path, *, venv: bool = True) -> Path:
    """`dest` holding the files git tracks in `root`, as they are in the working tree, and
    (with `venv`) `.venv` linked to the running interpreter's environment, so that the
    documents' `source .venv/bin/activate` works as after the Quickstart."""
    for name in tracked(root):
        source = root / name
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    if venv:
        prefix = Path(sys.prefix)
        if not (prefix / "bin" / "activate").is_file():
            raise RuntimeError(
                f"{prefix} is not a virtual environment: run the tests with the Quickstart's "
                ".venv/bin/python, whose environment the documents' commands activate"
            )
        (dest / ".venv").symlink_to(prefix, target_is_directory=True)
    return dest


def environment(copy: Path, tmp: Path, *, package: bool = True) -> dict[str, str]:
    """The caller's environment as a reader's new terminal would have it: no virtual
    environment on PATH (a document must activate one), and `mktemp` making its folders in
    `tmp`. With `package`, PYTHONPATH is the copy's root: whatever `scorer` the environment
    has installed (an editable install of another checkout sharing the environment, or in CI a
    `pip install .` made before the edits under test), the copy's package is the one that
    runs, so the documents are checked against the code beside them."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    venvs = [Path(sys.prefix).resolve()]
    if "VIRTUAL_ENV" in os.environ:
        venvs.append(Path(os.environ["VIRTUAL_ENV"]).resolve())
    entries = env.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(
        p for p in entries if p and not any(Path(p).resolve().is_relative_to(v) for v in venvs)
    )
    env["TMPDIR"] = str(tmp)
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr interleaved as a terminal shows them
    if package:
        env["PYTHONPATH"] = str(copy)
    return env


def run(
    lines: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 1800
) -> list[Result]:
    """Run the commands as one bash script from `cwd`, each followed by a marker line that
    records its exit status and the shell's folder, and split the merged output at the
    markers. A `TMPDIR` of `env` reads as `/tmp` in the outputs, as in a reader's terminal."""
    marker = f"@@@ {uuid.uuid4().hex}"
    # a command a document runs in the background (`scorer serve run … &`) ends with it
    script = "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n" + "".join(
        f'{line}\nprintf \'\\n{marker} %s %s\\n\' "$?" "$PWD"\n' for line in lines
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        check=False,
    )
    text = done.stdout.decode("utf-8", errors="replace")
    pieces = re.split(rf"\n{re.escape(marker)} (\d+) (.*)\n", text)
    tmp = env.get("TMPDIR", "").rstrip("/")
    results = [
        Result(
            output=(out.replace(tmp, "/tmp") if tmp else out).rstrip("\n"),
            status=int(status),
            cwd=Path(folder),
        )
        for out, status, folder in zip(pieces[0::3], pieces[1::3], pieces[2::3], strict=False)
    ]
    if len(results) != len(lines):
        raise RuntimeError(
            f"the shell stopped after {len(results)} of {len(lines)} commands (exit status "
            f"{done.returncode}) at {lines[len(results)]!r}; it printed:\n{pieces[-1]}"
        )
    return results


def run_document(name: str, work: Path, root: Path = ROOT) -> DocumentRun:
    """Run a document's commands (all but the Quickstart's) in a clean copy of `root` made in
    `work`, a new folder that also holds the run's temporary files."""
    listed = documented(name, root)
    copy = clean_copy(root, work / "repo")
    tmp = work / "tmp"
    tmp.mkdir()
    results = run([c.text for c in listed], copy, environment(copy, tmp))
    return DocumentRun(listed, results, copy)


def rewrite(text: str, changes: Sequence[tuple[Command, Result]]) -> str:
    """The document's text with the output of each command replaced by what it printed."""
    for command, result in sorted(changes, key=lambda c: c[0].span, reverse=True):
        start, end = command.span
        text = text[:start] + (result.output + "\n" if result.output else "") + text[end:]
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tests/support/doctools.py",
        description="Run the documents' commands as printed, from the root of a clean copy of "
        "the repository, and list (or with --write, rewrite) every output that differs.",
    )
    parser.add_argument("documents", nargs="+", type=Path, help="README.md, examples.md, …")
    parser.add_argument(
        "--write", action="store_true", help="rewrite the outputs that differ, in place"
    )
    args = parser.parse_args(argv)
    failed = False
    for path in args.documents:
        name = str(path.resolve().relative_to(ROOT))
        with tempfile.TemporaryDirectory() as work:
            done = run_document(name, Path(work))
        stale = []
        for command, result in zip(done.commands, done.results, strict=True):
            where = f"{name}:{command.line}: $ {command.text}"
            if result.status != expected_status(result.output):
                print(f"{where}\n  exit status {result.status}, printed:\n{result.output}")
                failed = True
            elif not matches(result.output, command.expected):
                print(f"{where}\n  prints something else{'; rewritten' if args.write else ''}")
                stale.append((command, result))
        if stale and args.write:
            text = (ROOT / name).read_text(encoding="utf-8")
            (ROOT / name).write_text(rewrite(text, stale), encoding="utf-8")
        failed = failed or bool(stale and not args.write)
        print(f"{name}: {len(done.commands)} commands, {len(stale)} outputs differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
