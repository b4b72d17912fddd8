"""Opening a path: regular files only, judged before they are opened and again once open.

A named pipe blocks whoever opens it until a writer comes, a device never ends, a folder is
not data: each is refused by name from `os.stat` before anything opens it, and checked again
with `os.fstat` on the opened descriptor (opened with O_NONBLOCK, so that a pipe swapped in
between cannot block). A symbolic link is its target; where a link must not lead out of a
folder (a team's uploads, a platform's), `inside` says whether it stays.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeAlias

from scorer.errors import Code, FileSystemError, single
from scorer.read.hints import EXCEL, GZIP, ZIP
from scorer.read.limits import Limits, Rejected

#: Bytes read (and hashed, and copied) at a time.
BLOCK = 1 << 20

#: The kinds of file a table may come in, by the end of its name (a zip holds one of the
#: others).
FileKind: TypeAlias = Literal["csv", "csv.gz", "parquet", "zip"]

#: How many first bytes of a file (of its expansion, for gzip) tell what it is: a NUL byte in
#: the first 4 KiB makes it binary; one further on is a bad cell of its line.
HEAD = 8192

_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)

#: Flags of every open: a pipe never blocks it, a terminal never becomes ours (and Python makes
#: every descriptor it opens non-inheritable).
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def kind_of(path: Path) -> FileKind | None:
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


#: What a file's first bytes say it is, whatever its name: platforms rename uploads (EvalAI
#: keeps only the last suffix, `x.csv.gz` becoming `<uuid>.gz`; a download may lose it).
_KIND_MAGIC: dict[bytes, FileKind] = {
    b"\x1f\x8b": "csv.gz",
    b"PAR1": "parquet",
    b"PK\x03\x04": "zip",
    b"PK\x05\x06": "zip",  # an empty archive: refused as such, not as an unknown name
}

#: The name endings under which a file is judged by its first bytes: none at all, or a bare
#: `.gz` (EvalAI stores `x.csv.gz` as `<uuid>.gz`). A name that says another format
#: (`.xlsx`, `.json`) is refused by its name.
SNIFFED = ("", ".gz")


#: The files a reader takes, as every help text says it (`kind_of`, `SNIFFED`, `kind_of_file`).
READABLE = (
    ".csv, .csv.gz, .parquet or .zip (holding one .csv or .parquet); any other name ending in "
    ".gz, or with no suffix, by its content"
)


def kind_of_file(path: Path, file: str | None = None) -> FileKind | None:
    """A regular file's kind from its name, or else (`SNIFFED`) from its first bytes: gzip,
    Parquet and zip data are recognised under any such name."""
    kind = kind_of(path)
    if kind is not None or path.suffix.lower() not in SNIFFED:
        return kind
    with open_regular(path, file or path.name) as handle:
        head = handle.read(4)
    return next((k for magic, k in _KIND_MAGIC.items() if head.startswith(magic)), None)


#: A hint for each thing a CSV file is found to be instead, when one helps.
_MAGIC: dict[bytes, tuple[str, str | None]] = {
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


def sniff(head: bytes, path: Path | None = None) -> tuple[str, str | None] | None:
    """What a file that should be CSV text is instead, judged by its first bytes (`HEAD`; a
    ZIP file at `path` by the names it holds), with a hint on how to make it CSV."""
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
    with open_regular(path, path.name) as handle:
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


def refusal(mode: int) -> str | None:
    """Why a path of this mode (`st_mode`) is not read as a file; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory; expected a file"
    what = next((name for test, name in _KINDS if test(mode)), "not a file")
    return f"is not a regular file ({what}); expected a file"


def not_a_file(file: str, why: str) -> Rejected:
    return Rejected(single(file, Code.NOT_A_FILE, f"{file}: {why}"))


def check_regular(path: Path, file: str) -> os.stat_result:
    """The status of the regular file at `path` (a link's target's), without opening it:
    `Rejected` when there is none (file_not_found) or it is a folder, pipe, device or socket
    (not_a_file); `FileSystemError` when the system refuses to tell (permission denied)."""
    try:
        found = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise Rejected(single(file, Code.FILE_NOT_FOUND, f"{file}: no such file")) from None
    except OSError as exc:
        raise FileSystemError.of(exc, "read the file", path) from None
    why = refusal(found.st_mode)
    if why is not None:
        raise not_a_file(file, why)
    return found


@contextmanager
def open_regular(path: Path, file: str) -> Iterator[io.BufferedReader]:
    """The regular file at `path`, open for reading in binary: judged by `check_regular`
    before it is opened and by `os.fstat` once it is (a pipe put in its place meanwhile is
    opened without blocking, then refused)."""
    check_regular(path, file)
    try:
        fd = os.open(path, _FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        raise Rejected(single(file, Code.FILE_NOT_FOUND, f"{file}: no such file")) from None
    except OSError as exc:
        raise FileSystemError.of(exc, "read the file", path) from None
    try:
        why = refusal(os.fstat(fd).st_mode)
        if why is not None:
            raise not_a_file(file, why)
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def inside(path: Path, folder: Path) -> bool:
    """Whether `path`, every symbolic link on its way followed, stays within `folder`."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a loop of links
        return False


def walk(folder: Path, skip: Callable[[str], bool]) -> Iterator[Path]:
    """Every path under `folder` that is not a folder walked into: files, and the links,
    pipes and the like that a reader must judge (`inside`, `refusal`) before opening. A
    link to a folder is listed, never walked into; a name `skip` rejects is left out with
    all it holds."""
    for where, folders, files in os.walk(folder):
        here = Path(where)
        folders[:] = sorted(name for name in folders if not skip(name))
        linked = [name for name in folders if (here / name).is_symlink()]
        folders[:] = [name for name in folders if name not in linked]
        for name in sorted([*files, *linked]):
            if not skip(name):
                yield here / name


def digest(path: Path, file: str, limits: Limits) -> str:
    """sha256 of a regular file's bytes; `Rejected` as `open_regular`, or over the size cap."""
    with open_regular(path, file) as handle:
        limits.check_size(file, os.fstat(handle.fileno()).st_size)
        return hashlib.file_digest(handle, "sha256").hexdigest()


def snapshot(path: Path, file: str, folder: Path, limits: Limits) -> tuple[Path, str]:
    """Copy a regular file into `folder`, under its own name, while hashing it: the copy and
    the sha256 of exactly the bytes it holds, however the original changes meanwhile. The
    file is read once; `Rejected` as `open_regular`, or over the size cap (checked before
    copying and while copying, should the file grow)."""
    copy = folder / path.name
    hashed = hashlib.sha256()
    with open_regular(path, file) as source:
        size = os.fstat(source.fileno()).st_size
        limits.check_size(file, size)
        with Output(copy, "write a private copy of a file") as out:
            done = 0
            while chunk := source.read(BLOCK):
                done += len(chunk)
                limits.check_size(file, done)
                hashed.update(chunk)
                out.write(chunk)
    return copy, hashed.hexdigest()


class Output:
    """A new file to write; a refused write (a full disk) is a `FileSystemError` naming it and
    what was being done, while an error reading the source stays its own."""

    def __init__(self, path: Path, doing: str) -> None:
        self.path = path
        self.doing = doing
        try:
            self.handle = path.open("xb")
        except OSError as exc:
            raise self.failed(exc) from None

    def failed(self, exc: OSError) -> FileSystemError:
        return FileSystemError.of(exc, self.doing, self.path)

    def write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except OSError as exc:
            raise self.failed(exc) from None

    def __enter__(self) -> Output:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.handle.close()
        except OSError as error:
            raise self.failed(error) from None
