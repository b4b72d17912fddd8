"""The header of a file: every required column once, optional ones at most once, nothing else."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

import polars as pl

from scorer.errors import Code, Issue, Report, shorten, single
from scorer.read.hints import (
    DELIMITER,
    empty_floats,
    empty_hint,
    float_hint,
    index_hint,
    is_index,
    lists_hint,
    split_hint,
    whole_floats,
    wide_hint,
)
from scorer.read.limits import Limits, Rejected


class UsersOnly(Rejected):
    """A header of the user column alone where more are required: a targets file given
    where a solution or a submission was expected (`contract.files.reading` says so)."""


def check_header(
    file: str,
    header: Sequence[str],
    required: Sequence[str],
    optional: Sequence[str] = (),
    exclusive: Sequence[str] = (),
    *,
    frame: bool = False,
    wide: Sequence[str] = (),
) -> None:
    """Every required column once, optional ones at most once, at most one of the `exclusive`
    ones (a solution's split columns: `stage` or `Usage`), nothing else; any order. A
    `frame`'s (Parquet's) column names are no line of the file: messages name no line.

    `wide` is the wide format's header (the user and the list column) when a file of this
    kind may come in it: a header that looks like an attempt at it (the user column, none of
    the long format's others, and a column neither knows, such as `prediction`) is judged
    as a wide header, and a long header with the item but not the rank column (the lists
    put in the item column) gets the wide format's hint."""
    problems: list[str] = []
    codes: list[Code] = []
    known = [*required, *optional]
    hint: str | None = None
    layouts = ""
    if wide and _wide_attempt(header, required, known, wide[0]):
        layouts = f" (the wide format; or {','.join(required)}, the long format)"
        hint = wide_hint(wide)
        required, known = list(wide), [*wide, *optional]
    elif wide and len(required) > 2 and required[1] in header and required[2] not in header:
        hint = lists_hint(required[1], wide)
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
                f"{file}: {found} {','.join(required)}{_or_wide(wide)}",
                line=line,
                value=shorten(",".join(header)),
            )
        )
    expected = "the columns" if frame else "the header"
    named: list[str | None] = []  # the column each problem is about, if it is missing
    for name in required:
        if name not in header:
            codes.append(Code.MISSING_COLUMN)
            problems.append(
                f"{file}: {at}column {name!r} is missing; expected {expected} "
                f"{','.join(required)}{layouts}"
            )
            named.append(name)
    seen: set[str] = set()
    unknown: list[str] = []
    missing = [name for name in required if name not in header]
    for name in header:
        if name in seen:
            codes.append(Code.DUPLICATE_COLUMN)
            problems.append(f"{file}: {at}column {name!r} appears more than once")
            named.append(None)
        elif name not in known:
            codes.append(Code.UNKNOWN_COLUMN)
            unknown.append(name)
            # in the wide format, one column for one missing: the list column renamed
            meant = _did_you_mean(name, missing if layouts and len(missing) == 1 else known)
            problems.append(
                f"{file}: {at}unexpected column {_show(name)}{meant}; "
                f"expected only {', '.join(known)}"
            )
            named.append(None)
        seen.add(name)
    both = [name for name in exclusive if name in header]
    if len(both) > 1:
        codes.append(Code.DUPLICATE_COLUMN)
        names = " and ".join(repr(name) for name in both)
        problems.append(f"{file}: {at}{names} name the same thing; keep one")
        named.append(None)
    if problems:
        issues = [
            Issue(c, message, line=line, column=column)
            for c, message, column in zip(codes, problems, named, strict=True)
        ]
        index = index_hint(unknown)
        hints = {
            Code.MISSING_COLUMN: None if index else hint,
            Code.UNKNOWN_COLUMN: index or (hint if Code.MISSING_COLUMN not in codes else None),
        }
        report = Report.of_issues(file, issues, hints)
        if len(required) > 1 and list(header) == [required[0]] and not layouts:
            raise UsersOnly(report)
        raise Rejected(report)


def _wide_attempt(
    header: Sequence[str], required: Sequence[str], known: Sequence[str], user: str
) -> bool:
    """Whether a header looks like an attempt at the wide format: the user column, none of
    the long format's other required columns, and a column that is neither known nor a
    pandas index (`user_id,prediction`)."""
    others = set(required) - {user}
    return (
        user in header
        and not others & set(header)
        and any(name not in known and not is_index(name) for name in header)
    )


def _looks_like_data(cell: str) -> bool:
    """A header cell that is a number, numbers separated by spaces (a wide list) or empty:
    the file's first line is a row, not a header."""
    return re.fullmatch(r"[-+]?[0-9.]*( +[0-9.]+)*", cell.strip().strip('"')) is not None


def _or_wide(wide: Sequence[str]) -> str:
    """The wide format's header as the other a file may have, if it may come in it."""
    return f" (or {','.join(wide)}, the wide format)" if wide else ""


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
    wide: Sequence[str] = (),
) -> list[str]:
    """A Parquet file's or a frame's columns, row count and size, as `check_header` and the
    CSV scan judge a CSV file's; returns the column names."""
    header = [str(c) for c in frame.columns]
    check_header(file, header, required, optional, exclusive, frame=True, wide=wide)
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
    floats = expected == "integers" and dtype.is_float()
    hint = float_hint([name]) if floats and whole_floats(frame.select(name)) else None
    empty = empty_floats(frame.select(name)) if floats and hint is None else None
    if empty is not None:  # pandas made the column floats for its empty cells
        hint = empty_hint(name, f"row {empty[1]:,}", empty[0])
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
