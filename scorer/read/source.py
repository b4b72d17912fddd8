"""Where a table comes from: a path (CSV, CSV.gz, Parquet) or a frame, opened within limits."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import polars as pl

from scorer.errors import Code, single
from scorer.read.archive import expanded, extract
from scorer.read.files import (
    HEAD,
    FileKind,
    check_regular,
    kind_of,
    kind_of_file,
    open_regular,
    sniff,
)
from scorer.read.inflate import inflate
from scorer.read.limits import DEFAULT_LIMITS, Limits, Rejected

if TYPE_CHECKING:
    import pandas as pd

#: Anything the API accepts as a table: a path, or a polars or pandas data frame.
TableLike: TypeAlias = "str | Path | pl.DataFrame | pl.LazyFrame | pd.DataFrame"

#: Bytes read at a time from a file.
CHUNK = 16 << 20


def describe(source: TableLike) -> str:
    """The name a report gives a source: the file name, or what kind of frame it is."""
    if isinstance(source, str | Path):
        return Path(source).name
    return f"<{type(source).__module__.split('.')[0]} DataFrame>"


def check_path(path: Path, file: str, limits: Limits) -> FileKind:
    """The kind of file at `path`, once it is judged from cheap facts: a regular file
    (`check_regular`), named .csv, .csv.gz, .parquet or .zip (or, without such a name, holding
    gzip, Parquet or zip data: `kind_of_file`), within the size cap, and whose first bytes are
    what its name says (`sniff`, with a hint where one helps)."""
    found = check_regular(path, file)
    kind = kind_of_file(path, file)
    if kind is None:
        with open_regular(path, file) as handle:
            what = sniff(handle.read(8), path)
        if what is None or what[1] is None:  # say what it is only when it helps
            raise _format(
                file,
                "unsupported file name; expected a name ending in .csv, .csv.gz, .parquet or .zip",
            )
        raise _format(
            file, f"found {what[0]}; expected a .csv, .csv.gz, .parquet or .zip file", what[1]
        )
    limits.check_size(file, found.st_size)
    if kind == "zip":
        return kind  # judged from its central directory (`archive.extract`)
    with open_regular(path, file) as handle:
        head = handle.read(8 if kind == "csv.gz" else HEAD)
    if kind == "csv.gz":
        if not head.startswith(b"\x1f\x8b"):
            raise _format(file, "the name ends in .gz but the file is not gzip-compressed")
    elif kind == "parquet":
        if head and not head.startswith(b"PAR1"):
            what = sniff(head, path) or ("not a Parquet file", None)
            raise _format(file, f"the name ends in .parquet but the file is {what[0]}", what[1])
    else:
        what = sniff(head, path)
        if what is not None:
            raise _format(file, f"expected CSV text, found {what[0]}", what[1])
    return kind


def _format(file: str, message: str, hint: str | None = None) -> Rejected:
    """A file that is not what its name says (file_format)."""
    return Rejected(single(file, Code.FILE_FORMAT, f"{file}: {message}", hint=hint))


def open_path(path: Path, file: str, limits: Limits, *, inflate_to: Path) -> tuple[FileKind, Path]:
    """`check_path`, then the file to read: the path itself for a plain CSV or Parquet file;
    for a gzip file the new file `inflate_to`, written with its expansion (`inflate`); for a
    zip, its one member copied beside `inflate_to` (`archive.extract`), and the member's
    kind."""
    kind = check_path(path, file, limits)
    if kind == "zip":
        return extract(path, file, limits, inflate_to.parent)
    if kind != "csv.gz":
        return kind, path
    inflate(path, file, limits, inflate_to)
    return kind, inflate_to


@contextmanager
def opened(path: Path, file: str, limits: Limits) -> Iterator[tuple[FileKind, Path]]:
    """`open_path` with a gzip file expanded (a zip's member copied) into a temporary folder,
    removed at the end."""
    kind = check_path(path, file, limits)
    if kind not in ("csv.gz", "zip"):
        yield kind, path
        return
    with tempfile.TemporaryDirectory(prefix="scorer-") as folder:
        if kind == "zip":
            yield extract(path, file, limits, Path(folder))
            return
        inflated = Path(folder) / "inflated.csv"
        inflate(path, file, limits, inflated)
        yield kind, inflated


def footprint(path: Path, limits: Limits = DEFAULT_LIMITS) -> int:
    """A cheap estimate of the bytes a file's table holds once read, from facts that cost no
    reading: a CSV's size, a gzip file's expanded size (`expanded_size`), a Parquet file's
    decoded size from its footer, a zip's data member's size from its directory (held to it
    as it is copied out); 0 when the file cannot say or is refused from it (the readers then
    name the problem)."""
    kind = kind_of(path)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            meta = pq.read_metadata(path)
            return sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
        if kind == "zip":
            return expanded(path, limits)
        return expanded_size(path, limits)
    except Exception:  # a broken file: its reader names the problem
        return 0


def expanded_size(path: Path, limits: Limits = DEFAULT_LIMITS) -> int:
    """A cheap estimate of a file's size once read: its size on disk; for a gzip file the
    size its trailer records, when that can be the whole file's: a file of one gzip member
    records its size (modulo 2**32) in its last 4 bytes, but a file of several records only
    its last member's, and bgzip ends every file with an empty member. A trailer recording
    fewer bytes than the file holds (`_plausible`) is taken for such a file, and its size is
    then the most the reader lets it expand to (`inflate.check_expansion`): otherwise an empty
    member appended to a file would change how it is read. (A last member as large as the
    whole file still passes for the only one: no cheap fact tells; the reader's caps hold
    whatever the estimate.)"""
    size = path.stat().st_size
    if kind_of(path) != "csv.gz" or size < 18:
        return size
    with path.open("rb") as handle:
        handle.seek(-4, 2)
        recorded = int.from_bytes(handle.read(4), "little")
    if _plausible(recorded, size):
        return max(size, recorded)
    most = max(limits.expansion_grace_bytes, limits.max_expansion * size)
    return min(most, limits.max_decompressed_bytes)


def _plausible(recorded: int, size: int) -> bool:
    """Whether a gzip trailer recording `recorded` bytes can be that of a file of `size`
    bytes in one member: deflate never grows data by more than 5 bytes a stored block of up
    to 65,535 bytes, plus the member's 18 bytes of header and trailer."""
    return recorded + 18 + 5 * (recorded // 65_535 + 1) >= size


def header_names(line: str) -> list[str]:
    """The column names of a CSV header line: split on commas, with spaces around a name and
    one pair of quotes removed, and a byte order mark and the line end dropped."""
    return [_unquote(name.strip()) for name in line.lstrip("\ufeff").rstrip("\r\n").split(",")]


def _unquote(field: str) -> str:
    if len(field) >= 2 and field[0] == field[-1] == '"':
        return field[1:-1].replace('""', '"')
    return field
