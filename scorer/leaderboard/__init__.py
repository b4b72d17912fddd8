"""Batch scoring of many submissions into public and private leaderboards."""

from __future__ import annotations

from scorer.leaderboard.batch import SolutionMismatch, score_log
from scorer.leaderboard.boards import Board, Boards, Phase, Row, load
from scorer.leaderboard.manifest import ManifestError, Submission, read_log
from scorer.leaderboard.render import Format, render
from scorer.leaderboard.results import BatchResult, Outcome

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
