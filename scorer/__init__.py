"""Validate and score ranked-list submissions: NDCG@20 with public and private leaderboards."""

from __future__ import annotations

from scorer.api import score, validate
from scorer.contract import Solution, read_solution, read_targets
from scorer.errors import Code, HostError, Issue, Problem, Report, ScorerError, SubmissionError
from scorer.io import Limits
from scorer.scoring import NoLost, ScoreResult, SplitScore

__version__ = "0.1.0"

__all__ = [
    "Code",
    "HostError",
    "Issue",
    "Limits",
    "NoLost",
    "Problem",
    "Report",
    "ScoreResult",
    "ScorerError",
    "Solution",
    "SplitScore",
    "SubmissionError",
    "__version__",
    "read_solution",
    "read_targets",
    "score",
    "validate",
]
