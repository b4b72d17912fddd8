"""The submission rules: every target user's ranked items, each rule checked at once."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from scorer.competition import LOST_ITEMS, Competition, IdKind, Rows
from scorer.contract.codes import Codes
from scorer.contract.files import Role, duplicates, reading, spec_of
from scorer.contract.solution import Solution
from scorer.errors import Code, Issue, Problem, Report, SubmissionError, examples_shown, problem
from scorer.keys import (
    ITEM_BITS,
    largest_user,
    packable,
    packed_keys,
    rank_rides,
    ranked,
    repeats,
)
from scorer.read import DEFAULT_LIMITS, ITEM, RANK, USER, Limits, Table, TableLike, read_table


def read_submission(
    source: TableLike,
    limits: Limits = DEFAULT_LIMITS,
    *,
    competition: Competition = LOST_ITEMS,
    careful: bool = False,
) -> Table:
    """Read a submission's cells, in either layout; a file whose rows cannot be judged is a
    `SubmissionError`. `careful`: as for `read_table`."""
    with reading(Role.SUBMISSION):
        return read_table(source, spec_of(Role.SUBMISSION, competition), limits, careful=careful)


def check_submission(
    table: Table,
    targets: pl.Series,
    *,
    packed: bool | None = None,
    careful: bool = False,
    shown: Callable[[], tuple[Table, pl.Series]] | None = None,
) -> pl.DataFrame:
    """Apply every rule of the table's competition; raise one `SubmissionError` listing every
    problem, or return the listed rows `keyed` by pair with their rank, as scoring joins them
    (`packed` keys: by default when the submission's ids allow; the user column only where
    a path had it anyway: scoring reads the user from the pair). `careful`: skip the fast
    paths (the matrix of a usual file, the screen of a valid one) and judge every rule row by
    row (the same answer, slower), as the differential tests need."""
    competition = table.competition
    frame = table.frame
    # A wide line with an empty list is a user with no items: seen, but not a row to rank.
    empty = "position" in frame.columns and frame.get_column("position").has_nulls()
    listed = frame.filter(pl.col("position").is_not_null()) if empty else frame
    if packed is None:
        packed = packable(listed)
    top = largest_user(listed) if packed and not table.problems else 0  # once, for both
    if packed and not (careful or table.problems or empty):
        blocks = _in_blocks(listed, targets, competition, top)
        if blocks is not None:
            return blocks
    rows = None if table.problems else ranked(listed, packed, competition.rank_bits, top)
    if rows is not None and not (careful or empty) and _passes_screen(rows, targets, competition):
        return rows
    written, users = shown() if shown else (table, targets)
    report = Report.of(table.file, [*table.problems, *_row_problems(written, users)])
    if report or rows is None:
        raise SubmissionError(report)
    return rows


def check_against(table: Table, solution: Solution) -> pl.DataFrame:
    """`check_submission` against a solution's users, the rows keyed as they join its pairs."""
    if table.competition != solution.competition:
        raise ValueError("the submission and the solution were read for different competitions")
    codes = solution.codes
    if codes is None:
        return check_submission(
            table, solution.targets, packed=packable(table.frame, solution.pairs)
        )
    coded = codes.table(table)
    return check_submission(
        coded,
        solution.targets,
        packed=packable(coded.frame, solution.pairs),
        shown=lambda: (table, solution.written_targets),
    )


def _in_blocks(
    listed: pl.DataFrame, targets: pl.Series, competition: Competition, top: int
) -> pl.DataFrame | None:
    """The usual valid file, checked and keyed as a matrix of one row a user: each user's k
    rows next to each other (the users in any order), judged cells, packable ids. Returns
    the rows keyed by pair with their rank (`ranked`'s, less the user) when every rule
    holds: k rows a user with the ranks 1..k, no pair repeated, and the users exactly the
    targets; None when the file is laid
    out otherwise or any rule fails, for the general path to judge. Each user's keys are
    sorted within its row, and rows by user, which sorts them all: no sort of the column.
    Under `at_most` only a file of full lists is such a matrix (k rows for each of n users
    are n * k rows); any other goes the general way. `top`: the largest user id
    (`largest_user`)."""
    k, n = competition.k, targets.len()
    if n == 0 or listed.height != n * k:
        return None
    bits = competition.rank_bits
    if not rank_rides(top, bits):
        return None
    # One new array of keys, each row sorted in place: a row holds one user when its first
    # and last keys do.
    keys = packed_keys(listed, bits).reshape(n, k)
    low = (1 << bits) - 1
    # the usual file lists each user's ranks 1..k in order: then they are dealt, at a look
    in_order = bool((_low_bytes(keys, low) == np.arange(k, dtype=np.int8)).all())
    keys.sort(axis=1)
    users = keys[:, 0] >> (ITEM_BITS + bits)
    if not np.array_equal(users, keys[:, -1] >> (ITEM_BITS + bits)):
        return None  # a user's rows are not together
    if not (users[1:] > users[:-1]).all():
        order = np.argsort(users)
        keys, users = keys[order], users[order]
        if not (users[1:] > users[:-1]).all():
            return None  # a user on two rows of the matrix
    if not np.array_equal(users, np.sort(targets.to_numpy())):
        return None
    ranks = _low_bytes(keys, low)  # in pair order, as the rows are returned
    ranks += 1
    if not (in_order or (np.sort(ranks, axis=1) == np.arange(1, k + 1, dtype=np.int8)).all()):
        return None
    pairs = np.right_shift(keys, bits, out=keys)
    if (pairs[:, 1:] == pairs[:, :-1]).any():
        return None
    # no user column: scoring reads the user back from the pair, on the matched rows alone
    return pl.DataFrame(
        [pl.Series("pair", pairs.ravel()).set_sorted(), pl.Series(RANK, ranks.ravel())]
    )


def _low_bytes(keys: np.ndarray, low: int) -> np.ndarray:
    """The low bits of each key (a rank less 1, at most 99) as bytes, without a wide copy."""
    out = np.empty(keys.shape, np.int8)
    np.bitwise_and(keys, low, out=out, casting="unsafe")
    return out


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
    found += duplicates(
        table,
        known.filter(pl.col(RANK).is_not_null() & pl.lit(not wide)),
        [USER, RANK],
        Code.DUPLICATE_RANK,
        f"{columns.rank} {{value}}",
        RANK,
    )
    found += duplicates(
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
                for u, n, first, last in counts.head(examples_shown()).rows()
            ],
        )
    )
    seen = rows.get_column(USER)
    if table.refused is not None:  # on a line refused whole: in the file, if not checked
        seen = pl.concat([seen, table.refused.cast(seen.dtype)])
    missing = target_frame.join(seen.unique().to_frame(), on=USER, how="anti")
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
                for u in missing.head(examples_shown()).get_column(USER)
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
                for u, ln, n in unknown.head(examples_shown()).rows()
            ],
            hint=_strangers(competition)
            if unknown.height and missing.height == targets.len()
            else None,
        )
    )
    return found


def _strangers(competition: Competition) -> str | None:
    """The hint of a file whose users are none of the targets, when ids are text: the
    usual cause is ids read as numbers on the way, or written in another form."""
    if competition.ids.user is not IdKind.TEXT:
        return None
    return (
        f"no {competition.words.user} of the file is a target {competition.words.user}: "
        f"{competition.columns.user} values are text, matched exactly as the targets file "
        "writes them (0108775015 is not 108775015, ab is not AB); copy them from it as text"
    )


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


def checked_rows(truth: Solution | pl.Series, table: Table) -> int:
    """Check a submission (or one part of it) against the target users of `truth`, a
    solution or a targets file's users: the ranked items it holds, in either layout."""
    if isinstance(truth, Solution):
        return check_against(table, truth).height
    if not table.competition.ids.text:
        return check_submission(table, truth).height
    codes = Codes.of(truth.to_frame(USER), table.competition)
    targets = codes.encode(truth.to_frame(USER)).get_column(USER)
    return check_submission(codes.table(table), targets, shown=lambda: (table, truth)).height
