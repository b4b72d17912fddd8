"""The header of a file: every required column once, optional ones at most once, nothing else."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

import polars as pl

from scorer.errors import Code, Issue, Report, shorten, single
from scorer.read.hints import DELIMITER, float_hint, index_hint, split_hint, whole_floats
from scorer.read.limits import Limits, Rejected


def check_header(
    file: str,
    header: Sequence[str],
    required: Sequence[str],
    optional: Sequence[str] = (),
    exclusive: Sequence[str] = (),
    *,
    frame: bool = False,
) -> None:
    """Every required column once, optional ones at most once, at most one of the `exclusive`
    ones (a solution's split columns: `stage` or `Usage`), nothing else; any order. A
    `frame`'s (Parquet's) column names are no line of the file: messages name no line."""
    problems: list[str] = []
    codes: list[Code] = []
    known = [*required, *optional]
    at, line = ("", None) if frame else ("line 1: ", 1)
    if len(header) == 1 and any(sep in header[0] for sep in (";", "\t", "|")):
        sep = next(s for s in (";", "\t", "|") if s in header[0])
        if frame:  # a CSV file read with the wrong separator, then saved as a table
            found = f"one column named {_show(header[0])}; expected the columns {', '.join(known)}"
            hint = split_hint(sep)
        else:
            found = (
                f"line 1: the columns are separated by {sep!r}; expected ',' "
                f"(header {', '.join(known)})"
            )
            hint = DELIMITER
        raise Rejected(single(file, Code.BAD_DELIMITER, f"{file}: {found}", hint=hint, line=line))
    if not any(name in known for name in header) and all(map(_looks_like_data, header)):
        names = _show(",".join(header))
        found = (
            f"the columns are named {names}; expected the columns"
            if frame
            else f"line 1 is not a header: found {names}; expected the first line to name the "
            "columns:"
        )
        raise Rejected(
            single(
                file,
                Code.MISSING_COLUMN,
                f"{file}: {found} {','.join(required)}",
                line=line,
                value=shorten(",".join(header)),
            )
        )
    expected = "the columns" if frame else "the header"
    for name in required:
        if name not in header:
            codes.append(Code.MISSING_COLUMN)
            problems.append(
                f"{file}: {at}column {name!r} is missing; expected {expected} {','.join(required)}"
            )
    seen: set[str] = set()
    unknown: list[str] = []
    for name in header:
        if name in seen:
            codes.append(Code.DUPLICATE_COLUMN)
            problems.append(f"{file}: {at}column {name!r} appears more than once")
        elif name not in known:
            codes.append(Code.UNKNOWN_COLUMN)
            unknown.append(name)
            problems.append(
                f"{file}: {at}unexpected column {_show(name)}{_did_you_mean(name, known)}; "
                f"expected only {', '.join(known)}"
            )
        seen.add(name)
    both = [name for name in exclusive if name in header]
    if len(both) > 1:
        codes.append(Code.DUPLICATE_COLUMN)
        names = " and ".join(repr(name) for name in both)
        problems.append(f"{file}: {at}{names} name the same thing; keep one")
    if problems:
        issues = [Issue(c, message, line=line) for c, message in zip(codes, problems, strict=True)]
        hints = {Code.UNKNOWN_COLUMN: index_hint(unknown)}
        raise Rejected(Report.of_issues(file, issues, hints))


def _looks_like_data(cell: str) -> bool:
    """A header cell that is a number or empty: the file's first line is a row, not a header."""
    return re.fullmatch(r"[-+]?[0-9.]*", cell.strip().strip('"')) is not None


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    folded = {k.lower().replace(" ", "").replace("-", "_"): k for k in known}
    key = name.lower().replace(" ", "").replace("-", "_")
    close = [folded[key]] if key in folded else difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _show(value: str) -> str:
    return repr(shorten(value))


def check_frame(
    file: str,
    frame: pl.DataFrame,
    required: list[str],
    optional: list[str],
    limits: Limits,
    exclusive: Sequence[str] = (),
) -> list[str]:
    """A Parquet file's or a frame's columns, row count and size, as `check_header` and the
    CSV scan judge a CSV file's; returns the column names."""
    header = [str(c) for c in frame.columns]
    check_header(file, header, required, optional, exclusive, frame=True)
    if frame.height == 0:
        raise Rejected(single(file, Code.NO_ROWS, f"{file}: the table has no rows"))
    limits.check_rows(file, frame.height, "the table has {count} rows")
    return header


def no_rows(file: str) -> Report:
    return single(file, Code.NO_ROWS, f"{file}: the file has a header but no rows")


def type_report(file: str, frame: pl.DataFrame, name: str, expected: str = "integers") -> Report:
    """A column of the wrong type; one of floats where integers are expected, which
    `astype("int64")` makes the integers they are, gets its hint, as do numbers where text
    ids are expected (read as numbers, they lost their leading zeros)."""
    dtype = frame.schema[name]
    whole = expected == "integers" and dtype.is_float() and whole_floats(frame.select(name))
    hint = float_hint([name]) if whole else None
    if expected.startswith("text ids") and dtype.is_numeric():
        hint = (
            f"{name} holds ids as text, matched as written (0108775015 is not 108775015): read "
            f'them as text, pd.read_csv(path, dtype={{"{name}": str}}), and write them so'
        )
    return single(
        file,
        Code.COLUMN_TYPE,
        f"{file}: column {name!r} holds {dtype}; expected {expected}",
        hint=hint,
        column=name,
    )
