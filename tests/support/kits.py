"""What the platform tests share: the bundled data, `scorer score --json` run as a
participant runs it, and what of the hidden truth a participant-visible text holds."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl

from support.paths import DATA, ROOT

SOLUTION = DATA / "solution.csv"


def scorer_json(submission: Path, solution: Path) -> dict[str, Any]:
    """`scorer score --json`, run as a participant or organiser would run it."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scorer",
            "score",
            str(submission),
            "--solution",
            str(solution),
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def hidden_pair() -> tuple[str, str]:
    """A user and one of its hidden lost editions, from the bundled solution."""
    row = pl.read_csv(SOLUTION).drop_nulls("edition_id").row(7)
    return str(row[0]), str(row[1])


def leaks(text: str, edition: str) -> list[str]:
    """What of the hidden truth a participant-visible text holds."""
    found = [f"edition {edition}"] if re.search(rf"\b{edition}\b", text) else []
    found += [w for w in ("private", "500 users", "Private") if w in text]
    return found


def readme_commands(folder: Path) -> tuple[str, str]:
    """The first two commands of a participants' README: the install, and the validation."""
    readme = (folder / "README.md").read_text()
    install, validate = re.findall(r"^\$ (.+)$", readme, re.M)[:2]
    return install, validate


def follow_offline(folder: Path, home: Path, commands: tuple[str, ...]) -> str:
    """Run `commands` as printed, from `folder`, in a fresh venv made in `home`, with no
    index and no pip configuration of this machine (its extra indexes and wheel folders):
    each must succeed; what the last one printed."""
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "HOME": str(home),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    output = ""
    for command in commands:
        done = subprocess.run(
            shlex.split(command), cwd=folder, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        output = done.stdout
    return output
