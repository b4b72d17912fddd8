"""Benchmark `scorer score` against the floor (polars reading both CSV files) and peer tools.

    .venv/bin/python bench/run.py                       # 100k and 1M users, 3 repeats
    .venv/bin/python bench/run.py --users 10000000      # 10M users (floor and scorer only)

For each size: generate the competition (bench/generate.py, kept between runs), run every
command once and check its scores agree with `scorer score` on the CSV files (1e-9; Parquet and
POLARS_MAX_THREADS=1 must give the same bits), then time each command as a fresh process,
interleaved over the repeats (the order rotates each repeat), and report medians of wall time,
CPU time (user + sys) and peak RSS, with ratios to the floor of the same run. Writes
bench/RESULTS.md (or --out). The peers run from bench/.venv-peers (bench/requirements-peers.txt).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from generate import DEFAULT_WORK, generate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
SCORER = ROOT / ".venv" / "bin" / "scorer"
PEERS = HERE / ".venv-peers" / "bin" / "python"
BASELINES = HERE / "baselines"

#: Agreement required between any tool's split means and ours.
TOLERANCE = 1e-9

#: A child that runs longer than this is a failure, not a data point.
TIMEOUT = 3600


@dataclass(frozen=True)
class Command:
    name: str
    label: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    exact: bool = False  # must give our scores bit for bit, not only to TOLERANCE

    def shown(self, root: Path) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        words = [_rel(a, root) for a in self.argv]
        return (env + " " if env else "") + shlex.join(words)


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float


def _rel(arg: str, root: Path) -> str:
    return os.path.relpath(arg, root) if arg.startswith(str(root)) else arg


def commands(data: Path, users: int, args: argparse.Namespace) -> list[Command]:
    sub_csv, sol_csv = str(data / "submission.csv"), str(data / "solution.csv")
    sub_pq, sol_pq = str(data / "submission.parquet"), str(data / "solution.parquet")
    score = [str(SCORER), "score"]
    sketch = [str(PYTHON), str(HERE / "streaming_sketch.py"), "--users", str(users)]
    sketch += ["--seed", str(args.seed), "--work", str(args.work)]
    streaming = [
        Command(
            "sketch_csv",
            "sketch (not the scorer): one lazy plan, streaming engine, CSV",
            sketch,
            exact=True,
        ),
        Command(
            "sketch_parquet",
            "sketch (not the scorer): one lazy plan, streaming engine, Parquet",
            [*sketch, "--parquet"],
            exact=True,
        ),
    ]
    if users > args.in_memory_max:
        # Too large to hold: `scorer score` splits files over 1 GiB into parts by itself; no
        # floor (reading both files whole would not fit the memory target either).
        parts = ["--partitions", str(-(-users // 250_000)), "--engine", "in-memory"]
        large = [
            Command(
                "scorer_csv",
                "`scorer score` CSV (in parts: files over 1 GiB)",
                [*score, sub_csv, "--solution", sol_csv, "--json"],
            )
        ]
        if args.sketch:
            large += [
                Command(
                    c.name,
                    c.label.replace(
                        "one lazy plan, streaming engine", f"{parts[1]} parts by user, a plan each"
                    ),
                    [*c.argv, *parts],
                    exact=True,
                )
                for c in streaming
            ]
        return large
    found = [
        Command(
            "floor",
            "floor: import polars, read both CSV",
            [str(PYTHON), str(BASELINES / "floor.py"), sub_csv, sol_csv],
        ),
        Command(
            "scorer_csv", "`scorer score` CSV", [*score, sub_csv, "--solution", sol_csv, "--json"]
        ),
        Command(
            "scorer_parquet",
            "`scorer score` Parquet",
            [*score, sub_pq, "--solution", sol_pq, "--json"],
            exact=True,
        ),
        Command(
            "floor_parquet",
            "floor: read both Parquet",
            [str(PYTHON), str(BASELINES / "floor.py"), sub_pq, sol_pq],
        ),
    ]
    if args.threads:
        found.append(
            Command(
                "scorer_csv_1thread",
                "`scorer score` CSV, POLARS_MAX_THREADS=1",
                [*score, sub_csv, "--solution", sol_csv, "--json"],
                env={"POLARS_MAX_THREADS": "1"},
                exact=True,
            )
        )
    if users <= args.peers_max:
        found.append(
            Command(
                "dict",
                "pure-Python dict scorer",
                [str(PYTHON), str(BASELINES / "dict_scorer.py"), sub_csv, sol_csv],
            )
        )
        if PEERS.exists():
            found.append(
                Command(
                    "pytrec_eval",
                    "pytrec_eval (ndcg_cut.20)",
                    [str(PEERS), str(BASELINES / "pytrec_scorer.py"), sub_csv, sol_csv],
                )
            )
        else:
            print(f"skipping pytrec_eval and ranx: no {PEERS}", file=sys.stderr)
    if args.sketch:
        found += streaming
    if users <= args.ranx_max and PEERS.exists():
        found.append(
            Command(
                "ranx",
                "ranx (ndcg@20)",
                [str(PEERS), str(BASELINES / "ranx_scorer.py"), sub_csv, sol_csv],
            )
        )
    return found


def run_once(command: Command) -> tuple[Sample, str]:
    """Run a command as a fresh process (through bench/measure.py); its wall time, CPU time,
    peak RSS and stdout."""
    env = {**os.environ, **command.env}
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile(suffix=".json") as measured,
    ):
        wrapper = [sys.executable, "-S", str(HERE / "measure.py"), measured.name, str(TIMEOUT)]
        code = subprocess.run(
            [*wrapper, "--", *command.argv], stdout=out, stderr=err, env=env, cwd=ROOT
        ).returncode
        out.seek(0)
        err.seek(0)
        if code != 0:
            raise SystemExit(f"{command.name} exited {code}:\n{err.read().decode()[-3000:]}")
        stdout = out.read().decode()
        figures = json.loads(Path(measured.name).read_text())
    return Sample(wall=figures["wall"], cpu=figures["cpu"], rss_mb=figures["rss_mb"]), stdout


def scores_of(stdout: str) -> dict[str, Any]:
    line = stdout.strip().splitlines()[-1]
    return json.loads(line)


def check(results: dict[str, dict[str, Any]], cmds: list[Command]) -> list[str]:
    """Compare every tool with `scorer score` on the CSV files; return notes for the report."""
    if "scorer_csv" not in results:
        first = cmds[0].name
        for command in cmds[1:]:
            if results[command.name]["overall"] != results[first]["overall"]:
                raise SystemExit(f"{command.name} and {first} disagree")
        return [
            f"{cmds[0].label}: overall {results[first]['overall']!r}, public "
            f"{results[first]['public']!r}, private {results[first]['private']!r}; "
            "`scorer score` does not run at this size (see --in-memory-max), so there is no "
            "in-memory reference here: `bench/streaming_sketch.py --verify-parts` checks it "
            "against `scorer.api.score` part by part"
        ]
    ours = results["scorer_csv"]
    notes = [
        f"`scorer score` CSV: overall {ours['overall']!r}, public {ours['public']!r}, "
        f"private {ours['private']!r} ({ours['users']['overall']:,} users)"
    ]
    for command in cmds:
        got = results[command.name]
        if command.name.startswith("floor"):
            continue
        if command.name == "scorer_csv":
            continue
        worst = 0.0
        for split in ("overall", "public", "private"):
            a, b = ours[split], got[split]
            if not isinstance(a, float) or not isinstance(b, float):
                raise SystemExit(f"{command.name}: {split} = {b!r}, ours {a!r}")
            if command.exact and a != b:
                raise SystemExit(f"{command.name}: {split} = {b!r} is not bit-identical to {a!r}")
            worst = max(worst, abs(a - b))
        users = got.get("users")
        if isinstance(users, dict) and users.get("overall") != ours["users"]["overall"]:
            raise SystemExit(f"{command.name}: {users} users, ours {ours['users']}")
        if worst > TOLERANCE:
            raise SystemExit(f"{command.name}: differs from ours by {worst:.3g} > {TOLERANCE}")
        how = "bit-identical" if worst == 0 else f"max |diff| {worst:.1e}"
        notes.append(f"{command.label}: agrees ({how})")
    return notes


def bench_size(users: int, args: argparse.Namespace) -> dict[str, Any]:
    data = generate(users, seed=args.seed, work=args.work)
    cmds = commands(data, users, args)
    print(f"\n== {users:,} users: {data}", file=sys.stderr)
    results: dict[str, dict[str, Any]] = {}
    first: dict[str, Sample] = {}
    for command in cmds:  # the check run is also the warm-up (page cache, numba's cache)
        sample, stdout = run_once(command)
        results[command.name] = scores_of(stdout)
        first[command.name] = sample
        print(f"check {command.name}: {sample.wall:.2f} s", file=sys.stderr)
    notes = check(results, cmds)
    samples: dict[str, list[Sample]] = {c.name: [] for c in cmds}
    loads = [os.getloadavg()[0]]
    for repeat in range(args.repeats):
        shift = repeat % len(cmds)
        for command in cmds[shift:] + cmds[:shift]:
            sample, stdout = run_once(command)
            if (
                not command.name.startswith("floor")
                and scores_of(stdout)["overall"] != results[command.name]["overall"]
            ):
                raise SystemExit(f"{command.name}: a different score on repeat {repeat + 1}")
            samples[command.name].append(sample)
            print(
                f"[{repeat + 1}/{args.repeats}] {command.name}: {sample.wall:.2f} s wall, "
                f"{sample.cpu:.2f} s cpu, {sample.rss_mb:,.0f} MB",
                file=sys.stderr,
            )
        loads.append(os.getloadavg()[0])
    rows = []
    for command in cmds:
        runs = samples[command.name]
        rows.append(
            {
                "name": command.name,
                "label": command.label,
                "command": command.shown(ROOT),
                "wall": statistics.median(s.wall for s in runs),
                "walls": [round(s.wall, 3) for s in runs],
                "cpu": statistics.median(s.cpu for s in runs),
                "rss_mb": statistics.median(s.rss_mb for s in runs),
            }
        )
    sizes = json.loads((data / "manifest.json").read_text())
    return {
        "users": users,
        "rows": sizes["rows"],
        "bytes": sizes["bytes"],
        "table": rows,
        "notes": notes,
        "load": loads,
    }


def code_version() -> str:
    """The commit, and a digest of the scorer's sources as they are (the tree may be dirty)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    digest = hashlib.sha256()
    for path in sorted((ROOT / "scorer").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return f"commit {head or '?'}, scorer/**/*.py sha256 {digest.hexdigest()[:12]}"


def machine() -> dict[str, str]:
    model = ""
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo", encoding="utf-8") as handle:
        mem_kb = int(handle.readline().split()[1])
    return {
        "code": code_version(),
        "cpu": f"{model}, {os.cpu_count()} cores",
        "memory": f"{mem_kb / 1024 / 1024:.0f} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "polars": pl.__version__,
    }


def render(record: dict[str, Any]) -> str:
    """The Markdown report of one run (`record` as saved in RESULTS.json)."""
    info, runs, argv = record["info"], record["runs"], record["argv"]
    when = info.pop("date")
    repeats, seed = record["repeats"], record["seed"]
    runs_of: list[list[str]] = [[]]
    for arg in argv:  # `--add` runs are saved as one argv joined by '&&'
        if arg == "&&":
            runs_of.append([])
        else:
            runs_of[-1].append(arg)
    command = " && ".join(shlex.join([".venv/bin/python", "bench/run.py", *one]) for one in runs_of)
    out = [
        "# Benchmark: `scorer score` against the floor and the peers",
        "",
        f"Regenerate with `{command}` from the repository root (the peers need "
        "`python3 -m venv bench/.venv-peers && bench/.venv-peers/bin/pip install -r "
        "bench/requirements-peers.txt`).",
        "",
        f"- date: {when}",
        *[f"- {k}: {v}" for k, v in info.items()],
        "- repeats: "
        + ", ".join(f"{r.get('repeats', repeats)} at {r['users']:,} users" for r in runs)
        + ", interleaved (the order rotates each repeat); medians shown",
        "- wall: the child's wall time from spawn to exit (start-up and imports included); "
        "cpu: its user + sys time; peak RSS: its `ru_maxrss` (`os.wait4`)",
        "- data: `bench/generate.py` (`scorer.synthetic.make_competition`, seed "
        f"{seed}): 1–30 lost pairs a user, 20 ranked editions each, 50/50 public/private",
        "",
        "The machine is shared: other sessions run tests and benchmarks on the same 2 cores, so "
        "wall times carry their load (the 1-minute load average is shown for each size). CPU "
        "time is less sensitive to it and is shown beside. Where the time goes inside "
        "`scorer score`, and what would cut it: `bench/PROFILE.md`.",
    ]
    for run in runs:
        users = run["users"]
        rows = run["rows"]
        sizes = run["bytes"]
        loads = ", ".join(f"{x:.1f}" for x in run["load"])
        out += [
            "",
            f"## {users:,} users",
            "",
            f"submission {rows['submission']:,} rows ({sizes['submission.csv'] / 1e6:,.0f} MB "
            f"CSV, {sizes['submission.parquet'] / 1e6:,.0f} MB Parquet); solution "
            f"{rows['solution']:,} rows ({sizes['solution.csv'] / 1e6:,.0f} MB CSV, "
            f"{sizes['solution.parquet'] / 1e6:,.0f} MB Parquet). Load average during the "
            f"run: {loads}.",
            "",
            "| command | wall (median) | × floor | cpu | × floor | peak RSS | × floor | walls |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        table = run["table"]
        floor = next((r for r in table if r["name"] == "floor"), None)

        def ratio(r: dict[str, Any], key: str, floor: dict[str, Any] | None = floor) -> str:
            return f"{r[key] / floor[key]:.2f}" if floor else "–"

        for r in table:
            out.append(
                f"| {r['label']} | {r['wall']:.2f} s | {ratio(r, 'wall')} | "
                f"{r['cpu']:.2f} s | {ratio(r, 'cpu')} | {r['rss_mb']:,.0f} MB | "
                f"{ratio(r, 'rss_mb')} | {', '.join(f'{w:.2f}' for w in r['walls'])} |"
            )
        out += ["", "Scores checked before timing:", ""]
        out += [f"- {note}" for note in run["notes"]]
        if floor is None:
            out.append(
                "- no in-memory run at this size: `tests/test_parts.py` checks that scoring in "
                "parts gives the same bits as scoring whole, and `bench/streaming_sketch.py "
                "--verify-parts` scores these users with `scorer.api.score` in memory, a million "
                "at a time, and sums them exactly (bench/PROFILE.md: the same three figures)"
            )
        out += ["", "<details><summary>commands</summary>", "", "```"]
        out += [f"{r['name']}: {r['command']}" for r in table]
        out += ["```", "", "</details>"]
    out += ["", *targets(runs)]
    return "\n".join(out) + "\n"


def targets(runs: list[dict[str, Any]]) -> list[str]:
    """Issue 5's targets, each met or not, from this run's figures."""
    by_users = {r["users"]: {t["name"]: t for t in r["table"]} for r in runs}
    lines = ["## Targets (issue 5)", "", "| target | figure | met |", "|---|---|---|"]

    def row(target: str, figure: str, ok: bool) -> None:
        lines.append(f"| {target} | {figure} | {'met' if ok else '**not met**'} |")

    if 1_000_000 in by_users:
        t = by_users[1_000_000]
        ratio = t["scorer_csv"]["wall"] / t["floor"]["wall"]
        row(
            "1M users, CSV: wall ≤ 2.0× the floor",
            f"{t['scorer_csv']['wall']:.2f} s / {t['floor']['wall']:.2f} s = {ratio:.2f}×",
            ratio <= 2.0,
        )
        mem = t["scorer_csv"]["rss_mb"] / t["floor"]["rss_mb"]
        row(
            "1M users, CSV: peak RSS ≤ 2× the floor's",
            f"{t['scorer_csv']['rss_mb']:,.0f} MB / {t['floor']['rss_mb']:,.0f} MB = {mem:.2f}×",
            mem <= 2.0,
        )
        pq = t["scorer_parquet"]["wall"]
        row("1M users, Parquet: ≤ 1.5 s wall", f"{pq:.2f} s", pq <= 1.5)
    if 100_000 in by_users and 1_000_000 in by_users:
        small, large = by_users[100_000], by_users[1_000_000]
        for name, what in (("scorer_csv", "CSV"), ("scorer_parquet", "Parquet")):
            growth = large[name]["wall"] / small[name]["wall"]
            cpu = large[name]["cpu"] / small[name]["cpu"]
            row(
                f"100k → 1M users: time grows ≤ 11× ({what})",
                f"{small[name]['wall']:.2f} s → {large[name]['wall']:.2f} s = {growth:.1f}×",
                growth <= 11,
            )
            row(
                "(the same in CPU time, less sensitive to the load)",
                f"{small[name]['cpu']:.2f} s → {large[name]['cpu']:.2f} s = {cpu:.1f}×",
                cpu <= 11,
            )
    if 100_000 in by_users and "dict" in by_users[100_000]:
        t = by_users[100_000]
        speed = t["dict"]["wall"] / t["scorer_csv"]["wall"]
        row(
            "100k users: ≥ 20× faster than the dict scorer",
            f"{t['dict']['wall']:.2f} s / {t['scorer_csv']['wall']:.2f} s = {speed:.1f}×",
            speed >= 20,
        )
        speed = t["dict"]["cpu"] / t["scorer_csv"]["cpu"]
        row(
            "(the same in CPU time)",
            f"{t['dict']['cpu']:.2f} s / {t['scorer_csv']['cpu']:.2f} s = {speed:.1f}×",
            speed >= 20,
        )
    for users, t in sorted(by_users.items()):
        if users >= 10_000_000 and "scorer_csv" in t and "floor" not in t:
            peak = t["scorer_csv"]["rss_mb"]
            row(
                f"{users:,} users: streamed into parts, peak memory ≤ 6 GB",
                f"{peak / 1024:.2f} GB ({t['scorer_csv']['wall']:.0f} s)",
                peak <= 6 * 1024,
            )
        if "scorer_csv_1thread" in t:
            lines.append(
                f"| {users:,} users: same bits with POLARS_MAX_THREADS=1 as with 2 | "
                f"checked before timing ({t['scorer_csv_1thread']['wall']:.2f} s with 1 "
                "thread) | met |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument(
        "--peers-max",
        type=int,
        default=1_000_000,
        help="largest size the dict scorer and pytrec_eval run at",
    )
    parser.add_argument(
        "--ranx-max", type=int, default=100_000, help="largest size ranx runs at (it is slow)"
    )
    parser.add_argument(
        "--in-memory-max",
        type=int,
        default=2_000_000,
        help="largest size the floor, Parquet and thread runs take; above it only `scorer "
        "score` on CSV (which then works in parts) and the sketch",
    )
    parser.add_argument(
        "--no-sketch", dest="sketch", action="store_false", help="skip the streaming sketch"
    )
    parser.add_argument(
        "--no-threads",
        dest="threads",
        action="store_false",
        help="skip the POLARS_MAX_THREADS=1 run",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite --out from the figures saved beside it (RESULTS.json), running nothing",
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
    if args.render_only:
        record = json.loads(saved.read_text())
    else:
        info = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), **machine()}
        runs = [bench_size(users, args) for users in args.users]
        for run in runs:
            run["repeats"] = args.repeats
        if args.add and saved.exists():
            before = json.loads(saved.read_text())
            if before["info"].get("code") != info.get("code"):
                parser.error("--add: RESULTS.json holds figures of other code; run every size")
            runs = sorted(
                [r for r in before["runs"] if r["users"] not in args.users] + runs,
                key=lambda r: int(r["users"]),
            )
            argv = [*before["argv"], "&&", *argv]
        record = {
            "info": info,
            "argv": argv,
            "repeats": args.repeats,
            "seed": args.seed,
            "runs": runs,
        }
        saved.write_text(json.dumps(record, indent=1) + "\n")
    text = render(record)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
