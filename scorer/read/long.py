"""The long layout: one row a cell of each column, read fast when clean, else line by line."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from scorer.read.cells import (
    DTYPE,
    MAX_ID,
    Kind,
    Spec,
    Table,
    apply_ranges,
    parse_cells,
    refused_users,
)
from scorer.read.header import check_frame, check_header, no_rows, type_report
from scorer.read.hints import Clues
from scorer.read.limits import Limits, Rejected
from scorer.read.text import Text
from scorer.read.textcells import numbered, read_quietly, text_cells


def from_text(file: str, text: Text, spec: Spec, limits: Limits, *, careful: bool = False) -> Table:
    """A CSV file's rows: the typed read when the scan found nothing it could misread, else
    (or when it fails, or with `careful`) every line judged as text."""
    check(file, text, spec)
    kinds = spec.kinds(text.header)
    if text.rows == 0 and not text.part:
        raise Rejected(no_rows(file))
    if not text.part:  # a part is checked before it is loaded (`split.Parts.table`)
        limits.check_whole(file, text.rows, "the file has {count} rows")
    if not (careful or text.lenient or text.cut):
        fast = _typed(file, text, kinds, spec, limits)
        if fast is not None:
            return fast
    return _diagnose(file, text, kinds, spec, limits, careful)


def check(file: str, text: Text, spec: Spec) -> None:
    """The header of a long CSV file: `Rejected` unless it names the spec's columns."""
    check_names(file, text.header, spec)


def check_names(file: str, names: list[str], spec: Spec, *, frame: bool = False) -> None:
    """A long table's column names (a CSV header, a Parquet schema): `Rejected` unless they
    are the spec's columns (a `frame`'s names are no line of a file)."""
    check_header(
        file,
        names,
        list(spec.required),
        list(spec.optional),
        spec.of_kind("stage"),
        frame=frame,
        wide=wide_header(spec),
    )


def wide_header(spec: Spec) -> list[str]:
    """The wide format's header, if a file of `spec` may come in it (for the header's hints)."""
    return [spec.user, spec.competition.columns.list] if spec.wide else []


def _typed_read(
    text: Text, kinds: dict[str, Kind], spec: Spec
) -> tuple[pl.DataFrame, pl.Series] | None:
    """Parse with a typed schema: the fast path for a clean file. Its rows, and which of them
    have a hole: an empty cell where one may not be, or (when some cell fails to parse, and
    the file is read again with such cells null) any null cell; a blank line is a row of
    them. None when the text cannot be read so, or lines do not map one to one onto rows."""
    schema = {name: DTYPE[kind] for name, kind in kinds.items()}
    maybe_empty = [name for name in kinds if name not in spec.nullable]
    # Where every cell must hold a value, a null is a hole whatever made it: one read. Else
    # an empty cell is no hole, and only a read that fails tells that some cell is one.
    for lenient in (True,) if maybe_empty == list(kinds) else (False, True):
        frame = read_quietly(text.source, schema=schema, has_header=True, ignore_errors=lenient)
        if frame is None:
            continue
        if frame.height != text.rows:
            return None
        suspects = list(kinds) if lenient else maybe_empty
        nulls = [pl.col(n).is_null() for n in suspects if frame.get_column(n).has_nulls()]
        holes = frame.select(pl.any_horizontal(nulls) if nulls else pl.repeat(False, pl.len()))
        return numbered(frame, text), holes.to_series()
    return None


def _typed(
    file: str, text: Text, kinds: dict[str, Kind], spec: Spec, limits: Limits
) -> Table | None:
    """The typed read, its rows with a hole (`_typed_read`) judged line by line as the careful
    reader judges every line (`_diagnose`): what polars could not parse may be a cell the
    rules take (a space after a value), an empty cell, a blank or short line. The other rows
    hold what the careful reader would read there, as a clean file's do: one padded cell
    costs a few lines, not the whole file's text. None when the read fails, or more than an
    eighth of the rows have a hole (judging every line then costs as little)."""
    read = _typed_read(text, kinds, spec)
    if read is None:
        return None
    frame, holes = read
    del read  # the rows are let go as soon as they are filtered below
    if not holes.any():
        return apply_ranges(file, frame, kinds, spec, "line", [], plain=text.plain)
    if holes.sum() * 8 > holes.len():
        return None
    lines = (holes.arg_true().cast(pl.Int64) + 2).alias("line")  # the text's own numbers
    cells, issues, refused = text_cells(file, text, list(kinds), limits, only=lines, user=spec.user)
    patched, bad, clues = parse_cells(file, cells, kinds, spec, "line")
    patched = patched.with_columns(pl.col(n).cast(frame.schema[n]) for n in kinds)
    frame = frame.filter(~holes)
    clues = Clues(rows=frame.height) + clues
    frame = frame.merge_sorted(patched, key="line")  # both in line order
    table = apply_ranges(file, frame, kinds, spec, "line", [*issues, *bad], clues, plain=text.plain)
    return replace(table, refused=refused_users(file, refused, spec, "line", text.plain))


def _diagnose(
    file: str, text: Text, kinds: dict[str, Kind], spec: Spec, limits: Limits, careful: bool
) -> Table:
    """The careful path: every physical line, every field as text, every cell judged."""
    cells, issues, refused = text_cells(
        file, text, list(kinds), limits, careful=careful, user=spec.user
    )
    typed, bad, clues = parse_cells(file, cells, kinds, spec, "line")
    table = apply_ranges(file, typed, kinds, spec, "line", [*issues, *bad], clues, plain=text.plain)
    return replace(table, refused=refused_users(file, refused, spec, "line", text.plain))


def _integral(column: pl.Series) -> bool:
    """Whether every value of a float column is empty/NaN or a whole number that fits Int64."""
    values = column.fill_nan(None).drop_nulls().to_frame("v")
    whole = (pl.col("v") == pl.col("v").floor()) & (pl.col("v") >= 0) & (pl.col("v") < 2.0**63)
    return bool(values.select(whole.all()).item())


def text_dtype(dtype: object) -> bool:
    """Whether a column of `dtype` holds text (or nothing at all)."""
    return dtype in (pl.String, pl.Categorical, pl.Null) or isinstance(dtype, pl.Enum)


def from_frame(file: str, frame: pl.DataFrame, spec: Spec, limits: Limits) -> Table:
    """Parquet files and in-memory frames: integer columns are taken as they are, text
    columns go through the same cell rules as CSV, anything else is a type error."""
    header = check_frame(
        file,
        frame,
        list(spec.required),
        list(spec.optional),
        limits,
        spec.of_kind("stage"),
        wide_header(spec),
    )
    kinds = spec.kinds(header)
    frame = frame.select(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"), *kinds)
    as_text = False
    for name, kind in kinds.items():
        dtype = frame.schema[name]
        if kind == "stage":
            if dtype not in (pl.String, pl.Categorical, pl.Null):
                raise Rejected(type_report(file, frame, name, "text"))
            if dtype == pl.Null:  # categories judge as words do, without 15M strings made
                frame = frame.with_columns(pl.col(name).cast(pl.String))
        elif kind == "text":
            if not text_dtype(dtype):
                raise Rejected(type_report(file, frame, name, "text ids (strings)"))
            frame = frame.with_columns(pl.col(name).cast(pl.String))
            if name not in spec.nullable and frame.get_column(name).null_count():
                as_text = True  # empty cells get the same messages as in a CSV file
        elif dtype in (pl.String, pl.Categorical):
            as_text = True
        elif dtype.is_float() and name in spec.nullable and _integral(frame.get_column(name)):
            # pandas keeps an integer column with empty cells as floats (101.0 and NaN)
            frame = frame.with_columns(pl.col(name).fill_nan(None).cast(pl.Int64))
        elif not (dtype.is_integer() or dtype == pl.Null):
            raise Rejected(type_report(file, frame, name))
        elif dtype == pl.UInt64 and bool(frame.get_column(name).drop_nulls().gt(MAX_ID).any()):
            as_text = True  # ids beyond int64 get the same message as in a CSV file
        elif name not in spec.nullable and frame.get_column(name).null_count():
            as_text = True  # empty cells get the same messages as in a CSV file
    if not as_text:
        typed = frame.with_columns(
            pl.col(n).cast(pl.Int64) for n, k in kinds.items() if k not in ("stage", "text")
        )
        return apply_ranges(file, typed, kinds, spec, "row", [])
    # Judge every cell as text, exactly as a CSV's: integers print as their digits.
    text_frame = frame.with_columns(
        pl.col(n).cast(pl.String) for n, k in kinds.items() if k not in ("stage", "text")
    )
    typed, problems, clues = parse_cells(file, text_frame, kinds, spec, "row")
    return apply_ranges(file, typed, kinds, spec, "row", problems, clues)
