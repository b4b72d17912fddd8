"""Random competitions for hypothesis: users, their lost editions with grades, a split and
a ranking each; written as CSV files or frames."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from hypothesis import strategies as st

from support.strategies import user_ids

#: Editions a random competition draws from: few, so random rankings hit often.
POOL = 45


@dataclass
class User:
    user_id: int
    split: str | None  # as written in the file: 'public', 'PRIVATE', 'Ignored', …
    lost: dict[int, int]  # edition → grade
    ranked: list[int]  # 20 distinct editions, rank 1 first


@dataclass
class Competition:
    users: list[User]
    split_column: str | None  # None, 'stage' or 'Usage'
    graded: bool
    no_lost: str = "zero"

    def solution_columns(self) -> list[str]:
        columns = ["user_id", "edition_id"]
        if self.split_column:
            columns.append(self.split_column)
        if self.graded:
            columns.append("grade")
        return columns

    def solution_rows(self) -> list[dict[str, str]]:
        rows = []
        for user in self.users:
            pairs = list(user.lost.items()) or [(None, 0)]
            for edition, grade in pairs:
                row = {
                    "user_id": str(user.user_id),
                    "edition_id": "" if edition is None else str(edition),
                }
                if self.split_column:
                    row[self.split_column] = str(user.split)
                if self.graded:
                    row["grade"] = str(grade)
                rows.append(row)
        return rows

    def submission_rows(self) -> list[dict[str, str]]:
        return [
            {"user_id": str(u.user_id), "edition_id": str(e), "rank": str(r)}
            for u in self.users
            for r, e in enumerate(u.ranked, start=1)
        ]

    def solution_frame(self) -> pl.DataFrame:
        rows = self.solution_rows()
        data: dict[str, list[object]] = {
            "user_id": [int(r["user_id"]) for r in rows],
            "edition_id": [int(r["edition_id"]) if r["edition_id"] else None for r in rows],
        }
        schema: dict[str, type[pl.DataType]] = {"user_id": pl.Int64, "edition_id": pl.Int64}
        if self.split_column:
            data[self.split_column] = [r[self.split_column] for r in rows]
            schema[self.split_column] = pl.String
        if self.graded:
            data["grade"] = [int(r["grade"]) for r in rows]
            schema["grade"] = pl.Int64
        return pl.DataFrame(data, schema=schema)

    def write_csv(self, folder: Path) -> tuple[Path, Path]:
        """The submission and the solution as CSV files in `folder`."""
        submission = write_csv(
            folder / "submission.csv", self.submission_rows(), ["user_id", "edition_id", "rank"]
        )
        solution = write_csv(folder / "solution.csv", self.solution_rows(), self.solution_columns())
        return submission, solution

    def submission_frame(self) -> pl.DataFrame:
        rows = self.submission_rows()
        return pl.DataFrame(
            {c: [int(r[c]) for r in rows] for c in ("user_id", "edition_id", "rank")},
            schema={"user_id": pl.Int64, "edition_id": pl.Int64, "rank": pl.Int64},
        )


def write_csv(path: Path, rows: list[dict[str, str]], columns: list[str]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


@st.composite
def competitions(draw: st.DrawFn, max_users: int = 30) -> Competition:
    split_column = draw(st.sampled_from([None, "stage", "Usage"]))
    graded = draw(st.booleans())
    ids = draw(user_ids(0, 10**6, max_size=max_users))
    if split_column == "stage":
        splits = st.sampled_from(["public", "private"])
    elif split_column == "Usage":
        splits = st.sampled_from(["Public", "Private", "Ignored", "PUBLIC", "private", "ignored"])
    else:
        splits = st.none()
    grade = st.integers(0, 10) if graded else st.just(1)
    users = []
    for user_id in ids:
        editions = draw(st.lists(st.integers(1, POOL), max_size=30, unique=True))
        lost = {e: draw(grade) for e in editions}
        order = draw(st.permutations(range(1, POOL + 1)))
        if draw(st.integers(0, 4)) == 0:  # now and then, a perfect ranking
            best = sorted(lost, key=lambda e: -lost[e])
            order = best + [e for e in order if e not in lost]
        users.append(User(user_id, draw(splits), lost, list(order[:20])))
    no_lost = draw(st.sampled_from(["zero", "exclude"]))
    return Competition(users, split_column, graded, no_lost)
