"""The wide layout: one line a user, its ranked items in one space-separated list cell."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from scorer.competition import LOST_ITEMS
from scorer.errors import Code, Issue, Problem, examples_shown, problem
from scorer.read.cells import (
    ITEM,
    RANK,
    USER,
    Kind,
    Spec,
    Table,
    Unit,
    apply_ranges,
    bad_texts,
    cell_issue,
    integer,
    parse_cells,
    refused_users,
    text_code,
)
from scorer.read.header import check_frame, check_header, no_rows, type_report
from scorer.read.hints import repeated_header
from scorer.read.limits import Limits, Rejected
from scorer.read.long import text_dtype as _text
from scorer.read.text import Text
from scorer.read.textcells import text_cells


def is_wide(header: list[str], spec: Spec) -> bool:
    """Whether a header is of the wide layout: it names the spec's list column and neither the
    item nor the rank column (an extra or missing column is then reported by the wide
    reader, in the wide layout's terms)."""
    columns = spec.competition.columns
    return spec.wide and columns.list in header and not {columns.item, columns.rank} & set(header)


def from_text(file: str, text: Text, spec: Spec, limits: Limits, *, careful: bool = False) -> Table:
    """A wide CSV file as the long table the rules use: line, user_id, edition_id, rank and
    position (the 1-based place in the list, which is the rank). A line with an empty list
    keeps one row with a null position, so the user is still seen (with 0 items). Cells
    that break their rule are null and counted in `problems`; a split column (a wide
    solution's) is judged as in the long layout."""
    check(file, text, spec)
    if text.rows == 0 and not text.part:
        raise Rejected(no_rows(file))
    if not text.part:  # a part is checked before it is loaded (`split.Parts.table`)
        limits.check_whole(file, text.rows, "the file has {count} rows")
    cells, problems, refused = text_cells(
        file,
        text,
        text.header,
        limits,
        "; the ids of a list are separated by spaces",
        careful=careful,
        user=spec.user,
    )
    names = [spec.user, *(name for name in text.header if name != spec.user)]  # short first
    repeated = repeated_header(cells, names, "line")
    if repeated is not None:  # one problem a line, and no cell of it judged
        cells, problems = cells.filter(~repeated[0]), [*problems, repeated[1]]
    cells = _tokenized(cells, spec.competition.columns.list)
    table = _to_long(file, cells, spec, "line", limits, problems, plain=text.plain)
    users = refused_users(file, refused, spec, "line", text.plain)
    return dataclasses.replace(table, refused=users)


def check(file: str, text: Text, spec: Spec) -> None:
    """The header of a wide CSV file: `Rejected` unless it names the user and list columns."""
    check_names(file, text.header, spec)


def check_names(file: str, names: list[str], spec: Spec, *, frame: bool = False) -> None:
    """A wide table's column names (a CSV header, a Parquet schema): `Rejected` unless they
    are the user and list columns (and perhaps a split; a `frame`'s names are no line)."""
    check_header(file, names, _columns(spec), _extras(spec), _extras(spec), frame=frame)


def _columns(spec: Spec) -> list[str]:
    return [spec.user, spec.competition.columns.list]


def _extras(spec: Spec) -> list[str]:
    """The columns a wide file may have beside the user and the list: a solution's split."""
    return spec.of_kind("stage")


def _tokenized(cells: pl.DataFrame, name: str) -> pl.DataFrame:
    """`cells` with the list column `name` as its ids (`_tokens`). A column whose every cell
    holds ids split by one space, no tab, comma or space at either end (as a writer joins
    them) is split on its spaces alone: the same ids, without the general path's passes."""
    cell = pl.col(name)
    simple = ~(
        cell.str.contains("\t", literal=True)
        | cell.str.contains(",", literal=True)
        | cell.str.contains("  ", literal=True)
        | cell.str.starts_with(" ")
        | cell.str.ends_with(" ")
        | (cell.str.len_bytes() == 0)
    ).any()
    if cells.select(simple).item():
        return cells.with_columns(cell.str.split(" ").fill_null(pl.lit([], pl.List(pl.String))))
    return cells.with_columns(_tokens(cell))


def _tokens(cell: pl.Expr) -> pl.Expr:
    """A list cell's ids: split on spaces, tabs or commas (a run of them counts as one; a
    comma can be in a CSV cell only if it is quoted); an empty or missing cell is no ids.
    Literal splits, not a regex: this runs on every line."""
    spaced = cell.str.replace_all("\t", " ", literal=True).str.replace_all(",", " ", literal=True)
    words = spaced.str.split(" ")
    return words.list.eval(pl.element().filter(pl.element() != "")).fill_null(
        pl.lit([], pl.List(pl.String))
    )


def from_frame(file: str, frame: pl.DataFrame, spec: Spec, limits: Limits) -> Table:
    """Parquet files and frames: user ids as integers or text, lists as space-separated text
    or as list columns (of integers or text)."""
    header = check_frame(file, frame, _columns(spec), _extras(spec), limits, _extras(spec))
    extra = [name for name in header if name in _extras(spec)]
    user, ids_name = spec.user, spec.competition.columns.list
    # Text ids come as text: an integer column in their place lost what they were (a zero
    # before the digits) when its writer read them as numbers.
    texts = spec.user_kind == "text", spec.item_kind == "text"
    user_type = frame.schema[user]
    if not (_text(user_type) or (user_type.is_integer() and not texts[0])):
        raise Rejected(type_report(file, frame, user, "text ids" if texts[0] else "integers"))
    ids_type = frame.schema[ids_name]
    numbers = not texts[1]  # may the ids be numbers?
    if isinstance(ids_type, pl.List) and (
        (ids_type.inner.is_integer() and numbers) or _text(ids_type.inner)
    ):
        ids = pl.col(ids_name).list.eval(pl.element().cast(pl.String))
    elif (ids_type.is_integer() and numbers) or _text(ids_type):
        ids = _tokens(pl.col(ids_name).cast(pl.String))
    else:
        lists = "lists of integers" if numbers else "lists of text ids"
        raise Rejected(
            type_report(file, frame, ids_name, f"text (ids separated by spaces) or {lists}")
        )
    for name in extra:
        if not _text(frame.schema[name]):
            raise Rejected(type_report(file, frame, name, "text"))
    cells = frame.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"),
        pl.col(user).cast(pl.String),
        ids.fill_null(pl.lit([], pl.List(pl.String))).alias(ids_name),
        *[pl.col(name).cast(pl.String) for name in extra],
    )
    return _to_long(file, cells, spec, "row", limits, [])


#: The wide reader's own columns while a solution's split column sits beside them under the
#: file's name: names with a line break, which no column of a spec may have
#: (`scorer.competition`), so a split column called 'position' (or like USER) meets none of them.
#: They take the scorer's names once the split column has taken its own (`apply_ranges`).
_OWN = {
    ITEM: f"\n{ITEM}",
    RANK: f"\n{RANK}",
    "position": "\nposition",
    "_token": "\ntoken",
    "code": "\ncode",
}


def _to_long(
    file: str,
    cells: pl.DataFrame,
    spec: Spec,
    unit: Unit,
    limits: Limits,
    problems: list[Problem],
    *,
    plain: bool = False,
) -> Table:
    """One row a listed id: the user and each id judged by the long layout's rules, rank =
    position. `cells` holds line, the user (text), the list (of text) and any extras.
    `plain`: as for `apply_ranges`."""
    user, ids = spec.user, spec.competition.columns.list
    total = int(cells.select(pl.col(ids).list.len().sum()).item() or 0)
    items = f"{spec.competition.words.item}s"
    limits.check_rows(file, total, "the lists hold {count} " + items + " in all")
    extras = [c for c in cells.columns if c not in ("line", user, ids)]
    users, found, clues = parse_cells(
        file, cells.select("line", user), {user: spec.user_kind}, spec, unit
    )
    found = [*problems, *found]
    if spec.user_kind == "text":  # as `apply_ranges` judges a long file's text ids
        for code, mask in bad_texts(users, user, plain).items():
            bad_rows = users.filter(mask)
            if not bad_rows.height:
                continue
            issues = [
                cell_issue(spec, unit, "text", user, ln, u, None)
                for ln, u in bad_rows.head(5).rows()
            ]
            found.append(problem(code, bad_rows.height, issues))
        users = users.with_columns(
            pl.when(text_code(pl.col(user), plain).is_null()).then(pl.col(user))
        )
    token, position, item = _OWN["_token"], _OWN["position"], _OWN[ITEM]
    text = spec.item_kind == "text"
    rows = (
        cells.select(
            "line",
            users.get_column(user),  # the user keeps the file's name: no other column has it
            pl.col(ids).alias(token),
            *extras,
        )
        # chunked alike first: polars explodes columns chunked apart (the read's hundreds
        # beside the split lists' one) some 25 times slower
        .rechunk()
        .explode(token, empty_as_null=True)
        .with_columns(_positions(cells.get_column(ids)).alias(position))
        .with_columns(
            # As in the long format: digits, perhaps after a '+' ('-1' is not an id); a text
            # id as written (a list's ids are never empty).
            (
                pl.when(text_code(pl.col(token), plain).is_null()).then(pl.col(token))
                if text
                else integer(pl.col(token)).cast(pl.Int64)
            ).alias(item)
        )
    )
    listed = pl.col(position).is_not_null()
    bad = rows.filter(listed & pl.col(item).is_null())
    if bad.height:
        why = text_code(pl.col(token), plain) if text else pl.lit(None, pl.String)
        bad = bad.with_columns(why.fill_null(str(Code.INVALID_ID)).alias(_OWN["code"]))
        for (code,), some in bad.group_by(_OWN["code"], maintain_order=True):
            found.append(
                problem(
                    Code(str(code)),
                    some.height,
                    [
                        _token_issue(spec, unit, ln, p, raw, u)
                        for ln, p, raw, u in some.head(examples_shown())
                        .select("line", position, token, user)
                        .rows()
                    ],
                )
            )
    frame = rows.select("line", user, item, pl.col(position).alias(_OWN[RANK]), position, *extras)
    # A split column is judged as in the long layout; ids were judged above.
    kinds: dict[str, Kind] = {name: "stage" for name in extras}
    table = apply_ranges(file, frame, kinds, spec, unit, found, clues)
    own = {user: USER, **{hidden: name for name, hidden in _OWN.items() if name != "code"}}
    named = table.frame.rename(own, strict=False)
    users_of = named.get_column(USER)
    if not users_of.has_nulls() and users_of.is_sorted():  # as `apply_ranges` flags a long one
        named = named.with_columns(users_of.set_sorted())
    return dataclasses.replace(table, frame=named)


def _positions(lists: pl.Series) -> pl.Series:
    """The place of each id in its list (1, 2, ...), in the rows the lists explode into: an
    empty list is one row, with no place. Counted in numpy from the lists' lengths, where
    exploding a range a list costs as much again as exploding the ids."""
    lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    rows = np.maximum(lengths, 1)
    ends = np.cumsum(rows)
    places = np.arange(1, int(ends[-1]) + 1 if ends.size else 1, dtype=np.int64)
    places -= np.repeat(ends - rows, rows)
    found = pl.Series(places)
    if (lengths == 0).any():
        found = found.scatter(np.flatnonzero(np.repeat(lengths == 0, rows)), None)
    return found


def _token_issue(
    spec: Spec, unit: str, line: int, position: int, raw: str | None, user: object
) -> Issue:
    """The long layout's message for a bad item id, placed at its list position."""
    columns = spec.competition.columns
    issue = cell_issue(spec, unit, spec.item_kind, columns.item, line, raw, user)
    where = f"{unit} {line}: "
    return dataclasses.replace(
        issue,
        message=f"{unit} {line}, position {position}: {issue.message.removeprefix(where)}",
        column=columns.list,
    )


def to_wide(frame: pl.DataFrame, list_column: str = LOST_ITEMS.columns.list) -> pl.DataFrame:
    """A long table (user_id, edition_id, rank) as the wide layout: the user and its items in
    rank order, separated by spaces; users in order of first appearance."""
    return frame.group_by(USER, maintain_order=True).agg(
        pl.col(ITEM).sort_by(RANK).cast(pl.String).str.join(" ").alias(list_column)
    )
