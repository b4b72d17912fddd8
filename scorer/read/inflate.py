"""A .csv.gz file expanded into a plain file a chunk at a time, and judged as it expands.

The expansion goes to a file, never to memory: the readers then read it as they read any CSV
file, so memory holds one chunk of output whatever the file expands to. It stops the moment
the output passes its cap, and its first bytes are judged as a plain CSV file's are as soon
as they are out (a NUL byte among the first 4 KiB is binary data), so a bomb of NUL bytes is
refused after its first piece, not after gigabytes.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from scorer.errors import Code, Report, single
from scorer.read.files import BLOCK, HEAD, Output, open_regular, sniff
from scorer.read.limits import Limits, Rejected

#: The most output one call to zlib makes: memory holds this and one block of input, whatever
#: the file expands to.
PIECE = 16 << 20

_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Cap:
    """The most bytes a gzip file of `size` bytes may expand to, and which limit sets it."""

    size: int
    limits: Limits

    @property
    def bytes(self) -> int:
        by_ratio = max(self.limits.expansion_grace_bytes, self.limits.max_expansion * self.size)
        return min(self.limits.max_decompressed_bytes, by_ratio)

    def report(self, file: str) -> Report:
        limits = self.limits
        if self.bytes == limits.max_decompressed_bytes:
            message = (
                f"{file}: the file expands to more than {limits.max_decompressed_bytes:,} "
                "bytes when decompressed"
            )
        else:
            message = (
                f"{file}: the file expands to more than {self.bytes:,} bytes when "
                f"decompressed, over {limits.max_expansion} times its {self.size:,} bytes; "
                f"compressed CSV expands far less, and at most {limits.max_expansion} times "
                "is accepted"
            )
        return single(file, Code.FILE_TOO_LARGE, message)


def inflate(path: Path, file: str, limits: Limits, out: Path) -> int:
    """Decompress every gzip member of `path` into the new file `out` and return its size.
    `Rejected` as soon as the output passes its `Cap`, when its first bytes are not CSV text
    (`sniff`), or for truncated or corrupt data."""
    with open_regular(path, file) as source, Output(out, "write the decompressed copy") as sink:
        cap = Cap(os.fstat(source.fileno()).st_size, limits)
        head = bytearray()
        total = 0
        for piece in _pieces(source, file):
            total += len(piece)
            if total > cap.bytes:
                raise Rejected(cap.report(file))
            if len(head) < HEAD:
                head += piece[: HEAD - len(head)]
                if len(head) == HEAD:
                    _judge(file, bytes(head))
            sink.write(piece)
        if len(head) < HEAD:
            _judge(file, bytes(head))
    return total


def _judge(file: str, head: bytes) -> None:
    what = sniff(head)
    if what is not None:
        raise Rejected(
            single(
                file, Code.FILE_FORMAT, f"{file}: expected CSV text once decompressed, found {what}"
            )
        )


def _pieces(source: BinaryIO, file: str) -> Iterator[bytes]:
    """The decompressed pieces of every gzip member, in order, each at most `PIECE` bytes;
    `Rejected` (file_corrupt) for truncated or corrupt data."""
    inflater = zlib.decompressobj(wbits=31)
    inside = False  # a member was started and has not ended yet
    try:
        while chunk := source.read(BLOCK):
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
                    yield piece
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
