"""Hints: one line on how to fix a common pandas mistake, from what the read layer saw.

A hint never holds a value of the organiser's files: it names columns, counts users and
shows the pandas call that fixes the file. The hints of a file's cells come from `Clues`,
counts that add up over the parts of a file, so a file read in parts gets the hints it gets
read whole.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from scorer.competition import Competition
from scorer.errors import Code, Issue, Problem, Report, examples_shown, problem

#: Column names pandas gives its index: '__index_level_0__' (to_parquet of a filtered or sorted
#: frame), 'Unnamed: 0' (a CSV file's index read back, then saved again; '' in the CSV itself).
_PARQUET_INDEX = re.compile(r"__index_level_[0-9]+__")
_READ_BACK = re.compile(r"Unnamed: [0-9]+(\.[0-9]+)?")

#: A cell pandas wrote from a float column holding a whole number: '500123.0'.
_WHOLE_FLOAT = r"^\+?[0-9]+\.0*$"

DELIMITER = "write the file with df.to_csv(path, index=False), which separates columns with ','"
EXCEL = 'save it as CSV: pd.read_excel(path).to_csv("submission.csv", index=False)'
ZIP = (
    "name the file .zip (a zip holding one .csv or .parquet file is read), "
    "or write plain CSV: df.to_csv(path, index=False)"
)
GZIP = "name the file .csv.gz, or write plain CSV: df.to_csv(path, index=False)"


#: How the wide format's list cell is written from a Python list of ids.
JOIN = '" ".join(map(str, ids))'


def is_index(name: str) -> bool:
    """Whether a column name is one pandas gives its index (saved by mistake)."""
    return name == "" or bool(_READ_BACK.fullmatch(name) or _PARQUET_INDEX.fullmatch(name))


def wide_hint(wide: Sequence[str]) -> str:
    """The hint for a header that looks like an attempt at the wide format."""
    user, ids = wide
    return (
        f"one line a user is the wide format: the header {user},{ids}, each {ids} cell the "
        f"ids in rank order separated by spaces, written {JOIN}"
    )


def lists_hint(item: str, wide: Sequence[str]) -> str:
    """The hint for a long header without its rank column: perhaps lists in the item column."""
    user, ids = wide
    return (
        f"if each {item} cell holds a list of ids, that is the wide format: name the columns "
        f"{user},{ids} and write each list in rank order separated by spaces, {JOIN}"
    )


def index_hint(unknown: Sequence[str]) -> str | None:
    """The hint for a header whose `unknown` columns hold a pandas index, if they do."""
    read_back = [name for name in unknown if _READ_BACK.fullmatch(name)]
    if read_back:
        names = ", ".join(f'"{name}"' for name in read_back)
        dropped = names if len(read_back) == 1 else f"[{names}]"
        return (
            f"{read_back[0]!r} is a pandas index read back as a column: "
            f"df = df.drop(columns={dropped}), then write with index=False"
        )
    saved = "the pandas index was saved as a column: write the file with "
    if any(_PARQUET_INDEX.fullmatch(name) for name in unknown):
        return saved + "df.to_parquet(path, index=False)"
    if "" in unknown:
        return saved + "df.to_csv(path, index=False)"
    return None


def reset_index_hint(report: Report, source: object) -> Report:
    """A pandas frame's report with the hint for a missing column that is the frame's index
    (`df.set_index(...)`, `df.groupby(...).agg(...)`): pandas keeps it out of the columns."""
    index = getattr(source, "index", None)
    names = [str(n) for n in getattr(index, "names", ()) if n is not None]
    missing = [
        issue.column
        for p in report.problems
        if p.code == Code.MISSING_COLUMN
        for issue in p.examples
        if issue.column in names
    ]
    if not missing:
        return report
    hint = (
        f"{missing[0]!r} is the frame's index, not one of its columns: "
        "df = df.reset_index() makes it a column"
    )
    return Report(
        report.file,
        tuple(
            dataclasses.replace(p, hint=hint) if p.code == Code.MISSING_COLUMN else p
            for p in report.problems
        ),
    )


def split_hint(separator: str) -> str:
    """The hint for a frame whose one column name holds the names joined by `separator`."""
    return f"read the CSV with pd.read_csv(path, sep={separator!r})"


def float_hint(columns: Sequence[str]) -> str | None:
    """The hint for columns that pandas wrote as floats (none: no hint)."""
    if not columns:
        return None
    if len(columns) == 1:
        name = columns[0]
        return f'{name} was written as floats: df["{name}"] = df["{name}"].astype("int64")'
    names = " and ".join(columns)
    types = ", ".join(f'"{name}": "int64"' for name in columns)
    return f"{names} were written as floats: df = df.astype({{{types}}})"


def repeated_header(
    cells: pl.DataFrame, names: Sequence[str], unit: str
) -> tuple[pl.Series, Problem] | None:
    """The lines of text cells (with `line`) that repeat the header, each cell its column's
    name, as `df.to_csv(path, mode="a")` writes one before each chunk: which rows (to judge
    their cells no further) and one problem for them all. None when there is none."""
    if unit != "line" or len(names) < 2:  # one column alone (a wide file's user) is no header
        return None
    # A quick look first, with no copy of any cell (a wide list is long): does some first
    # cell start with its column's name, as pandas writes a header (no space before it)?
    if not cells.select(pl.col(names[0]).str.starts_with(names[0]).fill_null(False).any()).item():
        return None
    same = pl.all_horizontal(pl.col(n).str.strip_chars(" \t") == n for n in names)
    mask = cells.select(same.fill_null(False)).to_series()
    if not mask.any():
        return None
    lines = cells.get_column("line").filter(mask)
    examples = [
        Issue(Code.REPEATED_HEADER, f"line {ln} repeats the header", line=ln, value=",".join(names))
        for ln in lines.head(examples_shown()).to_list()
    ]
    hint = (
        'a file written in chunks with df.to_csv(path, mode="a") repeats its header before '
        "each chunk: write every chunk after the first with header=False"
    )
    return mask, problem(Code.REPEATED_HEADER, lines.len(), examples, hint)


def whole_float(cell: pl.Expr) -> pl.Expr:
    """The value of a text cell that is a whole number written as a float ('10000.0', as
    pandas writes a float column), null for any other cell."""
    text = cell.str.strip_chars(" \t")
    return pl.when(text.str.contains(_WHOLE_FLOAT)).then(
        text.str.strip_prefix("+").str.replace(r"\.0*$", "").str.to_integer(strict=False)
    )


def whole_floats(frame: pl.DataFrame) -> bool:
    """Whether every value of a float column is a whole number that fits an Int64 (and none
    is empty): what `astype("int64")` turns into the same integers."""
    column = frame.to_series()
    if column.null_count() or column.is_nan().any():
        return False
    whole = (pl.col(column.name) == pl.col(column.name).floor()) & pl.col(column.name).is_between(
        -(2.0**63), 2.0**63, closed="left"
    )
    return bool(frame.select(whole.all()).item())


def empty_floats(frame: pl.DataFrame) -> tuple[int, int] | None:
    """A float column whose values are whole numbers but for some empty ones (null or NaN),
    as pandas keeps an integer column with an empty cell: how many are empty, and the first
    one's row (1-based). None for any other column."""
    column = frame.to_series()
    empty = column.is_null() | column.is_nan().fill_null(False)
    if not empty.any():
        return None
    if not whole_floats(column.filter(~empty).to_frame()):
        return None
    return int(empty.sum()), int(empty.arg_true()[0]) + 1


@dataclass(frozen=True)
class Clues:
    """What a table's cells show of common mistakes. Every field adds up over the parts of a
    file: a part holds whole users, and a column is float-written in the file when it is
    in every part."""

    #: Rows of cells (lines with the right number of fields; a wide file's lines).
    rows: int = 0
    #: Cells written as whole floats ('500123.0'), by column, for columns with a bad cell.
    floats: Mapping[str, int] = field(default_factory=dict)
    #: Empty cells, by column, for columns with a cell written as a whole float, and the
    #: line of the first: one empty cell makes pandas write a whole integer column as floats.
    empties: Mapping[str, int] = field(default_factory=dict)
    first_empty: Mapping[str, int] = field(default_factory=dict)
    #: Users whose every rank is in 0..k-1, one of them 0 (ranks counted from 0), and their
    #: rows.
    zero_users: int = 0
    zero_rows: int = 0

    def __add__(self, other: Clues) -> Clues:
        floats = dict(self.floats)
        for name, count in other.floats.items():
            floats[name] = floats.get(name, 0) + count
        empties = dict(self.empties)
        for name, count in other.empties.items():
            empties[name] = empties.get(name, 0) + count
        first = dict(self.first_empty)
        for name, line in other.first_empty.items():
            first[name] = min(first.get(name, line), line)
        return Clues(
            rows=self.rows + other.rows,
            floats=floats,
            empties=empties,
            first_empty=first,
            zero_users=self.zero_users + other.zero_users,
            zero_rows=self.zero_rows + other.zero_rows,
        )

    def float_columns(self, names: Sequence[str]) -> list[str]:
        """The `names` whose every cell was written as a float: a column pandas wrote from
        floats (a few float cells among integers are typos, not this)."""
        return [n for n in names if self.rows and self.floats.get(n, 0) == self.rows]


def float_clues(cells: pl.DataFrame, name: str, floats: int) -> Clues:
    """The clues of one column of text cells (with `line`) that has `floats` cells written as
    whole floats: those, and its empty cells (how many, the first one's line)."""
    if not floats:
        return Clues()
    empty = cells.get_column(name).str.strip_chars(" \t").fill_null("") == ""
    lines = cells.get_column("line").filter(empty)
    first = {name: int(lines.min())} if lines.len() else {}  # type: ignore[arg-type]
    return Clues(floats={name: floats}, empties={name: lines.len()}, first_empty=first)


def _empty_float_hint(clues: Clues, names: Sequence[str]) -> str | None:
    """A column of whole floats but for its empty cells: pandas wrote it so because of them."""
    for name in names:
        floats, empties = clues.floats.get(name, 0), clues.empties.get(name, 0)
        if floats and empties and floats + empties == clues.rows and name in clues.first_empty:
            return empty_hint(name, f"line {clues.first_empty[name]}", empties)
    return None


def empty_hint(name: str, first: str, empties: int) -> str:
    """Why a whole-number column came out as floats: its empty cells (the first at `first`)."""
    cells = "an empty cell" if empties == 1 else f"{empties:,} empty cells"
    return (
        f"{name} has {cells} (the first on {first}), and pandas makes a column of integers "
        "with an empty cell floats, written '123.0': drop or fill the empty rows "
        f'(df = df.dropna(subset=["{name}"])), then '
        f'df["{name}"] = df["{name}"].astype("int64") (or the "Int64" type, which writes '
        "integers and leaves empty cells empty)"
    )


def hinted(
    problems: Sequence[Problem], clues: Clues, competition: Competition
) -> tuple[Problem, ...]:
    """The problems with the hints their cells' clues give (invalid ids and ranks)."""
    columns = competition.columns
    hints = {
        Code.INVALID_ID: float_hint(clues.float_columns([columns.user, columns.item]))
        or _empty_float_hint(clues, [columns.user, columns.item])
        or _brackets_hint(problems, columns.list),
        Code.INVALID_RANK: float_hint(clues.float_columns([columns.rank]))
        or _zero_hint(clues, competition),
    }
    return tuple(
        dataclasses.replace(p, hint=hints[p.code]) if p.code in hints else p for p in problems
    )


def _brackets_hint(problems: Sequence[Problem], ids: str) -> str | None:
    """A list written as Python prints one ('[1, 2, 3]', as pandas writes a list cell): its
    first and last ids come with a bracket, which its invalid ids show."""
    found = [
        issue.value
        for p in problems
        if p.code == Code.INVALID_ID
        for issue in p.examples
        if issue.value is not None and (issue.value.startswith("[") or issue.value.endswith("]"))
    ]
    if not found:
        return None
    return (
        f"found {found[0]!r}: the lists were written as Python prints them, '[1, 2, 3]'; write "
        f'the ids separated by spaces: df["{ids}"] = df["{ids}"].map(lambda ids: {JOIN})'
    )


def _zero_hint(clues: Clues, competition: Competition) -> str | None:
    """Ranks counted from 0 (0..k-1): in the whole file, or for some users."""
    if not clues.zero_users:
        return None
    rank, user = competition.columns.rank, competition.words.user
    if clues.zero_rows == clues.rows:
        return f'the ranks are counted from 0; count them from 1: df["{rank}"] += 1'
    if clues.zero_users == 1:
        return f"1 {user} has ranks counted from 0; count them from 1 (add 1 to its ranks)"
    return (
        f"{clues.zero_users:,} {user}s have ranks counted from 0; count them from 1 (add 1 "
        "to their ranks)"
    )


#: `zero_based`'s own columns, beside the user column under the file's name: a line break in
#: each, which no column of a spec may have (`scorer.competition`), so a user column called
#: 'n' meets neither.
_ZERO, _ROWS = "\nzero", "\nrows"


def zero_based(frame: pl.DataFrame, user: str, rank: str, k: int) -> tuple[int, int]:
    """The users whose every rank is in 0..k-1, one of them 0, and how many rows they have:
    one group-by of the columns read, run only when some rank is out of range."""
    per_user = (
        frame.filter(pl.col(user).is_not_null())
        .group_by(user)
        .agg(
            (
                (pl.col(rank).min() == 0)
                & (pl.col(rank).max() < k)
                & (pl.col(rank).null_count() == 0)
            ).alias(_ZERO),
            pl.len().alias(_ROWS),
        )
        .filter(pl.col(_ZERO))
    )
    return per_user.height, int(per_user.get_column(_ROWS).sum())
