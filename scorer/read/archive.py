"""A zip upload: the one CSV or Parquet file it holds, judged from the archive's central
directory before a byte is inflated, then copied out through the guard of a `.csv.gz`.

The directory is read here, not by `zipfile`: `zipfile` parses the whole directory into
objects before anyone may count its entries (3 million entries took 1.5 GB), and inflates
bzip2 and LZMA members whole whatever a read asks for (a 2.4 KB member took 6.4 GB). Here the
end record's entry count and directory size are judged before the directory is read, and
only stored and deflate members are accepted, deflate streamed a bounded piece at a time.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from scorer.errors import Code, shorten, single
from scorer.read.files import BLOCK, HEAD, FileKind, Output, kind_of, open_regular, sniff
from scorer.read.inflate import check_expansion, deflated
from scorer.read.limits import Limits, Rejected

#: A zip upload holds one data file; entries zip tools add beside it are skipped.
ZIP_IGNORED = ("__MACOSX/",)

#: At most this many entries in a zip's central directory (a bound before reading any).
MAX_ZIP_ENTRIES = 1000

#: At most this many bytes of central directory: 1,000 entries with names of 4 KiB (a
#: directory is 46 bytes an entry and its name; 3 million entries made 162 MB).
MAX_DIRECTORY_BYTES = 4 << 20

#: The compression methods accepted: stored and deflate, what every zip tool writes by
#: default. Any other is refused by name before a byte is inflated (unsupported_compression):
#: Python's bzip2 and LZMA readers expand a member whole, whatever a read asks for.
STORED, DEFLATED = 0, 8
METHODS = {
    1: "Shrink",
    2: "Reduce",
    3: "Reduce",
    4: "Reduce",
    5: "Reduce",
    6: "Implode",
    7: "Tokenize",
    9: "Deflate64",
    10: "IBM TERSE (old)",
    12: "bzip2",
    14: "LZMA",
    18: "IBM TERSE",
    19: "IBM LZ77",
    20: "Zstandard",
    93: "Zstandard",
    94: "MP3",
    95: "XZ",
    96: "JPEG",
    97: "WavPack",
    98: "PPMd",
    99: "AES encryption",
}

_END = struct.Struct("<4s4H2LH")  # end of central directory record
_END64 = struct.Struct("<4sQ2H2L4Q")  # its ZIP64 twin, just before the locator
_LOCATOR = struct.Struct("<4sLQL")  # ZIP64 end record locator, just before the end record
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")  # one central directory entry
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # one member's local header
_FULL = 0xFFFFFFFF  # a 32-bit field whose value is in the entry's ZIP64 extra field


@dataclass(frozen=True)
class Entry:
    """One entry of a central directory: what a member says of itself before it is read."""

    name: str
    method: int
    flags: int
    crc: int
    packed: int  # bytes of compressed data
    size: int  # bytes once expanded
    offset: int  # of its local header, from the start of the file

    @property
    def shown(self) -> str:
        """The entry's name in a message: a name from a file is data (control characters
        escaped, quoted, cut)."""
        return repr(shorten(self.name))


class Directory:
    """The entries of a zip's central directory, read once, within `MAX_ZIP_ENTRIES` and
    `MAX_DIRECTORY_BYTES` (judged from the end record before the directory is read), and
    where it starts in the file."""

    def __init__(self, handle: BinaryIO, file: str) -> None:
        size = handle.seek(0, 2)
        tail = min(size, _END.size + 0xFFFF)  # the end record, then at most a 64 KiB comment
        handle.seek(size - tail)
        data = handle.read(tail)
        at = _end_record(data)
        if at < 0:
            raise _corrupt(file, "not a readable zip archive (no end of central directory)")
        end = size - tail + at
        _, disk, first, _, count, length, offset, _ = _END.unpack_from(data, at)
        start = end - length  # where the directory is, whatever the offsets say
        locator = data[at - _LOCATOR.size : at] if at >= _LOCATOR.size else b""
        if locator.startswith(b"PK\x06\x07"):  # ZIP64: the counts are in its own record
            handle.seek(max(0, end - _LOCATOR.size - _END64.size))
            record = handle.read(_END64.size)
            if len(record) < _END64.size or not record.startswith(b"PK\x06\x06"):
                raise _corrupt(file, "not a readable zip archive (a damaged ZIP64 record)")
            _, _, _, _, disk, first, _, count, length, offset = _END64.unpack(record)
            start = end - _LOCATOR.size - _END64.size - length
        if disk or first:
            raise _refuse(file, Code.FILE_FORMAT, "the zip is split across several files")
        _check_count(file, count)
        if length > MAX_DIRECTORY_BYTES:
            raise _refuse(
                file,
                Code.FILE_FORMAT,
                f"the zip's table of contents has {length:,} bytes; expected one .csv or "
                f".parquet file (at most {MAX_DIRECTORY_BYTES:,} bytes of it are read)",
            )
        #: Bytes before the archive (a zip appended to other data): every offset shifts.
        self.shift = start - offset
        if self.shift < 0 or start < 0:
            raise _corrupt(file, "not a readable zip archive (a damaged central directory)")
        self.start = start
        handle.seek(start)
        self.entries = _parse(handle.read(length), file)


def _end_record(data: bytes) -> int:
    """Where the end record is in the last bytes of a file: the last signature whose comment
    ends the file (a comment may hold the signature too), else the last one with room for a
    record; -1 when there is none."""
    found = -1
    at = len(data)
    while (at := data.rfind(b"PK\x05\x06", 0, at)) >= 0:
        if len(data) - at < _END.size:
            continue
        if at + _END.size + _END.unpack_from(data, at)[-1] == len(data):
            return at
        found = max(found, at)
    return found


def _check_count(file: str, count: int) -> None:
    if count > MAX_ZIP_ENTRIES:
        raise _refuse(
            file,
            Code.FILE_FORMAT,
            f"the zip holds {count:,} entries; expected one .csv or .parquet file",
        )


def _parse(data: bytes, file: str) -> list[Entry]:
    """The entries of a central directory's bytes (its count judged again as it goes: an end
    record may lie)."""
    entries: list[Entry] = []
    at = 0
    while at < len(data):
        if data[at : at + 4] != b"PK\x01\x02" or at + _ENTRY.size > len(data):
            raise _corrupt(file, "not a readable zip archive (a damaged central directory)")
        fields = _ENTRY.unpack_from(data, at)
        flags, method, crc, packed, size = fields[5], fields[6], fields[9], fields[10], fields[11]
        name_length, extra_length, comment_length, offset = (*fields[12:15], fields[18])
        body = at + _ENTRY.size
        raw = data[body : body + name_length]
        name = raw.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        extra = data[body + name_length : body + name_length + extra_length]
        size, packed, offset = _zip64(extra, size, packed, offset)
        entries.append(Entry(name, method, flags, crc, packed, size, offset))
        _check_count(file, len(entries))
        at = body + name_length + extra_length + comment_length
    return entries


def _zip64(extra: bytes, *values: int) -> tuple[int, int, int]:
    """An entry's size, compressed size and offset, each one that is full (0xFFFFFFFF) taken
    from the ZIP64 extra field (id 1), in that order."""
    found = list(values)
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            wide = extra[at + 4 : at + 4 + length]
            for i, value in enumerate(found):
                if value == _FULL and len(wide) >= 8:
                    found[i], wide = int.from_bytes(wide[:8], "little"), wide[8:]
            break
        at += 4 + length
    size, packed, offset = found
    return size, packed, offset


def members(entries: list[Entry]) -> list[Entry]:
    """The entries that are data: neither folders nor what zip tools add beside a file."""
    return [
        e
        for e in entries
        if not e.name.endswith("/")
        and not e.name.startswith(ZIP_IGNORED)
        and not Path(e.name).name.startswith(".")
    ]


def expanded(path: Path, limits: Limits) -> int:
    """The bytes the data member of the zip at `path` expands to, as its directory records
    them (`judged`; the copy out holds it to them: `_copy`)."""
    with open_regular(path, path.name) as handle:
        return judged(handle, path.name, limits)[1].size


def judged(handle: BinaryIO, file: str, limits: Limits) -> tuple[Directory, Entry]:
    """The directory of the zip open in `handle` and its one data member, refused before a
    byte is inflated: more entries than `MAX_ZIP_ENTRIES` (from the end record), members
    adding up past the decompressed cap, more or fewer than one data member, a member over
    the file size cap or expanding more than `Limits.max_expansion` times, an encrypted one,
    one compressed with anything but deflate (or stored)."""
    directory = Directory(handle, file)
    total = sum(e.size for e in directory.entries)
    if total > limits.max_decompressed_bytes:
        raise _refuse(
            file,
            Code.FILE_TOO_LARGE,
            f"the zip expands to {total:,} bytes; at most "
            f"{limits.max_decompressed_bytes:,} are accepted",
        )
    data = members(directory.entries)
    if len(data) != 1:
        names = ", ".join(m.shown for m in data[:5])
        found = f"{len(data)} files ({names})" if data else "no file"
        raise _refuse(
            file,
            Code.FILE_FORMAT,
            f"the zip holds {found}; expected exactly one .csv or .parquet file",
        )
    _judge(file, data[0], limits)
    return directory, data[0]


def extract(path: Path, file: str, limits: Limits, folder: Path) -> tuple[FileKind, Path]:
    """The kind (`csv` or `parquet`) and a copy in `folder` of the one data member of the zip
    at `path`: refused from its directory before a byte is inflated (`judged`), and while
    inflating past the caps, more than `Limits.max_expansion` times the bytes read, or past
    the size the directory records."""
    with open_regular(path, file) as handle:
        directory, member = judged(handle, file, limits)
        copy = folder / "member"
        head = _copy(handle, directory, member, file, limits, copy)
    inner_kind = kind_of(Path(member.name))
    if head.startswith(b"PAR1") or inner_kind == "parquet":
        return "parquet", copy.rename(folder / "member.parquet")
    sniffed = sniff(head)
    if inner_kind not in (None, "csv") or sniffed is not None:
        what = sniffed[0] if sniffed is not None else f"a {inner_kind} file"
        raise _refuse(
            file,
            Code.FILE_FORMAT,
            f"the zip holds {member.shown}, {what}; expected a .csv or .parquet file",
        )
    return "csv", copy.rename(folder / "member.csv")


def _judge(file: str, member: Entry, limits: Limits) -> None:
    """Refuse the one data member from what the directory says of it, before inflating."""
    if member.size > limits.max_file_bytes:
        raise _refuse(
            file,
            Code.FILE_TOO_LARGE,
            f"{member.shown} in the zip has {member.size:,} bytes; at most "
            f"{limits.max_file_bytes:,} are accepted",
        )
    if member.flags & 0x41 or member.method == 99:  # encrypted, strongly encrypted, AES
        raise _refuse(file, Code.FILE_FORMAT, "the zip is encrypted; upload it without a password")
    if member.method not in (STORED, DEFLATED):
        name = METHODS.get(member.method, "an unknown method")
        raise _refuse(
            file,
            Code.UNSUPPORTED_COMPRESSION,
            f"{member.shown} in the zip is compressed with {name} (method {member.method}); "
            "only deflate, what zip tools use by default, or no compression is accepted",
        )
    check_expansion(file, member.size, member.packed, limits)


def _copy(
    handle: BinaryIO, directory: Directory, member: Entry, file: str, limits: Limits, copy: Path
) -> bytes:
    """Write `member`'s data to `copy`, checked as it expands (`check_expansion`, and never
    past the size its entry records), and return its first `HEAD` bytes."""
    handle.seek(member.offset + directory.shift)
    local = handle.read(_LOCAL.size)
    if len(local) < _LOCAL.size or not local.startswith(b"PK\x03\x04"):
        raise _corrupt(file, "the zip data is corrupt (a damaged local header)")
    name_length, extra_length = _LOCAL.unpack(local)[10:12]
    begin = member.offset + directory.shift + _LOCAL.size + name_length + extra_length
    if begin + member.packed > directory.start:
        raise _corrupt(file, "the zip data is corrupt (a member overlaps its directory)")
    handle.seek(begin)
    pieces = (
        deflated(handle, member.packed)
        if member.method == DEFLATED
        else _stored(handle, member.packed)
    )
    head = b""
    done = crc = 0
    try:
        with Output(copy, "unzip an upload") as out:
            for piece, read in pieces:
                done += len(piece)
                if done > member.size:
                    raise zlib.error("it expands past the size its directory records")
                check_expansion(file, done, read, limits)
                crc = zlib.crc32(piece, crc)
                head = head or piece[:HEAD]
                out.write(piece)
        if done != member.size or crc != member.crc:
            raise zlib.error("its size or checksum is not what its directory records")
    except zlib.error as exc:
        raise _corrupt(file, f"the zip data is corrupt ({exc})") from None
    return head


def _stored(handle: BinaryIO, length: int) -> Iterator[tuple[bytes, int]]:
    """A stored member's bytes a block at a time, with the bytes read so far."""
    read = 0
    while read < length:
        chunk = handle.read(min(BLOCK, length - read))
        if not chunk:
            raise zlib.error("the data ends before the member does")
        read += len(chunk)
        yield chunk, read


def _refuse(file: str, code: Code, message: str) -> Rejected:
    return Rejected(single(file, code, f"{file}: {message}"))


def _corrupt(file: str, message: str) -> Rejected:
    return _refuse(file, Code.FILE_CORRUPT, message)
