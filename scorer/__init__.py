"""Validate and score ranked-list submissions with public and private leaderboards: NDCG@20
for the lost-items competition, or any metric, k and columns a `Competition` names."""

from __future__ import annotations

from scorer.api import Validation, score, validate
from scorer.competition import LOST_ITEMS, Competition, EmptyUsers, Metric, Rows
from scorer.contract import Solution, read_solution, read_targets
from scorer.errors import Code, HostError, Issue, Problem, Report, ScorerError, SubmissionError
from scorer.read import Limits
from scorer.scoring import NoLost, ScoreResult, SplitScore
from scorer.version import __version__

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
