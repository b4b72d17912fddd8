"""Where `scorer score` spends its time and memory, step by step, on a generated competition.

    .venv/bin/python bench/profile_score.py --users 1000000 [--parquet] [--cprofile FILE]

Wraps the steps of `scorer.api.score` (the module-level functions it calls, found by name;
a name that no longer exists is skipped) with a timer and a sampler of the process's resident
memory, then scores the files once as the CLI does. Prints one row per call, nested by depth:
wall and CPU seconds, resident memory when the step ends and its peak during the step. With
`--cprofile FILE` it also writes a cProfile of the same run. Import time is measured apart, in
a fresh interpreter.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generate import DEFAULT_WORK, generate

#: The steps, in the order `score` runs them, by the module that defines them. Every
#: reference to one in a `scorer` module is wrapped, so calls are timed whichever module's
#: name they go through.
STEPS = [
    ("scorer.parts", "run"),
    ("scorer.prepared", "load"),
    ("scorer.contract.solution", "read_solution"),
    ("scorer.contract.files", "read_as"),
    ("scorer.read", "read_table"),
    ("scorer.read.source", "open_path"),
    ("scorer.read.text", "scan_text"),
    ("scorer.read.header", "check_header"),
    ("scorer.read.parquet", "read"),
    ("scorer.read.long", "from_text"),
    ("scorer.read.long", "_typed"),
    ("scorer.read.long", "_diagnose"),
    ("scorer.read.long", "from_frame"),
    ("scorer.read.cells", "apply_ranges"),
    ("scorer.contract.solution", "solution_of"),
    ("scorer.contract.solution", "_per_user"),
    ("scorer.keys", "keyed"),
    ("scorer.contract.files", "duplicates"),
    ("scorer.contract.submission", "read_submission"),
    ("scorer.contract.submission", "check_submission"),
    ("scorer.contract.submission", "_in_blocks"),
    ("scorer.contract.submission", "_passes_screen"),
    ("scorer.contract.submission", "_row_problems"),
    ("scorer.scoring", "per_user"),
    ("scorer.scoring", "_binary_hits"),
    ("scorer.scoring", "_idcg"),
    ("scorer.scoring", "aggregate"),
]

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * PAGE / 2**20


class Sampler(threading.Thread):
    """Samples resident memory every few milliseconds; `peak` is the highest since reset."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = rss_mb()
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.002)

    def reset(self) -> float:
        self.peak = rss_mb()
        return self.peak


@dataclass
class Call:
    depth: int
    name: str
    wall: float = 0.0
    cpu: float = 0.0
    rss_end: float = 0.0
    peak: float = 0.0


def instrument(sampler: Sampler, calls: list[Call]) -> None:
    depth = [0]
    modules = [m for n, m in sorted(sys.modules.items()) if n.split(".")[0] == "scorer"]
    for module_name, name in STEPS:
        fn = getattr(importlib.import_module(module_name), name, None)
        if fn is None or not callable(fn):
            print(f"(no {module_name}.{name}: skipped)", file=sys.stderr)
            continue
        timed = _wrap(fn, sampler, calls, depth)
        for module in modules:
            for attr, value in list(vars(module).items()):
                if value is fn:
                    setattr(module, attr, timed)


def _wrap(
    fn: Callable[..., Any], sampler: Sampler, calls: list[Call], depth: list[int]
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        call = Call(depth[0], f"{fn.__module__.removeprefix('scorer.')}.{fn.__name__}")
        calls.append(call)
        outer_peak = sampler.peak
        sampler.reset()
        depth[0] += 1
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            call.wall = time.perf_counter() - wall
            call.cpu = time.process_time() - cpu
            depth[0] -= 1
            call.rss_end = rss_mb()
            call.peak = max(sampler.peak, call.rss_end)
            sampler.peak = max(outer_peak, call.peak)

    return timed


def import_seconds() -> dict[str, float]:
    """Seconds to import polars alone, and the CLI module, each in a fresh interpreter."""
    out = {}
    for label, module in (("import polars", "polars"), ("import scorer.cli", "scorer.cli")):
        code = (
            f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        )
        runs = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(3)
        ]
        out[label] = sorted(runs)[1]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--parquet", action="store_true", help="score the Parquet files")
    parser.add_argument("--cprofile", type=Path, help="also write a cProfile here")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    data = generate(args.users, seed=args.seed, work=args.work)
    suffix = "parquet" if args.parquet else "csv"
    imports = import_seconds()

    started_rss = rss_mb()
    import scorer.api

    sampler = Sampler()
    sampler.start()
    calls: list[Call] = []
    instrument(sampler, calls)
    profiler = cProfile.Profile() if args.cprofile else None
    wall, cpu = time.perf_counter(), time.process_time()
    sampler.reset()
    if profiler:
        profiler.enable()
    result = scorer.api.score(data / f"submission.{suffix}", data / f"solution.{suffix}")
    text = json.dumps({"status": "scored", **result.to_dict()})
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.cprofile)
    total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
    sampler.running = False
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    threads = os.environ.get("POLARS_MAX_THREADS", "default")
    print(f"# scorer score, {args.users:,} users, {suffix}, POLARS_MAX_THREADS={threads}")
    print(f"overall {result.overall!r} ({len(text)} bytes of JSON)")
    for label, seconds in imports.items():
        print(f"{label}: {seconds:.2f} s (fresh interpreter, median of 3)")
    print(f"RSS before scoring (polars and scorer imported): {started_rss:,.0f} MB")
    print()
    print("| step | wall s | cpu s | RSS after MB | peak during MB |")
    print("|---|---:|---:|---:|---:|")
    for c in calls:
        indent = "· " * c.depth
        print(
            f"| {indent}{c.name} | {c.wall:.2f} | {c.cpu:.2f} | {c.rss_end:,.0f} | {c.peak:,.0f} |"
        )
    print(
        f"| **score() total** | {total_wall:.2f} | {total_cpu:.2f} | {rss_mb():,.0f} | "
        f"{peak:,.0f} |"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "users": args.users,
                    "format": suffix,
                    "threads": threads,
                    "imports": imports,
                    "total": {"wall": total_wall, "cpu": total_cpu, "peak_mb": peak},
                    "calls": [c.__dict__ for c in calls],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
