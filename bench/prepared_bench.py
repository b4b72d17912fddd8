"""A prepared solution at scale: what `scorer prepare` costs, how fast its file loads, and a
score with it against a process that reads the submission alone. Writes `bench/PREPARED.md`.

    .venv/bin/python bench/prepared_bench.py --users 1000000

The synthetic competition of `bench/generate.py` (`--work` names another folder of them). Every
figure but the load is a fresh process under `bench/measure.py`, run `--runs` times (median);
the floor starts Python, imports polars and reads the submission CSV with its typed schema,
nothing else. A score from the prepared file must equal the score from the CSV, to the bit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from measure import fresh

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

FLOOR = """
import sys, polars as pl
schema = {"user_id": pl.Int64, "edition_id": pl.Int64, "rank": pl.Int64}
print(pl.read_csv(sys.argv[1], schema=schema).height)
"""

LOAD = """
import statistics, sys, time
from pathlib import Path

from measure import fresh
from scorer.prepared import load
times = []
for _ in range(int(sys.argv[2])):
    started = time.perf_counter()
    load(Path(sys.argv[1]))
    times.append(time.perf_counter() - started)
print(min(times), statistics.median(times))
"""


def measured(command: list[str], scratch: Path, name: str) -> tuple[dict[str, float], str]:
    """One fresh process: its wall time, CPU time and peak RSS, and what it printed."""
    out = scratch / f"{name}.out"
    return fresh(command, scratch / f"{name}.stats.json", out), out.read_text()


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=HERE / "work")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    folder = args.work / str(args.users)
    if not (folder / "solution.csv").is_file():
        subprocess.run(
            [sys.executable, str(HERE / "generate.py"), "--users", str(args.users)], check=True
        )
        folder = HERE / "work" / str(args.users)
    solution, submission = folder / "solution.csv", folder / "submission.csv"
    scorer = [sys.executable, "-m", "scorer"]
    with tempfile.TemporaryDirectory(prefix="prepared-") as scratch_name:
        scratch = Path(scratch_name)
        ready = scratch / "solution.prepared"
        made, _ = measured(
            [*scorer, "prepare", str(solution), "--out", str(ready), "--json"], scratch, "prepare"
        )
        loads = subprocess.run(
            [sys.executable, "-c", LOAD, str(ready), "7"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        rows: dict[str, list[dict[str, float]]] = {"floor": [], "prepared": [], "csv": []}
        outputs: dict[str, str] = {}
        for run in range(args.runs):
            commands = {
                "floor": [sys.executable, "-c", FLOOR, str(submission)],
                "prepared": [*scorer, "score", str(submission), "--solution", str(ready), "--json"],
                "csv": [*scorer, "score", str(submission), "--solution", str(solution), "--json"],
            }
            for name, command in commands.items():
                stats, printed = measured(command, scratch, f"{name}{run}")
                rows[name].append(stats)
                outputs[name] = printed
                print(name, stats, flush=True)
        size = ready.stat().st_size
    same = json.loads(outputs["prepared"]) == json.loads(outputs["csv"])
    floor = median(rows["floor"], "wall")
    lines = [
        "# A prepared solution",
        "",
        f"`.venv/bin/python bench/prepared_bench.py --users {args.users}` on {platform.node()} "
        f"({platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}); fresh processes, median of {args.runs} runs.",
        "",
        f"- `scorer prepare`: {made['wall']:.2f} s, peak RSS {made['rss_mb']:,.0f} MB; the "
        f"prepared file is {size / 1e6:,.1f} MB ({solution.stat().st_size / 1e6:,.1f} MB of CSV).",
        f"- `load` (in a warm process, 7 times): best {float(loads[0]):.3f} s, median "
        f"{float(loads[1]):.3f} s.",
        "",
        "| process | wall | × floor | peak RSS |",
        "|---|---:|---:|---:|",
    ]
    names = {
        "floor": "reads the submission CSV (typed polars), nothing else",
        "prepared": "`scorer score SUB --solution solution.prepared --json`",
        "csv": "`scorer score SUB --solution solution.csv --json`",
    }
    for name, label in names.items():
        wall = median(rows[name], "wall")
        lines.append(
            f"| {label} | {wall:.2f} s | {wall / floor:.2f} | "
            f"{median(rows[name], 'rss_mb'):,.0f} MB |"
        )
    lines += [
        "",
        f"Same JSON output from the prepared file and the CSV: {'yes' if same else 'NO'}.",
    ]
    (HERE / "PREPARED.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
