"""A scanned CSV text split into its cells as text, line by line: the careful reader's input."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import polars as pl

from scorer.errors import Code, Issue, Problem, examples_shown, problem, shorten
from scorer.read.header import no_rows
from scorer.read.limits import Limits, NeedsParts, Rejected
from scorer.read.text import Text, encoding_report, long_lines


def text_cells(
    file: str,
    text: Text,
    names: list[str],
    limits: Limits,
    hint: str = "",
    *,
    only: pl.Series | None = None,
    careful: bool = False,
    user: str | None = None,
) -> tuple[pl.DataFrame, list[Problem], pl.DataFrame]:
    """Every physical line below the header split into the fields `names`, as text, with its
    line number; lines over the length cap and lines with another number of fields become
    problems (`hint` adds a word on the format to the field-count message); `NeedsParts` for a
    whole file the limits keep from this reader (`Bound.careful`). With `only`, just
    the lines of those numbers (the text's own, 1 the header), and none of them need be one.
    `careful`: never split by polars' reader, always line by line (the same cells).
    Third, the lines refused whole (line, and the cell of the column `user` where the line
    holds it whole): whose user is in the file, though none of its cells are read."""
    refused = pl.DataFrame(schema={"line": pl.Int64, user or "user": pl.String})
    if only is None and not (text.part or limits.careful_whole()):
        raise NeedsParts(file)
    if only is None and not (careful or text.quoted or text.cut):
        cells = _split_by_polars(text, names)
        if cells is not None:
            return cells, [], refused
    kept = [] if only is None else [pl.col("line").is_in(only.implode())]
    try:
        body = (
            pl.scan_lines(text.source, name="text", row_index_name="line", row_index_offset=1)
            .filter(pl.col("line") > 1, pl.col("text").str.strip_chars().str.len_bytes() > 0, *kept)
            .with_columns(
                pl.col("line").cast(pl.Int64),
                _fields=fields(pl.col("text").str.strip_suffix("\r"), text.quoted),
            )
            .with_columns(_n=pl.col("_fields").list.len())
            # A few lines of many: streamed, so the others are never held.
            .collect(engine="auto" if only is None else "streaming")
        )
    except pl.exceptions.ComputeError:
        raise Rejected(encoding_report(file, text)) from None
    if text.numbers is not None:  # a part's lines carry the file's numbers
        body = body.with_columns(text.numbers.gather(body.get_column("line") - 2).alias("line"))
    elif body.height == 0 and not text.long_count and only is None:
        raise Rejected(no_rows(file))  # only blank lines below the header
    issues = long_lines(text, limits)
    cut = pl.col("line").is_in(pl.Series(text.cut, dtype=pl.Int64).implode())
    if text.cut:  # a line over the cap: its first bytes, and the last field there cut short
        refused = _users(body.filter(cut), names, user, complete=pl.col("_n") - 1)
        body = body.filter(~cut)
    ragged = body.filter(pl.col("_n") != len(names))
    refused = pl.concat([refused, _users(ragged, names, user, complete=pl.col("_n"))])
    if ragged.height:
        issues.append(
            problem(
                Code.FIELD_COUNT,
                ragged.height,
                [
                    Issue(
                        Code.FIELD_COUNT,
                        f"line {ln}: found {n} fields, expected "
                        f"{len(names)} ({','.join(names)}{hint}): {_quote(t)}",
                        line=ln,
                        value=shorten(t),
                    )
                    for ln, n, t in ragged.head(examples_shown())
                    .select("line", "_n", "text")
                    .rows()
                ],
            )
        )
    cells = body.filter(pl.col("_n") == len(names)).select(
        "line",
        *[_unquote_cell(pl.col("_fields").list.get(i)).alias(name) for i, name in enumerate(names)],
    )
    return cells, issues, refused


def _users(
    lines: pl.DataFrame, names: list[str], user: str | None, complete: pl.Expr
) -> pl.DataFrame:
    """The line and user cell (under the name `user`) of each of `lines` (split into
    `_fields`, `_n` of them) whose first `complete` fields are whole and hold the user's."""
    if user is None:
        return pl.DataFrame(schema={"line": pl.Int64, "user": pl.String})
    at = names.index(user)
    return lines.filter(complete > at).select(
        "line", _unquote_cell(pl.col("_fields").list.get(at)).alias(user)
    )


def _split_by_polars(text: Text, names: list[str]) -> pl.DataFrame | None:
    """The cells of every line below the header as text, split by polars' reader (in Rust,
    three times faster): for text without a quote, when every line is read as exactly the
    fields `names`, each one holding something, which is what the line-by-line split finds
    then. None for anything else (a blank or ragged line, an empty cell, bytes that are not
    UTF-8): the line-by-line split finds and names it."""
    schema = dict.fromkeys(names, pl.String)
    frame = read_quietly(text.source, schema=schema, has_header=False, skip_rows=1)
    if frame is None:
        return None
    if frame.height != text.rows or any(frame.get_column(n).has_nulls() for n in names):
        return None
    return numbered(frame, text)


def _last_byte(source: Path | bytes) -> bytes:
    """The text's last byte (b"" for none), read without reading the rest."""
    if isinstance(source, bytes):
        return source[-1:]
    with source.open("rb") as handle:
        if handle.seek(0, 2) == 0:
            return b""
        handle.seek(-1, 2)
        return handle.read(1)


def read_quietly(source: Path | bytes, **options: Any) -> pl.DataFrame | None:
    """`pl.read_csv` of text the scan found nothing wrong with, or None where polars cannot
    read it (a lone '"' makes it panic); the caller checks what it read. Its warnings about
    malformed text are not the participant's to see: the careful reader reports the lines.
    None too for text that ends in a comma: polars reads an empty field at the very end of the
    text as no field, so '7,7,7,' there would pass for three fields."""
    if _last_byte(source) == b",":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return pl.read_csv(source, raise_if_empty=False, **options)
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException):
            return None


def numbered(frame: pl.DataFrame, text: Text) -> pl.DataFrame:
    """A frame of one row a line below the header, with each row's line number first: the
    file's own numbering, or a part's (`Text.numbers`; a part holds no blank line)."""
    if text.numbers is not None:
        return frame.select(text.numbers.alias("line"), pl.all())
    return frame.select(pl.int_range(2, pl.len() + 2, dtype=pl.Int64).alias("line"), pl.all())


#: One field of a CSV line and the comma that ends it, as RFC 4180 has it: a quoted field,
#: which may hold commas and doubled quotes (""), or anything up to the next comma. A
#: quoted field followed by more than a comma is read up to the next comma, unquoted.
_FIELD = r'(?:"(?:[^"]|"")*"|[^,]*),'


def fields(line: pl.Expr, quoted: bool) -> pl.Expr:
    """A line's fields as written, quotes kept: a comma inside a quoted field does not end
    it. Text holding no quote (`quoted` False) is split on every comma, faster."""
    if not quoted:
        return line.str.split(",")
    return (line + ",").str.extract_all(_FIELD).list.eval(pl.element().str.strip_suffix(","))


def _unquote_cell(cell: pl.Expr) -> pl.Expr:
    quoted = cell.str.starts_with('"') & cell.str.ends_with('"') & (cell.str.len_chars() >= 2)
    inner = cell.str.slice(1, cell.str.len_chars() - 2).str.replace_all('""', '"', literal=True)
    return pl.when(quoted).then(inner).otherwise(cell)


def _quote(value: str) -> str:
    return repr(shorten(value))
