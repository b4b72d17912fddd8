"""Hostile files made at run time from a seed, small on disk and huge (or strange) once read,
and a way to run the CLI on one and measure it; for tests/read/test_hostile.py and
bench/hostile_bench.py.

Each maker writes one file and returns nothing; `HOSTILE` lists them with the code the
scorer must answer. `measured` runs a command under bench/measure.py, whose peak RSS is the
command's own (a child forked from pytest would start from pytest's size).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from support.paths import ROOT

MEASURE = ROOT / "bench" / "measure.py"
MB = 1 << 20
GB = 1 << 30
HEADER = b"user_id,edition_id,rank\n"
#: What a small submission's entry in a zip may record.
HEAD_BYTES = 8192

#: A Python program that gives Kaggle's adapter a frame with a 40 MB cell, as Kaggle would,
#: and prints the participant's message (exit 1).
KAGGLE_CELL = (
    "import pandas as pd\n"
    "from scorer.platforms import kaggle\n"
    "solution = pd.DataFrame({'user_id': [1001, 1002], 'edition_ids': ['1 2', '3']})\n"
    "cells = ['1 ' * 20_000_000, ' '.join(map(str, range(20)))]\n"
    "submission = pd.DataFrame({'user_id': [1001, 1002], 'edition_ids': cells})\n"
    "try:\n"
    "    kaggle.score(solution, submission, 'user_id')\n"
    "except kaggle.ParticipantVisibleError as exc:\n"
    "    print(exc)\n"
    "    raise SystemExit(1) from None\n"
)


def user_rows(seed: int, user: int = 1001) -> bytes:
    """One target user's 20 ranked editions, drawn from `seed`: valid-looking rows."""
    rng = random.Random(seed)
    editions = rng.sample(range(1_000_000, 2_000_000), 20)
    return b"".join(b"%d,%d,%d\n" % (user, e, r) for r, e in enumerate(editions, 1))


def repeated_gzip(path: Path, head: bytes, block: bytes, copies: int, members: int = 1) -> None:
    """`members` gzip members, each `head` (the first member only) then `block` `copies`
    times, written in no time: after a full flush the compressor forgets its past, so the
    block packs to the same bytes every time and is compressed once; each member's header
    and trailer (CRC-32 and size of what it expands to) are written by hand."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    end = packer.flush()  # the final, empty block
    crcs: dict[bytes, int] = {}
    with path.open("wb") as out:
        for member in range(members):
            first = head if member == 0 else b""
            if first not in crcs:
                crc = zlib.crc32(first)
                for _ in range(copies):
                    crc = zlib.crc32(block, crc)
                crcs[first] = crc
            starter = zlib.compressobj(9, zlib.DEFLATED, -15)
            start = starter.compress(first) + starter.flush(zlib.Z_FULL_FLUSH)
            size = (len(first) + copies * len(block)) & 0xFFFFFFFF
            out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + start + packed * copies + end)
            out.write(struct.pack("<II", crcs[first], size))


def gzip_rows(path: Path, seed: int = 0, expanded: int = 2 * GB) -> None:
    """A .csv.gz expanding to `expanded` bytes of valid-looking rows (one target user's 20
    ranked editions, over and over): about 10 MB on disk for 2 GiB."""
    rows = user_rows(seed)
    block = rows * (MB // len(rows))
    repeated_gzip(path, HEADER, block, expanded // len(block))


def gzip_nul(path: Path, members: int = 126, member_bytes: int = 64 * MB) -> None:
    """`members` gzip members of `member_bytes` NUL bytes each: 7.9 GiB from about 8 MB."""
    repeated_gzip(path, b"", bytes(MB), member_bytes // MB, members)


def parquet_repeated(path: Path, seed: int = 0, rows: int = 240_000_000) -> None:
    """`rows` copies of one valid-looking row, dictionary- and run-length-encoded: 3 MB on
    disk, and a footer whose sizes add up to under 3 MB (about 10 s to write)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    user, edition, rank = (int(v) for v in user_rows(seed).split(b"\n")[0].split(b","))
    group = 1_000_000
    table = pa.table(
        {
            "user_id": pa.array(np.full(group, user, np.int64)),
            "edition_id": pa.array(np.full(group, edition, np.int64)),
            "rank": pa.array(np.full(group, rank, np.int64)),
        }
    )
    with pq.ParquetWriter(path, table.schema, compression="zstd") as writer:
        for _ in range(rows // group):
            writer.write_table(table, row_group_size=group)


def parquet_columns(path: Path, seed: int = 0, columns: int = 100_000) -> None:
    """One row in `columns` integer columns, the three of a submission among them: 29 MB on
    disk, a 20 MB footer (about 10 s to write)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    one = pa.array([rng.randrange(100)], pa.int64())
    names = ["user_id", "edition_id", "rank", *(f"c{i}" for i in range(columns - 3))]
    pq.write_table(pa.table([one] * columns, names=names), path)


def parquet_long_cell(path: Path, seed: int = 0, users: int = 4, cell: int = 40 * MB) -> None:
    """A wide Parquet file whose every list cell is the same `cell`-byte run of one id:
    stored once (a dictionary page, compressed to almost nothing), `users` times that once
    read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    text = (b"%d " % rng.randrange(1_000_000, 2_000_000)) * (cell // 8)
    table = pa.table(
        {
            "user_id": pa.array([1001 + i for i in range(users)], pa.int64()),
            "edition_ids": pa.array([text.decode()] * users, pa.string()),
        }
    )
    pq.write_table(table, path, compression="zstd", dictionary_pagesize_limit=2 * cell)


def gzip_small(path: Path, seed: int = 0) -> None:
    """A valid-looking submission, gzipped: the control, which must not be refused."""
    path.write_bytes(gzip.compress(HEADER + user_rows(seed), mtime=0))


@dataclass(frozen=True)
class Hostile:
    """A hostile file: its name, how it is made, what it is, the code it must get."""

    name: str
    make: Callable[[Path], None]
    what: str
    code: str
    slow: bool = False


HOSTILE = (
    Hostile("rows_bomb.csv.gz", gzip_rows, "gzip of 2 GiB of valid-looking rows", "file_too_large"),
    Hostile(
        "nul_bomb.csv.gz", gzip_nul, "gzip of 7.9 GiB of NUL bytes, 126 members", "file_format"
    ),
    Hostile(
        "repeated.parquet",
        parquet_repeated,
        "Parquet of 240M identical rows (RLE)",
        "too_many_rows",
        slow=True,
    ),
    Hostile(
        "columns.parquet",
        parquet_columns,
        "Parquet with 100,000 columns",
        "too_many_columns",
        slow=True,
    ),
    Hostile(
        "long_cells.parquet",
        parquet_long_cell,
        "wide Parquet, each list cell 40 MB (one dictionary value)",
        "line_too_long",
    ),
)


@dataclass(frozen=True)
class Measured:
    """One run: exit code, both streams, the command's own peak RSS (MiB) and wall time."""

    exit: int
    stdout: str
    stderr: str
    rss_mb: float
    wall: float

    def json(self) -> dict[str, object]:
        data: dict[str, object] = json.loads(self.stdout.strip().splitlines()[-1])
        return data


def scorer_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "scorer", *args]


#: The address space a measured command may take: a regression that tries to expand a
#: bomb dies (and fails its test) instead of exhausting the machine.
ADDRESS_SPACE = 8 * GB


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def measured(command: list[str], timeout: float = 600) -> Measured:
    """Run `command` from the repository root (the scorer of this tree first on the path)
    under bench/measure.py, within `ADDRESS_SPACE`; kill it after `timeout` seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="scorer-measure-") as folder:
        result = Path(folder) / "result.json"
        done = subprocess.run(
            [sys.executable, "-S", str(MEASURE), str(result), str(timeout), "--", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout + 60,
            preexec_fn=_limited if sys.platform == "linux" else None,
        )
        figures = json.loads(result.read_text(encoding="utf-8"))
    return Measured(done.returncode, done.stdout, done.stderr, figures["rss_mb"], figures["wall"])


# -- zip archives, written by hand -------------------------------------------------------------

#: A zip entry's fixed date and time (1 January 2024, midnight), in MS-DOS form.
DOS_TIME, DOS_DATE = 0, (2024 - 1980) << 9 | 1 << 5 | 1


@dataclass(frozen=True)
class Member:
    """One member of a hand-made zip: its name, its data as stored, and what its entry
    records (the method, the expanded size and its CRC-32), which may lie."""

    name: bytes
    packed: bytes
    method: int
    size: int
    crc: int
    flags: int = 0


def stored(name: str, data: bytes) -> Member:
    return Member(name.encode(), data, 0, len(data), zlib.crc32(data))


def deflated(name: str, data: bytes) -> Member:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return Member(
        name.encode(), packer.compress(data) + packer.flush(), 8, len(data), zlib.crc32(data)
    )


def write_zip(
    path: Path,
    members: list[Member],
    *,
    entries: int | None = None,
    claimed: int | None = None,
    zip64: bool = False,
    padding: int = 0,
) -> None:
    """A zip archive of `members` (each's packed data followed by `padding` zero bytes that
    its entry counts as compressed data), its central directory listing the first member
    `entries` times when given (one local header, many entries: a huge directory cheaply),
    its end record counting `claimed` entries when given, in a ZIP64 end record if `zip64`
    (or if it counts more than 65,535)."""
    with path.open("wb") as out:

        def fields(m: Member) -> tuple[int, ...]:
            """What a local header and its directory entry both record of a member."""
            sizes = (len(m.packed) + padding, m.size & 0xFFFFFFFF, len(m.name))
            return (m.flags, m.method, DOS_TIME, DOS_DATE, m.crc, *sizes)

        offsets = []
        for m in members:
            offsets.append(out.tell())
            out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, *fields(m), 0))
            out.write(m.name + m.packed + bytes(padding))

        def entry(m: Member, offset: int) -> bytes:
            return (
                struct.pack(
                    "<4s6H3L5H2L",
                    b"PK\x01\x02",
                    20,
                    20,
                    *fields(m),
                    0,
                    0,
                    0,
                    0,
                    0,
                    offset,
                )
                + m.name
            )

        start = out.tell()
        if entries is None:
            listed = len(members)
            out.write(b"".join(entry(m, at) for m, at in zip(members, offsets, strict=True)))
        else:
            listed = entries
            one = entry(members[0], offsets[0])
            step = 1 << 16
            for done in range(0, entries, step):
                out.write(one * min(step, entries - done))
        length = out.tell() - start
        count = listed if claimed is None else claimed
        if zip64 or count > 0xFFFF:
            at = out.tell()
            out.write(
                struct.pack(
                    "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, length, start
                )
            )
            out.write(struct.pack("<4sLQL", b"PK\x06\x07", 0, at, 1))
            short, length, start = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF
        else:
            short = count
        out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, short, short, length, start, 0))


def zip_bzip2(path: Path, expanded: int = GB, recorded: int = HEAD_BYTES) -> None:
    """A zip holding one bzip2 member of `expanded` NUL bytes, its entry recording
    `recorded` bytes (a lie that passes any estimate made from the directory): under 1 KB for
    1 GiB (about 5 s to write). Python's bzip2 reader expands a member whole, whatever a read
    asks for."""
    import bz2

    packer = bz2.BZ2Compressor(9)
    block = bytes(MB)
    packed = b"".join(packer.compress(block) for _ in range(expanded // MB)) + packer.flush()
    write_zip(path, [Member(b"submission.csv", packed, 12, recorded, zlib.crc32(b""))])


def zip_deflate_rows(path: Path, seed: int = 0, expanded: int = GB, padding: int = 0) -> None:
    """A zip holding one deflate member of `expanded` bytes of valid-looking rows (the
    repeated block of `repeated_gzip`): about 1 MB for 1 GiB; `padding` bytes after its
    stream make its directory entry claim a plausible ratio."""
    rows = user_rows(seed)
    block = rows * (MB // len(rows))
    copies = (expanded - len(HEADER)) // len(block)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = packer.compress(HEADER) + packer.flush(zlib.Z_FULL_FLUSH)
    packed = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(HEADER)
    for _ in range(copies):
        crc = zlib.crc32(block, crc)
    data = start + packed * copies + packer.flush()
    size = len(HEADER) + copies * len(block)
    write_zip(path, [Member(b"submission.csv", data, 8, size, crc)], padding=padding)


def zip_entries(path: Path, entries: int = 3_000_000) -> None:
    """A zip whose central directory lists one empty file `entries` times: 141 MB for 3
    million entries, which `zipfile` parses into 1.5 GB of objects before they are counted."""
    write_zip(path, [stored("a", b"")], entries=entries)


def zip_padded(path: Path, seed: int = 0) -> None:
    """`zip_deflate_rows` with 10 MiB of padding after the stream: its entry claims 70 times,
    within the cap, and only the expansion itself shows 220 times."""
    zip_deflate_rows(path, seed, padding=10 * MB)


#: The empty gzip member bgzip ends every file with (its end-of-file marker).
BGZF_EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


#: Hostile zip archives, refused within a memory budget of `ZIP_BUDGET` bytes.
ZIPS = (
    Hostile(
        "bzip2.zip",
        zip_bzip2,
        "zip of a bzip2 member of 1 GiB of NUL bytes (its entry says 8 KiB)",
        "unsupported_compression",
    ),
    Hostile(
        "deflate_bomb.zip",
        zip_deflate_rows,
        "zip of a deflate member of 1 GiB of valid-looking rows",
        "file_too_large",
    ),
    Hostile(
        "entries.zip",
        lambda path: zip_entries(path, 1_500_000),
        "zip whose central directory lists 1,500,000 entries",
        "file_format",
    ),
)
ZIP_BUDGET = 512 * MB
