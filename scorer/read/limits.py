"""The caps every reader checks before the work a file would cost, and the error they raise."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Self

from scorer.competition import Competition, IdKind
from scorer.errors import Code, Report, single
from scorer.read.cells import MAX_TEXT_ID

#: A table read whole is refused for its row count alone (`Limits.check_whole`) only past
#: this many rows: below it, reading costs little and its rows are reported one by one.
WHOLE_ROWS_FLOOR = 1_000_000

#: The least default line cap: lost items' lines are a tenth of it, and a cap this size costs
#: nothing, so a file padded with spaces here and there is not refused for it.
LINE_FLOOR = 4096

#: An id at its longest as written: an integer is '+' and 19 digits (2**63 - 1); a text id
#: is `MAX_TEXT_ID` bytes, each a quote doubled inside a quoted cell at worst.
ID_BYTES = {IdKind.INTEGER: 20, IdKind.TEXT: 2 * MAX_TEXT_ID}


def longest_line(competition: Competition) -> int:
    """The longest line a valid file of `competition` has, at least `LINE_FLOOR`: the
    default line cap. The longest of a wide line (the user, the k ids of its list and a
    wide solution's split value), a long solution line (the user, the item, the split value
    and a grade; a submission's rank is shorter) and the header, each cell quoted, one
    comma or space between cells and ids, and a carriage return before the newline. A
    wide solution lists every relevant item of a user, however many: one with more than k
    may need a larger cap (`--max-line`)."""
    user, item = ID_BYTES[competition.ids.user], ID_BYTES[competition.ids.item]
    splits = competition.splits
    split = max(len(value.encode()) for value in (splits.public, splits.private, splits.ignored))
    k = competition.k
    wide = [user, k * item + (k - 1), split]
    long = [user, item, split, len("+10")]  # a grade is 0..10
    columns = competition.columns
    names = [columns.user, columns.item, columns.rank, columns.list, *splits.columns, "grade"]
    header = [len(name.encode()) for name in names]
    return max(LINE_FLOOR, *(_line(cells) for cells in (wide, long, header)))


def _line(cells: list[int]) -> int:
    """The bytes of a line of cells of these lengths: each quoted, commas between, CRLF."""
    return sum(n + 2 for n in cells) + len(cells) - 1 + 1


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile file from exhausting memory; each breach is a clear error,
    decided from cheap facts (a size on disk, a header, a Parquet footer) before the work."""

    max_file_bytes: int = 4 << 30
    max_decompressed_bytes: int = 8 << 30
    #: The memory budget (`--max-memory`): two files whose estimated cost when read whole
    #: (`scorer.parts.plan`) is over it are read in parts by user, each within it; files that
    #: cannot be split (Parquet) and are over it are refused as too_large_for_memory. The
    #: leaderboard's workers are also killed past it.
    max_memory: int = 4 << 30
    max_rows: int = 250_000_000
    #: The longest line of a CSV file, and text cell of a table, in bytes. None: the longest
    #: line a valid file of the competition has (`longest_line`), which every reader sets
    #: (`for_competition`) before it reads: a fixed number would refuse valid files of a
    #: competition with long lists of long ids (100 ids of 41 bytes pass 4,096).
    max_line_bytes: int | None = None
    #: Columns of a header or a Parquet schema: a submission has 2 to 4, and a reader pays
    #: for every column a file names (100,000 of them took 1.4 GB before any check).
    max_columns: int = 1000
    #: Once a .csv.gz has expanded past `expansion_grace_bytes`, its output may be at most
    #: this many times the compressed bytes read so far: CSV of ids compresses 3 to 10 times,
    #: a bomb 200 to 1,000 times. Apache POI's zip-bomb guard uses the same ratio (its
    #: minimum inflate ratio, 0.01) and spares small entries as the grace spares small files,
    #: since a short file of repeated rows may compress better and costs nothing.
    max_expansion: int = 100
    expansion_grace_bytes: int = 64 << 20
    #: A Parquet footer (the schema and the metadata of every row group) is parsed whole
    #: before any check of its content: a submission's is a few kilobytes.
    max_metadata_bytes: int = 8 << 20

    def for_competition(self, competition: Competition) -> Self:
        """These caps with the line cap set: the one given, else `longest_line`'s."""
        if self.max_line_bytes is not None:
            return self
        return replace(self, max_line_bytes=longest_line(competition))

    @property
    def line_cap(self) -> int:
        """The line cap a reader applies; set by `for_competition` before any read."""
        if self.max_line_bytes is None:
            raise ValueError("the line cap is unset: read with limits.for_competition(...)")
        return self.max_line_bytes

    def whole_rows(self) -> int | None:
        """The most rows a valid submission read whole can have, when the read knows it
        (`Bound`); the user's caps alone do not."""
        return None

    def careful_whole(self) -> bool:
        """Whether a whole CSV file may take the careful reader (`Bound`); always with the
        user's caps alone."""
        return True

    def check_size(self, file: str, size: int) -> None:
        """`Rejected` (file_too_large) when a file of `size` bytes is over the cap."""
        if size > self.max_file_bytes:
            raise Rejected(
                single(
                    file,
                    Code.FILE_TOO_LARGE,
                    f"{file}: the file has {size:,} bytes; at most {self.max_file_bytes:,} "
                    "are accepted",
                )
            )

    def check_rows(self, file: str, count: int, what: str = "the file has {count} rows") -> None:
        """`Rejected` (too_many_rows) when `count` rows are over the cap; `what` says what
        holds them, as the message puts it."""
        found = what.replace("{count}", f"{count:,}")  # not format: words are data
        if count > self.max_rows:
            raise Rejected(
                single(
                    file,
                    Code.TOO_MANY_ROWS,
                    f"{file}: {found}; at most {self.max_rows:,} are accepted",
                )
            )

    def check_whole(self, file: str, count: int, what: str = "the table has {count} rows") -> None:
        """`check_rows`, then the cap of a table read whole (`valid_rows`), from
        `WHOLE_ROWS_FLOOR` rows: a small table is judged row by row, as its CSV twin is."""
        self.check_rows(file, count, what)
        valid_rows = self.whole_rows()
        if valid_rows is not None and count > max(2 * valid_rows, WHOLE_ROWS_FLOOR):
            found = what.replace("{count}", f"{count:,}")
            raise Rejected(
                single(
                    file,
                    Code.TOO_MANY_ROWS,
                    f"{file}: {found}; a valid submission has at most {valid_rows:,} "
                    "rows, and a table with more than twice as many is not read",
                )
            )

    def check_columns(
        self, file: str, count: int, what: str = "the table has {count} columns"
    ) -> None:
        """`Rejected` (too_many_columns) when a header or schema names more columns than the
        cap; `what` says what, as the message puts it."""
        if count > self.max_columns:
            found = what.replace("{count}", f"{count:,}")
            raise Rejected(
                single(
                    file,
                    Code.TOO_MANY_COLUMNS,
                    f"{file}: {found}; at most {self.max_columns:,} columns are accepted",
                )
            )


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Bound(Limits):
    """The user's caps with the state of one read, which only `scorer.parts` sets: the public
    `Limits` holds caps only, so no caller can hand a reader its control state."""

    #: The most rows a valid submission can have (k for each target user), when the reader
    #: knows it (`scorer.parts` sets it from the targets). A Parquet file or a data frame
    #: is read whole and its rows cost nothing on disk (a footer of 3 MB may declare 240
    #: million repeated rows), so one with more than twice as many rows is refused from its
    #: row count. A CSV file's rows are bounded by its bytes and reported one by one.
    valid_rows: int | None = None
    #: Whether a whole CSV file may take the careful reader, which judges every line as text
    #: and costs more memory than the typed one (`scorer.parts`). `scorer.parts` sets it
    #: False when two files fit the budget whole for the typed reader but not for the careful
    #: one: a whole file that needs the careful reader then raises `NeedsParts`, found by the
    #: reader's own scan, and `scorer.parts` reads the run again in parts.
    careful: bool = True

    @classmethod
    def of(cls, limits: Limits, **state: object) -> Bound:
        """`limits`' caps with this read's state (`valid_rows`, `careful`)."""
        return cls(**(vars(limits) | state))  # a `Bound`'s own state is kept unless given

    def whole_rows(self) -> int | None:
        return self.valid_rows

    def careful_whole(self) -> bool:
        return self.careful


class NeedsParts(Exception):
    """Raised by the careful reader of a whole file when `Bound.careful` is False; caught by
    `scorer.parts`, never seen outside it."""


class Rejected(Exception):
    """Raised inside the readers; the caller turns it into a participant or host error."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(report.render())
