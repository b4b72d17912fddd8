"""Benchmark issue 11's claim: k became a parameter (1..100) without slowing k = 20.

    .venv/bin/python bench/k_bench.py --repeats 3        # writes bench/K_RESULTS.md

Four fresh processes, timed through bench/measure.py, interleaved over the repeats (the order
rotates each repeat), medians reported: the floor (polars reading both CSV files) and `scorer
score` on the 1M-user k = 20 competition of bench/generate.py, with the working tree's code and
with the code of `--before` (a git worktree in bench/work/, run with PYTHONPATH); and `scorer
score` at k = 100 on 200,000 users with as many submission rows (20M), generated here. Before
timing: the before-revision really imports its worktree's scorer and gives today's three scores
bit for bit, and the k = 100 score equals an independent numpy NDCG@100 to 1e-9.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from generate import DEFAULT_WORK, K100, MISSES, SCHEMAS, generate, make_k100
from report import NOISE
from runner import (
    BASELINES,
    HERE,
    OLD_SCORER,
    PYTHON,
    ROOT,
    SCORER,
    Command,
    Sample,
    imports_from,
    machine,
    run_once,
    scores_of,
    timed,
    worktree,
)

K = K100
USERS = 200_000
TOLERANCE = 1e-9
SPLITS = ("overall", "public", "private")


def ndcg(data: Path) -> dict[str, float]:
    """NDCG@K from first principles on the files: numpy, binary gains, 0 when IDCG = 0."""
    sub = pl.read_csv(data / "submission.csv", schema=SCHEMAS["submission"])
    sol = pl.read_csv(data / "solution.csv", schema=SCHEMAS["solution"])
    ids, where = np.unique(sol["user_id"].to_numpy(), return_index=True)
    public = sol["stage"].to_numpy()[where] == "public"
    lost = sol.filter(pl.col("edition_id").is_not_null())
    lost_user = np.searchsorted(ids, lost["user_id"].to_numpy())
    sub_user = np.searchsorted(ids, sub["user_id"].to_numpy())
    rank = sub["rank"].to_numpy()
    hit = np.isin(
        sub_user * 2**32 + sub["edition_id"].to_numpy(),
        lost_user * 2**32 + lost["edition_id"].to_numpy(),
    ) & (rank <= K)
    dcg = np.bincount(sub_user[hit], weights=1 / np.log2(rank[hit] + 1), minlength=ids.size)
    ideal = np.concatenate([[0.0], np.cumsum(1 / np.log2(np.arange(2, K + 2)))])
    idcg = ideal[np.minimum(np.bincount(lost_user, minlength=ids.size), K)]
    score = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    masks = {"overall": public | ~public, "public": public, "private": ~public}
    return {split: float(score[mask].mean()) for split, mask in masks.items()}


def score(data: Path, *spec: str) -> list[str]:
    files = [str(data / "submission.csv"), "--solution", str(data / "solution.csv")]
    return ["score", *files, *spec, "--json"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default="39e031d", help="the revision to compare with")
    parser.add_argument("--out", type=Path, default=HERE / "K_RESULTS.md")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    info = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), **machine()}
    big, small = generate(1_000_000), make_k100(DEFAULT_WORK / f"k{K}-{USERS}", USERS)
    tree, commit = worktree(args.before)
    rel = os.path.relpath(tree, ROOT)  # run_once runs in ROOT
    info["before"] = f"{args.before} = {commit} (worktree {rel}, PYTHONPATH, the same venv)"
    floor = [str(PYTHON), str(BASELINES / "floor.py")]
    k100 = score(small, "--competition", str(small / "competition.toml"))
    cmds = [
        Command("floor", "floor: polars reads both CSV, 1M users", [*floor, *score(big)[1:4:2]]),
        Command("today", "`scorer score`, k = 20, 1M users, today", [*SCORER, *score(big)]),
        Command(
            "before", f"the same, {args.before}", [*OLD_SCORER, *score(big)], {"PYTHONPATH": rel}
        ),
        Command("k100", f"`scorer score`, k = {K}, {USERS:,} users", [*SCORER, *k100]),
    ]
    then = imports_from(OLD_SCORER[:2], cmds[2].env, tree)
    now = imports_from([str(PYTHON)], {}, ROOT / "scorer")
    notes = [f"imports checked: {args.before} runs {then}, today's commands run {now}"]
    got: dict[str, Any] = {}
    for c in cmds:  # the check run is also the warm-up (page cache)
        sample, stdout = run_once(c)
        got[c.name] = scores_of(stdout)
        print(f"check {c.name}: {sample.wall:.2f} s", file=sys.stderr)
    today, before = got["today"], got["before"]
    if any(today[s] != before[s] or not isinstance(today[s], float) for s in SPLITS):
        raise SystemExit(f"scores differ: today {today}, {args.before} {before}")
    notes.append(
        f"k = 20, 1M users: overall {today['overall']!r}, public {today['public']!r}, private "
        f"{today['private']!r}; {args.before} gives the same three bit for bit"
    )
    expected = ndcg(small)
    worst = max(abs(got["k100"][s] - expected[s]) for s in SPLITS)
    if got["k100"]["k"] != K or worst > TOLERANCE:
        raise SystemExit(f"k = {K}: scorer {got['k100']}, numpy {expected}")
    notes.append(
        f"k = {K}, {USERS:,} users: overall {got['k100']['overall']!r} ({got['k100']['metric']}); "
        f"an independent numpy NDCG@{K} of the files agrees on overall, public and private "
        f"(max |diff| {worst:.1e} ≤ {TOLERANCE})"
    )
    samples, loads = timed(cmds, got, args.repeats)
    run = {"samples": samples, "loads": loads}
    if (after := machine()["code"]) != info["code"]:
        notes.append(f"**the working tree's scorer changed during the run**: at the end {after}")
    regen = shlex.join([".venv/bin/python", "bench/k_bench.py", *sys.argv[1:]])
    text = render(cmds, run, info, notes, regen)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def render(
    cmds: list[Command], run: dict[str, Any], info: dict[str, str], notes: list[str], regen: str
) -> str:
    samples: dict[str, list[Sample]] = run["samples"]
    keys = ("wall", "cpu", "rss_mb")
    med = {
        n: {k: statistics.median(getattr(s, k) for s in r) for k in keys}
        for n, r in samples.items()
    }
    base = {"floor": None, "today": "floor", "before": "floor", "k100": "today"}
    loads = ", ".join(f"{x:.1f}" for x in run["loads"])
    out = [
        "# Benchmark: k as a parameter (issue 11)",
        "",
        f"Regenerate with `{regen}` from the repository root.",
        "",
        *[f"- {k}: {v}" for k, v in info.items()],
        f"- repeats: {len(samples['floor'])}, interleaved (the order rotates each repeat); "
        "medians shown",
        "- wall: the child's wall time from spawn to exit (start-up and imports included); cpu: "
        "its user + sys time; peak RSS: its `ru_maxrss` (bench/measure.py)",
        "- data: k = 20: `bench/generate.py`, 1,000,000 users, 20M submission rows, seed 0; "
        f"k = {K}: {USERS:,} users × {K} editions = 20M rows, 0–{MISSES} lost editions a user "
        "(about half of them listed), 50/50 public/private, numpy seed 0",
        f"- load average (1 min) before and after each repeat: {loads}",
        "",
        "| command | wall (median) | cpu | peak RSS | ratio to | wall × | cpu × | RSS × | walls |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for c in cmds:
        m, ref = med[c.name], base[c.name]
        ratios = [f"{m[k] / med[ref][k]:.2f}" if ref else "–" for k in keys]
        walls = ", ".join(f"{s.wall:.2f}" for s in samples[c.name])
        out.append(
            f"| {c.label} | {m['wall']:.2f} s | {m['cpu']:.2f} s | {m['rss_mb']:,.0f} MB | "
            f"{ref or '–'} | {' | '.join(ratios)} | {walls} |"
        )
    pairs = [("today", "floor"), ("before", "floor"), ("k100", "today")]
    now, then, k100 = ({k: med[a][k] / med[b][k] for k in keys} for a, b in pairs)
    yes = {True: "**met**", False: "**not met**"}
    slowed = now["wall"] <= then["wall"] * (1 + NOISE)
    out += [
        "",
        "## Targets",
        "",
        f"- k = 20 not slowed: today's wall × floor ≤ the before-revision's (+{NOISE:.0%} for "
        f"noise): {now['wall']:.2f}× vs {then['wall']:.2f}× — {yes[slowed]} (cpu × floor: "
        f"{now['cpu']:.2f}× vs {then['cpu']:.2f}×; peak RSS × floor: {now['rss_mb']:.2f}× vs "
        f"{then['rss_mb']:.2f}×)",
        f"- k = {K} on {USERS:,} users ≤ 1.5× k = 20 on 1M users (wall): {k100['wall']:.2f}× — "
        f"{yes[k100['wall'] <= 1.5]} (cpu: {k100['cpu']:.2f}×, peak RSS: {k100['rss_mb']:.2f}×)",
        "",
        "Checked before timing:",
        "",
        *[f"- {n}" for n in notes],
        "",
        "Commands (from the repository root):",
        "",
        "```",
        *[f"{c.name}: {c.shown(ROOT)}" for c in cmds],
        "```",
    ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
