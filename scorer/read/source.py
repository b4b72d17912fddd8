"""Where a table comes from: a path (CSV, CSV.gz, Parquet) or a frame, opened within limits."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import polars as pl

from scorer.errors import Code, Report, shorten, single
from scorer.read.hints import EXCEL, GZIP, ZIP

if TYPE_CHECKING:
    import pandas as pd

#: Anything the API accepts as a table: a path, or a polars or pandas data frame.
TableLike: TypeAlias = "str | Path | pl.DataFrame | pl.LazyFrame | pd.DataFrame"

#: Bytes read at a time from a file.
CHUNK = 16 << 20


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile file from exhausting memory; each breach is a clear error."""

    max_file_bytes: int = 4 << 30
    max_decompressed_bytes: int = 8 << 30
    max_rows: int = 250_000_000
    max_line_bytes: int = 4096

    def check_rows(self, file: str, count: int, what: str = "the file has {count} rows") -> None:
        """`Rejected` (too_many_rows) when `count` rows are over the cap; `what` says what
        holds them, as the message puts it."""
        if count > self.max_rows:
            found = what.replace("{count}", f"{count:,}")  # not format: words are data
            raise Rejected(
                single(
                    file,
                    Code.TOO_MANY_ROWS,
                    f"{file}: {found}; at most {self.max_rows:,} are accepted",
                )
            )


DEFAULT_LIMITS = Limits()


class Rejected(Exception):
    """Raised inside the readers; the caller turns it into a participant or host error."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(report.render())


def describe(source: TableLike) -> str:
    """The name a report gives a source: the file name, or what kind of frame it is."""
    if isinstance(source, str | Path):
        return Path(source).name
    return f"<{type(source).__module__.split('.')[0]} DataFrame>"


Kind: TypeAlias = Literal["csv", "csv.gz", "parquet", "zip"]

#: What a file's first bytes say it is, whatever its name: platforms rename uploads (EvalAI
#: keeps only the last suffix, `x.csv.gz` becoming `<uuid>.gz`; a download may lose it).
_KIND_MAGIC: dict[bytes, Kind] = {
    b"\x1f\x8b": "csv.gz",
    b"PAR1": "parquet",
    b"PK\x03\x04": "zip",
    b"PK\x05\x06": "zip",  # an empty archive: refused as such, not as an unknown name
}

#: A zip upload holds one data file; entries zip tools add beside it are skipped.
ZIP_IGNORED = ("__MACOSX/",)

#: At most this many entries in a zip's central directory (a bound before reading any).
MAX_ZIP_ENTRIES = 1000


def kind_of(path: Path) -> Kind | None:
    """A file's kind from its name alone (`.csv`, `.csv.gz`, `.parquet`, `.zip`)."""
    name = path.name.lower()
    if name.endswith(".csv.gz"):
        return "csv.gz"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".zip"):
        return "zip"
    return None


#: The name endings under which a file is judged by its first bytes: none at all, or a bare
#: `.gz` (EvalAI stores `x.csv.gz` as `<uuid>.gz`).
SNIFFED = ("", ".gz")


def kind_of_file(path: Path) -> Kind | None:
    """A file's kind from its name, or else from its first bytes: gzip, Parquet and zip data
    are recognised under any name (`<uuid>.gz`, no suffix at all)."""
    kind = kind_of(path)
    if kind is not None or path.suffix.lower() not in SNIFFED or not path.is_file():
        return kind  # a name that says another format (`.xlsx`, `.json`) is refused by name
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError:
        return None
    return next((k for magic, k in _KIND_MAGIC.items() if head.startswith(magic)), None)


_MAGIC = {
    b"\x1f\x8b": ("gzip-compressed data", GZIP),
    b"PAR1": ("a Parquet file", "name the file .parquet"),
    b"\xd0\xcf\x11\xe0": ("an old Excel workbook", EXCEL),
    b"\x89PNG": ("a PNG image", None),
    b"%PDF": ("a PDF document", None),
}

#: What a ZIP archive is when its central directory cannot be read (a truncated file).
_SOME_ZIP = ("a ZIP archive or Excel workbook", None)

#: Most bytes of a ZIP's central directory read to tell a workbook from an archive.
_DIRECTORY_BYTES = 1 << 20


def _sniff(head: bytes, path: Path | None = None) -> tuple[str, str | None] | None:
    """What a file that should be CSV text is instead, judged by its first bytes (and a ZIP
    file at `path` by the names it holds), with a hint on how to make it CSV."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        names = zip_names(path) if path is not None else None
        if names is None:
            return _SOME_ZIP
        if any(name.startswith("xl/") for name in names):
            return "an Excel workbook (.xlsx)", EXCEL
        return "a ZIP archive", ZIP
    for magic, found in _MAGIC.items():
        if head.startswith(magic):
            return found
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "JSON", None
    if b"\x00" in head[:4096]:
        return "binary data (it holds NUL bytes)", None
    return None


def zip_names(path: Path) -> list[str] | None:
    """The names of a ZIP archive's entries, from its central directory (at most
    `_DIRECTORY_BYTES` of it), nothing extracted; None when the directory cannot be found."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        tail = min(size, 22 + 0xFFFF)  # the end record, then at most a 64 KiB comment
        handle.seek(size - tail)
        data = handle.read(tail)
        end = data.rfind(b"PK\x05\x06")
        if end < 0 or len(data) - end < 22:
            return None
        length, offset = struct.unpack("<II", data[end + 12 : end + 20])
        if offset + length > size:  # ZIP64 (0xFFFFFFFF) or a damaged record
            return None
        handle.seek(offset)
        directory = handle.read(min(length, _DIRECTORY_BYTES))
    names = []
    at = 0
    while directory[at : at + 4] == b"PK\x01\x02" and at + 46 <= len(directory):
        name, extra, comment = struct.unpack("<HHH", directory[at + 28 : at + 34])
        names.append(directory[at + 46 : at + 46 + name].decode("utf-8", "replace"))
        at += 46 + name + extra + comment
    return names


def open_path(
    path: Path, file: str, limits: Limits, *, inflate_to: Path | None = None
) -> tuple[str, Path | bytes]:
    """Check a path exists, is within limits and is what its suffix (or, without a known
    suffix, its first bytes) says; return its kind and its content: the path itself for a
    plain CSV or Parquet file; for a gzip file its decompressed bytes, or with `inflate_to`
    that path, written with them (memory bounded by a chunk); for a zip, its one member's
    kind (`csv` or `parquet`) and bytes (or `inflate_to` for a CSV member)."""
    if not path.is_file():
        raise Rejected(single(file, Code.FILE_NOT_FOUND, f"{file}: no such file"))
    kind = kind_of_file(path)
    if kind is None:
        with path.open("rb") as handle:
            found = _sniff(handle.read(8), path)
        if found is None or found[1] is None:  # say what it is only when it helps
            raise Rejected(
                single(
                    file,
                    Code.FILE_FORMAT,
                    f"{file}: unsupported file name; expected a name ending in .csv, .csv.gz, "
                    ".parquet or .zip",
                )
            )
        what, hint = found
        raise Rejected(
            single(
                file,
                Code.FILE_FORMAT,
                f"{file}: found {what}; expected a .csv, .csv.gz, .parquet or .zip file",
                hint=hint,
            )
        )
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise Rejected(
            single(
                file,
                Code.FILE_TOO_LARGE,
                f"{file}: the file has {size:,} bytes; at most {limits.max_file_bytes:,} "
                "are accepted",
            )
        )
    with path.open("rb") as handle:
        head = handle.read(8192)
    if kind == "zip":
        return unzip(path, file, limits, inflate_to)
    if kind == "csv.gz":
        if not head.startswith(b"\x1f\x8b"):
            raise Rejected(
                single(
                    file,
                    Code.FILE_FORMAT,
                    f"{file}: the name ends in .gz but the file is not gzip-compressed",
                )
            )
        if inflate_to is None:
            return kind, gunzip(path, file, limits)
        with inflate_to.open("wb") as out:
            for piece in _inflate(path, file, limits):
                out.write(piece)
        return kind, inflate_to
    if kind == "parquet":
        if size and not head.startswith(b"PAR1"):
            what, hint = _sniff(head, path) or ("not a Parquet file", None)
            raise Rejected(
                single(
                    file,
                    Code.FILE_FORMAT,
                    f"{file}: the name ends in .parquet but the file is {what}",
                    hint=hint,
                )
            )
        return kind, path
    found = _sniff(head, path)
    if found is not None:
        what, hint = found
        raise Rejected(
            single(file, Code.FILE_FORMAT, f"{file}: expected CSV text, found {what}", hint=hint)
        )
    return kind, path


def unzip(
    path: Path, file: str, limits: Limits, inflate_to: Path | None = None
) -> tuple[str, Path | bytes]:
    """The one CSV or Parquet member of a zip, judged from the central directory before any
    byte is inflated: more than one data member, a member over the file size cap, or members
    adding up to more than the decompressed cap are refused; the member is then read with
    its output counted, whatever the directory claims."""
    import zipfile

    def refuse(code: Code, message: str) -> Rejected:
        return Rejected(single(file, code, f"{file}: {message}"))

    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise refuse(Code.FILE_CORRUPT, f"not a readable zip archive ({shorten(exc)})") from None
    with archive:
        entries = archive.infolist()
        if len(entries) > MAX_ZIP_ENTRIES:
            raise refuse(
                Code.FILE_FORMAT,
                f"the zip holds {len(entries):,} entries; expected one .csv or .parquet file",
            )
        total = sum(e.file_size for e in entries)
        if total > limits.max_decompressed_bytes:
            raise refuse(
                Code.FILE_TOO_LARGE,
                f"the zip expands to {total:,} bytes; at most "
                f"{limits.max_decompressed_bytes:,} are accepted",
            )
        members = [
            e
            for e in entries
            if not e.is_dir()
            and not e.filename.startswith(ZIP_IGNORED)
            and not Path(e.filename).name.startswith(".")
        ]
        if len(members) != 1:
            names = ", ".join(shorten(m.filename) for m in members[:5])
            found = f"{len(members)} files ({names})" if members else "no file"
            raise refuse(
                Code.FILE_FORMAT,
                f"the zip holds {found}; expected exactly one .csv or .parquet file",
            )
        member = members[0]
        if member.file_size > limits.max_file_bytes:
            raise refuse(
                Code.FILE_TOO_LARGE,
                f"{shorten(member.filename)} in the zip has {member.file_size:,} bytes; at most "
                f"{limits.max_file_bytes:,} are accepted",
            )
        if member.flag_bits & 0x1:
            raise refuse(Code.FILE_FORMAT, "the zip is encrypted; upload it without a password")
        cap = min(limits.max_file_bytes, limits.max_decompressed_bytes)
        try:
            with archive.open(member) as handle:
                data = handle.read(cap + 1)
        except (zipfile.BadZipFile, zlib.error, OSError, NotImplementedError, EOFError) as exc:
            raise refuse(Code.FILE_CORRUPT, f"the zip data is corrupt ({shorten(exc)})") from None
    if len(data) > cap:
        raise refuse(Code.FILE_TOO_LARGE, f"the zip expands to more than {cap:,} bytes")
    inner = kind_of(Path(member.filename))
    if data.startswith(b"PAR1") or inner == "parquet":
        return "parquet", data
    sniffed = _sniff(data[:8192])
    if inner not in (None, "csv") or sniffed is not None:
        what = sniffed[0] if sniffed is not None else f"a {inner} file"
        raise refuse(
            Code.FILE_FORMAT,
            f"the zip holds {shorten(member.filename)}, {what}; expected a .csv or .parquet file",
        )
    if inflate_to is None:
        return "csv", data
    inflate_to.write_bytes(data)
    return "csv", inflate_to


def gunzip(path: Path, file: str, limits: Limits) -> bytes:
    """Decompress every gzip member into memory, stopping as soon as the output passes the
    cap."""
    return b"".join(_inflate(path, file, limits))


def _inflate(path: Path, file: str, limits: Limits) -> Iterator[bytes]:
    """The decompressed pieces of every gzip member, in order; `Rejected` as soon as the output
    passes the cap, or for truncated or corrupt data."""
    total = 0
    inflater = zlib.decompressobj(wbits=31)
    inside = False  # a member was started and has not ended yet
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                while chunk:
                    inside = True
                    piece = inflater.decompress(chunk, CHUNK)
                    total += len(piece)
                    if total > limits.max_decompressed_bytes:
                        raise Rejected(
                            single(
                                file,
                                Code.FILE_TOO_LARGE,
                                f"{file}: the file expands to more than "
                                f"{limits.max_decompressed_bytes:,} bytes when decompressed",
                            )
                        )
                    yield piece
                    if inflater.eof:
                        inside = False
                        chunk = inflater.unused_data
                        inflater = zlib.decompressobj(wbits=31)
                        if not chunk.startswith(b"\x1f\x8b"):
                            if chunk.strip(b"\x00"):  # only zero padding may follow, as
                                raise zlib.error("unexpected bytes after the gzip data")
                            break  # some tools write it after the last member
                    else:
                        chunk = inflater.unconsumed_tail
        if inside:
            raise zlib.error("the data ends in the middle of a compressed member")
    except zlib.error as exc:
        raise Rejected(
            single(
                file, Code.FILE_CORRUPT, f"{file}: the gzip data is truncated or corrupt ({exc})"
            )
        ) from None


def expanded_size(path: Path) -> int:
    """A cheap estimate of a file's size once read: its size on disk, or for a gzip file the
    size its trailer records (modulo 2**32, of its last member), whichever is larger."""
    size = path.stat().st_size
    if kind_of(path) != "csv.gz" or size < 18:
        return size
    with path.open("rb") as handle:
        handle.seek(-4, 2)
        return max(size, int.from_bytes(handle.read(4), "little"))


def read_parquet(
    path: Path | bytes, file: str, limits: Limits = DEFAULT_LIMITS, *, words: Sequence[str] = ()
) -> pl.DataFrame:
    """Read a Parquet file after checking its row count and decompressed size in the footer,
    so a small file that expands to many gigabytes is refused before it is read. pyarrow
    decodes the pages: polars panics on some corrupt pages, or aborts the whole process
    trying to allocate exabytes, where pyarrow raises an error. Text columns named in `words`
    hold a few distinct words (a split): they are read as categories, not millions of
    strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def source() -> Any:  # a zip's member comes as bytes: each reader gets its own buffer
        return pa.BufferReader(path) if isinstance(path, bytes) else path

    try:
        meta = pq.read_metadata(source())
        rows = int(meta.num_rows)
        size = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
        text = ("string", "large_string")
        schema = meta.schema.to_arrow_schema()
        dictionary = [f.name for f in schema if f.name in words and str(f.type) in text]
    except Exception:
        rows, size, dictionary = 0, 0, []  # unreadable footer: the reader below names it
    limits.check_rows(file, rows, "the table has {count} rows")
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
        frame = pl.from_arrow(pq.read_table(source(), read_dictionary=dictionary))
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


def to_polars(source: object, file: str) -> pl.DataFrame:
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


def header_names(line: str) -> list[str]:
    """The column names of a CSV header line: split on commas, with spaces around a name and
    one pair of quotes removed, and a byte order mark and the line end dropped."""
    return [_unquote(name.strip()) for name in line.lstrip("\ufeff").rstrip("\r\n").split(",")]


def _unquote(field: str) -> str:
    if len(field) >= 2 and field[0] == field[-1] == '"':
        return field[1:-1].replace('""', '"')
    return field
