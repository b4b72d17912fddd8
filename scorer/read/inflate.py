"""A .csv.gz file expanded into a plain file a chunk at a time, and judged as it expands.

The expansion goes to a file, never to memory: the readers then read it as they read any CSV
file, so memory holds one chunk of output whatever the file expands to. It stops the moment
the output passes its cap, and its first bytes are judged as a plain CSV file's are as soon
as they are out (a NUL byte among the first 4 KiB is binary data), so a bomb of NUL bytes is
refused after its first piece, not after gigabytes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from scorer.errors import Code, single
from scorer.read.files import BLOCK, HEAD, Output, open_regular, sniff
from scorer.read.limits import Limits, Rejected

#: The most output one call to zlib makes: memory holds this and one block of input, whatever
#: the file expands to.
PIECE = 16 << 20

_MAGIC = b"\x1f\x8b"


def inflate(path: Path, file: str, limits: Limits, out: Path) -> int:
    """Decompress every gzip member of `path` into the new file `out` and return its size.
    `Rejected` as soon as the output passes a cap (`check_expansion`), when its first bytes are not
    CSV text (`sniff`), or for truncated or corrupt data."""
    with open_regular(path, file) as source, Output(out, "write the decompressed copy") as sink:
        head = bytearray()
        total = 0
        for piece, read in _pieces(source, file):
            total += len(piece)
            check_expansion(file, total, read, limits)
            if len(head) < HEAD:
                head += piece[: HEAD - len(head)]
                if len(head) == HEAD:
                    _judge(file, bytes(head))
            sink.write(piece)
        if len(head) < HEAD:
            _judge(file, bytes(head))
    return total


def check_expansion(file: str, total: int, read: int, limits: Limits) -> None:
    """`Rejected` (file_too_large) once `total` bytes of output pass the decompressed cap,
    or, past the grace, are more than `max_expansion` times the `read` bytes they came from:
    a bomb is refused after its first MiB of input, not after 100 times the whole file. A
    zip member is judged by it twice: from its directory entry, then as it expands."""
    if total > limits.max_decompressed_bytes:
        message = (
            f"{file}: the file expands to more than {limits.max_decompressed_bytes:,} bytes "
            "when decompressed"
        )
    elif total > limits.expansion_grace_bytes and total > limits.max_expansion * read:
        message = (
            f"{file}: the file expands more than {limits.max_expansion} times when "
            f"decompressed ({total:,} bytes from its first {read:,}); compressed CSV expands "
            f"3 to 10 times, and at most {limits.max_expansion} times is accepted"
        )
    else:
        return
    raise Rejected(single(file, Code.FILE_TOO_LARGE, message))


def _judge(file: str, head: bytes) -> None:
    found = sniff(head)
    if found is not None:
        message = f"{file}: expected CSV text once decompressed, found {found[0]}"
        raise Rejected(single(file, Code.FILE_FORMAT, message))


def _pieces(source: BinaryIO, file: str) -> Iterator[tuple[bytes, int]]:
    """The decompressed pieces of every gzip member, in order, each at most `PIECE` bytes,
    with the bytes of input read so far; `Rejected` (file_corrupt) for truncated or corrupt
    data."""
    inflater = zlib.decompressobj(wbits=31)
    inside = False  # a member was started and has not ended yet
    read = 0
    try:
        while chunk := source.read(BLOCK):
            read += len(chunk)
            full = False  # a piece of `PIECE` bytes: more output may wait inside zlib
            while chunk or full:
                if not inside:
                    if chunk[:2] != _MAGIC[: len(chunk[:2])]:  # not (the start of) a member
                        if chunk.strip(b"\x00"):  # only zero padding may follow, as some
                            raise zlib.error("unexpected bytes after the gzip data")
                        break  # tools write it after the last member
                    inside = True
                piece = inflater.decompress(chunk, PIECE)
                full = len(piece) == PIECE
                if piece:
                    yield piece, read
                if inflater.eof:
                    inside = full = False
                    chunk = inflater.unused_data
                    inflater = zlib.decompressobj(wbits=31)
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


def deflated(source: BinaryIO, length: int) -> Iterator[tuple[bytes, int]]:
    """The pieces of the raw deflate stream (a zip member's) in the next `length` bytes of
    `source`, each at most `PIECE` bytes, with the bytes of input read so far; `zlib.error`
    when the stream is corrupt, ends early or does not fill its `length`."""
    inflater = zlib.decompressobj(wbits=-15)
    read = 0
    while read < length:
        chunk = source.read(min(BLOCK, length - read))
        if not chunk:
            break
        read += len(chunk)
        while chunk:
            piece = inflater.decompress(chunk, PIECE)
            if piece:
                yield piece, read
            chunk = inflater.unconsumed_tail
        if inflater.eof:
            break
    while not inflater.eof and (piece := inflater.decompress(b"", PIECE)):  # output held back
        yield piece, read
    if not inflater.eof:
        raise zlib.error("the data ends in the middle of the compressed member")
    if inflater.unused_data or read < length:
        raise zlib.error("the compressed member ends before its recorded size")
