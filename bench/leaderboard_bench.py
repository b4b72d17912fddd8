"""Time `scorer leaderboard score` on 100 submissions of 100k users: first run, cached rerun.

    .venv/bin/python bench/leaderboard_bench.py --root /tmp/lb100

Builds (once; `--rebuild` to start over) a competition of `--users` target users with
`make_competition`, and `--teams` x `--per-team` submissions, each the sample submission with
a random share of users' lists reversed and another share replaced by never-lost editions,
so every file differs. Then runs the real CLI in a subprocess on a fresh database (every file
scored), runs it again (every file from the cache), and shows both boards; it prints a
Markdown table of wall and CPU time and writes the figures to ROOT/results.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from scorer.competition import LOST_ITEMS
from scorer.leaderboard.boards import iso
from scorer.leaderboard.demo import junk
from scorer.synthetic import make_competition

K = LOST_ITEMS.k

SCORER = Path(sys.executable).with_name("scorer")


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
    """Wall and CPU seconds (user + system, of the child) of one CLI call, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(SCORER), *args], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"scorer {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return wall, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/lb100"))
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--teams", type=int, default=25)
    parser.add_argument("--per-team", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rebuild", action="store_true")
    options = parser.parse_args()
    root: Path = options.root
    if options.rebuild and root.exists():
        shutil.rmtree(root)
    if not (root / "manifest.csv").is_file():
        root.mkdir(parents=True, exist_ok=True)
        build(root, options.users, options.teams, options.per_team, options.seed)
    db = root / "board.db"
    for stale in root.glob("board.db*"):
        stale.unlink()
    files = sorted((root / "submissions").rglob("*.csv"))
    size = sum(p.stat().st_size for p in files)
    log, solution = str(root / "manifest.csv"), str(root / "solution.csv")
    score = ["leaderboard", "score", log, "--solution", solution, "--db", str(db), "--json"]
    results: dict[str, object] = {
        "submissions": len(files),
        "users": options.users,
        "bytes": size,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": os.getloadavg()[0],
    }
    show = ["leaderboard", "show", "--db", str(db)]
    page = ["--phase", "final", "--format", "html", "--output", str(root / "board.html")]
    steps = [
        ("first run (every file scored)", score),
        ("second run (every file cached)", score),
        ("show --phase public --format json", [*show, "--json"]),
        ("show --phase final --format html", [*show, *page]),
    ]
    table = ["| step | wall s | CPU s | outcome |", "|:---|---:|---:|:---|"]
    for name, args in steps:
        wall, cpu, out = timed(args)
        outcome = ""
        if args is score:
            counts = json.loads(out)
            outcome = ", ".join(f"{counts[k]} {k}" for k in ("scored", "cached", "rejected"))
        results[name] = {"wall": round(wall, 2), "cpu": round(cpu, 2), "outcome": outcome}
        table.append(f"| {name} | {wall:.1f} | {cpu:.1f} | {outcome} |")
    results["load_after"] = os.getloadavg()[0]
    results["db_bytes"] = db.stat().st_size
    (root / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"{len(files)} submissions of {options.users:,} users ({size / 1e9:.2f} GB of CSV), "
        f"{os.cpu_count()} CPUs, load {results['load_before']:.1f} → {results['load_after']:.1f}"
    )
    print("\n".join(table))
    print(f"database: {db.stat().st_size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
