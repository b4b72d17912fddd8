"""How long a board's statistics take at Kaggle's size: the intervals, the paired tests and
the tiers (`confidence.analyse`) and the forecast of the private board (`forecast.forecast`),
for 30, 100 and 300 teams on H&M's 1,371,980 users: the intervals, tests and tiers of both
boards (685,990 users each, as the final phase shows them) and the forecast from the public
one, each team one candidate. Time grows with the teams; the line through the measured
points, extended to 3,000 teams, is the extrapolation issue 34 asks for, with the memory the
per-user matrix alone would need there.
It writes its section of bench/TRUST.md, between its markers.

Run from the repository's root: `.venv/bin/python bench/trust_scale.py` (`--quick`: 10,000
users, for a smoke run that writes nothing)."""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from report import put_section  # noqa: E402

from scorer.leaderboard.confidence import analyse  # noqa: E402
from scorer.leaderboard.forecast import forecast  # noqa: E402

START, END = "<!-- scale: written by bench/trust_scale.py -->", "<!-- scale end -->"
USERS = 1_371_980  # H&M's customers
TEAMS = (30, 100, 300)
TARGET = 3_000


def scores(users: int, teams: int, seed: int = 0) -> np.ndarray:
    """Per-user NDCG-like scores: most users 0, a shared difficulty, teams a hair apart."""
    rng = np.random.default_rng(seed)
    hit = rng.random((users, 1)) < 0.3  # a user some team can score at all
    base = rng.random((users, 1)) * hit
    skill = np.linspace(0.02, 0.0, teams)
    noise = 0.1 * rng.standard_normal((users, teams))
    return np.clip(base + skill + noise, 0.0, 1.0) * hit


def timed(call: object) -> float:
    started = time.perf_counter()
    call()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 users; write nothing")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    public = 10_000 if args.quick else USERS // 2
    private = 10_000 if args.quick else USERS - USERS // 2
    rows, points = [], []
    for teams in TEAMS:
        values = scores(public, teams)
        values = np.ascontiguousarray(values[:, np.argsort(-values.mean(axis=0))])  # as built
        owners = np.arange(teams)
        board = timed(lambda values=values: analyse(values))
        ahead = timed(lambda values=values, owners=owners: forecast(values, owners, private))
        del values  # the final phase analyses the private board too, as many users again
        values = scores(private, teams, seed=1)
        values = np.ascontiguousarray(values[:, np.argsort(-values.mean(axis=0))])  # as built
        board += timed(lambda values=values: analyse(values))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        points.append((teams, board + ahead))
        rows.append(
            f"| {teams:,} | {public:,} | {board:.1f} s | {ahead:.1f} s | {board + ahead:.1f} s "
            f"| {peak:.1f} GB |"
        )
        print(rows[-1], flush=True)
        del values
    slope, intercept = np.polyfit([t for t, _ in points], [s for _, s in points], 1)
    at_target = slope * TARGET + intercept
    matrix = public * TARGET * 8 / 1024**3
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        "## Scale: tiers, intervals and the forecast at H&M's size",
        "",
        "Regenerate with `.venv/bin/python bench/trust_scale.py` from the repository root; what "
        "it times is in its docstring.",
        "",
        f"- date: {when}; code: commit {commit}; {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}; load average (1 min) at "
        f"the start {load:.1f}",
        "",
        "| teams | users a board | both boards' intervals, tests, tiers | forecast | all "
        "| peak memory |",
        "|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Extrapolated to {TARGET:,} teams (a line through the three points, {slope:.3f} s a "
        f"team): **{at_target:.0f} s** for the intervals, tests, tiers and forecast, against "
        f"the 60 s asked. The per-user matrix of one board alone would be {matrix:.1f} GB at "
        f"{TARGET:,} teams (float64), against {memory:.0f} GB on this machine: "
        + ("it holds one board at a time." if matrix < memory / 2 else "it does not fit.")
        + " The boards' builder holds that matrix whole; that, not time, is the limit.",
        "",
        END,
    ]
    if args.quick:
        print("\n".join(lines))
        return
    put_section(ROOT / "TRUST.md", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
