"""CSV text: one pass over the bytes for the header, line count and long lines; lines to fields."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from io import FileIO
from pathlib import Path

import numpy as np
import polars as pl

from scorer.errors import Code, Issue, Problem, Report, problem, single
from scorer.read.limits import Limits, Rejected
from scorer.read.source import CHUNK, header_names

#: Bytes that polars' integer parser tolerates but the contract does not: a minus sign ('-0'
#: reads as 0). A file free of them can take the fast typed read, which then accepts exactly
#: what the contract accepts: spaces or tabs before a value and a leading '+' are read as
#: pandas reads them (a value then); a space after a value, or a cell of spaces alone where
#: a value is required, fails the typed read, and the careful reader judges the file.
LENIENT_BYTES = (b"-",)

_NEWLINE = ord("\n")

#: The bytes of a long line kept in its place (`scan_text(blank_long=True)`), enough for the
#: user cell that opens it (a quoted text id of 256 bytes, its quotes doubled, is 514): its
#: user is then seen on the line, and not reported missing as well.
HEAD = 1024


@dataclass(frozen=True)
class Text:
    """A CSV file's bytes (or its path, when it can be read in place) and what a scan found."""

    source: Path | bytes
    header: list[str]
    lines: int
    lenient: bool
    #: Whether the text holds a quote: only then may a field hold a comma (`fields`).
    quoted: bool = True
    #: Lines longer than the cap: how many, and (line, bytes) of the first few. With
    #: `scan_text(blank_long=True)`, `source` holds them cut to their first bytes (`cut_to`).
    long_count: int = 0
    long_lines: tuple[tuple[int, int], ...] = ()
    #: The number of every line longer than the cap that `source` holds cut (a part's lines
    #: are the file's; its long lines are counted and reported once, for the whole file).
    cut: tuple[int, ...] = ()
    #: For a part of a file (`scorer.read.split`): the file's line number of each line below
    #: the header, which holds no blank line. None for a whole file: its own numbering.
    numbers: pl.Series | None = None
    #: Whether the bytes hold no space, tab, control character or non-ASCII byte outside the
    #: line ends: then no cell holds whitespace, and text ids are judged by length alone.
    plain: bool = False

    @property
    def rows(self) -> int:
        return max(self.lines - 1, 0)

    @property
    def part(self) -> bool:
        """Whether this is a part of a file: it may hold no row at all."""
        return self.numbers is not None


def scan_text(
    file: str,
    content: Path | bytes,
    limits: Limits,
    *,
    blank_long: bool = False,
    texts: bool = False,
) -> Text:
    """One pass over a CSV's bytes: the header, the line count, the lines longer than the cap
    and whether the fast read is safe; structural problems (empty, binary, undecodable header,
    wrong delimiter) raise. With `blank_long`, the returned source has its long lines emptied,
    so a reader never holds a 100 MB line in memory (and must report `long_lines` itself).
    `texts`: the file holds text ids, so find whether the text is `plain` (two more passes
    over the bytes, which a file of integers does without)."""
    lines = 0
    quotes = 0
    bare = 0  # carriage returns not followed by a newline: line ends of old Mac files
    lenient = False
    plain = texts
    maybe_long = False
    last = b""
    head = b""
    block = _block(limits.line_cap)
    found_at = np.empty(CHUNK, np.bool_)  # one buffer for every chunk's newlines
    for chunk in _chunks(content, reuse=True):
        if not head:
            head = bytes(chunk[: limits.line_cap + 4])
        data = np.frombuffer(chunk, np.uint8)
        newline = np.equal(data, _NEWLINE, out=found_at[: data.size])
        found = int(np.count_nonzero(newline))
        lines += found
        if plain and data.size:  # two reductions: every byte below '!' is a line end
            ends = found + (chunk.count(b"\r") if b"\r" in chunk else 0)
            plain = int(data.max()) < 0x7F and int(np.count_nonzero(data < 0x21)) == ends
        whole = len(chunk) // block * block
        maybe_long = maybe_long or not newline[:whole].reshape(-1, block).any(axis=1).all()
        lenient = lenient or misreadable(chunk)
        quotes += chunk.count(b'"') if b'"' in chunk else 0
        if b"\r" in chunk or last == b"\r":
            bare += chunk.count(b"\r") - chunk.count(b"\r\n") - (last + chunk[:1] == b"\r\n")
        last = bytes(chunk[-1:])
    if bare:  # read a bare CR as the line end it is (Excel for Mac), as pandas does
        return scan_text(file, _lf(content), limits, blank_long=blank_long, texts=texts)
    # A quote left open makes polars' reader panic ('"' alone): such a file takes the slow path.
    lenient = lenient or quotes % 2 == 1
    lengths = _LineLengths(limits.line_cap)
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
    if len(first) > limits.line_cap:
        raise Rejected(
            single(
                file,
                Code.LINE_TOO_LONG,
                f"{file}: line 1 (the header) is longer than {limits.line_cap:,} bytes",
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
    header = header_names(text)
    limits.check_columns(file, len(header), "line 1 (the header) names {count} columns")
    limits.check_rows(file, lines - 1)
    spans = lengths.spans
    cut = blank_long and bool(spans)
    return Text(
        source=_blank(content, spans, cut_to(limits.line_cap)) if cut else content,
        header=header,
        lines=lines,
        lenient=lenient,
        quoted=quotes > 0,
        long_count=len(spans),
        long_lines=tuple((line, end - start) for line, start, end in spans[:5]),
        cut=tuple(line for line, _, _ in spans) if cut else (),
        plain=plain,
    )


def cut_to(cap: int) -> int:
    """How many bytes of a line over `cap` are kept: `HEAD`, or fewer than the cap."""
    return min(HEAD, cap)


def _lf(content: Path | bytes) -> bytes:
    """The content with every carriage return that ends a line alone made a newline (one
    that a newline follows stays as it is)."""
    out: list[bytes] = []
    held = b""  # a chunk's last CR waits for the next chunk's first byte
    for chunk in _chunks(content):
        chunk = held + chunk
        held = b"\r" if chunk.endswith(b"\r") else b""
        out.append(_BARE_CR.sub(b"\n", chunk[: len(chunk) - len(held)]))
    out.append(b"\n" if held else b"")
    return b"".join(out)


_BARE_CR = re.compile(rb"\r(?!\n)")


def misreadable(data: bytes | bytearray) -> bool:
    """Whether bytes hold what polars' typed reader would take but the contract does not: a
    minus sign (`LENIENT_BYTES`), or a carriage return that ends no line ('1004\r,')."""
    if any(data.find(b) >= 0 for b in LENIENT_BYTES):
        return True
    return b"\r" in data and data.count(b"\r") != data.count(b"\r\n")


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

    def feed(self, chunk: bytes | bytearray) -> None:
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


def _blank(content: Path | bytes, spans: Sequence[tuple[int, int, int]], keep: int) -> bytes:
    """The content with each long line cut to its first `keep` bytes (less a character cut
    in two); its newline stays, so line numbers hold."""
    pieces: list[bytes] = []
    at = 0
    if isinstance(content, bytes):
        for _, start, end in spans:
            pieces += [content[at:start], _whole_characters(content[start : start + keep])]
            at = end
        pieces.append(content[at:])
        return b"".join(pieces)
    with content.open("rb") as handle:
        for _, start, end in spans:
            pieces += [handle.read(start - at), _whole_characters(handle.read(keep))]
            handle.seek(end)
            at = end
        pieces.append(handle.read())
    return b"".join(pieces)


def _whole_characters(data: bytes) -> bytes:
    """`data` as UTF-8 text without what is not (a character the cut ends in two, any bad
    byte: the line is reported as too long, not as undecodable)."""
    return data.decode("utf-8", "ignore").encode()


def _chunks(content: Path | bytes, *, reuse: bool = False) -> Iterator[bytes | bytearray]:
    """The content in chunks of `CHUNK` bytes. With `reuse`, a file's full chunks are read
    into one buffer, which the next chunk overwrites: a pass over a file then touches the
    same 16 MiB, not hundreds of fresh ones (a page fault each 4 KiB)."""
    if isinstance(content, bytes):
        view = memoryview(content)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start : start + CHUNK])
        return
    if reuse:
        buffer = bytearray(CHUNK)
        with content.open("rb", buffering=0) as raw:
            while size := _fill(raw, buffer):
                yield buffer if size == CHUNK else buffer[:size]
        return
    with content.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def _fill(handle: FileIO, buffer: bytearray) -> int:
    """Read into `buffer` until it is full or the file ends; the bytes read."""
    view, size = memoryview(buffer), 0
    while size < len(buffer) and (got := handle.readinto(view[size:])):
        size += got
    return size


def long_lines(text: Text, limits: Limits) -> list[Problem]:
    """The lines longer than the cap that a scan found, as one problem (none: no problem)."""
    if not text.long_count:
        return []
    return [
        problem(
            Code.LINE_TOO_LONG,
            text.long_count,
            [
                Issue(
                    Code.LINE_TOO_LONG,
                    f"line {ln}: the line has {n:,} bytes; at most "
                    f"{limits.line_cap:,} are accepted",
                    line=ln,
                )
                for ln, n in text.long_lines
            ],
        )
    ]


def encoding_report(file: str, text: Text) -> Report:
    data = text.source if isinstance(text.source, bytes) else text.source.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return single(
            file,
            Code.FILE_ENCODING,
            f"{file}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text; save the "
            "file as UTF-8",
            line=line,
        )
    return single(file, Code.FILE_ENCODING, f"{file}: the file could not be read as UTF-8 text")
