"""Batch scoring of many submissions into public and private leaderboards.

The names below are imported from their modules when first used (PEP 562): the `scorer`
command loads this package for every command, and `scorer score` needs none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scorer.leaderboard.batch import SolutionMismatch, score_log
    from scorer.leaderboard.boards import Board, Boards, Row, load
    from scorer.leaderboard.manifest import ManifestError, Submission, read_log
    from scorer.leaderboard.render import Format, render
    from scorer.leaderboard.results import BatchResult, Outcome
    from scorer.leaderboard.schema import Phase

#: Each public name and the module that defines it.
_HOMES = {
    "SolutionMismatch": "batch",
    "score_log": "batch",
    "Board": "boards",
    "Boards": "boards",
    "Row": "boards",
    "load": "boards",
    "ManifestError": "manifest",
    "Submission": "manifest",
    "read_log": "manifest",
    "Format": "render",
    "render": "render",
    "BatchResult": "results",
    "Outcome": "results",
    "Phase": "schema",
}

__all__ = [
    "BatchResult",
    "Board",
    "Boards",
    "Format",
    "ManifestError",
    "Outcome",
    "Phase",
    "Row",
    "SolutionMismatch",
    "Submission",
    "load",
    "read_log",
    "render",
    "score_log",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"scorer.leaderboard.{home}"), name)
