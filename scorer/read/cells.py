"""The cells of a table: what each kind must hold, and the judging of typed values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from scorer.competition import LOST_ITEMS, Competition, Stage
from scorer.errors import Code, Issue, Problem, examples_shown, merge, problem, shorten
from scorer.metrics import MAX_GRADE
from scorer.read.hints import (
    Clues,
    float_clues,
    hinted,
    repeated_header,
    whole_float,
    zero_based,
)

Kind = Literal["id", "rank", "stage", "grade"]

Unit = Literal["line", "row"]

#: The largest id a 64-bit integer column holds; longer digit strings are rejected by name.
MAX_ID = 2**63 - 1

DTYPE: Mapping[Kind, type[pl.DataType]] = {
    "id": pl.Int64,
    "rank": pl.Int64,
    "stage": pl.Categorical,
    "grade": pl.Int64,
}

CODE: Mapping[Kind, Code] = {
    "id": Code.INVALID_ID,
    "rank": Code.INVALID_RANK,
    "stage": Code.INVALID_STAGE,
    "grade": Code.INVALID_GRADE,
}

#: What the rest of the scorer calls the user, item and rank columns: the spec's names.
from scorer.competition import ITEM as ITEM  # noqa: E402
from scorer.competition import RANK as RANK  # noqa: E402
from scorer.competition import USER as USER  # noqa: E402


@dataclass(frozen=True)
class Spec:
    """The columns one kind of file has in the long layout, by their names in the file;
    `nullable` ones may be empty. `internal` renames the user, item and rank columns once the
    cells are judged."""

    role: str
    required: Mapping[str, Kind]
    optional: Mapping[str, Kind]
    nullable: frozenset[str] = frozenset()
    competition: Competition = LOST_ITEMS
    internal: Mapping[str, str] = field(default_factory=dict)
    #: Whether a file may come in the wide layout (one line a user, `columns.list`).
    wide: bool = False

    @property
    def user(self) -> str:
        """The user column's name in the file."""
        return self.competition.columns.user

    def kinds(self, header: list[str]) -> dict[str, Kind]:
        every = {**self.required, **self.optional}
        return {name: every[name] for name in header}

    def of_kind(self, kind: Kind) -> list[str]:
        """The columns, required or optional, that hold `kind`, in the spec's order."""
        return [name for name, k in {**self.required, **self.optional}.items() if k == kind]

    def expected(self, kind: Kind) -> str:
        """What a cell of `kind` must hold, as messages say it."""
        splits = self.competition.splits
        return {
            "id": "a non-negative integer written in digits",
            "rank": f"an integer 1..{self.competition.k}",
            "stage": f"{splits.public}, {splits.private} or {splits.ignored}",
            "grade": f"an integer 0..{MAX_GRADE}",
        }[kind]


@dataclass(frozen=True)
class Table:
    """Typed columns plus `line`, the 1-based line of the file (the row, for Parquet/frames).
    A cell that broke its rule is null here and counted in `problems`. The user, item and rank
    columns have their internal names (`USER`, `ITEM`, `RANK`)."""

    file: str
    frame: pl.DataFrame
    problems: tuple[Problem, ...]
    unit: Unit
    competition: Competition = LOST_ITEMS
    #: What the cells show of common mistakes, for hints (`scorer.read.hints`).
    clues: Clues = field(default_factory=Clues)


#: An integer cell as the competition's own reader (pandas) takes one: ASCII spaces or tabs
#: around it, an optional leading '+', then ASCII digits (leading zeros allowed).
_INTEGER = r"^\+?[0-9]+$"


def integer(cell: pl.Expr) -> pl.Expr:
    """The value of an integer cell (`_INTEGER`), null for any other text or beyond Int64.
    polars' `to_integer` takes exactly an optional sign and ASCII digits, so only the minus
    sign is left to refuse: no regular expression runs over millions of cells."""
    text = cell.str.strip_chars(" \t")
    return pl.when(~text.str.starts_with("-")).then(text.str.to_integer(strict=False))


def parse_cells(
    file: str, cells: pl.DataFrame, kinds: dict[str, Kind], spec: Spec, unit: str
) -> tuple[pl.DataFrame, list[Problem], Clues]:
    """Text cells to typed ones. A cell that is not a plain integer becomes null and an issue;
    ranges and stage values are judged later, on typed values, in `apply_ranges`. A user id written
    as a float ('10000.0') is an issue too, but its row still counts for that user, so the
    rules on users blame nothing else on it. The clues count the cells written as floats."""
    numbers = [name for name, kind in kinds.items() if kind != "stage"]
    typed = cells.with_columns(integer(pl.col(n)).cast(pl.Int64) for n in numbers)
    bad: dict[str, pl.Series] = {}
    for name in numbers:  # null once read: not an integer, or empty
        bad[name] = typed.get_column(name).is_null()
        if name in spec.nullable:  # an empty cell (or one of spaces) is allowed, and null
            empty = cells.get_column(name).str.strip_chars(" \t").fill_null("") == ""
            bad[name] = bad[name] & ~empty
    problems: list[Problem] = []
    repeated = repeated_header(cells, list(kinds), unit)
    if repeated is not None:  # one problem for such a line, not one a cell
        bad = {name: flags & ~repeated[0] for name, flags in bad.items()}
        problems.append(repeated[1])
    flags = pl.DataFrame(
        [cells.get_column("line"), *(v.alias(f"_bad_{n}") for n, v in bad.items())]
    )
    counts = {name: int(flags.get_column(f"_bad_{name}").sum()) for name in bad}
    floats: dict[str, int] = {}
    clues = Clues(rows=cells.height)
    for name, count in counts.items():
        if count and kinds[name] in ("id", "rank"):
            whole = cells.select(whole_float(pl.col(name)).cast(pl.Int64)).to_series()
            floats[name] = whole.len() - whole.null_count()
            clues = clues + float_clues(cells, name, floats[name])
            if name == spec.user and floats[name]:
                typed = typed.with_columns(pl.coalesce(pl.col(name), whole))
    user = typed.get_column(spec.user) if spec.user in typed.columns else None
    for name, kind in kinds.items():
        if not counts.get(name):
            continue
        mask = flags.get_column(f"_bad_{name}")
        rows = (
            cells.with_columns(_user=user).filter(mask).head(examples_shown())
            if user is not None
            else (
                cells.filter(mask).head(examples_shown()).with_columns(_user=pl.lit(None, pl.Int64))
            )
        )
        problems.append(
            problem(
                CODE[kind],
                counts[name],
                [
                    cell_issue(spec, unit, kind, name, ln, raw, u)
                    for ln, raw, u in rows.select("line", name, "_user").rows()
                ],
            )
        )
    return typed, problems, clues


def cell_issue(
    spec: Spec, unit: str, kind: Kind, column: str, line: int, raw: object, user: int | None
) -> Issue:
    """A bad cell: where it is, what it holds, what its kind must hold (and whose it is)."""
    shown = "empty" if raw is None or raw == "" else repr(shorten(raw))
    word = spec.competition.words.user
    who = f" ({word} {user})" if user is not None and column != spec.user else ""
    what = f"is not {spec.expected(kind)}"
    if kind == "id" and isinstance(raw, str) and re.fullmatch(r"\+?[0-9]+", raw.strip(" \t")):
        what = f"is too large; expected {spec.expected(kind)}, at most {MAX_ID}"
    return Issue(
        CODE[kind],
        f"{unit} {line}: {column} {shown} {what}{who}",
        line=line,
        user=None if user is None else str(user),
        column=column,
        value=None if raw is None else shorten(raw),
    )


def apply_ranges(
    file: str,
    frame: pl.DataFrame,
    kinds: dict[str, Kind],
    spec: Spec,
    unit: Unit,
    problems: list[Problem],
    clues: Clues | None = None,
) -> Table:
    """Range rules on typed values (negative ids, ranks outside 1..k, unknown stages): the
    offending cells become null, so later rules see only values that are valid. Stages
    become the names of `Stage`; the user, item and rank columns take their internal names.
    `clues` are those of `parse_cells` (by default: each row of `frame` is a row of cells);
    ranks counted from 0 are added to them, and the problems get the hints they give."""
    found = list(problems)
    clues = Clues(rows=frame.height) if clues is None else clues
    checks: dict[str, pl.Expr] = {}
    stages: dict[str, list[str]] = {}
    for name, kind in kinds.items():
        col = pl.col(name)
        if kind == "id":
            checks[name] = col < 0
        elif kind == "rank":
            checks[name] = (col < 1) | (col > spec.competition.k)
        elif kind == "grade":
            checks[name] = (col < 0) | (col > MAX_GRADE)
        else:
            # A stage column holds a handful of distinct values: judge those, not every row.
            stages[name] = frame.get_column(name).unique().drop_nulls().cast(pl.String).to_list()
            unknown = [v for v in stages[name] if spec.competition.splits.stage_of(v) is None]
            checks[name] = col.is_null()
            if unknown:  # casting millions of cells to text costs: only when some are wrong
                checks[name] = checks[name] | col.cast(pl.String).is_in(unknown)
    sums = [e.fill_null(False).sum().alias(n) for n, e in checks.items()]
    counts = frame.select(sums).row(0, named=True) if sums else {}
    if any(counts.values()):
        flags = frame.select(*[e.fill_null(False).alias(n) for n, e in checks.items()])
        user = frame.get_column(spec.user) if spec.user in frame.columns else None
        for name, kind in kinds.items():
            if not counts[name]:
                continue
            if kind == "rank" and user is not None:
                zero_users, zero_rows = zero_based(frame, spec.user, name, spec.competition.k)
                clues = clues + Clues(zero_users=zero_users, zero_rows=zero_rows)
            mask = flags.get_column(name)
            rows = frame.filter(mask).head(examples_shown())
            users = rows.get_column(spec.user) if user is not None else [None] * rows.height
            found.append(
                problem(
                    CODE[kind],
                    int(counts[name]),
                    [
                        cell_issue(
                            spec, unit, kind, name, ln, raw, None if name == spec.user else u
                        )
                        for ln, raw, u in zip(rows["line"], rows[name], users, strict=True)
                    ],
                )
            )
        frame = frame.with_columns(
            pl.when(~flags.get_column(n)).then(pl.col(n)).alias(n) for n in kinds if counts[n]
        )
    # Stages compare without case ('Public' is 'public'); most files need no conversion.
    frame = frame.with_columns(
        _stage_names(name, values, spec)
        for name, values in stages.items()
        if any(value not in tuple(Stage) for value in values)
    ).rename({k: v for k, v in spec.internal.items() if k in kinds})  # the file's columns only
    return Table(
        file=file,
        frame=frame if "rank" in kinds.values() else _flag_sorted(frame),
        problems=hinted(merge(found), clues, spec.competition),
        unit=unit,
        competition=spec.competition,
        clues=clues,
    )


def _stage_names(name: str, values: list[str], spec: Spec) -> pl.Expr:
    """A split column's values as the names of `Stage` (unknown ones are null already)."""
    named = {value: spec.competition.splits.stage_of(value) for value in values}
    known = {value: str(stage) for value, stage in named.items() if stage is not None}
    return (
        pl.col(name)
        .cast(pl.String)
        .replace_strict(known, default=None, return_dtype=pl.String)
        .cast(pl.Categorical)
    )


def _flag_sorted(frame: pl.DataFrame) -> pl.DataFrame:
    """Mark `user_id` sorted when it is (files are usually written user by user): polars then
    groups by user several times faster. A check of one pass; unsorted files work as well.
    Not for a table of ranks (a submission): its rows are checked as a matrix or keyed in
    pair order before any group-by (`scorer.keys`), which needs no flag."""
    if USER not in frame.columns:
        return frame
    users = frame.get_column(USER)
    if users.null_count() or not users.is_sorted():
        return frame
    return frame.with_columns(users.set_sorted())
