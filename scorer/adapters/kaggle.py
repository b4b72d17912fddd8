"""Kaggle's metric contract: `score(solution, submission, row_id_column_name) -> float`.

Kaggle calls `score` once for the public rows and once for the private ones: it filters the
solution and the submission by the solution's `Usage` column and drops that column before the
call, so each call sees one split and the score of the call is the mean NDCG@20 of its users.
Both frames are wide, one row a user: the submission `user_id,edition_ids` with the 20 ranked
ids separated by spaces, the solution `user_id,edition_ids` with the user's lost ids (empty
for a user with none). A broken submission raises `ParticipantVisibleError` with the same
report `scorer validate` prints; anything else (a broken solution, a bug) raises an error
Kaggle shows to the host only.

Both frames are judged before they are converted (`scorer.read.frames`): more than twice the
rows a valid submission can have, more than 1,000 columns, or a text cell of more than 4,096
characters is refused at once with a report that names the rows and columns, never the
cell's content: a 40 MB cell costs nothing, where converting and splitting it took 1.7 GB.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import polars as pl

from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS
from scorer.contract import Solution, read_solution
from scorer.errors import ScorerError, SubmissionError
from scorer.read import DEFAULT_LIMITS, Limits

#: The list column of both wide frames.
IDS = LOST_ITEMS.columns.list

#: The name Kaggle's participants know their file by, in the headline of a report.
SUBMISSION_NAME = "submission"


class ParticipantVisibleError(Exception):
    # If you want an error message to be shown to participants, you must raise the error as a
    # ParticipantVisibleError. All other errors will only be shown to the competition host.
    # This helps prevent unintentional leakage of solution data.
    pass


class HostVisibleError(Exception):
    """A problem of the host's own files or of the scorer: Kaggle shows it to the host only."""


def score(solution: pd.DataFrame, submission: pd.DataFrame, row_id_column_name: str) -> float:
    """Mean NDCG@20 of the users in `solution` (Kaggle's public or private part).

    `row_id_column_name` names the user column in both frames (`user_id`, or any name the host
    chose: it is read as `user_id`). The score equals `scorer score` on the full files for the
    same split, and is always a finite float.
    """
    try:
        truth = read_wide_solution(_as_users(solution, row_id_column_name, "solution"))
        result = score_submission(_as_users(submission, row_id_column_name, SUBMISSION_NAME), truth)
    except SubmissionError as exc:
        report = dataclasses.replace(exc.report, file=SUBMISSION_NAME)
        raise ParticipantVisibleError(f"submission rejected: {report.render()}") from None
    except ScorerError as exc:
        raise HostVisibleError(str(exc)) from None
    value = float(result.overall)
    if not math.isfinite(value):  # pragma: no cover - NDCG is a mean of numbers in [0, 1]
        raise HostVisibleError(f"the score is {value}; expected a finite number")
    return value


def _as_users(frame: pd.DataFrame, row_id: str, role: str) -> pd.DataFrame:
    """The frame with its row-id column named `user_id`, as the scorer's rules name it."""
    if not isinstance(frame, pd.DataFrame):
        raise HostVisibleError(f"the {role} is a {type(frame).__name__}; expected a DataFrame")
    if row_id == "user_id" or row_id not in frame.columns:
        return frame  # a missing column is reported by the reader, in the report's own words
    return frame.rename(columns={row_id: "user_id"})


def read_wide_solution(
    solution: pd.DataFrame | pl.DataFrame, limits: Limits = DEFAULT_LIMITS
) -> Solution:
    """A wide solution (user_id, edition_ids with the lost ids separated by spaces or empty,
    and optionally `Usage` or `stage`) as the scorer's `Solution`; a `HostError` if broken."""
    return read_solution(solution, limits)


def kaggle_solution(solution: pl.DataFrame) -> pl.DataFrame:
    """The scorer's long solution (user_id, edition_id, stage) as Kaggle's: one row a user
    with its lost ids separated by spaces (empty for a user with none) and `Usage` as
    `Public`/`Private`/`Ignored`, ready to upload as the competition's solution file."""
    split = (
        "stage" if "stage" in solution.columns else "Usage" if "Usage" in solution.columns else None
    )
    usage = [pl.col(split).first().str.to_titlecase().alias("Usage")] if split else []
    return solution.group_by("user_id", maintain_order=True).agg(
        pl.col("edition_id").drop_nulls().cast(pl.String).str.join(" ").alias(IDS), *usage
    )
