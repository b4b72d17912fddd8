"""Kaggle: the kit (`scorer kit kaggle`): the solution and sample in Kaggle's form, and the
metric, `scorer.platforms.kaggle_metric` written for the competition.

Kaggle's metric runs on Kaggle's image with nothing installed, so the metric is one file
that needs numpy, pandas and the standard library alone: `kaggle_metric` is that file,
tested here as a module, and the kit writes its source with `SPEC` filled in for the
competition (`metric_source`). Its `score`, `ParticipantVisibleError` and `HostVisibleError`
are the runtime this module names for tests and benchmarks, with lost items' spec.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from scorer.competition import LOST_ITEMS, Competition
from scorer.errors import UsageError
from scorer.leaderboard.literal import code_span, markdown
from scorer.platforms.common import Kit, template
from scorer.platforms.kaggle_metric import (
    ROW_PROBLEMS,
    HostVisibleError,
    ParticipantVisibleError,
    score,
)
from scorer.read.limits import longest_line

__all__ = [
    "ROW_PROBLEMS",
    "HostVisibleError",
    "ParticipantVisibleError",
    "kaggle_solution",
    "metric_source",
    "score",
    "spec",
    "write",
]

#: The lines of `kaggle_metric` between which the kit writes the competition's `SPEC`.
SPEC_BEGIN = "# --- the competition (written by `scorer kit kaggle`) ---\n"
SPEC_END = "# --- end of the competition ---\n"


def spec(competition: Competition) -> dict[str, Any]:
    """What the metric needs of a competition, as plain values (`kaggle_metric.SPEC`)."""
    return {
        "name": competition.name,
        "k": competition.k,
        "metric": str(competition.metric),
        "rows": str(competition.rows),
        "empty_users": str(competition.empty_users),
        "user_column": competition.columns.user,
        "list_column": competition.columns.list,
        "user_ids": str(competition.ids.user),
        "item_ids": str(competition.ids.item),
        # the longest line of a valid file, scorer's default line cap: the longest cell read
        "max_line": longest_line(competition),
    }


def metric_source(competition: Competition) -> str:
    """The metric file for `competition`: `kaggle_metric`'s source with its `SPEC` written as
    a literal. JSON's strings, escapes and integers are Python's too, and `json.dumps`
    escapes every quote, backslash and control character: a name is data, never code."""
    source = resources.files("scorer.platforms").joinpath("kaggle_metric.py").read_text("utf-8")
    begin = source.index(SPEC_BEGIN) + len(SPEC_BEGIN)
    end = source.index(SPEC_END)
    pairs = spec(competition).items()
    items = "".join(f"    {json.dumps(k)}: {json.dumps(v)},\n" for k, v in pairs)
    literal = f"{{\n{items}}}"  # as the module itself writes it (ruff's format)
    return f"{source[:begin]}SPEC: dict[str, Any] = {literal}\n{source[end:]}"


def kaggle_solution(solution: pl.DataFrame, competition: Competition = LOST_ITEMS) -> pl.DataFrame:
    """A long solution file's frame (the competition's user, item and split columns) as
    Kaggle's: one row a user with its items separated by spaces (empty for a user with none)
    and `Usage` as `Public`/`Private`/`Ignored`, ready to upload as the solution file."""
    columns, splits = competition.columns, competition.splits
    split = next((c for c in splits.columns if c in solution.columns), None)
    usage = []
    if split is not None:  # the competition's words for its splits, as Kaggle names them
        words = {getattr(splits, stage).lower(): stage.title() for stage in KAGGLE_USAGE}
        usage = [pl.col(split).first().str.to_lowercase().replace_strict(words).alias("Usage")]
    return solution.group_by(columns.user, maintain_order=True).agg(
        pl.col(columns.item).drop_nulls().cast(pl.String).str.join(" ").alias(columns.list),
        *usage,
    )


#: The splits as Kaggle's `Usage` column names them (title case).
KAGGLE_USAGE = ("public", "private", "ignored")


def write(kit: Kit) -> list[Path]:
    """Write the Kaggle kit into `kit.out`; the files written."""
    if kit.solution.graded:
        raise UsageError(
            f"{kit.solution_path}: the solution grades its items; Kaggle's solution is one "
            "list of relevant ids a user and holds no grades (use the codabench or evalai kit)"
        )
    columns = kit.competition.columns
    if "Usage" in (columns.user, columns.list):
        raise UsageError(
            "the competition names a column 'Usage', the column Kaggle's solution file "
            "splits its users by; rename it in the competition file"
        )
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
    metric = metric_source(kit.competition)
    written.append(kit.write("metric.py", metric))
    written.append(kit.write("metric.ipynb", notebook(metric)))
    written.append(
        kit.write(
            "README.md",
            template(
                "kaggle_README.md.tmpl",
                **kit.readme,
                targets=f"{kit.targets.len():,}",
                k=str(kit.competition.k),
                # code spans: nothing inside one is escaped (a backslash would show)
                user=code_span(columns.user),
                user_cell=code_span(columns.user, table=True),
                list_cell=code_span(columns.list, table=True),
                metric=markdown(f"{kit.competition.metric}@{kit.competition.k}"),
            ),
        )
    )
    return written


def notebook(source: str) -> str:
    """The metric as a one-cell notebook (nbformat 4), for Kaggle's notebook editor."""
    cell: dict[str, Any] = {
        # nbformat 4.5 requires a cell id; a fixed one keeps the kit the same bytes each time
        "id": "metric",
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
