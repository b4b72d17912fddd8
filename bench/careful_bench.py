"""A file that needs the careful reader, at scale, within the memory budget: issue 12's last
check. Writes `bench/CAREFUL.md`.

    .venv/bin/python bench/careful_bench.py --users 10000000

The synthetic competition of `bench/generate.py` is scored as it is (the fast reader) and with
one cell of its first row followed by a space (`1 `, which the official reader accepts and
polars' typed reader refuses), which sends the whole file to the careful reader.
Both run as fresh processes under `bench/measure.py` with the default budget (4 GiB), one
after the other; the two JSON outputs must hold the same scores, to the bit, and each
process's peak RSS must stay under the budget.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from measure import fresh

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUDGET_MB = 4 << 10


def padded_copy(source: Path, target: Path) -> None:
    """`source` with a space after the rank of its first row, copied a block at a time."""
    with source.open("rb") as read, target.open("wb") as write:
        header = read.readline()
        first = read.readline().rstrip(b"\n").split(b",")
        write.write(header + b",".join([*first[:-1], first[-1] + b" "]) + b"\n")
        while block := read.read(64 << 20):
            write.write(block)


def measured(submission: Path, solution: Path, out: Path) -> tuple[dict[str, float], dict]:
    command = [sys.executable, "-m", "scorer", "score", str(submission), "--solution"]
    command += [str(solution), "--json"]
    return fresh(command, out.with_suffix(".stats.json"), out), json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=10_000_000)
    args = parser.parse_args()
    subprocess.run(
        [sys.executable, str(HERE / "generate.py"), "--users", str(args.users)], check=True
    )
    folder = HERE / "work" / str(args.users)
    solution = folder / "solution.csv"
    rows = []
    with tempfile.TemporaryDirectory(prefix="careful-", dir=HERE / "work") as scratch:
        padded = Path(scratch) / "padded.csv"
        padded_copy(folder / "submission.csv", padded)
        for name, path in (("fast reader", folder / "submission.csv"), ("careful", padded)):
            stats, output = measured(path, solution, Path(scratch) / f"{path.stem}.json")
            rows.append((name, path.stat().st_size, stats, output))
            print(name, stats, output["parts"], output["overall"], flush=True)
    same = all(rows[0][3][split] == rows[1][3][split] for split in ("overall", "public", "private"))
    lines = [
        "# A file that needs the careful reader, within the memory budget",
        "",
        f"`.venv/bin/python bench/careful_bench.py --users {args.users}` on "
        f"{platform.node()} ({platform.machine()}, Python {platform.python_version()}), "
        "one run each, fresh processes, default budget (4 GiB).",
        "",
        "| submission | size | parts | wall | peak RSS | under the budget | overall |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for name, size, stats, output in rows:
        lines.append(
            f"| {name} | {size / 2**30:.2f} GiB | {output['parts']} | {stats['wall']:.0f} s "
            f"| {stats['rss_mb']:,.0f} MB | {'yes' if stats['rss_mb'] < BUDGET_MB else 'NO'} "
            f"| {output['overall']!r} |"
        )
    lines += ["", f"Same scores to the bit (overall, public, private): {'yes' if same else 'NO'}."]
    (HERE / "CAREFUL.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
