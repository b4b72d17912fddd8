"""The floor: start Python, import polars, read the submission (and the solution, if named) with
their typed schemas, and nothing else. Every other tool is measured against such a process.

    python bench/baselines/floor.py SUBMISSION.csv [SOLUTION.csv]    # or both .parquet
"""

from __future__ import annotations

import json
import sys

import polars as pl

SUBMISSION = {"user_id": pl.Int64, "edition_id": pl.Int64, "rank": pl.Int64}
SOLUTION = {"user_id": pl.Int64, "edition_id": pl.Int64, "stage": pl.String}


def read(path: str, schema: dict[str, type[pl.DataType]]) -> pl.DataFrame:
    return pl.read_parquet(path) if path.endswith(".parquet") else pl.read_csv(path, schema=schema)


def main(submission: str, solution: str | None = None) -> None:
    # both frames held to the end, as a scorer holds them: the peak RSS is of the two together
    frames = {"submission": read(submission, SUBMISSION)}
    if solution is not None:
        frames["solution"] = read(solution, SOLUTION)
    rows = {name: frame.height for name, frame in frames.items()}
    print(json.dumps({"tool": "floor", "rows": rows}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
