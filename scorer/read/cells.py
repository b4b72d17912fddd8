"""The cells of a table: what each kind must hold, and the judging of typed values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from scorer.competition import LOST_ITEMS, Competition, IdKind, Stage
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

#: `id` an integer id, `text` a text id (`scorer.competition.IdKind`).
Kind = Literal["id", "text", "rank", "stage", "grade"]

Unit = Literal["line", "row"]

#: The largest id a 64-bit integer column holds; longer digit strings are rejected by name.
MAX_ID = 2**63 - 1

#: The longest text id, in bytes of UTF-8: a 64-hex customer id, a track URI or a URL fits;
#: an id longer than this is a mistake (a whole line pasted in a cell), not a key to match.
MAX_TEXT_ID = 256

#: What a text id may not hold: whitespace (no id has any, and a space around one would make
#: it another id, silently) or a control character (a terminal escape is nobody's id).
_NOT_IN_TEXT_ID = r"[\s\x00-\x1f\x7f]"

DTYPE: Mapping[Kind, type[pl.DataType]] = {
    "id": pl.Int64,
    "text": pl.String,
    "rank": pl.Int64,
    "stage": pl.Categorical,
    "grade": pl.Int64,
}

CODE: Mapping[Kind, Code] = {
    "id": Code.INVALID_ID,
    "text": Code.INVALID_ID,
    "rank": Code.INVALID_RANK,
    "stage": Code.INVALID_STAGE,
    "grade": Code.INVALID_GRADE,
}

#: What the rest of the scorer calls the user, item and rank columns: the spec's names.
from scorer.competition import ITEM as ITEM  # noqa: E402
from scorer.competition import RANK as RANK  # noqa: E402
from scorer.competition import USER as USER  # noqa: E402


def id_kind(kind: IdKind) -> Kind:
    """The cell kind of an id of `kind`."""
    return "text" if kind is IdKind.TEXT else "id"


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

    @property
    def user_kind(self) -> Kind:
        """What the user column holds: `id` or `text` (`Competition.ids`)."""
        return id_kind(self.competition.ids.user)

    @property
    def texts(self) -> bool:
        """Whether a column of the file holds text ids (its scan then looks for `plain`)."""
        return "text" in {**self.required, **self.optional}.values()

    @property
    def item_kind(self) -> Kind:
        """What the item column (or each id of a list) holds: `id` or `text`."""
        return id_kind(self.competition.ids.item)

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
            "text": f"a text id of 1 to {MAX_TEXT_ID} bytes with no space or control character",
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
    #: The file's name of each column renamed to the scorer's (`Spec.internal`), by the
    #: scorer's name: what messages call a split column, whichever the file had.
    file_names: Mapping[str, str] = field(default_factory=dict)
    #: The users of lines refused whole (too long, or of too many or too few fields; none of
    #: their cells read, each a problem already): in the file, so never missing from it.
    refused: pl.Series | None = None


#: An integer cell as the competition's own reader (pandas) takes one: ASCII spaces or tabs
#: around it, an optional leading '+', then ASCII digits (leading zeros allowed).
_INTEGER = r"^\+?[0-9]+$"


def integer(cell: pl.Expr) -> pl.Expr:
    """The value of an integer cell (`_INTEGER`), null for any other text or beyond Int64.
    polars' `to_integer` takes exactly an optional sign and ASCII digits, so only the minus
    sign is left to refuse: no regular expression runs over millions of cells."""
    text = cell.str.strip_chars(" \t")
    return pl.when(~text.str.starts_with("-")).then(text.str.to_integer(strict=False))


#: The user of a bad cell, beside the file's columns under their names: a line break in it,
#: which no column of a spec may have (`scorer.competition`), so a column '_user' meets it not.
_OWNER = "\nuser"


def parse_cells(
    file: str, cells: pl.DataFrame, kinds: dict[str, Kind], spec: Spec, unit: str
) -> tuple[pl.DataFrame, list[Problem], Clues]:
    """Text cells to typed ones. A cell that is not a plain integer becomes null and an issue;
    ranges and stage values are judged later, on typed values, in `apply_ranges`. A user id written
    as a float ('10000.0') is an issue too, but its row still counts for that user, so the
    rules on users blame nothing else on it. The clues count the cells written as floats."""
    numbers = [name for name, kind in kinds.items() if kind not in ("stage", "text")]
    texts = [name for name, kind in kinds.items() if kind == "text"]
    typed = cells.with_columns(
        *(integer(pl.col(n)).cast(pl.Int64) for n in numbers),
        # a text id is the cell as written; its value is judged in `apply_ranges`
        *(pl.when(pl.col(n) != "").then(pl.col(n)).alias(n) for n in texts),
    )
    bad: dict[str, pl.Series] = {}
    for name in [*numbers, *texts]:  # null once read: not an integer, or empty
        bad[name] = typed.get_column(name).is_null()
        if name in spec.nullable:  # an empty cell (or one of spaces) is allowed, and null
            cell = cells.get_column(name)
            cell = cell if name in texts else cell.str.strip_chars(" \t")
            bad[name] = bad[name] & ~(cell.fill_null("") == "")
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
            cells.with_columns(user.alias(_OWNER)).filter(mask).head(examples_shown())
            if user is not None
            else (
                cells.filter(mask)
                .head(examples_shown())
                .with_columns(pl.lit(None, pl.Int64).alias(_OWNER))
            )
        )
        problems.append(
            problem(
                CODE[kind],
                counts[name],
                [
                    cell_issue(spec, unit, kind, name, ln, raw, u)
                    for ln, raw, u in rows.select("line", name, _OWNER).rows()
                ],
            )
        )
    return typed, problems, clues


def text_code(cell: pl.Expr, plain: bool = False) -> pl.Expr:
    """Null for a text id the rules take (or a null cell); else the code of what is wrong.
    `plain`: the text holds no whitespace or control character (`Text.plain`), so only the
    length is judged: no pattern runs over millions of cells."""
    size = cell.str.len_bytes()
    bad = size == 0
    if not plain:
        bad = bad | cell.str.contains(_NOT_IN_TEXT_ID)
    return (
        pl.when(size > MAX_TEXT_ID)
        .then(pl.lit(str(Code.ID_TOO_LONG)))
        .when(bad)
        .then(pl.lit(str(Code.INVALID_ID)))
    )


def bad_texts(frame: pl.DataFrame, name: str, plain: bool = False) -> dict[Code, pl.Series]:
    """Which cells of a text id column break its rules, by code (`text_code`)."""
    code = frame.select(text_code(pl.col(name), plain)).to_series()
    return {c: code.eq_missing(str(c)) for c in (Code.INVALID_ID, Code.ID_TOO_LONG)}


def cell_issue(
    spec: Spec, unit: str, kind: Kind, column: str, line: int, raw: object, user: object
) -> Issue:
    """A bad cell: where it is, what it holds, what its kind must hold (and whose it is)."""
    shown = "empty" if raw is None or raw == "" else repr(shorten(raw))
    word = spec.competition.words.user
    who = f" ({word} {user})" if user is not None and column != spec.user else ""
    what = f"is not {spec.expected(kind)}"
    size = len(raw.encode()) if kind == "text" and isinstance(raw, str) else 0
    if size > MAX_TEXT_ID:
        what = f"is {size:,} bytes long; expected a text id of at most {MAX_TEXT_ID} bytes"
    if kind == "id" and isinstance(raw, str) and re.fullmatch(r"\+?[0-9]+", raw.strip(" \t")):
        what = f"is too large; expected {spec.expected(kind)}, at most {MAX_ID}"
    return Issue(
        Code.ID_TOO_LONG if size > MAX_TEXT_ID else CODE[kind],
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
    *,
    plain: bool = False,
) -> Table:
    """Range rules on typed values (negative ids, ranks outside 1..k, unknown stages): the
    offending cells become null, so later rules see only values that are valid. Stages
    become the names of `Stage`; the user, item and rank columns take their internal names.
    `clues` are those of `parse_cells` (by default: each row of `frame` is a row of cells);
    ranks counted from 0 are added to them, and the problems get the hints they give.
    `plain`: as for `text_code`."""
    found = list(problems)
    clues = Clues(rows=frame.height) if clues is None else clues
    checks: dict[str, pl.Expr] = {}
    stages: dict[str, list[str]] = {}
    # A quoted empty cell ('""') reads as empty text, not null: where a cell may be empty,
    # it is; elsewhere `text_code` refuses it, as it refuses an unquoted one.
    blank = [n for n, kind in kinds.items() if kind == "text" and n in spec.nullable]
    frame = frame.with_columns(pl.when(pl.col(n) != "").then(pl.col(n)).alias(n) for n in blank)
    for name, kind in kinds.items():
        col = pl.col(name)
        if kind == "id":
            checks[name] = col < 0
        elif kind == "text":
            checks[name] = text_code(col, plain).is_not_null()
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
            codes = bad_texts(frame, name, plain) if kind == "text" else {CODE[kind]: mask}
            for code, where in codes.items():
                if not where.any():
                    continue
                rows = frame.filter(where).head(examples_shown())
                users = rows.get_column(spec.user) if user is not None else [None] * rows.height
                found.append(
                    problem(
                        code,
                        int(where.sum()),
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
    ).rename(renamed := {k: v for k, v in spec.internal.items() if k in kinds})  # the file's only
    return Table(
        file=file,
        frame=frame if "rank" in kinds.values() else _flag_sorted(frame),
        problems=hinted(merge(found), clues, spec.competition),
        unit=unit,
        competition=spec.competition,
        clues=clues,
        file_names={v: k for k, v in renamed.items()},
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


def refused_users(file: str, lines: pl.DataFrame, spec: Spec, unit: Unit, plain: bool) -> pl.Series:
    """The users of lines refused whole (`text_cells`' third answer: line and the user
    cell), as the table's user column holds them; a cell that is no valid id names no one,
    and its problems are not reported (its line is one already)."""
    users, _, _ = parse_cells(file, lines, {spec.user: spec.user_kind}, spec, unit)
    column = pl.col(spec.user)
    if spec.user_kind == "text":  # as `apply_ranges` keeps a text id: when no rule fails
        column = pl.when(text_code(column, plain).is_null()).then(column)
    return users.select(column.alias(USER)).to_series().drop_nulls()
