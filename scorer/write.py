"""Write output files atomically: a reader sees the old file or the whole new one."""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal, cast

import polars as pl

from scorer.errors import UsageError
from scorer.read import kind_of


def output_kind(path: Path) -> Literal["csv", "csv.gz", "parquet"]:
    """The format an output file's name asks for; a `UsageError` for any other name."""
    kind = kind_of(path)
    if kind is None or kind == "zip":
        raise UsageError(f"{path}: expected an output name ending in .csv, .csv.gz or .parquet")
    if not path.parent.is_dir():
        raise UsageError(f"{path}: the folder {path.parent} does not exist")
    return kind


@contextmanager
def _atomic(path: Path) -> Iterator[str]:
    """A temporary file beside `path`, renamed over it when the block succeeds and removed when
    it fails: readers see the old file or the whole new one, never a part. The file gets the
    permissions a plain new file would (mkstemp's are 0600)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(frame: pl.DataFrame, path: Path) -> None:
    """Write a frame in the format its suffix names (.csv, .csv.gz, .parquet), atomically."""
    kind = output_kind(path)
    with _atomic(path) as tmp:
        if kind == "parquet":
            frame.write_parquet(tmp)
        elif kind == "csv.gz":
            with gzip.open(tmp, "wb") as handle:
                frame.write_csv(cast(IO[bytes], handle))
        else:
            frame.write_csv(tmp)


def write_text(text: str, path: Path) -> None:
    """Write text atomically, as `write_table` does."""
    with _atomic(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
