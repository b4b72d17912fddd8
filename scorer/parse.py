"""Turn a file or frame into a typed table with line numbers, judging every cell on the way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import polars as pl

from scorer.cells import (
    DTYPE,
    Kind,
    Spec,
    Table,
    beyond_int64,
    judge,
    parse_cells,
)
from scorer.errors import Code, Issue, Problem, Report, problem, shorten, single
from scorer.io import (
    DEFAULT_LIMITS,
    Limits,
    Rejected,
    TableLike,
    Text,
    check_header,
    describe,
    open_path,
    scan_text,
)


def read_table(source: TableLike, spec: Spec, limits: Limits = DEFAULT_LIMITS) -> Table:
    """Read a path (CSV, CSV.gz, Parquet) or a polars/pandas frame; raise `Rejected` for a
    file whose rows cannot be judged at all."""
    file = describe(source)
    if isinstance(source, str | Path):
        kind, content = open_path(Path(source), file, limits)
        if kind == "parquet":  # read from its path, as `open_path` leaves it
            frame = _read_parquet(Path(source), file, limits, words=spec.of_kind("stage"))
            return _from_frame(file, frame, spec, limits)
        text = scan_text(file, content, limits, blank_long=True)
        check_header(file, text.header, list(spec.required), list(spec.optional))
        return _from_text(file, text, spec, limits)
    return _from_frame(file, _to_polars(source, file), spec, limits)


def _read_parquet(
    path: Path, file: str, limits: Limits = DEFAULT_LIMITS, *, words: Sequence[str] = ()
) -> pl.DataFrame:
    """Read a Parquet file after checking its row count and decompressed size in the footer,
    so a small file that expands to many gigabytes is refused before it is read. pyarrow
    decodes the pages: polars panics on some corrupt pages, or aborts the whole process
    trying to allocate exabytes, where pyarrow raises an error. Text columns named in `words`
    hold a few distinct words (a split): they are read as categories, not millions of
    strings."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        rows = int(meta.num_rows)
        size = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
        text = ("string", "large_string")
        schema = meta.schema.to_arrow_schema()
        dictionary = [f.name for f in schema if f.name in words and str(f.type) in text]
    except Exception:
        rows, size, dictionary = 0, 0, []  # unreadable footer: the reader below names it
    if rows > limits.max_rows:
        raise Rejected(
            single(
                file,
                Code.TOO_MANY_ROWS,
                f"{file}: the table has {rows:,} rows; at most {limits.max_rows:,} are accepted",
            )
        )
    if size > limits.max_decompressed_bytes:
        raise Rejected(
            single(
                file,
                Code.FILE_TOO_LARGE,
                f"{file}: the file expands to {size:,} bytes when decompressed; at most "
                f"{limits.max_decompressed_bytes:,} are accepted",
            )
        )
    try:
        frame = pl.from_arrow(pq.read_table(path, read_dictionary=dictionary))
        if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a table gives a frame
            raise TypeError(f"expected a table, got {type(frame).__name__}")
        return frame
    except (Exception, pl.exceptions.PanicException) as exc:  # all mean the same to the user
        raise Rejected(
            single(
                file,
                Code.FILE_CORRUPT,
                f"{file}: not a readable Parquet file ({type(exc).__name__})",
            )
        ) from None


def _to_polars(source: object, file: str) -> pl.DataFrame:
    if isinstance(source, pl.LazyFrame):
        return source.collect()
    if isinstance(source, pl.DataFrame):
        return source
    if type(source).__module__.split(".")[0] == "pandas":
        try:
            converted = pl.from_pandas(cast(Any, source))
        except Exception as exc:  # pyarrow refuses mixed or unknown object columns
            raise Rejected(
                single(
                    file,
                    Code.COLUMN_TYPE,
                    f"{file}: the pandas frame cannot be read as typed columns "
                    f"({type(exc).__name__}: {shorten(exc)}); expected integer columns",
                )
            ) from None
        if isinstance(converted, pl.DataFrame):
            return converted
    raise Rejected(
        single(
            file,
            Code.FILE_FORMAT,
            f"expected a path or a polars/pandas DataFrame, got {type(source).__name__}",
        )
    )


def _from_text(file: str, text: Text, spec: Spec, limits: Limits) -> Table:
    kinds = spec.kinds(text.header)
    if text.rows == 0:
        raise Rejected(_no_rows(file))
    if not text.lenient and not text.long_count:
        fast = _typed_read(text, kinds, spec)
        if fast is not None:
            return judge(file, fast, kinds, "line", [])
    return _diagnose(file, text, kinds, spec, limits)


def _no_rows(file: str) -> Report:
    return single(file, Code.NO_ROWS, f"{file}: the file has a header but no rows")


def _typed_read(text: Text, kinds: dict[str, Kind], spec: Spec) -> pl.DataFrame | None:
    """Parse with a typed schema: the fast path for a clean file. None when any cell fails to
    parse, is empty where it may not be, or lines do not map one to one onto rows."""
    schema = {name: DTYPE[kind] for name, kind in kinds.items()}
    try:
        frame = pl.read_csv(text.source, schema=schema, has_header=True, raise_if_empty=False)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException):  # a lone '"' panics
        return None
    if frame.height != text.rows:
        return None
    required = [name for name in kinds if name not in spec.nullable]
    if frame.select(pl.any_horizontal(pl.col(required).is_null()).any()).item():
        return None
    return frame.with_row_index("line", offset=2).with_columns(pl.col("line").cast(pl.Int64))


def _diagnose(file: str, text: Text, kinds: dict[str, Kind], spec: Spec, limits: Limits) -> Table:
    """The careful path: every physical line, every field as text, every cell judged."""
    cells, issues = text_cells(file, text, list(kinds), limits)
    typed, bad = parse_cells(file, cells, kinds, spec, "line")
    return judge(file, typed, kinds, "line", [*issues, *bad])


def text_cells(
    file: str, text: Text, names: list[str], limits: Limits, hint: str = ""
) -> tuple[pl.DataFrame, list[Problem]]:
    """Every physical line below the header split into the fields `names`, as text, with its
    line number; lines over the length cap and lines with another number of fields become
    problems (`hint` adds a word on the format to the field-count message)."""
    try:
        body = (
            pl.scan_lines(text.source, name="text", row_index_name="line", row_index_offset=1)
            .filter(pl.col("line") > 1, pl.col("text").str.strip_chars().str.len_bytes() > 0)
            .with_columns(pl.col("line").cast(pl.Int64), _fields=pl.col("text").str.split(","))
            .with_columns(_n=pl.col("_fields").list.len())
            .collect()
        )
    except pl.exceptions.ComputeError:
        raise Rejected(_encoding_report(file, text)) from None
    if body.height == 0 and not text.long_count:
        raise Rejected(_no_rows(file))  # only blank lines below the header
    issues: list[Problem] = []
    if text.long_count:
        issues.append(
            problem(
                Code.LINE_TOO_LONG,
                text.long_count,
                [
                    Issue(
                        Code.LINE_TOO_LONG,
                        f"line {ln}: the line has {n:,} bytes; at most "
                        f"{limits.max_line_bytes:,} are accepted",
                        line=ln,
                    )
                    for ln, n in text.long_lines
                ],
            )
        )
    ragged = body.filter(pl.col("_n") != len(names))
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
                    for ln, n, t in ragged.head(5).select("line", "_n", "text").rows()
                ],
            )
        )
    last = len(names) - 1
    cells = body.filter(pl.col("_n") == len(names)).select(
        "line",
        *[
            _unquote(
                pl.col("_fields").list.get(i).str.strip_suffix("\r")
                if i == last
                else pl.col("_fields").list.get(i)
            ).alias(name)
            for i, name in enumerate(names)
        ],
    )
    return cells, issues


def _encoding_report(file: str, text: Text) -> Report:
    data = text.source if isinstance(text.source, bytes) else text.source.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return single(
            file,
            Code.FILE_ENCODING,
            f"{file}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text; save the "
            "file as UTF-8",
            line=line,
        )
    return single(file, Code.FILE_ENCODING, f"{file}: the file could not be read as UTF-8 text")


def _unquote(cell: pl.Expr) -> pl.Expr:
    quoted = cell.str.starts_with('"') & cell.str.ends_with('"') & (cell.str.len_chars() >= 2)
    inner = cell.str.slice(1, cell.str.len_chars() - 2).str.replace_all('""', '"', literal=True)
    return pl.when(quoted).then(inner).otherwise(cell)


def _quote(value: str) -> str:
    return repr(shorten(value))


def _integral(column: pl.Series) -> bool:
    """Whether every value of a float column is empty/NaN or a whole number that fits Int64."""
    values = column.fill_nan(None).drop_nulls().to_frame("v")
    whole = (pl.col("v") == pl.col("v").floor()) & (pl.col("v") >= 0) & (pl.col("v") < 2.0**63)
    return bool(values.select(whole.all()).item())


def check_frame(
    file: str, frame: pl.DataFrame, required: list[str], optional: list[str], limits: Limits
) -> list[str]:
    """A Parquet file's or a frame's columns, row count and size, as `check_header` and the
    CSV scan judge a CSV file's; returns the column names."""
    header = [str(c) for c in frame.columns]
    check_header(file, header, required, optional)
    if frame.height == 0:
        raise Rejected(single(file, Code.NO_ROWS, f"{file}: the table has no rows"))
    if frame.height > limits.max_rows:
        raise Rejected(
            single(
                file,
                Code.TOO_MANY_ROWS,
                f"{file}: the table has {frame.height:,} rows; at "
                f"most {limits.max_rows:,} are accepted",
            )
        )
    return header


def _from_frame(file: str, frame: pl.DataFrame, spec: Spec, limits: Limits) -> Table:
    """Parquet files and in-memory frames: integer columns are taken as they are, text
    columns go through the same cell rules as CSV, anything else is a type error."""
    header = check_frame(file, frame, list(spec.required), list(spec.optional), limits)
    kinds = spec.kinds(header)
    frame = frame.select(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"), *kinds)
    as_text = False
    for name, kind in kinds.items():
        dtype = frame.schema[name]
        if kind == "stage":
            if dtype not in (pl.String, pl.Categorical, pl.Null):
                raise Rejected(_type_report(file, name, dtype, "text"))
            frame = frame.with_columns(pl.col(name).cast(pl.String))
        elif dtype in (pl.String, pl.Categorical):
            as_text = True
        elif dtype.is_float() and name in spec.nullable and _integral(frame.get_column(name)):
            # pandas keeps an integer column with empty cells as floats (101.0 and NaN)
            frame = frame.with_columns(pl.col(name).fill_nan(None).cast(pl.Int64))
        elif not (dtype.is_integer() or dtype == pl.Null):
            raise Rejected(_type_report(file, name, dtype, "integers"))
        elif dtype == pl.UInt64 and beyond_int64(frame.get_column(name)):
            as_text = True  # ids beyond int64 get the same message as in a CSV file
        elif name not in spec.nullable and frame.get_column(name).null_count():
            as_text = True  # empty cells get the same messages as in a CSV file
    if not as_text:
        typed = frame.with_columns(
            pl.col(n).cast(pl.Int64) for n, k in kinds.items() if k != "stage"
        )
        return judge(file, typed, kinds, "row", [])
    # Judge every cell as text, exactly as a CSV's: integers print as their digits.
    text_frame = frame.with_columns(
        pl.col(n).cast(pl.String) for n, k in kinds.items() if k != "stage"
    )
    typed, problems = parse_cells(file, text_frame, kinds, spec, "row")
    return judge(file, typed, kinds, "row", problems)


def _type_report(file: str, name: str, dtype: object, expected: str) -> Report:
    return single(
        file,
        Code.COLUMN_TYPE,
        f"{file}: column {name!r} holds {dtype}; expected {expected}",
        column=name,
    )
