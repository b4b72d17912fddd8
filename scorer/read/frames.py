"""Tables that arrive whole (a pandas or polars frame, a Parquet file's columns), capped before
they are converted: rows, columns, and the length of every text cell."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import polars as pl

from scorer.errors import Code, Issue, Report, problem, shorten, single
from scorer.read.limits import Limits, Rejected

if TYPE_CHECKING:
    import pandas as pd


def long_cells(
    file: str, count: int, examples: list[tuple[int, str, int]], unit: str, limits: Limits
) -> Report:
    """`count` text cells longer than a line may be (`max_line_bytes`), with the first few
    (row, column, length) as examples: the table's line_too_long, reported alone."""
    issues = [
        Issue(
            Code.LINE_TOO_LONG,
            f"row {row}: {column} holds {length:,} {unit}; at most "
            f"{limits.line_cap:,} are accepted",
            line=row,
            column=column,
        )
        for row, column, length in sorted(examples)[:5]
    ]
    return Report.of(file, [problem(Code.LINE_TOO_LONG, count, issues)])


def to_polars(source: object, file: str, limits: Limits) -> pl.DataFrame:
    """A polars or pandas frame as a polars one, within the limits: its rows (`check_whole`),
    columns and text cells are judged before a pandas frame is converted."""
    if isinstance(source, pl.LazyFrame):
        source = source.collect()
    if isinstance(source, pl.DataFrame):
        _check_polars(source, file, limits)
        return source
    if type(source).__module__.split(".")[0] == "pandas":
        frame = cast("pd.DataFrame", source)
        _check_pandas(frame, file, limits)
        try:
            converted = pl.from_pandas(cast(Any, frame))
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


def _check_polars(frame: pl.DataFrame, file: str, limits: Limits) -> None:
    limits.check_columns(file, frame.width)
    limits.check_whole(file, frame.height)
    count, examples = 0, []
    for name, dtype in frame.schema.items():
        if dtype != pl.String:
            continue
        lengths = frame.get_column(name).str.len_bytes()
        over = lengths > limits.line_cap
        found = int(over.sum())
        if found:
            count += found
            rows = over.arg_true().head(5).to_list()
            examples += [(row + 1, str(name), int(lengths[row])) for row in rows]
    if count:
        raise Rejected(long_cells(file, count, examples, "bytes", limits))


def _check_pandas(frame: pd.DataFrame, file: str, limits: Limits) -> None:
    """Rows and columns first (they cost nothing to count), then the length of every text
    cell, in characters, before anything is copied."""
    import pandas as pd

    limits.check_columns(file, len(frame.columns))
    limits.check_whole(file, len(frame))
    count, examples = 0, []
    for name in frame.columns:
        column = frame[name]
        if not (column.dtype == object or isinstance(column.dtype, pd.StringDtype)):
            continue
        if pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
            lengths = column.str.len()
        else:  # mixed objects: only text and bytes have a length that matters
            lengths = column.map(lambda v: len(v) if isinstance(v, str | bytes) else 0)
        over = (lengths > limits.line_cap).to_numpy(dtype=bool, na_value=False)
        found = int(over.sum())
        if found:
            count += found
            rows = over.nonzero()[0][:5]
            examples += [(int(row) + 1, str(name), int(lengths.iloc[row])) for row in rows]
    if count:
        raise Rejected(long_cells(file, count, examples, "characters", limits))
