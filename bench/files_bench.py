"""Where a server's uploads live when its workers are on other machines: in PostgreSQL, in
chunks of a MiB, under each of the column's three storages (pglz, PostgreSQL's default
compression; lz4; uncompressed, `STORAGE EXTERNAL`), against the baseline of the one-machine
server, a file written to the folder and fsynced. Each is written and read back `--rounds`
times; the table gives the medians, the rate and the ratio to the folder's write, and the
size kept. It writes its section of bench/SERVE.md, between its markers, in place.

Run from the repository's root: `.venv/bin/python bench/files_bench.py` (a 1M-user CSV of
bench/generate.py, 368 MB, unless `--users` says otherwise)."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import psycopg  # noqa: E402 - after the paths above
from generate import generate  # noqa: E402
from report import put_section  # noqa: E402
from support.postgres_cluster import cluster, new_database  # noqa: E402 - the tests' cluster

START, END = "<!-- files: written by bench/files_bench.py -->", "<!-- files end -->"
CHUNK = 1 << 20

#: The column of each storage, as `CREATE TABLE` declares it, and what it changes after.
STORAGES = {
    "pglz (PostgreSQL's default)": ("data BYTEA NOT NULL", None),
    "lz4 (the server's choice)": ("data BYTEA COMPRESSION lz4 NOT NULL", None),
    "uncompressed": ("data BYTEA NOT NULL", "ALTER COLUMN data SET STORAGE EXTERNAL"),
}


def to_folder(source: Path, folder: Path) -> tuple[float, float, int]:
    """The one-machine server's way: copy into the folder, fsync; then read it back."""
    target = folder / "upload.csv"
    started = time.perf_counter()
    with source.open("rb") as read, target.open("wb") as write:
        shutil.copyfileobj(read, write, CHUNK)
        write.flush()
        os.fsync(write.fileno())
    wrote = time.perf_counter() - started
    started = time.perf_counter()
    with target.open("rb") as read:
        while read.read(CHUNK):
            pass
    return wrote, time.perf_counter() - started, target.stat().st_size


def to_database(
    source: Path, url: str, column: str, change: str | None
) -> tuple[float, float, int]:
    """The files table of the PostgreSQL store, with `column`: written in one transaction,
    a chunk an INSERT, as the store keeps an upload; then read back a few chunks at a time."""
    with psycopg.connect(new_database(url), autocommit=True) as db:
        db.execute(f"CREATE TABLE files (name TEXT, seq INT, {column}, PRIMARY KEY (name, seq))")
        if change is not None:
            db.execute(f"ALTER TABLE files {change}")
        started = time.perf_counter()
        with db.transaction(), source.open("rb") as read:
            for seq, chunk in enumerate(iter(lambda: read.read(CHUNK), b"")):
                db.execute("INSERT INTO files VALUES (%s, %s, %s)", ("upload", seq, chunk))
        wrote = time.perf_counter() - started
        started = time.perf_counter()
        with db.transaction(), db.cursor(name="back") as rows:
            rows.itersize = 4
            rows.execute("SELECT data FROM files WHERE name = 'upload' ORDER BY seq")
            for _ in rows:
                pass
        read_back = time.perf_counter() - started
        (kept,) = db.execute("SELECT pg_total_relation_size('files')").fetchone() or (0,)
    return wrote, read_back, int(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "work")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "SERVE.md")
    args = parser.parse_args()
    source = generate(args.users, work=args.work) / "submission.csv"
    size = source.stat().st_size
    results: dict[str, list[tuple[float, float, int]]] = {}
    with tempfile.TemporaryDirectory() as folder, cluster() as url:
        for _ in range(args.rounds):  # each round every way once: the noise falls on all
            results.setdefault("folder", []).append(to_folder(source, Path(folder)))
            for name, (column, change) in STORAGES.items():
                results.setdefault(name, []).append(to_database(source, url, column, change))
    baseline = statistics.median(w for w, _, _ in results["folder"])
    lines = [
        START,
        "## Where the uploads live: the folder or PostgreSQL",
        "",
        f"`.venv/bin/python bench/files_bench.py` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC): a "
        f"{args.users:,}-user CSV of {size / 1e6:.0f} MB written {args.rounds} times each way, "
        "then read back; medians. The folder is the one-machine server's (written, fsynced); "
        "PostgreSQL is the store's `files` table, a MiB a row, written in one transaction "
        "(the cluster runs with fsync off, as in the claim bench), read back through a "
        "server-side cursor.",
        "",
        "| where | write | rate | × the folder's write | read back | kept |",
        "|:---|---:|---:|---:|---:|---:|",
    ]
    for name, runs in results.items():
        wrote = statistics.median(w for w, _, _ in runs)
        read_back = statistics.median(r for _, r, _ in runs)
        kept = runs[-1][2]
        where = "the folder (fsync)" if name == "folder" else f"PostgreSQL, {name}"
        lines.append(
            f"| {where} | {wrote:.2f} s | {size / wrote / 1e6:.0f} MB/s | {wrote / baseline:.1f}× "
            f"| {read_back:.2f} s | {kept / 1e6:.0f} MB |"
        )
    wrote = {name: statistics.median(w for w, _, _ in runs) for name, runs in results.items()}
    kept = {name: runs[-1][2] for name, runs in results.items()}
    lz4, pglz, plain = (next(n for n in results if n.startswith(w)) for w in ("lz4", "pglz", "unc"))
    lines += [
        "",
        f"The store declares its column `COMPRESSION lz4`: it writes at "
        f"{wrote[plain] / wrote[lz4]:.1f}× the speed of no compression and keeps "
        f"{kept[lz4] / kept[plain]:.0%} of its size; PostgreSQL's default, pglz, keeps "
        f"{kept[pglz] / kept[plain]:.0%} but writes {wrote[pglz] / wrote[lz4]:.1f}× slower, in "
        "the transaction that accepts the upload. The folder is faster still, but only its "
        "machine has it: workers elsewhere would need it shared (NFS), one more system to run "
        "and to trust with the uploads, where the database already keeps them durably.",
        "",
        END,
    ]
    put_section(args.out, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
