"""Time `scorer leaderboard score` on 100 submissions of 100k users: serial and parallel first
runs, interleaved, then a cached rerun; write bench/LEADERBOARD.md.

    .venv/bin/python bench/leaderboard_bench.py --root /tmp/lb100 --repeats 3

Builds (once; `--rebuild` to start over) a competition of `--users` target users with
`make_competition`, and `--teams` x `--per-team` submissions, each the sample submission with
a random share of users' lists reversed and another share replaced by never-lost editions,
so every file differs. Then runs the real CLI in a subprocess, `--repeats` times each, on a
fresh database (every file scored): with `--workers 1` (serial) and with the default workers
(one a core, as many as the memory holds), alternating which goes first. Both must store the
same verdicts, scores and per-user values to the bit. Then a rerun (every file from the
cache) and both boards. Prints a Markdown table of wall and CPU time (medians), writes it to
`--output` (bench/LEADERBOARD.md) and the figures to ROOT/results.json.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from scorer.competition import LOST_ITEMS
from scorer.leaderboard.demo import junk
from scorer.leaderboard.stale import iso
from scorer.leaderboard.worker import DEFAULT_BUDGET, default_workers
from scorer.synthetic import make_competition

K = LOST_ITEMS.k

HERE = Path(__file__).resolve().parent

#: The line after which the output's hand-written notes start; a rerun keeps them.
NOTES = "<!-- notes: kept by a rerun -->"
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def build(root: Path, users: int, teams: int, per_team: int, seed: int) -> None:
    """The solution, the submissions and the manifest under `root`."""
    started = time.perf_counter()
    comp = make_competition(users, seed=seed)
    comp.solution.write_csv(root / "solution.csv")
    base = comp.submission
    ids = comp.targets.get_column("user_id")
    rng = np.random.default_rng(seed)
    start = datetime(2024, 5, 1, tzinfo=UTC)
    rows = []
    for t in range(teams):
        team = f"team-{t:02d}"
        chosen = set(rng.choice(per_team, size=int(rng.integers(0, 3)), replace=False).tolist())
        for s in range(per_team):
            reverse = ids.sample(
                fraction=float(rng.uniform(0, 0.5)), seed=int(rng.integers(1 << 31))
            )
            damage = ids.sample(
                fraction=float(rng.uniform(0, 0.1)), seed=int(rng.integers(1 << 31))
            )
            frame = base.with_columns(
                pl.when(pl.col("user_id").is_in(reverse.implode()))
                .then(K + 1 - pl.col("rank"))
                .otherwise(pl.col("rank"))
                .alias("rank")
            )
            frame = junk(frame, damage)
            path = root / "submissions" / team / f"sub-{s}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            frame.write_csv(path)
            when = start + timedelta(minutes=int(rng.integers(0, 60 * 24 * 30)))
            rows.append([team, path.relative_to(root).as_posix(), iso(when), int(s in chosen)])
            print(f"\rbuilt {len(rows)}/{teams * per_team} submissions", end="", file=sys.stderr)
    print(file=sys.stderr)
    with (root / "manifest.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["team", "path", "submitted_at", "selected"])
        writer.writerows(rows)
    print(f"built in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def timed(args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, of the child and its workers) of one CLI call,
    and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "scorer", *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"scorer {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return wall, cpu, done.stdout


def verdicts(db: Path) -> tuple[str, float]:
    """A sha256 of every verdict a database holds (team, path, content hash, status, scores,
    error, per-user values as stored), and the seconds its workers spent judging them."""
    digest = hashlib.sha256()
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT team, path, content_hash, status, overall, public, private, metrics, error, "
            "(SELECT group_concat(hex(ndcg), '|') FROM (SELECT ndcg FROM per_user p "
            " WHERE p.verdict = v.id ORDER BY split)) FROM verdicts v ORDER BY team, path"
        ).fetchall()
        (seconds,) = con.execute("SELECT sum(seconds) FROM verdicts").fetchone()
    for row in rows:
        digest.update(repr(tuple(x.hex() if isinstance(x, float) else x for x in row)).encode())
    return digest.hexdigest(), float(seconds or 0.0)


def fresh(root: Path, name: str) -> Path:
    """A database path under `root` with nothing at it."""
    for stale in root.glob(f"{name}*"):
        stale.unlink()
    return root / name


def with_notes(output: Path, text: str) -> None:
    """Write a report's `text` to `output`, and after it the notes written by hand there
    below the NOTES marker, if any: a rerun keeps them."""
    notes = output.read_text() if output.is_file() else ""
    kept = notes[notes.index(NOTES) :] if NOTES in notes else ""
    output.write_text(text + ("\n" + kept if kept else ""))


def commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "-C", str(HERE), "status", "--porcelain", "--", "scorer", "bench"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/lb100"))
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--teams", type=int, default=25)
    parser.add_argument("--per-team", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--output", type=Path, default=HERE / "LEADERBOARD.md")
    options = parser.parse_args()
    root: Path = options.root
    if options.rebuild and root.exists():
        shutil.rmtree(root)
    if not (root / "manifest.csv").is_file():
        root.mkdir(parents=True, exist_ok=True)
        build(root, options.users, options.teams, options.per_team, options.seed)
    files = sorted((root / "submissions").rglob("*.csv"))
    size = sum(p.stat().st_size for p in files)
    log, solution = str(root / "manifest.csv"), str(root / "solution.csv")
    workers = default_workers(DEFAULT_BUDGET)

    def score(db: Path, *more: str) -> list[str]:
        return [
            "leaderboard",
            "score",
            log,
            "--solution",
            solution,
            "--db",
            str(db),
            "--json",
            *more,
        ]

    modes = {"serial": ["--workers", "1"], "parallel": []}
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    kept: dict[str, str] = {}
    for repeat in range(options.repeats):
        order = list(modes) if repeat % 2 == 0 else list(reversed(modes))
        for mode in order:
            db = fresh(root, f"{mode}.db")
            load = os.getloadavg()[0]
            wall, cpu, out = timed(score(db, *modes[mode]))
            counts = json.loads(out)
            if counts["scored"] != len(files):
                raise SystemExit(f"{mode}: {counts['scored']} of {len(files)} scored")
            digest, judging = verdicts(db)
            if kept.setdefault(mode, digest) != digest or kept.get("serial", digest) != digest:
                raise SystemExit(f"{mode} run {repeat + 1}: verdicts differ from the first run's")
            runs[mode].append({"wall": wall, "cpu": cpu, "judging": judging, "load": load})
            print(
                f"repeat {repeat + 1} {mode}: wall {wall:.1f} s, cpu {cpu:.1f} s, "
                f"judging {judging:.1f} s, load {load:.1f}",
                file=sys.stderr,
            )
    same = kept["serial"] == kept["parallel"]
    if not same:
        raise SystemExit("serial and parallel runs stored different verdicts")

    db = root / "parallel.db"
    rerun_wall, rerun_cpu, out = timed(score(db))
    rerun = json.loads(out)
    show = ["leaderboard", "show", "--db", str(db)]
    page = ["--phase", "final", "--format", "html", "--output", str(root / "board.html")]
    others = {
        "second run (every file cached)": (rerun_wall, rerun_cpu),
        "show --phase public --format json": timed([*show, "--json"])[:2],
        "show --phase final --format html": timed([*show, *page])[:2],
    }

    def median(mode: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[mode])

    table = [
        "| first run (every file scored) | workers | wall (median) | CPU (median) "
        "| CPU / wall / cores | judging (sum of `seconds`) | walls |",
        "|:---|---:|---:|---:|---:|---:|:---|",
    ]
    for mode, count in (("serial", 1), ("parallel", workers)):
        wall, cpu = median(mode, "wall"), median(mode, "cpu")
        walls = ", ".join(f"{run['wall']:.1f}" for run in runs[mode])
        table.append(
            f"| {mode} | {count} | {wall:.1f} s | {cpu:.1f} s | {cpu / wall / CORES:.2f} "
            f"| {median(mode, 'judging'):.1f} s | {walls} |"
        )
    ratios = [p["wall"] / s["wall"] for s, p in zip(runs["serial"], runs["parallel"], strict=True)]
    ratio = median("parallel", "wall") / median("serial", "wall")
    cpu_ratio = median("parallel", "cpu") / median("serial", "cpu")
    loads = [run["load"] for mode in modes for run in runs[mode]]
    results = {
        "submissions": len(files),
        "users": options.users,
        "bytes": size,
        "cores": CORES,
        "workers": workers,
        "python": platform.python_version(),
        "runs": runs,
        "ratio": ratio,
        "ratios": ratios,
        "cpu_ratio": cpu_ratio,
        "same_verdicts": same,
        "others": {name: {"wall": w, "cpu": c} for name, (w, c) in others.items()},
        "rerun": {k: rerun[k] for k in ("scored", "cached", "rejected")},
    }
    (root / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    others_table = ["| step | wall | CPU |", "|:---|---:|---:|"] + [
        f"| {name} | {w:.1f} s | {c:.1f} s |" for name, (w, c) in others.items()
    ]
    command = (
        f".venv/bin/python bench/leaderboard_bench.py --root {root} --repeats {options.repeats}"
    )
    text = "\n".join(
        [
            "# Benchmark: `scorer leaderboard score`, serial and parallel",
            "",
            f"Regenerate with `{command}` from the repository root.",
            "",
            f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            f"- code: commit {commit()}",
            f"- cpu: {CORES} cores ({platform.machine()}); memory: "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / (1 << 30):.0f} GiB",
            f"- python: {platform.python_version()}; polars: {pl.__version__}",
            f"- data: {len(files)} CSV submissions of {options.users:,} users "
            f"({size / 1e9:.2f} GB), {options.teams} teams, seed {options.seed}",
            f"- repeats: {options.repeats}, serial and parallel interleaved (the order alternates"
            " each repeat); medians shown; each run on a fresh database (every file scored)",
            "- load average (1 min) before each run, serial runs then parallel: "
            f"{', '.join(f'{x:.1f}' for x in loads)}",
            "- wall: the CLI's wall time from spawn to exit; CPU: user + sys of the CLI and its"
            " workers; judging: the sum of the verdicts' `seconds` (each worker's time on its"
            " submissions)",
            "",
            *table,
            "",
            f"parallel / serial: wall {ratio:.2f} (per repeat: "
            f"{', '.join(f'{r:.2f}' for r in ratios)}), CPU {cpu_ratio:.2f}. "
            "Both store the same verdicts to the bit (status, scores, per-user values).",
            "",
            *others_table,
            "",
        ]
    )
    with_notes(options.output, text)
    print(text)


if __name__ == "__main__":
    main()
