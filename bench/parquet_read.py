"""How the ways of reading a competition's two Parquet files compare, each in a fresh process:
polars alone (the floor), pyarrow reading each file whole (the scorer before issue 22),
pyarrow in runs of row groups, and that in the C allocator (the scorer now).

    .venv/bin/python bench/parquet_read.py --users 1000000 --repeats 5

Each child imports polars and pyarrow, reads the solution then the submission as the scorer
does (the stage column as a dictionary), holds both frames, and reports its CPU time, and
how many chunks each frame has; this script adds the child's wall time and peak RSS
(bench/measure.py) and prints the medians, the ways interleaved over the repeats.
bench/PARQUET.md says what the figures mean.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from generate import DEFAULT_WORK, generate

HERE = Path(__file__).resolve().parent

WAYS = {
    "polars": "pl.read_parquet (the floor)",
    "whole": "pyarrow, each file whole (before)",
    "runs": "pyarrow, runs of row groups",
    "runs_malloc": "pyarrow, runs of row groups, C allocator (now)",
}

CHILD = """
import json, sys, time
import polars as pl, pyarrow as pa, pyarrow.parquet as pq
way, folder = sys.argv[1], sys.argv[2]
runs = 1 << 17
frames = []
for name in ("solution", "submission"):
    path = f"{folder}/{name}.parquet"
    if way == "polars":
        frames.append(pl.read_parquet(path))
        continue
    default = pa.default_memory_pool()
    if way == "runs_malloc":
        pa.set_memory_pool(pa.system_memory_pool())
    parquet = pq.ParquetFile(path, read_dictionary=["stage"] if name == "solution" else [])
    pa.set_memory_pool(default)
    if way == "whole":
        table = parquet.read()
    else:
        groups, batch, size = [], [], 0
        for i in range(parquet.num_row_groups):
            batch.append(i)
            size += parquet.metadata.row_group(i).num_rows
            if size >= runs:
                groups.append(batch)
                batch, size = [], 0
        groups += [batch] if batch else []
        table = pa.concat_tables(parquet.read_row_groups(g) for g in groups)
    frames.append(pl.from_arrow(table) if way == "whole" else pl.from_arrow(table, rechunk=False))
    del table
print(json.dumps({"chunks": [f.get_column(f.columns[0]).n_chunks() for f in frames]}))
"""


def measure(way: str, folder: Path) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        wrapper = [sys.executable, "-S", str(HERE / "measure.py"), result.name, "600"]
        child = [sys.executable, "-c", CHILD, way, str(folder)]
        out = subprocess.run([*wrapper, "--", *child], capture_output=True, text=True, check=True)
        figures: dict[str, Any] = json.loads(Path(result.name).read_text())
    figures["chunks"] = json.loads(out.stdout)["chunks"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    args = parser.parse_args(argv)
    folder = generate(args.users, work=args.work)
    samples: dict[str, list[dict[str, Any]]] = {way: [] for way in WAYS}
    ways = list(WAYS)
    for repeat in range(args.repeats + 1):  # the first round warms the page cache
        for way in ways[repeat % len(ways) :] + ways[: repeat % len(ways)]:
            figures = measure(way, folder)
            if repeat:
                samples[way].append(figures)
    print(f"{args.users:,} users, {args.repeats} repeats, medians")
    print("| way | wall s | cpu s | peak RSS MB | chunks (solution, submission) |")
    print("|---|---:|---:|---:|---|")
    for way, label in WAYS.items():
        runs = samples[way]
        wall, cpu, rss = (
            statistics.median(r[key] for r in runs) for key in ("wall", "cpu", "rss_mb")
        )
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {rss:,.0f} | {runs[0]['chunks']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
