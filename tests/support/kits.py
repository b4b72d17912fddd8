"""What the platform tests share: the bundled data, `scorer score --json` run as a
participant runs it, and what of the hidden truth a participant-visible text holds."""

from __future__ import annotations

import json
import os
import re
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
