"""The file contract: what a submission, a solution and a targets file must hold."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from scorer.cells import K, Spec, Table
from scorer.errors import Code, HostError, Issue, Problem, Report, SubmissionError, problem
from scorer.io import DEFAULT_LIMITS, Limits, Rejected, TableLike
from scorer.keys import edition_of, keyed, packable, ranked, repeats
from scorer.parse import read_table
from scorer.wide import is_wide, read_wide

SUBMISSION = Spec(
    role="submission",
    required={"user_id": "id", "edition_id": "id", "rank": "rank"},
    optional={},
)
SOLUTION = Spec(
    role="solution",
    required={"user_id": "id", "edition_id": "id"},
    optional={"stage": "stage", "Usage": "stage", "grade": "grade"},
    # An empty edition_id: a user with no lost pairs. An empty grade: the default grade, 1.
    nullable=frozenset({"edition_id", "grade"}),
)
TARGETS = Spec(role="targets", required={"user_id": "id"}, optional={})


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

    @property
    def targets(self) -> pl.Series:
        return self.users.get_column("user_id")

    def lost(self, packed: bool) -> pl.DataFrame:
        """The hidden pairs `keyed` (pair, grade, user_id), with packed keys or not: already
        in pair order, so no sort."""
        return keyed(self.pairs, "grade", packed=packed)


def read_solution(source: TableLike, limits: Limits = DEFAULT_LIMITS) -> Solution:
    """Read and check the organiser's solution; any problem is a `HostError` (exit 2)."""
    return solution_of(_host_table(source, SOLUTION, limits))


def solution_of(table: Table) -> Solution:
    """Check a solution's cells, as read; any problem is a `HostError` (exit 2)."""
    frame = table.frame
    problems = list(table.problems)
    splits = [name for name in SOLUTION.of_kind("stage") if name in frame.columns]
    if len(splits) > 1:
        problems.append(
            problem(
                Code.DUPLICATE_COLUMN,
                1,
                [
                    Issue(
                        Code.DUPLICATE_COLUMN,
                        "line 1: both 'stage' and 'Usage' name the split; keep one",
                        line=1,
                    )
                ],
            )
        )
    split = splits[0] if splits else None
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
            listed,
            ["user_id", "edition_id"],
            Code.DUPLICATE_PAIR,
            "pair (user {user}, edition {value})",
            "edition_id",
            table.unit,
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
                    f"{table.unit} {ln}: user {u} has rows in more than one stage; a user's "
                    f"{split} must be the same on all its rows",
                    line=ln,
                    user=str(u),
                    column=split,
                )
                for u, ln in mixed.head(5).select("user_id", "line").rows()
            ],
        )
    )
    # An edition_id that could not be read is null too: judge empty rows once ids are clean.
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
                    f"{table.unit} {ln}: user {u} has an empty edition_id (no lost pairs) "
                    "and lost pairs on other rows",
                    line=ln,
                    user=str(u),
                    column="edition_id",
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
    )


def read_targets(source: TableLike, limits: Limits = DEFAULT_LIMITS) -> pl.Series:
    """Read the participants' list of target users; any problem is a `HostError` (exit 2)."""
    return targets_of(_host_table(source, TARGETS, limits))


def targets_of(table: Table) -> pl.Series:
    """Check a targets file's cells, as read; any problem is a `HostError` (exit 2)."""
    problems = list(table.problems)
    problems += _duplicates(
        table.frame.filter(pl.col("user_id").is_not_null()),
        ["user_id"],
        Code.DUPLICATE_USER,
        "user {value}",
        "user_id",
        table.unit,
    )
    report = Report.of(table.file, problems)
    if report:
        raise HostError("targets", report)
    return table.frame.get_column("user_id")


def _host_table(source: TableLike, spec: Spec, limits: Limits) -> Table:
    try:
        return read_table(source, spec, limits)
    except Rejected as exc:
        raise HostError(spec.role, exc.report) from None


def read_submission(source: TableLike, limits: Limits = DEFAULT_LIMITS) -> Table:
    """Read a submission's cells; a file whose rows cannot be judged is a `SubmissionError`."""
    try:
        if is_wide(source, limits):  # one line a user: user_id,edition_ids ("101 202 …")
            return read_wide(source, limits)
        return read_table(source, SUBMISSION, limits)
    except Rejected as exc:
        raise SubmissionError(exc.report) from None


def check_submission(
    table: Table, targets: pl.Series, *, packed: bool | None = None
) -> pl.DataFrame:
    """Apply every rule; raise one `SubmissionError` listing every problem, or return the
    rows `keyed` by pair with their rank, as scoring joins them (`packed` keys: by default
    when the submission's ids allow)."""
    if packed is None:
        packed = packable(table.frame)
    rows = None if table.problems else ranked(table.frame, packed)
    if rows is not None and _passes_screen(rows, targets):
        return rows
    report = Report.of(table.file, [*table.problems, *_row_problems(table, targets)])
    if report or rows is None:
        raise SubmissionError(report)
    return rows


def check_against(table: Table, solution: Solution) -> pl.DataFrame:
    """`check_submission` against a solution's users, the rows keyed as they join its pairs."""
    return check_submission(table, solution.targets, packed=packable(table.frame, solution.pairs))


def _passes_screen(rows: pl.DataFrame, targets: pl.Series) -> bool:
    """A fast test that every rule holds, by aggregates of the `keyed` rows: each user has K
    rows with K distinct ranks (every cell is judged already, so ranks are 1..K: each once),
    no pair (user, edition) repeats, and the users are exactly the targets. Any doubt sends
    the file to `_row_problems` for the details."""
    per_user = rows.group_by("user_id").agg(
        pl.len().alias("n"), pl.col("rank").n_unique().alias("ranks")
    )
    shape_ok, n_users = per_user.select(
        ((pl.col("n") == K) & (pl.col("ranks") == K)).all(), pl.len()
    ).row(0)
    if not shape_ok or n_users != targets.len():
        return False
    known = per_user.join(pl.DataFrame({"user_id": targets}), on="user_id", how="semi")
    return known.height == targets.len() and not repeats(rows)


def _row_problems(table: Table, targets: pl.Series) -> list[Problem]:
    """Every row-level rule with the first few offending lines; cells that broke their own
    rule are null in `table.frame` and were counted already."""
    frame = table.frame
    unit = table.unit
    found: list[Problem] = []
    target_frame = pl.DataFrame({"user_id": targets})
    rows = frame.filter(pl.col("user_id").is_not_null())
    known = rows.join(target_frame, on="user_id", how="semi")
    # A wide file: one line a user, ranks are list positions; a rank can repeat only for a user
    # on two lines, which the count rule names, so there only listed editions are counted.
    wide = "position" in frame.columns
    found += _duplicates(
        known.filter(pl.col("rank").is_not_null() & pl.lit(not wide)),
        ["user_id", "rank"],
        Code.DUPLICATE_RANK,
        "rank {value}",
        "rank",
        unit,
    )
    found += _duplicates(
        known.filter(pl.col("edition_id").is_not_null()),
        ["user_id", "edition_id"],
        Code.DUPLICATE_EDITION,
        "edition {value}",
        "edition_id",
        unit,
    )
    counts = (
        known.group_by("user_id")
        .agg(
            (pl.col("position").count() if wide else pl.len()).alias("n"),
            pl.col("line").min().alias("first"),
            pl.col("line").max().alias("last"),
        )
        .filter((pl.col("n") != K) | (pl.lit(wide) & (pl.col("first") != pl.col("last"))))
        .sort("first")
    )
    found.append(
        problem(
            Code.WRONG_ROW_COUNT,
            counts.height,
            [
                Issue(
                    Code.WRONG_ROW_COUNT,
                    _count_message(unit, u, n, first, last, wide),
                    line=first,
                    user=str(u),
                    column="user_id",
                    value=str(n),
                )
                for u, n, first, last in counts.head(5).rows()
            ],
        )
    )
    missing = target_frame.join(rows.select("user_id").unique(), on="user_id", how="anti")
    missing = missing.sort("user_id")  # no line to show: the lowest ids first
    found.append(
        problem(
            Code.MISSING_USER,
            missing.height,
            [
                Issue(
                    Code.MISSING_USER,
                    f"user {u} is missing; expected {K} {'editions' if wide else 'rows'} for "
                    "every target user",
                    user=str(u),
                    column="user_id",
                    value=str(u),
                )
                for u in missing.head(5).get_column("user_id")
            ],
        )
    )
    unknown = (
        rows.join(target_frame, on="user_id", how="anti")
        .group_by("user_id")
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
                    f"{unit} {ln}: user {u} is not a target user"
                    + ("" if wide else f" ({n} {'row' if n == 1 else 'rows'})"),
                    line=ln,
                    user=str(u),
                    column="user_id",
                    value=str(u),
                )
                for u, ln, n in unknown.head(5).rows()
            ],
        )
    )
    return found


def _duplicates(
    frame: pl.DataFrame, keys: list[str], code: Code, what: str, column: str, unit: str
) -> list[Problem]:
    """Rows repeating an earlier row's `keys`, each naming the place it repeats. A wide file's
    rows share a line, so there the place is the line and the position in the list."""
    order = ["line", "position"] if "position" in frame.columns else ["line"]
    repeats = (
        frame.select(*order, *keys)
        .sort(order)
        .with_columns(
            *[pl.col(c).first().over(keys).alias(f"_first_{c}") for c in order],
            pl.int_range(pl.len()).over(keys).alias("_nth"),
        )
        .filter(pl.col("_nth") > 0)
    )
    if repeats.height == 0:
        return []
    examples = []
    for row in repeats.head(5).iter_rows(named=True):
        user = row.get("user_id")
        label = what.format(user=user, value=row[column])
        owner = f" for user {user}" if "user_id" in keys and column != "user_id" else ""
        here = _place(unit, row["line"], row.get("position"))
        there = _place(unit, row["_first_line"], row.get("_first_position"))
        examples.append(
            Issue(
                code,
                f"{here}: {label} repeats {there}{owner}",
                line=row["line"],
                user=None if user is None else str(user),
                column=column,
                value=str(row[column]),
            )
        )
    return [problem(code, repeats.height, examples)]


def _count_message(unit: str, user: int, n: int, first: int, last: int, wide: bool) -> str:
    if not wide:
        rows = "row" if n == 1 else "rows"
        where = f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"
        return f"{unit} {first}: user {user} has {n} {rows} ({where}); expected exactly {K}"
    if first != last:
        return (
            f"{unit} {first}: user {user} is listed on more than one {unit} ({unit}s "
            f"{first}–{last}, {n} editions in all); expected one {unit} of exactly {K}"
        )
    editions = "edition" if n == 1 else "editions"
    return f"{unit} {first}: user {user} has {n} {editions}; expected exactly {K}"


def _place(unit: str, line: int, position: int | None) -> str:
    return f"{unit} {line}" if position is None else f"{unit} {line}, position {position}"
