"""Write files atomically, and durably if asked: a reader sees the old file or the whole new one."""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal, cast

import polars as pl

from scorer.errors import FileSystemError, UsageError
from scorer.read import kind_of


def output_kind(path: Path) -> Literal["csv", "csv.gz", "parquet"]:
    """The format an output file's name asks for; a `UsageError` for any other name, a folder
    that does not exist, or a path that is a folder itself."""
    kind = kind_of(path)
    if kind is None or kind == "zip":
        raise UsageError(f"{path}: expected an output name ending in .csv, .csv.gz or .parquet")
    check_output(path)
    return kind


def check_output(path: Path) -> None:
    """A `UsageError` unless `path` can name an output file: its folder exists, and it is not
    a folder itself (nor anything else but a file)."""
    if not path.parent.is_dir():
        raise UsageError(f"{path}: the folder {path.parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{path}: is a directory; expected the name of a file to write")
    if path.exists() and not path.is_file():
        raise UsageError(f"{path}: is not a regular file; expected the name of a file to write")


@contextmanager
def _atomic(path: Path) -> Iterator[str]:
    """A temporary file beside `path`, renamed over it when the block succeeds and removed when
    it fails: readers see the old file or the whole new one, never a part. The file gets the
    permissions a plain new file would (mkstemp's are 0600). A write the system refuses
    (permission denied, a full disk, a folder in the way) is a `FileSystemError` naming the
    path and the system's reason."""
    check_output(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise FileSystemError.of(exc, "write the output", path) from None
    os.close(fd)
    try:
        yield tmp
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FileSystemError.of(exc, "write the output", path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(frame: pl.DataFrame, path: Path) -> None:
    """Write a frame in the format its suffix names (.csv, .csv.gz, .parquet), atomically."""
    kind = output_kind(path)
    with _atomic(path) as tmp:
        if kind == "parquet":
            try:
                frame.write_parquet(tmp)
            except pl.exceptions.ComputeError as exc:  # polars' word for a failed write here
                reason = str(exc).rsplit("IO error: ", 1)[-1]
                raise FileSystemError(f"{path}: cannot write the output: {reason}") from None
        elif kind == "csv.gz":
            with gzip.open(tmp, "wb") as handle:
                frame.write_csv(cast(IO[bytes], handle))
        else:
            frame.write_csv(tmp)


def write_text(text: str, path: Path) -> None:
    """Write text atomically, as `write_table` does."""
    with _atomic(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


def sync_folder(folder: Path) -> None:
    """A folder's entries on disk: a file made, renamed or removed in it stays so after a
    crash."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def write_durably(data: bytes, partial: Path, final: Path) -> None:
    """`data` at `final`, whole or not at all, on disk: written at `partial`, synced, renamed
    over `final`, and the folder synced. A stop before the rename leaves `partial`, which
    its writer's sweep removes."""
    with partial.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, final)
    sync_folder(final.parent)
