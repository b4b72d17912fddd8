"""Validate and score ranked-list submissions with public and private leaderboards: NDCG@20
for the lost-items competition, or any metric, k and columns a `Competition` names.

The public names are imported when first used (PEP 562), so that `import scorer` costs
nothing until then: the `scorer` command handles Ctrl-C before polars is loaded."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from scorer.version import __version__

if TYPE_CHECKING:
    from scorer.api import Validation, score, validate
    from scorer.competition import LOST_ITEMS, Competition, EmptyUsers, Metric, Rows
    from scorer.contract import Solution, read_solution, read_targets
    from scorer.errors import (
        Code,
        HostError,
        Issue,
        Problem,
        Report,
        ScorerError,
        SubmissionError,
    )
    from scorer.read import Limits
    from scorer.scoring import NoLost, ScoreResult, SplitScore

__all__ = [
    "LOST_ITEMS",
    "Code",
    "Competition",
    "EmptyUsers",
    "HostError",
    "Issue",
    "Limits",
    "Metric",
    "NoLost",
    "Problem",
    "Report",
    "Rows",
    "ScoreResult",
    "ScorerError",
    "Solution",
    "SplitScore",
    "SubmissionError",
    "Validation",
    "__version__",
    "read_solution",
    "read_targets",
    "score",
    "validate",
]

#: The module each public name lives in.
_HOMES = {
    **dict.fromkeys(("Validation", "score", "validate"), "scorer.api"),
    **dict.fromkeys(
        ("LOST_ITEMS", "Competition", "EmptyUsers", "Metric", "Rows"), "scorer.competition"
    ),
    **dict.fromkeys(("Solution", "read_solution", "read_targets"), "scorer.contract"),
    **dict.fromkeys(
        ("Code", "HostError", "Issue", "Problem", "Report", "ScorerError", "SubmissionError"),
        "scorer.errors",
    ),
    "Limits": "scorer.read",
    **dict.fromkeys(("NoLost", "ScoreResult", "SplitScore"), "scorer.scoring"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'scorer' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
