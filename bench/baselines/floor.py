"""The floor: start Python, import polars, read the submission and the solution CSV with their
typed schemas, and nothing else. Every other tool is measured against this process.

    python bench/baselines/floor.py SUBMISSION.csv SOLUTION.csv
"""

from __future__ import annotations

import json
import sys

import polars as pl

SUBMISSION = {"user_id": pl.Int64, "edition_id": pl.Int64, "rank": pl.Int64}
SOLUTION = {"user_id": pl.Int64, "edition_id": pl.Int64, "stage": pl.String}


def main(submission: str, solution: str) -> None:
    if submission.endswith(".parquet"):
        sub, sol = pl.read_parquet(submission), pl.read_parquet(solution)
    else:
        sub = pl.read_csv(submission, schema=SUBMISSION)
        sol = pl.read_csv(solution, schema=SOLUTION)
    print(json.dumps({"tool": "floor", "rows": {"submission": sub.height, "solution": sol.height}}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
