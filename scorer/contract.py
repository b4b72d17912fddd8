"""The file contract: what a submission, a solution and a targets file must hold."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import polars as pl

from scorer.competition import LOST_ITEMS, Competition, Relevance, Rows
from scorer.errors import (
    Code,
    HostError,
    Issue,
    Problem,
    Report,
    SubmissionError,
    file_error,
    problem,
)
from scorer.keys import edition_of, keyed, packable, ranked, repeats
from scorer.read import (
    DEFAULT_LIMITS,
    ITEM,
    RANK,
    USER,
    Kind,
    Limits,
    Rejected,
    Spec,
    Table,
    TableLike,
)
from scorer.read import read_table as _read


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
    if role is Role.TARGETS:
        return Spec(str(role), {columns.user: "id"}, {}, competition=competition, internal=internal)
    if role is Role.SUBMISSION:
        required: dict[str, Kind] = {columns.user: "id", columns.item: "id", columns.rank: "rank"}
        return Spec(str(role), required, {}, competition=competition, internal=internal, wide=True)
    optional: dict[str, Kind] = dict.fromkeys(competition.splits.columns, "stage")
    if competition.relevance is Relevance.GRADED:
        optional["grade"] = "grade"
    return Spec(
        str(role),
        {columns.user: "id", columns.item: "id"},
        optional,
        nullable=frozenset({columns.item, "grade"}),
        competition=competition,
        internal=internal,
        wide=True,
    )


@dataclass(frozen=True)
class Solution:
    """The organiser's hidden truth, validated.

    `users`: one row per target user: user_id, stage ('public', 'private', 'ignored', or null
    without a split column), n_relevant (pairs with grade > 0).
    `pairs`: user_id, edition_id, grade (> 0) for every hidden lost pair, sorted by
    (user_id, edition_id).
    """

    users: pl.DataFrame
    pairs: pl.DataFrame
    has_split: bool
    graded: bool
    competition: Competition = LOST_ITEMS

    @property
    def targets(self) -> pl.Series:
        return self.users.get_column("user_id")

    def lost(self, packed: bool) -> pl.DataFrame:
        """The hidden pairs `keyed` (pair, grade, user_id), with packed keys or not: already
        in pair order, so no sort."""
        return keyed(self.pairs, "grade", packed=packed)


def read_solution(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, *, competition: Competition = LOST_ITEMS
) -> Solution:
    """Read and check the organiser's solution; any problem is a `HostError` (exit 2)."""
    return solution_of(_host_table(source, Role.SOLUTION, competition, limits))


def solution_of(table: Table) -> Solution:
    """Check a solution's cells, as read; any problem is a `HostError` (exit 2)."""
    frame = table.frame
    words, columns = table.competition.words, table.competition.columns
    pairs = "pairs" if table.competition == LOST_ITEMS else f"{words.item}s"
    problems = list(table.problems)
    # The header holds at most one split column (`check_header`'s exclusive columns).
    splits = spec_of(Role.SOLUTION, table.competition).of_kind("stage")
    split = next((name for name in splits if name in frame.columns), None)
    frame = frame.select(
        "line",
        "user_id",
        "edition_id",
        (pl.col(split) if split else pl.lit(None, pl.String)).alias("stage"),
        # grades are 0..MAX_GRADE once judged: a byte each
        (pl.col("grade").fill_null(1) if "grade" in frame.columns else pl.lit(1))
        .cast(pl.Int8)
        .alias("grade"),
    )
    if frame.get_column("user_id").has_nulls():  # filters copy: only when they remove rows
        frame = frame.filter(pl.col("user_id").is_not_null())
    listed = frame
    if frame.get_column("edition_id").has_nulls():
        listed = frame.filter(pl.col("edition_id").is_not_null())
    packed = packable(listed)
    if listed.select((pl.col("grade") != 1).any()).item():
        lost = keyed(listed, "grade", packed=packed)
    else:  # binary grades (the usual case): sort the keys alone
        lost = keyed(listed, packed=packed).with_columns(grade=pl.lit(1, pl.Int8))
    if repeats(lost):
        problems += _duplicates(
            table,
            listed,
            [USER, ITEM],
            Code.DUPLICATE_PAIR,
            f"pair ({words.user} {{user}}, {words.item} {{value}})",
            ITEM,
        )
    # One pass over the rows gives every per-user rule and the users table itself.
    per_user = (
        frame.group_by("user_id")
        .agg(
            pl.col("line").min(),
            pl.col("stage").max(),  # nulls aside, the user's one stage: min() == max()
            (pl.col("stage").min() != pl.col("stage").max()).fill_null(False).alias("mixed"),
            pl.col("edition_id").null_count().alias("empty"),
            pl.col("edition_id").count().alias("pairs"),
            ((pl.col("grade") > 0) & pl.col("edition_id").is_not_null()).sum().alias("n_relevant"),
        )
        .sort("line")
    )  # users in file order: messages and the targets list follow it
    mixed = per_user.filter(pl.col("mixed"))
    problems.append(
        problem(
            Code.MIXED_STAGE,
            mixed.height,
            [
                Issue(
                    Code.MIXED_STAGE,
                    f"{table.unit} {ln}: {words.user} {u} has rows in more than one stage; a "
                    f"{words.user}'s "
                    f"{split} must be the same on all its rows",
                    line=ln,
                    user=str(u),
                    column=split,
                )
                for u, ln in mixed.head(5).select("user_id", "line").rows()
            ],
        )
    )
    # An item id that could not be read is null too: judge empty rows once ids are clean.
    unread = any(p.code is Code.INVALID_ID for p in table.problems)
    both = (
        frame.filter(pl.col("edition_id").is_null() & pl.lit(not unread))
        .join(per_user.filter((pl.col("empty") > 0) & (pl.col("pairs") > 0)), on="user_id")
        .group_by("user_id")
        .agg(pl.col("line").min())  # the line of the empty edition_id
        .sort("line")
    )
    problems.append(
        problem(
            Code.EMPTY_AND_PAIRS,
            both.height,
            [
                Issue(
                    Code.EMPTY_AND_PAIRS,
                    f"{table.unit} {ln}: {words.user} {u} has an empty {columns.item} (no lost "
                    f"{pairs}) and lost {pairs} on other rows",
                    line=ln,
                    user=str(u),
                    column=columns.item,
                )
                for u, ln in both.head(5).select("user_id", "line").rows()
            ],
        )
    )
    report = Report.of(table.file, problems)
    if report:
        raise HostError("solution", report)
    if lost.select((pl.col("grade") <= 0).any()).item():
        lost = lost.filter(pl.col("grade") > 0)
    users = per_user.select(
        "user_id", pl.col("stage").cast(pl.String), pl.col("n_relevant").cast(pl.Int64)
    )
    return Solution(
        users=users,
        pairs=lost.select("user_id", edition_of(packed).alias("edition_id"), "grade"),
        has_split=split is not None,
        graded=bool(lost.select((pl.col("grade") != 1).any()).item()),
        competition=table.competition,
    )


def read_targets(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, *, competition: Competition = LOST_ITEMS
) -> pl.Series:
    """Read the participants' list of target users; any problem is a `HostError` (exit 2)."""
    return targets_of(_host_table(source, Role.TARGETS, competition, limits))


def targets_of(table: Table) -> pl.Series:
    """Check a targets file's cells, as read; any problem is a `HostError` (exit 2)."""
    problems = list(table.problems)
    problems += _duplicates(
        table,
        table.frame.filter(pl.col(USER).is_not_null()),
        [USER],
        Code.DUPLICATE_USER,
        f"{table.competition.words.user} {{value}}",
        USER,
    )
    report = Report.of(table.file, problems)
    if report:
        raise HostError(str(Role.TARGETS), report)
    return table.frame.get_column(USER)


@contextmanager
def reading(role: Role) -> Iterator[None]:
    """Reading a file of `role`: one refused as a whole (`Rejected`) raises its role's error,
    the participant's for a submission, the organiser's for the others."""
    try:
        yield
    except Rejected as exc:
        raise file_error(str(role), exc.report) from None


def _host_table(source: TableLike, role: Role, competition: Competition, limits: Limits) -> Table:
    with reading(role):
        return _read(source, spec_of(role, competition), limits)


def read_submission(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, *, competition: Competition = LOST_ITEMS
) -> Table:
    """Read a submission's cells, in either layout; a file whose rows cannot be judged is a
    `SubmissionError`."""
    with reading(Role.SUBMISSION):
        return _read(source, spec_of(Role.SUBMISSION, competition), limits)


def check_submission(
    table: Table, targets: pl.Series, *, packed: bool | None = None
) -> pl.DataFrame:
    """Apply every rule of the table's competition; raise one `SubmissionError` listing every
    problem, or return the listed rows `keyed` by pair with their rank, as scoring joins them
    (`packed` keys: by default when the submission's ids allow)."""
    competition = table.competition
    frame = table.frame
    # A wide line with an empty list is a user with no items: seen, but not a row to rank.
    empty = "position" in frame.columns and frame.get_column("position").has_nulls()
    listed = frame.filter(pl.col("position").is_not_null()) if empty else frame
    if packed is None:
        packed = packable(listed)
    rows = None if table.problems else ranked(listed, packed, competition.rank_bits)
    if rows is not None and not empty and _passes_screen(rows, targets, competition):
        return rows
    report = Report.of(table.file, [*table.problems, *_row_problems(table, targets)])
    if report or rows is None:
        raise SubmissionError(report)
    return rows


def check_against(table: Table, solution: Solution) -> pl.DataFrame:
    """`check_submission` against a solution's users, the rows keyed as they join its pairs."""
    if table.competition != solution.competition:
        raise ValueError("the submission and the solution were read for different competitions")
    return check_submission(table, solution.targets, packed=packable(table.frame, solution.pairs))


def _passes_screen(rows: pl.DataFrame, targets: pl.Series, competition: Competition) -> bool:
    """A fast test that every rule holds, by aggregates of the `keyed` rows: each user has k
    rows (at most k, by the `at_most` rule) with as many distinct ranks (every cell is judged
    already, so ranks are in 1..k), no pair (user, item) repeats, and the users are exactly
    the targets. Any doubt sends the file to `_row_problems` for the details."""
    k = competition.k
    per_user = rows.group_by(USER).agg(pl.len().alias("n"), pl.col(RANK).n_unique().alias("ranks"))
    count = pl.col("n") == k if competition.rows is Rows.EXACTLY else pl.col("n") <= k
    shape_ok, n_users = per_user.select(
        (count & (pl.col("ranks") == pl.col("n"))).all(), pl.len()
    ).row(0)
    if not shape_ok or n_users != targets.len():
        return False
    known = per_user.join(pl.DataFrame({USER: targets}), on=USER, how="semi")
    return known.height == targets.len() and not repeats(rows)


def _row_problems(table: Table, targets: pl.Series) -> list[Problem]:
    """Every row-level rule with the first few offending lines; cells that broke their own
    rule are null in `table.frame` and were counted already."""
    frame = table.frame
    unit = table.unit
    competition = table.competition
    words, columns, k = competition.words, competition.columns, competition.k
    found: list[Problem] = []
    target_frame = pl.DataFrame({USER: targets})
    rows = frame.filter(pl.col(USER).is_not_null())
    known = rows.join(target_frame, on=USER, how="semi")
    # A wide file: one line a user, ranks are list positions; a rank can repeat only for a user
    # on two lines, which the count rule names, so there only listed items are counted.
    wide = "position" in frame.columns
    found += _duplicates(
        table,
        known.filter(pl.col(RANK).is_not_null() & pl.lit(not wide)),
        [USER, RANK],
        Code.DUPLICATE_RANK,
        "rank {value}",
        RANK,
    )
    found += _duplicates(
        table,
        known.filter(pl.col(ITEM).is_not_null()),
        [USER, ITEM],
        Code.DUPLICATE_EDITION,
        f"{words.item} {{value}}",
        ITEM,
    )
    exactly = competition.rows is Rows.EXACTLY
    n = pl.col("n")
    counts = (
        known.group_by(USER)
        .agg(
            (pl.col("position").count() if wide else pl.len()).alias("n"),
            pl.col("line").min().alias("first"),
            pl.col("line").max().alias("last"),
        )
        .filter(
            (n != k if exactly else n > k) | (pl.lit(wide) & (pl.col("first") != pl.col("last")))
        )
        .sort("first")
    )
    found.append(
        problem(
            Code.WRONG_ROW_COUNT,
            counts.height,
            [
                Issue(
                    Code.WRONG_ROW_COUNT,
                    _count_message(competition, unit, u, n, first, last, wide),
                    line=first,
                    user=str(u),
                    column=columns.user,
                    value=str(n),
                )
                for u, n, first, last in counts.head(5).rows()
            ],
        )
    )
    missing = target_frame.join(rows.select(USER).unique(), on=USER, how="anti")
    missing = missing.sort(USER)  # no line to show: the lowest ids first
    found.append(
        problem(
            Code.MISSING_USER,
            missing.height,
            [
                Issue(
                    Code.MISSING_USER,
                    f"{words.user} {u} is missing; expected {_wanted(competition, wide)} for "
                    f"every target {words.user}",
                    user=str(u),
                    column=columns.user,
                    value=str(u),
                )
                for u in missing.head(5).get_column(USER)
            ],
        )
    )
    unknown = (
        rows.join(target_frame, on=USER, how="anti")
        .group_by(USER)
        .agg(pl.col("line").min(), pl.len().alias("n"))
        .sort("line")
    )
    found.append(
        problem(
            Code.UNKNOWN_USER,
            unknown.height,
            [
                Issue(
                    Code.UNKNOWN_USER,
                    f"{unit} {ln}: {words.user} {u} is not a target {words.user}"
                    + ("" if wide else f" ({n} {'row' if n == 1 else 'rows'})"),
                    line=ln,
                    user=str(u),
                    column=columns.user,
                    value=str(u),
                )
                for u, ln, n in unknown.head(5).rows()
            ],
        )
    )
    return found


def _duplicates(
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
    for row in repeated.head(5).iter_rows(named=True):
        user = row.get(USER)
        label = what.format(user=user, value=row[column])
        owner = f" for {word} {user}" if USER in keys and column != USER else ""
        here = _place(table.unit, row["line"], row.get("position"))
        there = _place(table.unit, row["_first_line"], row.get("_first_position"))
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


def _wanted(competition: Competition, wide: bool) -> str:
    """What every target user must have, as the missing-user message says it."""
    k, items = competition.k, f"{competition.words.item}s"
    if competition.rows is Rows.EXACTLY:
        return f"{k} {items if wide else 'rows'}"
    return f"a line of at most {k} {items}" if wide else f"1 to {k} rows"


def _count_message(
    competition: Competition, unit: str, user: int, n: int, first: int, last: int, wide: bool
) -> str:
    k, word = competition.k, competition.words
    expected = f"exactly {k}" if competition.rows is Rows.EXACTLY else f"at most {k}"
    if not wide:
        rows = "row" if n == 1 else "rows"
        where = f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"
        return f"{unit} {first}: {word.user} {user} has {n} {rows} ({where}); expected {expected}"
    if first != last:
        return (
            f"{unit} {first}: {word.user} {user} is listed on more than one {unit} ({unit}s "
            f"{first}–{last}, {n} {word.item}s in all); expected one {unit} of {expected}"
        )
    items = word.item if n == 1 else f"{word.item}s"
    return f"{unit} {first}: {word.user} {user} has {n} {items}; expected {expected}"


def _place(unit: str, line: int, position: int | None) -> str:
    return f"{unit} {line}" if position is None else f"{unit} {line}, position {position}"
