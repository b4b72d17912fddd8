"""The organiser's files: the solution (hidden lost items and splits) and the targets, checked."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from scorer.competition import ITEM, LOST_ITEMS, STAGE, USER, Competition
from scorer.contract.codes import Codes
from scorer.contract.files import Role, duplicates, read_as
from scorer.errors import Code, HostError, Issue, Report, examples_shown, problem
from scorer.keys import item_of, keyed, packable, repeats
from scorer.read import DEFAULT_LIMITS, Limits, Table, TableLike


@dataclass(frozen=True)
class Solution:
    """The organiser's hidden truth, validated.

    `users`: one row per target user: the user (`USER`), stage ('public', 'private',
    'ignored', or null without a split column), n_relevant (pairs with grade > 0).
    `pairs`: the user, the item (`ITEM`) and grade (> 0) for every hidden pair, sorted by
    (user, item).
    """

    users: pl.DataFrame
    pairs: pl.DataFrame
    has_split: bool
    graded: bool
    competition: Competition = LOST_ITEMS
    #: The text ids' dictionaries (`users` and `pairs` hold their codes); None for integers.
    codes: Codes | None = None

    @property
    def targets(self) -> pl.Series:
        """The target users, as scored: for text ids, their codes (`written_targets`)."""
        return self.users.get_column(USER)

    @property
    def written_targets(self) -> pl.Series:
        """The target users as the files write them: for text ids, their text."""
        return self.targets if self.codes is None else self.codes.users_of(self.targets)

    def lost(self, packed: bool) -> pl.DataFrame:
        """The hidden pairs as `keyed` pairs with their grade (pair, grade), packed keys or
        not: already in pair order, so no sort."""
        return keyed(self.pairs, "grade", packed=packed, users=False)


def read_solution(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, *, competition: Competition = LOST_ITEMS
) -> Solution:
    """Read and check the organiser's solution; any problem is a `HostError` (exit 2)."""
    return solution_of(read_as(source, Role.SOLUTION, competition, limits))


def solution_of(table: Table, *, careful: bool = False) -> Solution:
    """Check a solution's cells, as read; any problem is a `HostError` (exit 2). Text ids
    are numbered first (`Codes`) and checked as integers; a problem found so is reported
    again from the text, so messages show the ids as written."""
    if not table.competition.ids.text:
        return _checked(table, careful)
    codes, numbered = Codes.number(table)
    try:
        solution = _checked(numbered, careful)
    except HostError:
        _checked(table, careful)  # raises the same problems, in the file's own words
        raise
    return replace(solution, codes=codes)


def _checked(table: Table, careful: bool) -> Solution:
    """`solution_of` on the ids as they are in the table.

    The usual file (users in order, binary grades, every item listed, one stage a user)
    takes short paths: a user column flagged sorted, the keys sorted alone, its users' rules
    found without a group-by over stages and cells. `careful` takes none of them (each rule
    an aggregate of a group-by, every sort a sort), for the tests that hold the short paths
    to it: the same solution or the same report, whatever the file."""
    frame = table.frame
    words, columns = table.competition.words, table.competition.columns
    pairs = words.listed
    problems = list(table.problems)
    # The header holds at most one split column (`check_header`'s exclusive columns), read
    # as `STAGE` whatever the file calls it; messages call it as the file does.
    split = table.file_names.get(STAGE)
    frame = frame.select(
        "line",
        USER,
        ITEM,
        pl.col(STAGE) if STAGE in frame.columns else pl.lit(None, pl.String).alias(STAGE),
        # grades are 0..MAX_GRADE once judged: a byte each
        (pl.col("grade").fill_null(1) if "grade" in frame.columns else pl.lit(1))
        .cast(pl.Int8)
        .alias("grade"),
    )
    if frame.get_column(USER).has_nulls():  # filters copy: only when they remove rows
        frame = frame.filter(pl.col(USER).is_not_null())
    # One look at the user column's order, for every step that can use it.
    grouped = not careful and frame.get_column(USER).is_sorted()
    if grouped:  # the usual file: a group-by five times faster
        frame = frame.with_columns(pl.col(USER).set_sorted())
    listed = frame
    if frame.get_column(ITEM).has_nulls():
        listed = frame.filter(pl.col(ITEM).is_not_null())
    packed = packable(listed)
    if careful or listed.select((pl.col("grade") != 1).any()).item():
        lost = keyed(listed, "grade", packed=packed, grouped=grouped)
    else:  # binary grades (the usual case): sort the keys alone
        lost = keyed(listed, packed=packed, grouped=grouped).with_columns(grade=pl.lit(1, pl.Int8))
    if repeats(lost):
        problems += duplicates(
            table,
            listed,
            [USER, ITEM],
            Code.DUPLICATE_PAIR,
            f"pair ({words.user} {{user}}, {words.item} {{value}})",
            ITEM,
        )
    # users in file order: messages and the targets follow it
    per_user = _per_user(frame) if grouped else _grouped(frame)
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
                for u, ln in mixed.head(examples_shown()).select(USER, "line").rows()
            ],
        )
    )
    # An item id that could not be read is null too: judge empty rows once ids are clean.
    unread = any(p.code is Code.INVALID_ID for p in table.problems)
    both = (
        frame.filter(pl.col(ITEM).is_null() & pl.lit(not unread))
        .join(per_user.filter((pl.col("empty") > 0) & (pl.col("pairs") > 0)), on=USER)
        .group_by(USER)
        .agg(pl.col("line").min())  # the line of the empty item
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
                for u, ln in both.head(examples_shown()).select(USER, "line").rows()
            ],
        )
    )
    report = Report.of(table.file, problems)
    if report:
        raise HostError("solution", report)
    if lost.select((pl.col("grade") <= 0).any()).item():
        lost = lost.filter(pl.col("grade") > 0)
    users = per_user.select(
        USER, pl.col("stage").cast(pl.String), pl.col("n_relevant").cast(pl.Int64)
    )
    return Solution(
        users=users,
        pairs=lost.select(USER, item_of(packed).alias(ITEM), "grade"),
        has_split=split is not None,
        graded=bool(lost.select((pl.col("grade") != 1).any()).item()),
        competition=table.competition,
    )


def _per_user(frame: pl.DataFrame) -> pl.DataFrame:
    """One row a user: its first line, its stage, whether it has rows in more than one stage
    (nulls aside), its empty item cells, its pairs and its relevant pairs, in file order;
    `frame`'s users are in order (flagged sorted).

    The usual solution, with no empty cell and every grade above 0, has its users' rules
    found without a group-by over its stages and cells: a user's stages differ only where
    two of its rows in a row do (its rows together: a sorted user column), and every pair
    is relevant."""
    items, stages = (frame.get_column(c) for c in (ITEM, "stage"))
    if items.has_nulls() or stages.null_count() not in (0, stages.len()):
        return _grouped(frame)  # an empty cell, or a split cell left empty
    if not bool(frame.select((pl.col("grade") > 0).all()).item()):
        return _grouped(frame)
    users = frame.get_column(USER).to_numpy()
    starts = np.flatnonzero(np.concatenate(([users.size > 0], users[1:] != users[:-1])))
    if not stages.has_nulls():  # a split column: a user's stage changes nowhere in its rows
        code = stages.to_physical().to_numpy()
        changes = np.flatnonzero(code[1:] != code[:-1]) + 1
        if (users[changes] == users[changes - 1]).any():
            return _grouped(frame)
    count = pl.Series("pairs", np.diff(np.append(starts, users.size)), pl.UInt32)
    return pl.DataFrame(
        [
            pl.Series(USER, users[starts]),
            frame.get_column("line").gather(starts),  # in file order: the users are sorted
            stages.gather(starts),
            pl.Series("mixed", np.zeros(starts.size, bool)),
            pl.Series("empty", np.zeros(starts.size, np.uint32)),
            count,
            count.alias("n_relevant"),
        ]
    )


def _grouped(frame: pl.DataFrame) -> pl.DataFrame:
    """`_per_user` of any solution, each rule an aggregate of a group-by."""
    code = pl.col("stage").to_physical()
    return (
        frame.group_by(USER)
        .agg(
            pl.col("line").min(),
            # Used only when every cell is valid (no stage is null): then the user's one stage.
            pl.col("stage").first(),
            # Nulls aside, more than one stage.
            (code.min() != code.max()).fill_null(False).alias("mixed"),
            pl.col(ITEM).null_count().alias("empty"),
            pl.col(ITEM).count().alias("pairs"),
            ((pl.col("grade") > 0) & pl.col(ITEM).is_not_null()).sum().alias("n_relevant"),
        )
        .sort("line")
    )


def read_targets(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, *, competition: Competition = LOST_ITEMS
) -> pl.Series:
    """Read the participants' list of target users; any problem is a `HostError` (exit 2)."""
    return targets_of(read_as(source, Role.TARGETS, competition, limits))


def targets_of(table: Table) -> pl.Series:
    """Check a targets file's cells, as read; any problem is a `HostError` (exit 2)."""
    problems = list(table.problems)
    problems += duplicates(
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
