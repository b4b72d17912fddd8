"""Read CSV, CSV.gz, Parquet files and data frames into typed tables, within size limits."""

from __future__ import annotations

import difflib
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from scorer.errors import Code, Issue, Report, problem, shorten, single

#: Anything the API accepts as a table: a path, or a polars or pandas data frame.
TableLike = str | Path | pl.DataFrame | pl.LazyFrame | Any

#: Bytes that polars' integer parser tolerates but the contract does not ('+1', '-0', ' 1'):
#: a file free of them can take the fast typed read, which then accepts exactly what the
#: contract accepts.
LENIENT_BYTES = (b"+", b"-", b" ", b"\t")

CHUNK = 16 << 20

_NEWLINE = ord("\n")


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile file from exhausting memory; each breach is a clear error."""

    max_file_bytes: int = 4 << 30
    max_decompressed_bytes: int = 8 << 30
    max_rows: int = 250_000_000
    max_line_bytes: int = 4096


DEFAULT_LIMITS = Limits()


class Rejected(Exception):
    """Raised inside the readers; the caller turns it into a participant or host error."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(report.render())


@dataclass(frozen=True)
class Text:
    """A CSV file's bytes (or its path, when it can be read in place) and what a scan found."""

    source: Path | bytes
    header: list[str]
    lines: int
    lenient: bool
    #: Lines longer than the cap: how many, and (line, bytes) of the first few. With
    #: `scan_text(blank_long=True)`, `source` holds them emptied (line numbers kept).
    long_count: int = 0
    long_lines: tuple[tuple[int, int], ...] = ()

    @property
    def rows(self) -> int:
        return max(self.lines - 1, 0)


def describe(source: TableLike) -> str:
    """The name a report gives a source: the file name, or what kind of frame it is."""
    if isinstance(source, str | Path):
        return Path(source).name
    return f"<{type(source).__module__.split('.')[0]} DataFrame>"


def kind_of(path: Path) -> Literal["csv", "csv.gz", "parquet"] | None:
    name = path.name.lower()
    if name.endswith(".csv.gz"):
        return "csv.gz"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    return None


_MAGIC = {
    b"\x1f\x8b": "gzip-compressed",
    b"PAR1": "a Parquet file",
    b"PK\x03\x04": "a ZIP archive or Excel workbook",
    b"\xd0\xcf\x11\xe0": "an old Excel workbook",
    b"\x89PNG": "a PNG image",
    b"%PDF": "a PDF document",
}


def _sniff(head: bytes) -> str | None:
    """What a file that should be CSV text is instead, judged by its first bytes."""
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            return what
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "JSON"
    if b"\x00" in head[:4096]:
        return "binary data (it holds NUL bytes)"
    return None


def open_path(path: Path, file: str, limits: Limits) -> tuple[str, Path | bytes]:
    """Check a path exists, is within limits and is what its suffix says; return its kind and
    its content (the path itself for a plain CSV or Parquet file, bytes for a gzip file)."""
    if not path.is_file():
        raise Rejected(single(file, Code.FILE_NOT_FOUND, f"{file}: no such file"))
    kind = kind_of(path)
    if kind is None:
        raise Rejected(
            single(
                file,
                Code.FILE_FORMAT,
                f"{file}: unsupported file name; expected a name ending in .csv, .csv.gz "
                "or .parquet",
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
    if kind == "csv.gz":
        if not head.startswith(b"\x1f\x8b"):
            raise Rejected(
                single(
                    file,
                    Code.FILE_FORMAT,
                    f"{file}: the name ends in .gz but the file is not gzip-compressed",
                )
            )
        return kind, gunzip(path, file, limits)
    if kind == "parquet":
        if size and not head.startswith(b"PAR1"):
            instead = _sniff(head) or "not a Parquet file"
            raise Rejected(
                single(
                    file,
                    Code.FILE_FORMAT,
                    f"{file}: the name ends in .parquet but the file is {instead}",
                )
            )
        return kind, path
    what = _sniff(head)
    if what is not None:
        hint = "; name it .csv.gz" if what == "gzip-compressed" else ""
        raise Rejected(
            single(file, Code.FILE_FORMAT, f"{file}: expected CSV text, found {what}{hint}")
        )
    return kind, path


def gunzip(path: Path, file: str, limits: Limits) -> bytes:
    """Decompress every gzip member, stopping as soon as the output passes the cap."""
    out: list[bytes] = []
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
                    out.append(piece)
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
    return b"".join(out)


def scan_text(
    file: str, content: Path | bytes, limits: Limits, *, blank_long: bool = False
) -> Text:
    """One pass over a CSV's bytes: the header, the line count, the lines longer than the cap
    and whether the fast read is safe; structural problems (empty, binary, undecodable header,
    wrong delimiter) raise. With `blank_long`, the returned source has its long lines emptied,
    so a reader never holds a 100 MB line in memory (and must report `long_lines` itself)."""
    lines = 0
    quotes = 0
    lenient = False
    maybe_long = False
    last = b""
    head = b""
    block = _block(limits.max_line_bytes)
    for chunk in _chunks(content):
        if not head:
            head = chunk[: limits.max_line_bytes + 4]
        newline = np.frombuffer(chunk, np.uint8) == _NEWLINE
        lines += int(np.count_nonzero(newline))
        whole = len(chunk) // block * block
        maybe_long = maybe_long or not newline[:whole].reshape(-1, block).any(axis=1).all()
        lenient = lenient or any(chunk.find(b) >= 0 for b in LENIENT_BYTES)
        # polars' integer parser also takes a carriage return that ends no line ('1004\r,')
        lenient = lenient or (b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n"))
        quotes += chunk.count(b'"') if b'"' in chunk else 0
        last = chunk[-1:]
    # A quote left open makes polars' reader panic ('"' alone): such a file takes the slow path.
    lenient = lenient or quotes % 2 == 1
    lengths = _LineLengths(limits.max_line_bytes)
    if maybe_long:  # a block without a newline: measure every line, in a second pass
        for chunk in _chunks(content):
            lengths.feed(chunk)
        lengths.finish()
    if last and last != b"\n":
        lines += 1
    if not head.strip(b"\xef\xbb\xbf \t\r\n"):
        raise Rejected(single(file, Code.FILE_EMPTY, f"{file}: the file is empty"))
    if b"\x00" in head:
        raise Rejected(
            single(
                file,
                Code.FILE_FORMAT,
                f"{file}: expected CSV text, found binary data (it holds NUL bytes)",
            )
        )
    first = head.split(b"\n", 1)[0]
    if len(first) > limits.max_line_bytes:
        raise Rejected(
            single(
                file,
                Code.LINE_TOO_LONG,
                f"{file}: line 1 (the header) is longer than {limits.max_line_bytes:,} bytes",
                line=1,
            )
        )
    try:
        text = first.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected(
            single(
                file, Code.FILE_ENCODING, f"{file}: line 1 (the header) is not UTF-8 text", line=1
            )
        ) from None
    header = [_unquote(name.strip()) for name in text.lstrip("\ufeff").rstrip("\r").split(",")]
    if lines - 1 > limits.max_rows:
        raise Rejected(
            single(
                file,
                Code.TOO_MANY_ROWS,
                f"{file}: the file has {lines - 1:,} rows; at most "
                f"{limits.max_rows:,} are accepted",
            )
        )
    spans = lengths.spans
    return Text(
        source=_blank(content, spans) if spans and blank_long else content,
        header=header,
        lines=lines,
        lenient=lenient,
        long_count=len(spans),
        long_lines=tuple((line, end - start) for line, start, end in spans[:5]),
    )


def _block(limit: int) -> int:
    """The largest power of two B with 2B - 1 <= limit + 1: any line longer than `limit`
    bytes then covers a whole B-aligned block of the file, so a file in which every such
    block holds a newline has no long line. B divides CHUNK (both are powers of two)."""
    block = 1
    while 4 * block - 1 <= limit + 1 and 2 * block <= CHUNK:
        block *= 2
    return block


class _LineLengths:
    """Finds every line longer than `limit` bytes in a stream of chunks without splitting it
    into lines: each step looks for the last newline of the next `limit + 1` bytes, so a
    file takes about size / limit steps, and a window without one is a long line."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.offset = 0  # where the next chunk starts in the file
        self.newlines = 0  # newlines before the next chunk
        self.start = 0  # where the current line starts
        self.pending: int | None = None  # the number of a long line that goes on
        self.spans: list[tuple[int, int, int]] = []  # (line, start, end) of each long line

    def feed(self, chunk: bytes) -> None:
        off, size = self.offset, len(chunk)
        counted, seen = 0, 0  # newlines in chunk[:counted]
        if self.pending is not None:
            end = chunk.find(b"\n")
            if end >= 0:
                self.spans.append((self.pending, self.start, off + end))
                self.pending, self.start = None, off + end + 1
        while self.pending is None:
            begin = max(self.start - off, 0)
            stop = self.start + self.limit + 1 - off
            newline = chunk.rfind(b"\n", begin, min(stop, size))
            if newline >= 0:
                self.start = off + newline + 1
                continue
            if stop > size:
                break  # the line may still end within the limit in the next chunk
            seen += chunk.count(b"\n", counted, begin)
            counted = begin
            number = self.newlines + seen + 1
            end = chunk.find(b"\n", stop)
            if end < 0:
                self.pending = number
                break
            self.spans.append((number, self.start, off + end))
            self.start = off + end + 1
        self.newlines += chunk.count(b"\n")
        self.offset += size

    def finish(self) -> None:
        if self.pending is not None:
            self.spans.append((self.pending, self.start, self.offset))
            self.pending = None


def _blank(content: Path | bytes, spans: Sequence[tuple[int, int, int]]) -> bytes:
    """The content with each long line emptied; its newline stays, so line numbers hold."""
    pieces: list[bytes] = []
    at = 0
    if isinstance(content, bytes):
        for _, start, end in spans:
            pieces.append(content[at:start])
            at = end
        pieces.append(content[at:])
        return b"".join(pieces)
    with content.open("rb") as handle:
        for _, start, end in spans:
            pieces.append(handle.read(start - at))
            handle.seek(end)
            at = end
        pieces.append(handle.read())
    return b"".join(pieces)


def _chunks(content: Path | bytes) -> Any:
    if isinstance(content, bytes):
        view = memoryview(content)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start : start + CHUNK])
        return
    with content.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def _unquote(field: str) -> str:
    if len(field) >= 2 and field[0] == field[-1] == '"':
        return field[1:-1].replace('""', '"')
    return field


def check_header(
    file: str, header: Sequence[str], required: Sequence[str], optional: Sequence[str] = ()
) -> None:
    """Every required column once, optional ones at most once, nothing else; any order."""
    problems: list[str] = []
    codes: list[Code] = []
    known = [*required, *optional]
    if len(header) == 1 and any(sep in header[0] for sep in (";", "\t", "|")):
        sep = next(s for s in (";", "\t", "|") if s in header[0])
        raise Rejected(
            single(
                file,
                Code.BAD_DELIMITER,
                f"{file}: line 1: the columns are separated by "
                f"{sep!r}; expected ',' (header {', '.join(known)})",
                line=1,
            )
        )
    if not any(name in known for name in header) and all(map(_looks_like_data, header)):
        raise Rejected(
            single(
                file,
                Code.MISSING_COLUMN,
                f"{file}: line 1 is not a header: found {_show(','.join(header))}; expected "
                f"the first line to name the columns: {','.join(required)}",
                line=1,
                value=shorten(",".join(header)),
            )
        )
    for name in required:
        if name not in header:
            codes.append(Code.MISSING_COLUMN)
            problems.append(
                f"{file}: line 1: column {name!r} is missing; expected the header "
                f"{','.join(required)}"
            )
    seen: set[str] = set()
    for name in header:
        if name in seen:
            codes.append(Code.DUPLICATE_COLUMN)
            problems.append(f"{file}: line 1: column {name!r} appears more than once")
        elif name not in known:
            codes.append(Code.UNKNOWN_COLUMN)
            problems.append(
                f"{file}: line 1: unexpected column {_show(name)}{_did_you_mean(name, known)}; "
                f"expected only {', '.join(known)}"
            )
        seen.add(name)
    if problems:
        grouped: dict[Code, list[Issue]] = {}
        for code, message in zip(codes, problems, strict=True):
            grouped.setdefault(code, []).append(Issue(code=code, message=message, line=1))
        raise Rejected(Report.of(file, [problem(c, len(v), v) for c, v in grouped.items()]))


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
