"""The kinds of file and what they share: each one's columns in a competition, the error a file
refused as a whole raises, and the rule against repeated rows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from functools import cache

import polars as pl

from scorer.competition import LOST_ITEMS, STAGE, Competition, Relevance
from scorer.errors import (
    Code,
    Issue,
    Problem,
    UsageError,
    examples_shown,
    file_error,
    problem,
)
from scorer.read import (
    ITEM,
    RANK,
    USER,
    Kind,
    Limits,
    Rejected,
    Spec,
    Table,
    TableLike,
    UsersOnly,
    id_kind,
    read_table,
)


class Role(StrEnum):
    """The kinds of file: the participant's submission, the organiser's solution and targets."""

    SUBMISSION = "submission"
    SOLUTION = "solution"
    TARGETS = "targets"


@cache
def spec_of(role: Role, competition: Competition = LOST_ITEMS) -> Spec:
    """The columns of one kind of file in a competition. A submission and a solution may come
    in the wide layout; a solution's item may be empty (a user with no lost items), as may
    its grade (the default grade, 1)."""
    columns = competition.columns
    internal = {columns.user: USER, columns.item: ITEM, columns.rank: RANK}
    user, item = id_kind(competition.ids.user), id_kind(competition.ids.item)
    if role is Role.TARGETS:
        return Spec(str(role), {columns.user: user}, {}, competition=competition, internal=internal)
    if role is Role.SUBMISSION:
        required: dict[str, Kind] = {columns.user: user, columns.item: item, columns.rank: "rank"}
        return Spec(str(role), required, {}, competition=competition, internal=internal, wide=True)
    optional: dict[str, Kind] = dict.fromkeys(competition.splits.columns, "stage")
    if competition.relevance is Relevance.GRADED:
        optional["grade"] = "grade"
    # The split column takes the scorer's name too: a file's own name (say USER's, beside a
    # user column 'session_id') never meets the scorer's names inside.
    internal |= dict.fromkeys(competition.splits.columns, STAGE)
    return Spec(
        str(role),
        {columns.user: user, columns.item: item},
        optional,
        nullable=frozenset({columns.item, "grade"}),
        competition=competition,
        internal=internal,
        wide=True,
    )


@contextmanager
def reading(role: Role) -> Iterator[None]:
    """Reading a file of `role`: one refused as a whole (`Rejected`) raises its role's error,
    the participant's for a submission, the organiser's for the others. A file of the user
    column alone given as the solution is the targets file, given by mistake (most often by
    a participant, who has no solution): a usage error that says so, not a broken file."""
    try:
        yield
    except UsersOnly as exc:
        if role is not Role.SOLUTION:
            raise file_error(str(role), exc.report) from None
        name = exc.report.file
        raise UsageError(
            f"{name} holds one column of users, as the targets file does, not a solution: "
            f"to check a submission against the target users, run "
            f"scorer validate SUBMISSION --targets {name}"
        ) from None
    except Rejected as exc:
        raise file_error(str(role), exc.report) from None


def read_as(source: TableLike, role: Role, competition: Competition, limits: Limits) -> Table:
    """Read a file of `role` in a competition; one refused as a whole raises its role's error."""
    with reading(role):
        return read_table(source, spec_of(role, competition), limits)


def duplicates(
    table: Table, frame: pl.DataFrame, keys: list[str], code: Code, what: str, column: str
) -> list[Problem]:
    """Rows repeating an earlier row's `keys`, each naming the place it repeats. A wide file's
    rows share a line, so there the place is the line and the position in the list."""
    order = ["line", "position"] if "position" in frame.columns else ["line"]
    repeated = (
        frame.select(*order, *keys)
        .sort(order)
        .with_columns(
            *[pl.col(c).first().over(keys).alias(f"_first_{c}") for c in order],
            pl.int_range(pl.len()).over(keys).alias("_nth"),
        )
        .filter(pl.col("_nth") > 0)
    )
    if repeated.height == 0:
        return []
    columns = table.competition.columns
    shown = {USER: columns.user, ITEM: columns.item, RANK: columns.rank}
    word = table.competition.words.user
    examples = []
    for row in repeated.head(examples_shown()).iter_rows(named=True):
        user = row.get(USER)
        label = what.format(user=user, value=row[column])
        owner = f" for {word} {user}" if USER in keys and column != USER else ""
        here = place(table.unit, row["line"], row.get("position"))
        there = place(table.unit, row["_first_line"], row.get("_first_position"))
        examples.append(
            Issue(
                code,
                f"{here}: {label} repeats {there}{owner}",
                line=row["line"],
                user=None if user is None else str(user),
                column=shown[column],
                value=str(row[column]),
            )
        )
    return [problem(code, repeated.height, examples)]


def place(unit: str, line: int, position: int | None) -> str:
    return f"{unit} {line}" if position is None else f"{unit} {line}, position {position}"
