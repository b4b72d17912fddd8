"""A prepared solution: the organiser's solution checked once, stored ready to score, and
refused when its source or the competition's rules have changed since.

A prepared file is a ZIP archive (stored, not compressed: the members are compressed Parquet
already) holding `prepared.json`, which records what it was made from and for, and the
`Solution`'s two frames, `users.parquet` (file order) and `pairs.parquet` (sorted by
(user, item)), their user and item named as the competition's files name them. Loading one
reads the frames back as they were, without sorting or checking them again beyond their
sha256, counts and types (task.md, "Scoring many submissions").
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tempfile
import time
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import polars as pl

import scorer.version as version
from scorer.competition import ITEM, LOST_ITEMS, USER, Competition, EmptyUsers
from scorer.contract import Codes, Role, Solution, read_solution, reading
from scorer.errors import Code, FileSystemError, HostError, ScorerError, UsageError, single
from scorer.read import (
    DEFAULT_LIMITS,
    Limits,
    Rejected,
    TableLike,
    check_regular,
    digest,
    open_regular,
)
from scorer.read.files import zip_names

#: What `prepared.json` calls the format, and its version: raised when the layout changes.
FORMAT = "scorer-prepared-solution"
FORMAT_VERSION = 2  # 2: each frame's sha256; the source is hashed at every load

MANIFEST = "prepared.json"
FRAMES = ("users", "pairs")

#: The end of a prepared file's name; a file with another name is recognised by its members.
SUFFIX = ".prepared"

#: lz4, each frame one row group: at 1M users (15.5M pairs) it loads fastest of what was
#: measured (42 MB, 0.08 s to decode; zstd 37 MB, 0.11 s; uncompressed 52 MB, 0.06 s but more
#: to read), and in one chunk, as the frame was: loading is what a prepared file is for.
COMPRESSION: Final = "lz4"


@dataclass(frozen=True)
class PreparedInfo:
    """What `prepare` wrote: the file, its source (resolved path, size, sha256) and counts."""

    path: Path
    source: Path
    source_bytes: int
    sha256: str
    users: int
    pairs: int
    has_split: bool
    graded: bool
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        counts = ("source_bytes", "sha256", "users", "pairs", "has_split", "graded", "bytes")
        paths = {"file": str(self.path), "source": str(self.source)}
        return paths | {name: getattr(self, name) for name in (*counts, "seconds")}


def _key(competition: Competition) -> str:
    """sha256 of the competition's key under this scorer's version: what a prepared solution
    was checked by, and is valid for only (a hash keeps `prepared.json` short). The
    empty-user rule is left out: it weighs the scores, not what a solution holds."""
    rules = replace(competition, empty_users=EmptyUsers.ZERO)
    text = rules.fingerprint(scorer_version=version.__version__)
    return hashlib.sha256(text.encode()).hexdigest()


def is_prepared(source: object) -> bool:
    """Whether a solution path is a prepared file: its name ends in `.prepared`, or it is a
    ZIP archive, whatever its name, holding `prepared.json` (read from its directory, nothing
    extracted). The one rule every command and the API go by."""
    if not isinstance(source, str | Path):
        return False
    path = Path(source)
    if path.name.lower().endswith(SUFFIX):
        return True
    try:
        with open_regular(path, path.name) as handle:
            if handle.read(4) != b"PK\x03\x04":
                return False
        return MANIFEST in (zip_names(path) or [])
    except (Rejected, ScorerError, OSError):  # no such file: its reader names the problem
        return False


def loaded(
    source: TableLike | Solution, competition: Competition = LOST_ITEMS
) -> TableLike | Solution:
    """A solution as the API takes it: a prepared file `load`ed, anything else as it is."""
    if is_prepared(source):
        return load(Path(str(source)), competition)
    return source


def solution_at(
    source: TableLike, limits: Limits = DEFAULT_LIMITS, *, competition: Competition = LOST_ITEMS
) -> Solution:
    """The solution at a path, prepared (`load`) or not (`read_solution`)."""
    if is_prepared(source):
        return load(Path(str(source)), competition)
    return read_solution(source, limits, competition=competition)


def prepare(
    source: Path,
    out: Path,
    *,
    competition: Competition = LOST_ITEMS,
    limits: Limits = DEFAULT_LIMITS,
) -> PreparedInfo:
    """Read and check the solution at `source` and write it, ready to score, to `out`
    (atomically: a new file renamed into place). A broken solution is a `HostError` as for
    `score`; a source that changes while it is read is a `UsageError` (run it again)."""
    started = time.perf_counter()
    source, out = Path(source), Path(out)
    if out.resolve() == source.resolve():
        raise UsageError(f"{out}: --out is the solution itself; name another file")
    with reading(Role.SOLUTION):  # a folder, a pipe, a missing file: the solution's HostError
        before = check_regular(source, source.name)
        sha256 = digest(source, source.name, limits)
    solution = read_solution(source, limits, competition=competition)
    after = os.stat(source)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise UsageError(f"{source}: the solution changed while it was prepared; run again")
    columns = competition.columns
    frames = {
        "users": solution.users.rename({USER: columns.user}),
        "pairs": solution.pairs.rename({USER: columns.user, ITEM: columns.item}),
    }
    if solution.codes is not None:
        frames |= solution.codes.frames()
    record = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "scorer_version": version.__version__,
        "source": {
            "path": str(source.resolve()),
            "size": before.st_size,
            "sha256": sha256,
        },
        "competition": competition.to_dict(),
        "fingerprint": _key(competition),
        "has_split": solution.has_split,
        "graded": solution.graded,
        "frames": {name: _describe(frame) for name, frame in frames.items()},
    }
    _write(out, record, frames, stat.S_IMODE(before.st_mode))
    return PreparedInfo(
        path=out,
        source=source.resolve(),
        source_bytes=before.st_size,
        sha256=sha256,
        users=solution.users.height,
        pairs=solution.pairs.height,
        has_split=solution.has_split,
        graded=solution.graded,
        bytes=out.stat().st_size,
        seconds=time.perf_counter() - started,
    )


def _describe(frame: pl.DataFrame) -> dict[str, Any]:
    """A frame's rows, and each column's name, type and sort flag in order, as `load` checks
    and restores them."""
    return {
        "rows": frame.height,
        "columns": [
            {"name": series.name, "dtype": str(series.dtype), "sorted": _sorted(series)}
            for series in frame.iter_columns()
        ],
    }


def _sorted(series: pl.Series) -> str | None:
    flags = series.flags
    return "asc" if flags["SORTED_ASC"] else "desc" if flags["SORTED_DESC"] else None


def _write(out: Path, record: dict[str, Any], frames: dict[str, pl.DataFrame], mode: int) -> None:
    """The archive, written to a new file beside `out` and renamed into place; as readable as
    the solution it holds (`mode`, the source's permissions)."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise FileSystemError.of(exc, "write the prepared file", out) from None
    temporary = Path(name)
    try:
        stored = {}
        for key, frame in frames.items():
            buffer = io.BytesIO()
            frame.write_parquet(
                buffer,
                compression=COMPRESSION,
                statistics=False,
                row_group_size=max(frame.height, 1),
            )
            stored[key] = buffer.getvalue()  # its sha256 is checked when it is loaded
            record["frames"][key]["sha256"] = hashlib.sha256(stored[key]).hexdigest()
        with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED) as z:
            z.writestr(MANIFEST, json.dumps(record, indent=2, sort_keys=True))
            for key, data in stored.items():
                z.writestr(f"{key}.parquet", data)
        os.chmod(temporary, mode)
        os.replace(temporary, out)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise FileSystemError.of(exc, "write the prepared file", out) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def load(path: Path, competition: Competition = LOST_ITEMS) -> Solution:
    """The solution a prepared file holds, for `competition`. Refused (`HostError`, exit 2)
    when the file is not a prepared file of this version or is damaged, when it was prepared
    for other rules or another scorer version, or when its source still exists at its
    recorded path and its bytes have changed since (hashed at every load: the same size and
    time are no proof), or when a frame's bytes are not the ones prepared."""
    path = Path(path)
    file = path.name
    with reading(Role.SOLUTION):  # a folder, a pipe, a missing file: the solution's HostError
        check_regular(path, file)
    try:
        with zipfile.ZipFile(path) as archive:
            record = _record(archive, file)
            _fresh(record, file, competition)
            every = [*FRAMES, *(n for n in Codes.FRAMES if n in record.get("frames", {}))]
            frames = {name: _frame(archive, record, name, file) for name in every}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        raise _broken(
            file, Code.FILE_CORRUPT, f"{file}: not a readable ZIP archive ({exc})"
        ) from None
    # Stored as the competition's files name the user and item; the scorer's names inside.
    # Each frame renames only the columns it holds under those names: an item column called
    # 'stage' is not the users' stage.
    columns = competition.columns
    frames["users"] = frames["users"].rename({columns.user: USER}, strict=False)
    pairs = {columns.user: USER, columns.item: ITEM}
    frames["pairs"] = frames["pairs"].rename(pairs, strict=False)
    try:
        codes = Codes.of_frames(frames, competition)
    except ValueError as exc:  # a file of this version for these rules: its own damage
        raise _broken(file, Code.FILE_CORRUPT, f"{file}: {exc}") from None
    return Solution(
        users=frames["users"],
        pairs=frames["pairs"],
        has_split=bool(record["has_split"]),
        graded=bool(record["graded"]),
        competition=competition,
        codes=codes,
    )


def _broken(file: str, code: Code, message: str) -> HostError:
    hint = "run `scorer prepare` again from the solution"
    return HostError(str(Role.SOLUTION), single(file, code, message, hint=hint))


def _record(archive: zipfile.ZipFile, file: str) -> dict[str, Any]:
    """`prepared.json`, once the archive is known to be a prepared file of this version whose
    members are all there, stored as written."""
    members = {info.filename: info for info in archive.infolist()}
    if MANIFEST not in members:
        raise _broken(file, Code.FILE_FORMAT, f"{file}: not a prepared solution (no {MANIFEST})")
    try:
        record = json.loads(archive.read(MANIFEST))
    except (ValueError, UnicodeDecodeError):
        raise _broken(file, Code.FILE_CORRUPT, f"{file}: {MANIFEST} is not valid JSON") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise _broken(
            file,
            Code.FILE_FORMAT,
            f"{file}: not a prepared solution ({MANIFEST} does not say format {FORMAT!r})",
        )
    if record.get("format_version") != FORMAT_VERSION:
        raise _broken(
            file,
            Code.FILE_FORMAT,
            f"{file}: prepared file format version {record.get('format_version')!r}; this "
            f"scorer reads version {FORMAT_VERSION}",
        )
    for name in FRAMES:
        info = members.get(f"{name}.parquet")
        if info is None or info.compress_type != zipfile.ZIP_STORED:
            raise _broken(
                file,
                Code.FILE_CORRUPT,
                f"{file}: {name}.parquet is missing or "
                "compressed (a prepared file stores its frames as written)",
            )
    return record


def _get(record: dict[str, Any], file: str, *keys: str, kind: type | tuple[type, ...]) -> Any:
    """A field of `prepared.json` of the `kind` expected; a file lacking it is damaged."""
    value: Any = record
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        where = ".".join(keys)
        raise _broken(file, Code.FILE_CORRUPT, f"{file}: {MANIFEST} has no valid '{where}'")
    return value


def _fresh(record: dict[str, Any], file: str, competition: Competition) -> None:
    """Refuse a prepared file made under other rules, or from a source whose bytes changed."""
    if _get(record, file, "fingerprint", kind=str) != _key(competition):
        made = _get(record, file, "competition", "name", kind=str)
        made_by = _get(record, file, "scorer_version", kind=str)
        raise _stale(
            file,
            f"{file}: prepared under other rules (competition {made!r}, scorer {made_by}) than "
            f"these (competition {competition.name!r}, scorer {version.__version__})",
        )
    source = Path(_get(record, file, "source", "path", kind=str))
    sha256 = _get(record, file, "source", "sha256", kind=str)
    try:
        found = os.stat(source)
    except (FileNotFoundError, NotADirectoryError):
        return  # the hidden file lives elsewhere: the prepared file's record is trusted
    except OSError as exc:
        raise FileSystemError.of(exc, "check the prepared file's source", source) from None
    if not stat.S_ISREG(found.st_mode):
        return  # no file in its place
    try:
        now = digest(source, source.name, Limits(max_file_bytes=found.st_size + 1))
    except Rejected:
        return  # gone, or no longer a regular file, while it was being hashed
    if now != sha256:
        raise _stale(
            file, f"{file}: prepared from {source} (sha256 {sha256[:12]}…), which has changed since"
        )


def _stale(file: str, message: str) -> HostError:
    """A prepared file that no longer stands for its solution under these rules."""
    return HostError(
        str(Role.SOLUTION),
        single(file, Code.STALE_PREPARED, f"{message}; run `scorer prepare` again"),
    )


def _frame(archive: zipfile.ZipFile, record: dict[str, Any], name: str, file: str) -> pl.DataFrame:
    """One frame of the archive, checked against its description: rows, column types."""
    rows = _get(record, file, "frames", name, "rows", kind=int)
    columns = _get(record, file, "frames", name, "columns", kind=list)
    if not all(isinstance(c, dict) and {"name", "dtype"} <= c.keys() for c in columns):
        raise _broken(file, Code.FILE_CORRUPT, f"{file}: {MANIFEST} has no valid 'frames.{name}'")
    data = archive.read(f"{name}.parquet")
    if hashlib.sha256(data).hexdigest() != _get(record, file, "frames", name, "sha256", kind=str):
        raise _broken(file, Code.FILE_CORRUPT, f"{file}: {name}.parquet is not as prepared")
    try:
        frame = pl.read_parquet(data)
    except zipfile.BadZipFile:
        raise
    except (Exception, pl.exceptions.PanicException) as exc:  # the kind alone: names no value
        raise _broken(
            file, Code.FILE_CORRUPT, f"{file}: {name}.parquet cannot be read ({type(exc).__name__})"
        ) from None
    found = ", ".join(f"{column}: {dtype}" for column, dtype in frame.schema.items())
    expected = ", ".join(f"{c['name']}: {c['dtype']}" for c in columns)
    if frame.height != rows or found != expected:
        raise _broken(
            file,
            Code.FILE_CORRUPT,
            f"{file}: {name}.parquet holds {frame.height:,} rows of {found}; {MANIFEST} says "
            f"{rows:,} rows of {expected}",
        )
    restored = [
        pl.col(c["name"]).set_sorted(descending=c.get("sorted") == "desc")
        for c in columns
        if c.get("sorted") in ("asc", "desc")
    ]
    return frame.with_columns(restored) if restored else frame
