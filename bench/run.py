"""Benchmark `scorer score` against the floor (polars reading the files), a prepared solution,
the careful twins of the submission and the code before issue 16: issue 16's targets in one run.

    .venv/bin/python bench/run.py --users 100000 1000000 --k100 200000 --before 92c2901
    .venv/bin/python bench/run.py --users 10000000 --repeats 1 --before 92c2901 --add

For each size: generate the competition (bench/generate.py, kept between runs) and the
submission's careful twins (one cell quoted; a space after one value), `scorer prepare` the
solution (once, timed apart), run every command once and check that every `scorer` command gives
the JSON scores of `scorer score` on the CSV files bit for bit (the peers to 1e-9), then time
each command as a fresh process, interleaved over the repeats (the order rotates each repeat),
and report medians of wall time, CPU time (user + sys) and peak RSS, each against its floor.
`--before REV` runs that revision's `scorer score` (a git worktree in bench/work/, PYTHONPATH)
beside today's, so "not slower" is a ratio of the same run. Writes bench/RESULTS.md and
RESULTS.json beside it (or --out), and the table between README.md's performance markers when
it writes bench/RESULTS.md (or --readme). Today's scorer is the one in this tree, run as
`python -m scorer` from its root with the interpreter running this script. The peers
(`--peers`) run from bench/.venv-peers (bench/requirements-peers.txt). The runs are
bench/runner.py's, the report bench/report.py's; this module is the command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from generate import DEFAULT_WORK
from report import key_of, readme_block, render, with_block
from runner import (
    HERE,
    OLD_SCORER,
    PYTHON,
    ROOT,
    Before,
    bench_size,
    imports_from,
    machine,
    relative,
    worktree,
)

RESULTS = HERE / "RESULTS.md"
README = ROOT / "README.md"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--users",
        type=int,
        nargs="*",
        default=[100_000, 1_000_000],
        help="sizes to run (none: only --k100)",
    )
    parser.add_argument(
        "--k100",
        type=int,
        default=0,
        metavar="USERS",
        help="also score a k = 100 competition of USERS users (200000: as many rows as 1M at 20)",
    )
    parser.add_argument("--before", metavar="REV", help="also run this revision's scorer score")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--readme",
        type=Path,
        help="the README whose performance table to rewrite (default: README.md when --out is "
        "bench/RESULTS.md, else none)",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also run the pure-Python dict scorer, pytrec_eval and ranx (bench/.venv-peers)",
    )
    parser.add_argument(
        "--peers-max", type=int, default=1_000_000, help="largest size the peers run at"
    )
    parser.add_argument(
        "--ranx-max", type=int, default=100_000, help="largest size ranx runs at (it is slow)"
    )
    parser.add_argument(
        "--in-memory-max",
        type=int,
        default=2_000_000,
        help="largest size the floors, Parquet, prepared and thread runs take; above it `scorer "
        "score` reads the CSV files in parts",
    )
    parser.add_argument(
        "--no-twins", dest="twins", action="store_false", help="skip the careful twins"
    )
    parser.add_argument(
        "--no-text-ids",
        dest="text_ids",
        action="store_false",
        help="skip the text-id twin (32-hex users, 10-digit editions)",
    )
    parser.add_argument(
        "--no-threads",
        dest="threads",
        action="store_false",
        help="skip the POLARS_MAX_THREADS=1 run",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="run only these commands (and scorer_csv) of each size, e.g. floor_submission "
        "scorer_prepared: a quick check, not a run of the targets",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite --out (and the README) from the figures saved beside it (RESULTS.json), "
        "running nothing",
    )
    parser.add_argument(
        "--add",
        action="store_true",
        help="keep the other sizes saved in RESULTS.json (of the same code) and add or replace "
        "these: a long size can run apart, with its own --repeats",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    saved = args.out.with_suffix(".json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.render_only:
        record = json.loads(saved.read_text())
    else:
        record = run(args, argv, saved)
        saved.write_text(json.dumps(record, indent=1) + "\n")
    text = render(record)
    args.out.write_text(text, encoding="utf-8")
    readme = args.readme or (README if args.out.resolve() == RESULTS else None)
    if readme is not None:
        readme.write_text(with_block(readme.read_text("utf-8"), readme_block(record)), "utf-8")
    print(text)
    return 0


def run(args: argparse.Namespace, argv: list[str], saved: Path) -> dict[str, Any]:
    """Run what `args` asks; the record to save (with the saved sizes it keeps, for --add)."""
    info = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), **machine()}
    before = None
    if args.before:
        tree, commit = worktree(args.before, args.work)
        before = Before(args.before, commit, tree)
        info["before"] = (
            f"{args.before} = {commit} (worktree {os.path.relpath(tree, ROOT)}, PYTHONPATH, "
            "the same interpreter)"
        )
    now = imports_from([str(PYTHON)], {}, ROOT / "scorer")
    checked = f"imports checked: today's commands run {relative(now, ROOT)}"
    if before:
        then = imports_from(OLD_SCORER[:2], before.env, before.tree)
        checked += f", {before.rev}'s run {relative(then, ROOT)}"
    runs = [bench_size(users, args, before) for users in args.users]
    if args.k100:
        runs.append(bench_size(args.k100, args, before, k100=True))
    for one in runs:
        one["notes"].insert(0, checked)
    if (after := machine()["code"]) != info["code"]:
        info["code"] += f" (**the scorer changed during the run**: at the end {after})"
    if args.add and saved.exists():
        earlier = json.loads(saved.read_text())
        if earlier["info"].get("code") != info["code"]:
            raise SystemExit("--add: RESULTS.json holds figures of other code; run every size")
        if earlier["info"].get("before", info.get("before")) != info.get("before"):
            raise SystemExit("--add: RESULTS.json compares with another --before")
        info.setdefault("before", earlier["info"].get("before"))
        keys = {key_of(r) for r in runs}
        runs = [r for r in earlier["runs"] if key_of(r) not in keys] + runs
        argv = [*earlier["argv"], "&&", *argv]
    runs.sort(key=lambda r: (key_of(r).startswith("k"), int(r["users"])))
    return {"info": info, "argv": argv, "repeats": args.repeats, "seed": args.seed, "runs": runs}


if __name__ == "__main__":
    sys.exit(main())
