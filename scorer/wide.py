"""The wide submission format: one line a user, its ranked editions in one space-separated cell."""

from __future__ import annotations

import dataclasses
import gzip
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from scorer.cells import Spec, Table, cell_issue, merge, parse_cells
from scorer.errors import Code, Issue, Problem, problem, single
from scorer.io import (
    DEFAULT_LIMITS,
    Limits,
    Rejected,
    TableLike,
    Text,
    check_header,
    describe,
    kind_of,
    open_path,
    scan_text,
)
from scorer.io import _unquote as _unquote_name
from scorer.parse import (
    _no_rows,
    _read_parquet,
    _to_polars,
    _type_report,
    check_frame,
    text_cells,
)

#: The column holding a user's ranked list, as Kaggle's H&M and OTTO competitions had it.
IDS = "edition_ids"

#: The header of a wide submission, in this order when written.
COLUMNS = ("user_id", IDS)

Unit = Literal["line", "row"]

#: The user_id cell is judged by the same rule as in the long format.
_USER = Spec(role="submission", required={"user_id": "id"}, optional={})


def is_wide(source: TableLike, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether a submission is in the wide format, judged from its header alone: it names the
    list column `edition_ids` and neither `edition_id` nor `rank` (an extra or missing column
    is then reported by the wide reader, in the wide format's terms). Anything unreadable is
    not wide: the long reader reports it as usual."""
    names = _header(source, limits)
    return names is not None and IDS in names and not {"edition_id", "rank"} & set(names)


def _header(source: TableLike, limits: Limits) -> list[str] | None:
    if isinstance(source, pl.LazyFrame):
        return source.collect_schema().names()
    if isinstance(source, pl.DataFrame):
        return source.columns
    if not isinstance(source, str | Path):
        columns = getattr(source, "columns", None)  # a pandas frame
        return None if columns is None else [str(c) for c in columns]
    path = Path(source)
    kind = kind_of(path)
    try:
        if kind == "parquet":
            return _parquet_columns(path)
        if kind == "csv.gz":
            with gzip.open(path, "rb") as handle:
                first = handle.readline(limits.max_line_bytes + 4)
        elif kind == "csv":
            with path.open("rb") as handle:
                first = handle.readline(limits.max_line_bytes + 4)
        else:
            return None
        text = first.decode("utf-8")
    except (
        OSError,
        EOFError,
        zlib.error,
        UnicodeDecodeError,
        pl.exceptions.PolarsError,
    ):
        return None
    return [_unquote_name(n.strip()) for n in text.lstrip("\ufeff").rstrip("\r\n").split(",")]


def _parquet_columns(path: Path) -> list[str] | None:
    import pyarrow.parquet as pq  # only for Parquet files: importing it takes 0.2 s

    try:
        return list(pq.read_schema(path).names)  # a corrupt footer raises here, never panics
    except Exception:  # pyarrow's errors and OS errors alike: not a readable Parquet file
        return None


def read_wide(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, optional: Sequence[str] = ()
) -> Table:
    """Read a wide file (CSV, CSV.gz, Parquet) or frame into the long table the rules use:
    line, user_id, edition_id, rank and position (the 1-based place in the list, which is the
    rank). A line with an empty list keeps one row with a null position, so the user is still
    seen (and counted as having 0 editions). Cells that break their rule are null and counted
    in `problems`; `optional` columns (a solution's split) are passed through as text.
    Raises `Rejected` for a file whose rows cannot be judged at all."""
    file = describe(source)
    if isinstance(source, str | Path):
        kind, content = open_path(Path(source), file, limits)
        if kind == "parquet":
            if not isinstance(content, Path):  # pragma: no cover - open_path's contract
                raise TypeError("a Parquet file is read from its path")
            return _from_frame(file, _read_parquet(content, file, limits), limits, optional)
        text = scan_text(file, content, limits, blank_long=True)
        check_header(file, text.header, list(COLUMNS), list(optional))
        if text.rows == 0:
            raise Rejected(_no_rows(file))
        cells, problems = _lines(file, text, limits)
        return _to_long(file, cells, "line", limits, problems)
    return _from_frame(file, _to_polars(source, file), limits, optional)


def _lines(file: str, text: Text, limits: Limits) -> tuple[pl.DataFrame, list[Problem]]:
    """Every physical line split into its fields, as text: the long format's careful path,
    for a file whose second field is a list of ids."""
    cells, problems = text_cells(
        file, text, text.header, limits, "; the ids of a list are separated by spaces"
    )
    return cells.with_columns(_tokens(pl.col(IDS))), problems


def _tokens(cell: pl.Expr) -> pl.Expr:
    """A list cell's ids: split on spaces (a run of them, or a tab, counts as one); an empty or
    missing cell is no ids. Literal splits, not a regex: this runs on every line."""
    words = cell.str.replace_all("\t", " ", literal=True).str.split(" ")
    return (
        words.list.eval(pl.element().filter(pl.element() != ""))
        .fill_null(pl.lit([], pl.List(pl.String)))
        .alias(IDS)
    )


def _from_frame(file: str, frame: pl.DataFrame, limits: Limits, optional: Sequence[str]) -> Table:
    """Parquet files and frames: user ids as integers or text, lists as space-separated text
    or as list columns (of integers or text)."""
    header = check_frame(file, frame, list(COLUMNS), list(optional), limits)
    extra = [name for name in header if name in optional]
    user_type = frame.schema["user_id"]
    if not (user_type.is_integer() or user_type in (pl.String, pl.Categorical, pl.Null)):
        raise Rejected(_type_report(file, "user_id", user_type, "integers"))
    ids_type = frame.schema[IDS]
    if isinstance(ids_type, pl.List) and (
        ids_type.inner.is_integer() or ids_type.inner in (pl.String, pl.Null)
    ):
        ids = pl.col(IDS).list.eval(pl.element().cast(pl.String))
    elif ids_type.is_integer() or ids_type in (pl.String, pl.Categorical, pl.Null):
        ids = _tokens(pl.col(IDS).cast(pl.String))
    else:
        raise Rejected(
            _type_report(file, IDS, ids_type, "text (ids separated by spaces) or lists of integers")
        )
    for name in extra:
        if frame.schema[name] not in (pl.String, pl.Categorical, pl.Null):
            raise Rejected(_type_report(file, name, frame.schema[name], "text"))
    cells = frame.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"),
        pl.col("user_id").cast(pl.String),
        ids.fill_null(pl.lit([], pl.List(pl.String))).alias(IDS),
        *[pl.col(name).cast(pl.String) for name in extra],
    )
    return _to_long(file, cells, "row", limits, [])


def _to_long(
    file: str, cells: pl.DataFrame, unit: Unit, limits: Limits, problems: list[Problem]
) -> Table:
    """One row a listed id: user_id and each id judged by the long format's rules, rank =
    position. `cells` holds line, user_id (text), edition_ids (list of text) and any extras."""
    total = int(cells.select(pl.col(IDS).list.len().sum()).item() or 0)
    if total > limits.max_rows:
        raise Rejected(
            single(
                file,
                Code.TOO_MANY_ROWS,
                f"{file}: the lists hold {total:,} editions in all; at most "
                f"{limits.max_rows:,} are accepted",
            )
        )
    extras = [c for c in cells.columns if c not in ("line", "user_id", IDS)]
    users, bad_users = parse_cells(
        file, cells.select("line", "user_id"), {"user_id": "id"}, _USER, unit
    )
    rows = (
        cells.select(
            "line",
            pl.Series("user_id", users.get_column("user_id")),
            pl.col(IDS).alias("_token"),
            pl.int_ranges(1, pl.col(IDS).list.len() + 1, dtype=pl.Int64).alias("position"),
            *extras,
        )
        .explode("_token", "position", empty_as_null=True)
        .with_columns(
            # Digits only, as in the long format: the parser alone would take '+1' and '-1'.
            pl.when(~pl.col("_token").str.starts_with("+") & ~pl.col("_token").str.starts_with("-"))
            .then(pl.col("_token").str.to_integer(strict=False))
            .cast(pl.Int64)
            .alias("edition_id")
        )
    )
    listed = pl.col("position").is_not_null()
    bad = rows.filter(listed & pl.col("edition_id").is_null())
    found = [*problems, *bad_users]
    if bad.height:
        found.append(
            problem(
                Code.INVALID_ID,
                bad.height,
                [
                    _token_issue(unit, ln, p, raw, u)
                    for ln, p, raw, u in bad.head(5)
                    .select("line", "position", "_token", "user_id")
                    .rows()
                ],
            )
        )
    frame = rows.select(
        "line",
        "user_id",
        "edition_id",
        pl.col("position").alias("rank"),
        "position",
        *extras,
    )
    return Table(file=file, frame=frame, problems=merge(found), unit=unit)


def _token_issue(unit: str, line: int, position: int, raw: str | None, user: int | None) -> Issue:
    """The long format's message for a bad edition_id cell, placed at the list position."""
    issue = cell_issue(unit, "id", "edition_id", line, raw, user)
    where = f"{unit} {line}: "
    return dataclasses.replace(
        issue,
        message=f"{unit} {line}, position {position}: {issue.message.removeprefix(where)}",
        column=IDS,
    )


def to_wide(frame: pl.DataFrame) -> pl.DataFrame:
    """A long submission (user_id, edition_id, rank) as the wide one: user_id and its
    editions in rank order, separated by spaces; users in order of first appearance."""
    return frame.group_by("user_id", maintain_order=True).agg(
        pl.col("edition_id").sort_by("rank").cast(pl.String).str.join(" ").alias(IDS)
    )
