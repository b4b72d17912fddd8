"""What keeping uploads small costs and saves (`scorer.kept`): the kept form's share of a
submission's bytes, and the time to pack and to unpack it, at H&M's size and at lost items'
1M users. Prints a Markdown table; bench/KEPT.md holds one run.

    .venv/bin/python bench/kept_bench.py

Each file is measured in a fresh process of its own (its peak RSS is the file's): the
reference read from the targets, then `--runs` packs and unpacks (median), each unpack
checked to give the file's bytes back (sha256). The files: an H&M-shaped submission
(1,371,980 customers of 64-hex ids, 12 articles of 10 digits; written to bench/work/hm by
`synthetic.hm_shaped` when missing, as the test makes a small one) and lost items' 1M
users (bench/generate.py --users 1000000); `--case NAME SUBMISSION TARGETS` adds others.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "work"


def make_hm(folder: Path) -> tuple[Path, Path]:
    """An H&M-sized submission and its targets (`synthetic.hm_shaped`), written once."""
    from scorer.synthetic import hm_shaped

    submission, targets = folder / "submission.csv", folder / "targets.csv"
    if not (submission.is_file() and targets.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        made, listed = hm_shaped()
        made.write_csv(submission)
        listed.write_csv(targets)
    return submission, targets


def peak_rss_mib() -> float:
    """This process's peak resident memory since its exec (`VmHWM`; `ru_maxrss` would carry
    the parent's from before the exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one(submission: Path, targets: Path, runs: int) -> dict[str, float]:
    """Measured in this process: read, reference, packs and unpacks."""
    from scorer.kept import Reference, pack, unpack

    data = submission.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    started = time.perf_counter()
    reference = Reference.of(targets.read_bytes())
    referenced = time.perf_counter() - started
    packs, unpacks = [], []
    for _ in range(runs):
        started = time.perf_counter()
        blob = pack(data, reference)
        packs.append(time.perf_counter() - started)
        started = time.perf_counter()
        back = unpack(blob, reference)
        unpacks.append(time.perf_counter() - started)
        if hashlib.sha256(back).hexdigest() != sha:
            raise SystemExit(f"{submission}: the kept form does not give the bytes back")
        del back
    return {
        "bytes": len(data),
        "kept": len(blob),
        "reference_s": referenced,
        "pack_s": statistics.median(packs),
        "unpack_s": statistics.median(unpacks),
        "peak_rss_mib": peak_rss_mib(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", nargs=3, action="append", metavar=("NAME", "SUB", "TARGETS"))
    parser.add_argument("--one", nargs=2, metavar=("SUB", "TARGETS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(Path(args.one[0]), Path(args.one[1]), args.runs)))
        return 0
    cases = [tuple(c) for c in args.case or []]
    if not cases:
        lost = WORK / "1000000"
        if not (lost / "submission.csv").is_file():
            command = [sys.executable, str(HERE / "generate.py"), "--users", "1000000"]
            subprocess.run(command, check=True)
        hm = make_hm(WORK / "hm")
        cases = [
            ("H&M, 1,371,980 customers", *map(str, hm)),
            ("lost items, 1M users", str(lost / "submission.csv"), str(lost / "targets.csv")),
        ]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    print(
        f"{time.strftime('%Y-%m-%d')}, commit {commit}, {platform.machine()}, "
        f"Python {platform.python_version()}, {args.runs} runs (median)\n"
    )
    print("| file | CSV bytes | kept bytes | kept share | reference | pack | unpack | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, submission, targets in cases:
        command = [sys.executable, __file__, "--one", submission, targets, "--runs", str(args.runs)]
        found = json.loads(
            subprocess.run(command, check=True, capture_output=True, text=True).stdout
        )
        print(
            f"| {name} | {found['bytes']:,} | {found['kept']:,} | "
            f"{found['kept'] / found['bytes']:.1%} | {found['reference_s']:.2f} s | "
            f"{found['pack_s']:.2f} s | {found['unpack_s']:.2f} s | "
            f"{found['peak_rss_mib']:,.0f} MiB |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
