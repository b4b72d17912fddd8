"""What hostile files cost `scorer validate` and `scorer score`, and what the hostile-input
checks cost a large valid file; writes bench/HOSTILE.md.

    .venv/bin/python bench/hostile_bench.py [--users 1000000] [--repeats 3] [--base bb36a49]

Every hostile file of tests/support/hostile_files.py (made from seed 0 in a temporary folder), a
named pipe, a folder and a 40 MB cell given to the Kaggle adapter are run through the CLI of
this tree, each in its own process under bench/measure.py (its own peak RSS, wall and CPU
time), with an 8 GiB address-space limit so that a regression fails instead of exhausting the
machine. The fast path (a valid submission of `--users` users as .csv.gz and as .parquet,
from bench/generate.py) is run on this tree and on `--base` (exported with `git archive`),
interleaved, and the medians shown.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.hostile_files import HOSTILE, KAGGLE_CELL, MEASURE  # noqa: E402 (tests/ is put on the path first)

#: The address space a measured command may take: a regression dies, the machine lives.
ADDRESS_SPACE = 8 << 30

#: What issue 12 measured before this work (`/usr/bin/time -v scorer validate F --targets
#: data/targets.csv`), by file.
BEFORE = {
    "rows_bomb.csv.gz": "13.3 GB",
    "nul_bomb.csv.gz": "16.3 GB",
    "repeated.parquet": "17.7 GB",
    "columns.parquet": "1.4 GB, 15.6 s",
    "long_cells.parquet": "",
    "pipe.csv": "hangs",
    "folder.csv": "'no such file'",
    "kaggle 40 MB cell": "1.7 GB",
}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def measure(command: list[str], tree: Path, timeout: float = 600) -> dict[str, Any]:
    """Run `command` with `tree` first on the path; its exit, output, wall, CPU, peak RSS."""
    with tempfile.TemporaryDirectory(prefix="scorer-bench-") as folder:
        result = Path(folder) / "result.json"
        done = subprocess.run(
            [sys.executable, "-S", str(MEASURE), str(result), str(timeout), "--", *command],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
            preexec_fn=_limited,
        )
        figures: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return {**figures, "stdout": done.stdout, "stderr": done.stderr}


def verdict(run: dict[str, Any]) -> str:
    """The codes of a `--json` run, or what else it printed."""
    if "Traceback" in run["stderr"] or "panicked" in run["stderr"]:
        return "TRACEBACK"
    try:
        data = json.loads(run["stdout"].strip().splitlines()[-1])
    except (ValueError, IndexError):
        return run["stdout"].strip()[:60] or run["stderr"].strip()[-60:]
    if "report" in data:
        return ", ".join(p["code"] for p in data["report"]["problems"])
    return str(data.get("status"))


def hostile_rows(work: Path, corpus: Path) -> list[dict[str, Any]]:
    targets, solution = corpus / "targets.csv", corpus / "solution.csv"
    rows = []
    cases: list[tuple[str, str, Path]] = []
    for hostile in HOSTILE:
        path = work / hostile.name
        started = time.perf_counter()
        hostile.make(path)
        print(f"made {hostile.name} in {time.perf_counter() - started:.1f} s", flush=True)
        cases.append((hostile.name, hostile.what, path))
    os.mkfifo(work / "pipe.csv")
    cases.append(("pipe.csv", "a named pipe as the submission", work / "pipe.csv"))
    (work / "folder.csv").mkdir()
    cases.append(("folder.csv", "a folder as the submission", work / "folder.csv"))
    scorer = [sys.executable, "-m", "scorer"]
    for name, what, path in cases:
        size = path.stat().st_size if path.is_file() else 0
        for command, truth in (
            ("validate", ["--targets", targets]),
            ("score", ["--solution", solution]),
        ):
            run = measure([*scorer, command, str(path), *map(str, truth), "--json"], ROOT)
            rows.append({"file": name, "what": what, "bytes": size, "command": command, **run})
            print(f"{name} {command}: {verdict(run)} {run['rss_mb']:.0f} MB {run['wall']:.2f} s")
    run = measure([sys.executable, "-c", KAGGLE_CELL], ROOT)
    rows.append(
        {
            "file": "kaggle 40 MB cell",
            "what": "a pandas frame with a 40 MB cell given to kaggle.score",
            "bytes": 0,
            "command": "kaggle.score",
            **run,
            "verdict": "refused: Kaggle's fixed message" if run["exit"] == 1 else "accepted",
        }
    )
    return rows


def fast_rows(users: int, base: str, repeats: int, work: Path) -> list[dict[str, Any]]:
    """A valid submission as .csv.gz and .parquet, validated on this tree and on `base`."""
    sys.path.insert(0, str(HERE))
    from generate import generate

    data = generate(users)
    gz = work / "submission.csv.gz"
    with (data / "submission.csv").open("rb") as source, gzip.open(gz, "wb", 6) as out:
        shutil.copyfileobj(source, out, 16 << 20)
    before = work / "base"
    before.mkdir()
    archive = subprocess.run(["git", "archive", base, "scorer"], cwd=ROOT, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
    trees = {"base": before, "this tree": ROOT}
    rows = []
    repeated = work / "repeated.parquet"
    if repeated.is_file():  # the hostile Parquet against a large competition's targets
        command = [sys.executable, "-m", "scorer", "validate", str(repeated)]
        command += ["--targets", str(data / "targets.csv"), "--json"]
        run = measure(command, ROOT)
        rows.append(
            {
                "file": repeated.name,
                "bytes": repeated.stat().st_size,
                "tree": "this tree",
                "verdict": verdict(run),
                "wall": run["wall"],
                "cpu": run["cpu"],
                "rss_mb": run["rss_mb"],
                "walls": [round(run["wall"], 2)],
            }
        )
    for path in (gz, data / "submission.parquet"):
        samples: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for repeat in range(repeats):
            order = list(trees) if repeat % 2 == 0 else list(trees)[::-1]
            for name in order:
                command = [sys.executable, "-m", "scorer", "validate", str(path)]
                command += ["--targets", str(data / "targets.csv"), "--parts", "1", "--json"]
                run = measure(command, trees[name])
                samples[name].append(run)
                print(f"{path.name} {name}: {verdict(run)} {run['wall']:.2f} s", flush=True)
        for name, runs in samples.items():
            rows.append(
                {
                    "file": path.name,
                    "bytes": path.stat().st_size,
                    "tree": name,
                    "verdict": verdict(runs[0]),
                    "wall": statistics.median(r["wall"] for r in runs),
                    "cpu": statistics.median(r["cpu"] for r in runs),
                    "rss_mb": statistics.median(r["rss_mb"] for r in runs),
                    "walls": [round(r["wall"], 2) for r in runs],
                }
            )
    return rows


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "scorer"], cwd=ROOT, capture_output=True
    )
    return head.stdout.decode().strip() + (" (with uncommitted changes)" if dirty.stdout else "")


def render(
    hostile: list[dict[str, Any]], fast: list[dict[str, Any]], args: argparse.Namespace
) -> str:
    command = " ".join([".venv/bin/python bench/hostile_bench.py", *sys.argv[1:]])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# Hostile files: what refusing them costs",
        "",
        f"Regenerate with `{command}` from the repository root. Each file is made from "
        "seed 0 by `tests/support/hostile_files.py` (the files `tests/read/test_hostile.py` "
        "runs); each command runs in its own process under `bench/measure.py` (peak RSS: the "
        "command's own `ru_maxrss`; wall from spawn to exit, start-up and imports included), "
        "with an 8 GiB address-space limit. Targets and solution: `tests/corpus` (4 target users).",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- code: commit {commit()}",
        f"- machine: {os.cpu_count()} cores (shared: load average {load}), "
        f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / (1 << 30):.0f} GiB, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}",
        "",
        "| file | what | on disk | command | exit | verdict | peak RSS | wall "
        "| issue 12 (before) |",
        "|---|---|---:|---|---:|---|---:|---:|---|",
    ]
    for row in hostile:
        shown = row.get("verdict") or verdict(row)
        size = _size(row["bytes"])
        lines.append(
            f"| `{row['file']}` | {row['what']} | {size} | {row['command']} | {row['exit']} "
            f"| `{shown}` | {row['rss_mb']:,.0f} MB | {row['wall']:.2f} s "
            f"| {BEFORE.get(row['file'], '')} |"
        )
    lines += [
        "",
        f"## The fast path: a valid submission of {args.users:,} users",
        "",
        f"`scorer validate FILE --targets targets.csv --parts 1` on `bench/generate.py`'s "
        f"files, on this tree and on commit {args.base} (before this work), interleaved; "
        f"medians of {args.repeats}. The .csv.gz is now expanded into a temporary file a chunk "
        "at a time instead of into memory; the Parquet file is judged from its footer first. "
        "The first row is the hostile `repeated.parquet` against these targets (at most "
        "20,000,000 valid rows, 240,000,000 declared).",
        "",
        "| file | on disk | tree | verdict | wall | cpu | peak RSS | walls |",
        "|---|---:|---|---|---:|---:|---:|---|",
    ]
    for row in fast:
        lines.append(
            f"| `{row['file']}` | {row['bytes'] / (1 << 20):,.0f} MiB | {row['tree']} "
            f"| `{row['verdict']}` | {row['wall']:.2f} s | {row['cpu']:.2f} s "
            f"| {row['rss_mb']:,.0f} MB | {', '.join(map(str, row['walls']))} |"
        )
    return "\n".join(lines) + "\n"


def _size(count: int) -> str:
    if not count:
        return "—"
    if count < 1 << 20:
        return f"{count / 1024:,.1f} KiB"
    return f"{count / (1 << 20):,.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--base", default="bb36a49", help="the commit before this work")
    parser.add_argument("--output", type=Path, default=HERE / "HOSTILE.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scorer-hostile-bench-") as folder:
        work = Path(folder)
        hostile = hostile_rows(work, ROOT / "tests" / "corpus")
        fast = fast_rows(args.users, args.base, args.repeats, work)
    args.output.write_text(render(hostile, fast, args), encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
