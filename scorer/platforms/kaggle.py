"""Kaggle: the metric contract `score(solution, submission, row_id_column_name) -> float`, and
the kit (`scorer kit kaggle`: the solution and sample in Kaggle's form, the metric, the wheels).

Kaggle calls `score` once for the public rows and once for the private ones: it filters the
solution and the submission by the solution's `Usage` column and drops that column before the
call, so each call sees one split and the score of the call is the mean NDCG@20 of its users.
Both frames are wide, one row a user: the submission `user_id,edition_ids` with the 20 ranked
ids separated by spaces, the solution `user_id,edition_ids` with the user's lost ids (empty
for a user with none).

A broken submission raises `ParticipantVisibleError`. Since each call sees one split, a report
of its rows would tell which users share a split (two users broken in two ways: one problem
or two, one code or two) and how many users a split has; so a row's problem is reported in
one fixed sentence that points to `scorer validate` with the public targets file, and only
problems of the header, the same in both calls, are named. Anything else (a broken
solution, a bug) raises `HostVisibleError` with the details, which Kaggle routes by its class
name to the host only.

Both frames are judged before they are converted (`scorer.read.frames`): more than twice the
rows a valid submission can have, more than 1,000 columns, or a text cell of more than 4,096
characters is refused at once with a report that names the rows and columns, never the
cell's content: a 40 MB cell costs nothing, where converting and splitting it took 1.7 GB.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl

from scorer.api import score as score_submission
from scorer.competition import LOST_ITEMS, Competition
from scorer.contract import Solution, read_solution
from scorer.errors import Code, ScorerError, SubmissionError, shorten
from scorer.platforms.common import HostVisibleError, Kit, template
from scorer.read import DEFAULT_LIMITS, Limits
from scorer.version import __version__

__all__ = ["HostVisibleError", "ParticipantVisibleError", "kaggle_solution", "score", "write"]

#: The competition Kaggle's metric scores (the kit refuses any other), and the user and list
#: columns of both wide frames.
RULES = LOST_ITEMS
USERS, IDS = RULES.columns.user, RULES.columns.list

#: The name Kaggle's participants know their file by, in the headline of a report.
SUBMISSION_NAME = "submission"

#: Problems of the file as a whole, found alike in the public and the private call.
WHOLE_FILE = frozenset(
    {
        Code.MISSING_COLUMN,
        Code.UNKNOWN_COLUMN,
        Code.DUPLICATE_COLUMN,
        Code.COLUMN_TYPE,
        Code.FILE_FORMAT,
    }
)

#: What a participant reads for any problem of a row: the same words whatever the rows.
ROW_PROBLEMS = (
    "submission rejected: some rows break the submission rules. Kaggle checks the public "
    "and the private users one part at a time, so this message names no row, user or "
    "count. Run `scorer validate submission.csv --targets targets.csv` (targets.csv is on "
    "the competition's data page) to see every problem with its line."
)


class ParticipantVisibleError(Exception):
    # If you want an error message to be shown to participants, you must raise the error as a
    # ParticipantVisibleError. All other errors will only be shown to the competition host.
    # This helps prevent unintentional leakage of solution data.
    pass


def score(solution: pd.DataFrame, submission: pd.DataFrame, row_id_column_name: str) -> float:
    """Mean NDCG@20 of the users in `solution` (Kaggle's public or private part).

    `row_id_column_name` names the user column in both frames (`user_id`, or any name the host
    chose: it is read as the competition's user column). The score equals `scorer score` on
    the full files for the same split, and is always a finite float.
    """
    try:
        truth = read_wide_solution(_as_users(solution, row_id_column_name, "solution"))
        result = score_submission(_as_users(submission, row_id_column_name, SUBMISSION_NAME), truth)
    except SubmissionError as exc:
        raise ParticipantVisibleError(participant_message(exc)) from None
    except HostVisibleError:
        raise
    except ScorerError as exc:
        raise HostVisibleError(str(exc), host_only=True) from None
    except Exception as exc:  # a bug: Kaggle would show a message without digits to everyone
        details = f"internal error ({type(exc).__name__}: {shorten(exc)})"
        raise HostVisibleError(details, host_only=True) from None
    value = float(result.overall)
    if not math.isfinite(value):  # pragma: no cover - NDCG is a mean of numbers in [0, 1]
        raise HostVisibleError(f"the score is {value}; expected a finite number", host_only=True)
    return value


def participant_message(exc: SubmissionError) -> str:
    """What Kaggle shows for a rejected part: the header's problems by name (the same in both
    calls), any problem of a row in one fixed sentence (see the module's docstring)."""
    report = exc.report
    if report.problems and all(p.code in WHOLE_FILE for p in report.problems):
        whole = "\n".join(
            f"  [{p.code}] {issue.message}" for p in report.problems for issue in p.examples
        )
        return f"submission rejected: the file's columns break the submission rules:\n{whole}"
    return ROW_PROBLEMS


def _as_users(frame: pd.DataFrame, row_id: str, role: str) -> pd.DataFrame:
    """The frame with its row-id column named as the competition's rules name it, and its
    list column as text: pandas reads a column whose cells hold at most one id each (a split
    where every user lost one item or none) as numbers, float64 once a cell is empty."""
    if not isinstance(frame, pd.DataFrame):
        details = f"the {role} is a {type(frame).__name__}; expected a DataFrame"
        raise HostVisibleError(details, host_only=True)
    if row_id != USERS and row_id in frame.columns:
        frame = frame.rename(columns={row_id: USERS})
    if IDS in frame.columns and pd.api.types.is_numeric_dtype(frame[IDS].dtype):
        frame = frame.assign(**{IDS: frame[IDS].map(_id_text)})
    return frame  # a missing column is reported by the reader, in the report's own words


def _id_text(value: object) -> str:
    """A number pandas made of a one-id cell, as the id it was written as: `12.0` → `12`, NaN
    → empty (no ids); any other number as written, for the reader to judge."""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer():
            return str(int(value))
    return str(value)


def read_wide_solution(
    solution: pd.DataFrame | pl.DataFrame, limits: Limits = DEFAULT_LIMITS
) -> Solution:
    """A wide solution (user_id, edition_ids with the lost ids separated by spaces or empty,
    and optionally `Usage` or `stage`) as the scorer's `Solution`; a `HostError` if broken."""
    return read_solution(solution, limits)


def kaggle_solution(solution: pl.DataFrame, competition: Competition = RULES) -> pl.DataFrame:
    """A long solution file's frame (the competition's user, item and split columns) as
    Kaggle's: one row a user with its items separated by spaces (empty for a user with none)
    and `Usage` as `Public`/`Private`/`Ignored`, ready to upload as the solution file."""
    columns = competition.columns
    split = next((c for c in competition.splits.columns if c in solution.columns), None)
    usage = [pl.col(split).first().str.to_titlecase().alias("Usage")] if split else []
    return solution.group_by(columns.user, maintain_order=True).agg(
        pl.col(columns.item).drop_nulls().cast(pl.String).str.join(" ").alias(columns.list),
        *usage,
    )


#: The Kaggle Dataset the metric installs scorer from, as Kaggle mounts it.
WHEELS_DATASET = "ranklist-scorer-wheels"

#: Kaggle's Python (its image runs 3.12) and the platforms its wheels must be built for.
KAGGLE_PYTHON = "3.12"
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")


def wheel_command(folder: str = "wheels") -> str:
    """The command that downloads scorer's dependencies as wheels for Kaggle's Python."""
    platforms = " ".join(f"--platform {p}" for p in PLATFORMS)
    return (
        f"python -m pip download --dest {folder} --only-binary=:all: "
        f"--python-version {KAGGLE_PYTHON} {platforms} {folder}/ranklist_scorer-"
        f"{__version__}-py3-none-any.whl"
    )


def write(kit: Kit) -> list[Path]:
    """Write the Kaggle kit into `kit.out`; the files written."""
    solution = kaggle_solution(kit.long(), kit.competition)
    written = []
    path = kit.out / "solution.csv"
    solution.write_csv(path)
    written.append(kit.hidden(path))
    path = kit.out / "sample_submission.csv"
    kit.sample().write_csv(path)
    written.append(path)
    path = kit.out / "targets.csv"
    kit.target_users().write_csv(path)
    written.append(path)
    metric = template("kaggle_metric.py.tmpl", dataset=WHEELS_DATASET)
    written.append(kit.write("metric.py", metric))
    written.append(kit.write("metric.ipynb", notebook(metric)))
    written.append(
        kit.write(
            "build_wheels.sh",
            template(
                "kaggle_build_wheels.sh.tmpl",
                version=__version__,
                download=wheel_command(),
            ),
        )
    )
    (kit.out / "build_wheels.sh").chmod(0o755)
    written.append(
        kit.write(
            "README.md",
            template(
                "kaggle_README.md.tmpl",
                **kit.readme,
                dataset=WHEELS_DATASET,
                python=KAGGLE_PYTHON,
                targets=f"{kit.targets.len():,}",
            ),
        )
    )
    return written


def notebook(source: str) -> str:
    """The metric as a one-cell notebook (nbformat 4), for Kaggle's notebook editor."""
    cell: dict[str, Any] = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }
    document = {
        "cells": [cell],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1) + "\n"
