"""The Kaggle kit: the solution and sample submission in Kaggle's form, the metric, the wheels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from scorer import version
from scorer.adapters.kaggle import kaggle_solution
from scorer.kits import Kit, template

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
        f"{version.__version__}-py3-none-any.whl"
    )


def write(kit: Kit) -> list[Path]:
    solution = kaggle_solution(kit.long())
    written = []
    path = kit.out / "solution.csv"
    solution.write_csv(path)
    written.append(path)
    path = kit.out / "sample_submission.csv"
    kit.sample().write_csv(path)
    written.append(path)
    path = kit.out / "targets.csv"
    pl.DataFrame({"user_id": kit.targets}).write_csv(path)
    written.append(path)
    metric = template("kaggle_metric.py.tmpl", dataset=WHEELS_DATASET)
    written.append(kit.write("metric.py", metric))
    written.append(kit.write("metric.ipynb", notebook(metric)))
    written.append(
        kit.write(
            "build_wheels.sh",
            template(
                "kaggle_build_wheels.sh.tmpl",
                version=version.__version__,
                download=wheel_command(),
            ),
        )
    )
    (kit.out / "build_wheels.sh").chmod(0o755)
    split = kit.split_users
    written.append(
        kit.write(
            "README.md",
            template(
                "kaggle_README.md.tmpl",
                title=kit.title,
                dataset=WHEELS_DATASET,
                python=KAGGLE_PYTHON,
                public=f"{split['public']:,}",
                private=f"{split['private']:,}",
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
