"""A Parquet file judged from its footer before any page is decoded, then read within limits.

The footer's own size and the number of schema fields it declares are read from its first
bytes, before pyarrow parses it; then the column names (the caller checks the header against
them), the row count, the values of each column and their sizes once decoded, all from
metadata. Text columns are read as dictionaries (each distinct value once), so the length of
every cell and the size of all the text are known before a single cell is expanded: 240
million copies of one value cost one value and a run length, not 240 million strings.

The pages are decoded a few row groups at a time into the C allocator (bench/PARQUET.md):
pyarrow reading a whole file grows each column in one buffer, copied as it grows (up to twice
the CPU of the decoding, and most of the column's size again at its peak), and its own
allocator keeps what it frees (about 100 MB at 20M rows), which no later step can use.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from scorer.errors import Code, shorten, single
from scorer.read.files import open_regular
from scorer.read.frames import long_cells
from scorer.read.limits import Limits, Rejected

#: Bytes a value of each fixed-width physical type takes once decoded (booleans: one each).
_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}

#: Rows decoded at once, at least: consecutive row groups are read together up to this many,
#: so a file of many tiny groups is not read in as many calls, and a file of a few large ones
#: is read a group at a time (each column then in one buffer of the group's known size).
#: Chunks of this order are what polars reads CSV and Parquet in.
BATCH_ROWS = 1 << 17

#: Held while the default pool is swapped for the C allocator (`_system_pool`).
_POOL_LOCK = threading.Lock()


@dataclass(frozen=True)
class Footer:
    """What a Parquet footer says, judged: the top-level column names, the rows, and the
    paths of the text (byte array) columns, read as dictionaries."""

    names: list[str]
    rows: int
    text: tuple[str, ...]
    #: The rows of each row group, in order.
    groups: tuple[int, ...] = ()


def corrupt(file: str, why: str) -> Rejected:
    return Rejected(single(file, Code.FILE_CORRUPT, f"{file}: not a readable Parquet file ({why})"))


def too_large(file: str, what: str, size: int, cap: int) -> Rejected:
    return Rejected(
        single(
            file,
            Code.FILE_TOO_LARGE,
            f"{file}: {what} {size:,} bytes; at most {cap:,} are accepted",
        )
    )


def inspect(path: Path, file: str, limits: Limits) -> Footer:
    """Judge a Parquet file from its footer: `Rejected` for too many columns or rows, a
    footer or an expansion over the caps, or a footer that cannot be read."""
    import pyarrow.parquet as pq

    with open_regular(path, file) as handle:
        size = handle.seek(0, 2)
        if size < 12:
            raise corrupt(file, "too short for a Parquet file")
        handle.seek(size - 8)
        length, magic = struct.unpack("<I4s", handle.read(8))
        if magic != b"PAR1" or length > size - 12:
            raise corrupt(file, "its footer is missing or damaged")
        handle.seek(size - 8 - length)
        fields = schema_fields(handle.read(min(length, 64)))
        if fields is not None and fields - 1 > limits.max_columns:
            limits.check_columns(file, fields - 1, "the schema has {count} columns or fields")
        if length > limits.max_metadata_bytes:
            raise too_large(
                file, "the Parquet metadata (its footer) has", length, limits.max_metadata_bytes
            )
        try:
            meta = pq.ParquetFile(handle).metadata
            names = [str(name) for name in meta.schema.to_arrow_schema().names]
        except Exception as exc:  # any unreadable footer means the same to the user
            raise corrupt(file, type(exc).__name__) from None
    limits.check_columns(
        file, max(len(names), meta.num_columns), "the schema has {count} columns or fields"
    )
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    rows = max(int(meta.num_rows), sum(int(group.num_rows) for group in groups))
    encoded = decoded = 0
    lists: list[tuple[str, int]] = []  # (path, values) of each column inside a list
    text = []
    for j in range(meta.num_columns):
        leaf = meta.schema.column(j)
        chunks = [group.column(j) for group in groups]
        values = sum(int(chunk.num_values) for chunk in chunks)
        encoded += sum(int(chunk.total_uncompressed_size) for chunk in chunks)
        if leaf.max_repetition_level > 0:
            lists.append((str(leaf.path), values))
        if leaf.physical_type == "BYTE_ARRAY":
            text.append(str(leaf.path))
        elif leaf.physical_type == "FIXED_LEN_BYTE_ARRAY":
            decoded += values * max(int(leaf.length or 0), 0)
        else:
            decoded += values * _WIDTH.get(str(leaf.physical_type), 8)
    cap = limits.max_decompressed_bytes
    if encoded > cap:
        raise Rejected(
            single(
                file,
                Code.FILE_TOO_LARGE,
                f"{file}: the file expands to {encoded:,} bytes when decompressed; at most "
                f"{cap:,} are accepted",
            )
        )
    limits.check_whole(file, rows)
    for path_in_file, values in lists:
        limits.check_whole(
            file, values, f"the lists of {shorten(path_in_file)!r} hold {{count}} values"
        )
    if decoded > cap:
        raise too_large(file, "its numbers decode to", decoded, cap)
    counts = tuple(int(group.num_rows) for group in groups)
    return Footer(names=names, rows=rows, text=tuple(text), groups=counts)


def schema_fields(head: bytes) -> int | None:
    """How many schema elements (the root, then every column and group) a footer declares,
    from its first bytes: the compact Thrift encoding of field 1 (the format version) then
    the header of field 2 (the schema's list). None when the bytes are laid out otherwise;
    the full parse then judges the file."""
    if head[:1] != b"\x15":
        return None
    at = 1
    while at < len(head) and head[at] & 0x80:  # the version, a varint
        at += 1
    if head[at + 1 : at + 2] != b"\x19" or at + 2 >= len(head):
        return None
    header = head[at + 2]
    if header & 0x0F != 0x0C:  # a list of structs
        return None
    if header >> 4 != 15:
        return header >> 4
    size, shift = 0, 0
    for byte in head[at + 3 :]:
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return size
    return None


def read(
    path: Path, file: str, footer: Footer, limits: Limits, *, words: Sequence[str] = ()
) -> pl.DataFrame:
    """The columns a footer names, text read as dictionaries and judged (`_expand`) before it
    is expanded. pyarrow decodes the pages: polars panics on some corrupt pages, or aborts
    the whole process trying to allocate exabytes, where pyarrow raises an error. Top-level
    text columns named in `words` hold a few distinct words (a split): they stay
    dictionaries, read as categories, not millions of strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # not `pq.read_table`: its dataset layer imports pandas (0.3 s) for no gain here
        with _system_pool():  # the reader allocates from the pool that is the default now
            parquet = pq.ParquetFile(path, read_dictionary=list(footer.text))
        runs = batches(footer.groups)
        if len(runs) > 1:  # each run's columns in one chunk: the table is the chunks' list
            table = pa.concat_tables(
                parquet.read_row_groups(run, columns=footer.names) for run in runs
            )
        else:
            table = parquet.read(columns=footer.names)
    except Exception as exc:  # all mean the same to the user
        raise corrupt(file, type(exc).__name__) from None
    table = _expand(file, table, limits, set(words))
    try:  # the chunks as they are: polars reads files in chunks too, and joining them copies
        frame = pl.from_arrow(table, rechunk=False)
    except (Exception, pl.exceptions.PanicException) as exc:
        raise corrupt(file, type(exc).__name__) from None
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a table gives a frame
        raise corrupt(file, f"expected a table, got {type(frame).__name__}")
    return frame


def batches(groups: Sequence[int], rows: int | None = None) -> list[list[int]]:
    """The row groups (by their row counts) in runs of consecutive ones, each of at least
    `rows` rows (`BATCH_ROWS`) but the last, or of one group however large."""
    rows = BATCH_ROWS if rows is None else rows
    runs: list[list[int]] = []
    size = rows
    for index, count in enumerate(groups):
        if size >= rows:
            runs.append([])
            size = 0
        runs[-1].append(index)
        size += count
    return runs


@contextmanager
def _system_pool() -> Iterator[None]:
    """pyarrow's default memory pool is the C allocator (`malloc`) while inside: an object
    made inside (a Parquet reader) allocates from it for as long as it lives. `malloc` gives
    large buffers back to the system when they are freed; pyarrow's own allocator
    (mimalloc or jemalloc) keeps them for its next buffers, which here never come."""
    import pyarrow as pa

    with _POOL_LOCK:
        default = pa.default_memory_pool()
        pa.set_memory_pool(pa.system_memory_pool())
        try:
            yield
        finally:
            pa.set_memory_pool(default)


def _expand(file: str, table: Any, limits: Limits, words: set[str]) -> Any:
    """Judge every text cell from the dictionaries: none longer than a line may be (the rows
    of those that are, line_too_long) and all of them together within the decompressed
    cap; then expand the dictionaries, except those of `words`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count, examples, total = 0, [], 0
    for index, name in enumerate(table.column_names):
        column = table.column(index)
        if not _has_dictionary(column.type):
            continue
        start = 0
        for chunk in column.chunks:
            lengths, rows = _lengths(chunk)
            total += int(pc.sum(lengths).as_py() or 0)
            over = pc.fill_null(pc.greater(lengths, limits.line_cap), False)
            found = int(pc.sum(over).as_py() or 0)
            if found:
                count += found
                at = pc.indices_nonzero(over).to_pylist()[:5]
                long = lengths.take(at).to_pylist()
                places = rows.take(at).to_pylist() if rows is not None else at
                examples += [
                    (start + r + 1, str(name), n) for r, n in zip(places, long, strict=True)
                ]
            start += len(chunk)
        if name not in words or not pa.types.is_dictionary(column.type):
            table = table.set_column(index, name, column.cast(_plain(column.type)))
    if count:
        raise Rejected(long_cells(file, count, examples, "bytes", limits))
    if total > limits.max_decompressed_bytes:
        raise too_large(file, "its text decodes to", total, limits.max_decompressed_bytes)
    return table


def _lengths(chunk: Any) -> tuple[Any, Any]:
    """The byte length of each text value of a column chunk (a dictionary, or a list of
    them), and for a list the row each value belongs to (None: value i is row i)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(chunk.type):
        return pc.take(pc.binary_length(chunk.dictionary), chunk.indices), None
    lengths, inner = _lengths(chunk.flatten())
    rows = pc.list_parent_indices(chunk)
    return lengths, rows if inner is None else rows.take(inner)


def _has_dictionary(kind: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_dictionary(kind.value_type)
    return False


def _plain(kind: Any) -> Any:
    """A type with every dictionary replaced by the type of its values."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return kind.value_type
    if pa.types.is_list(kind):
        return pa.list_(_plain(kind.value_type))
    if pa.types.is_large_list(kind):
        return pa.large_list(_plain(kind.value_type))
    return kind
