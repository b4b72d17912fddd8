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
(`--peers`) run from bench/.venv-peers (bench/requirements-peers.txt).
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
from typing import Any, NamedTuple

import polars as pl
from generate import DEFAULT_WORK, TWINS, generate, make_k100, twin

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The interpreter running this script (a clone's .venv after the Quickstart, or any venv that
#: has the scorer's dependencies: today's scorer is imported from ROOT, not from the venv).
PYTHON = Path(sys.executable)
#: Today's `scorer`, from ROOT (the children run with ROOT as their folder).
SCORER = [str(PYTHON), "-m", "scorer"]
#: Another revision's `scorer`: -P keeps ROOT off sys.path, so PYTHONPATH's tree is imported
#: (`-c`, not `-m`: revisions older than scorer/__main__.py have no `python -m scorer`).
OLD_SCORER = [str(PYTHON), "-P", "-c", "from scorer.cli import app; app()"]
PEERS = HERE / ".venv-peers" / "bin" / "python"
BASELINES = HERE / "baselines"
RESULTS = HERE / "RESULTS.md"
README = ROOT / "README.md"
MARKERS = ("<!-- performance:start -->", "<!-- performance:end -->")

#: Agreement required between a peer's split means and ours (every `scorer` command: the bits).
TOLERANCE = 1e-9
#: The JSON fields of a `scorer score` that every `scorer` command must give bit for bit.
SAME = ("metric", "k", "overall", "public", "private", "users", "metrics")
#: A child that runs longer than this is a failure, not a data point.
TIMEOUT = 3600
#: Wall-time noise allowed on this shared 2-core machine before "not slower" fails.
NOISE = 0.05
#: The memory budget that a run in parts must stay under (`scorer score --max-memory`'s default).
BUDGET_MB = 4 << 10


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


def git(*args: str) -> str:
    return subprocess.check_output(["git", *args], text=True, cwd=ROOT).strip()


def worktree(rev: str, work: Path = DEFAULT_WORK) -> tuple[Path, str]:
    """A git worktree of `rev` under `work` (kept between runs), and its full commit."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = work / f"before-{rev}"
    if not path.exists():
        git("worktree", "add", "--detach", str(path), commit)
    if git("-C", str(path), "rev-parse", "HEAD") != commit:
        raise SystemExit(f"{path} is not at {commit}; remove it (git worktree remove)")
    return path, commit


def imports_from(interpreter: list[str], env: dict[str, str], expected: Path) -> str:
    """Run an interpreter (with its options and environment) on an import from ROOT; fail unless
    the scorer and its cli come from `expected`."""
    probe = "import scorer, scorer.cli; print(scorer.__file__); print(scorer.cli.__file__)"
    _, out = run_once(Command("probe", "", [*interpreter, "-c", probe], env=env))
    files = out.split()
    if not files or any(not Path(f).resolve().is_relative_to(expected.resolve()) for f in files):
        raise SystemExit(f"{shlex.join(interpreter)} imports {files}, not the scorer in {expected}")
    return files[0]


@dataclass(frozen=True)
class Before:
    """The revision that `--before` compares with: its worktree, and how to run its scorer."""

    rev: str
    commit: str
    tree: Path

    @property
    def env(self) -> dict[str, str]:
        return {"PYTHONPATH": os.path.relpath(self.tree, ROOT)}  # run_once runs in ROOT


def commands(
    data: Path, users: int, args: argparse.Namespace, before: Before | None, k100: bool = False
) -> list[Command]:
    """The commands of one size, in the order of its table (k = 100: the CSV files only)."""
    sub, sol = str(data / "submission.csv"), str(data / "solution.csv")
    rules = ["--competition", str(data / "competition.toml")] if k100 else []
    whole = users <= args.in_memory_max  # else reading both files whole would not fit either
    full = whole and not k100

    def floor(name: str, label: str, *files: str) -> Command:
        return Command(name, "floor: " + label, [str(PYTHON), str(BASELINES / "floor.py"), *files])

    def score(name: str, label: str, submission: str, solution: str, **env: str) -> Command:
        argv = [*SCORER, "score", submission, "--solution", solution, *rules, "--json"]
        return Command(name, f"`scorer score` {label}", argv, env, exact=True)

    found = [floor("floor", "import polars, read both CSV", sub, sol)] if whole else []
    found.append(score("scorer_csv", "CSV" + ("" if whole else " (in parts)"), sub, sol))
    if full:
        sub_pq, sol_pq = str(data / "submission.parquet"), str(data / "solution.parquet")
        found += [
            floor("floor_parquet", "read both Parquet", sub_pq, sol_pq),
            score("scorer_parquet", "Parquet", sub_pq, sol_pq),
            floor("floor_submission", "read the submission CSV alone", sub),
            score("scorer_prepared", "CSV, prepared solution", sub, str(data / PREPARED)),
        ]
    if args.twins and not k100:
        found += [
            score(f"scorer_{kind}", f"CSV, {label}", str(twin(data, kind)), sol)
            for kind, label in TWIN_LABELS.items()
        ]
    if full and args.threads:
        found.append(score("scorer_csv_1thread", "CSV, 1 thread", sub, sol, POLARS_MAX_THREADS="1"))
    if before is not None:
        found += [
            Command(
                "before_" + c.name.removeprefix("scorer_"),
                c.label.replace("`scorer score`", f"{before.rev}:"),
                [*OLD_SCORER, *c.argv[len(SCORER) :]],
                before.env,
                exact=True,
            )
            for c in found
            if c.name.removeprefix("scorer_") in ("csv", *TWINS)  # (no prepare before)
        ]
    if args.peers and not k100 and users <= args.peers_max:
        found += peers(sub, sol, users, args)
    return found


#: The careful twins (bench/generate.py) as the tables name them.
TWIN_LABELS = {
    "quoted": 'one cell quoted ("1")',
    "spaced": "a space after one value (the careful reader)",
}
#: The prepared solution's name in a size's folder (made again by each run: it is refused once
#: the scorer's code changes).
PREPARED = "solution.prepared"


def peers(sub: str, sol: str, users: int, args: argparse.Namespace) -> list[Command]:
    """The pure-Python dict scorer, and pytrec_eval and ranx if bench/.venv-peers has them."""
    found = [
        Command(
            "dict",
            "pure-Python dict scorer",
            [str(PYTHON), str(BASELINES / "dict_scorer.py"), sub, sol],
        )
    ]
    if not PEERS.exists():
        print(f"skipping pytrec_eval and ranx: no {PEERS}", file=sys.stderr)
        return found
    tools = {"pytrec_eval": ("pytrec_eval (ndcg_cut.20)", "pytrec_scorer.py")}
    if users <= args.ranx_max:
        tools["ranx"] = ("ranx (ndcg@20)", "ranx_scorer.py")
    return found + [
        Command(name, label, [str(PEERS), str(BASELINES / script), sub, sol])
        for name, (label, script) in tools.items()
    ]


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
    """Compare every command with `scorer score` on the CSV files; return notes for the report."""
    ours = results["scorer_csv"]
    notes = [
        f"`scorer score` CSV: overall {ours['overall']!r}, public {ours['public']!r}, "
        f'private {ours["private"]!r} ({ours["users"]["overall"]:,} users); "the same '
        f'scores" below: the same {", ".join(SAME)} in the JSON output'
    ]
    for command in cmds:
        got = results[command.name]
        if command.name.startswith("floor") or command.name == "scorer_csv":
            continue
        if command.exact:
            differ = [key for key in SAME if key in ours and got.get(key) != ours[key]]
            if differ:
                raise SystemExit(f"{command.name}: {differ} are not bit-identical to ours")
            notes.append(f"{command.label}: the same scores, bit for bit")
            continue
        worst = 0.0
        for split in ("overall", "public", "private"):
            a, b = ours[split], got[split]
            if not isinstance(a, float) or not isinstance(b, float):
                raise SystemExit(f"{command.name}: {split} = {b!r}, ours {a!r}")
            worst = max(worst, abs(a - b))
        users = got.get("users")
        if isinstance(users, dict) and users.get("overall") != ours["users"]["overall"]:
            raise SystemExit(f"{command.name}: {users} users, ours {ours['users']}")
        if worst > TOLERANCE:
            raise SystemExit(f"{command.name}: differs from ours by {worst:.3g} > {TOLERANCE}")
        how = "bit-identical" if worst == 0 else f"max |diff| {worst:.1e}"
        notes.append(f"{command.label}: agrees ({how})")
    return notes


def timed(
    cmds: list[Command], got: dict[str, Any], repeats: int
) -> tuple[dict[str, list[Sample]], list[float]]:
    """Every command `repeats` times, interleaved, the order rotating each repeat; the samples
    and the 1-minute load averages before and after each repeat. A score that changes fails."""
    samples: dict[str, list[Sample]] = {c.name: [] for c in cmds}
    loads = [os.getloadavg()[0]]
    for repeat in range(repeats):
        shift = repeat % len(cmds)
        for c in cmds[shift:] + cmds[:shift]:
            sample, stdout = run_once(c)
            if not c.name.startswith("floor") and (
                scores_of(stdout)["overall"] != got[c.name]["overall"]
            ):
                raise SystemExit(f"{c.name}: a different score on repeat {repeat + 1}")
            samples[c.name].append(sample)
            print(
                f"[{repeat + 1}/{repeats}] {c.name}: {sample.wall:.2f} s wall, "
                f"{sample.cpu:.2f} s cpu, {sample.rss_mb:,.0f} MB",
                file=sys.stderr,
            )
        loads.append(os.getloadavg()[0])
    return samples, loads


def row(command: Command, runs: list[Sample]) -> dict[str, Any]:
    return {
        "name": command.name,
        "label": command.label,
        "command": command.shown(ROOT),
        "wall": statistics.median(s.wall for s in runs),
        "walls": [round(s.wall, 3) for s in runs],
        "cpu": statistics.median(s.cpu for s in runs),
        "rss_mb": statistics.median(s.rss_mb for s in runs),
    }


def bench_size(
    users: int, args: argparse.Namespace, before: Before | None, k100: bool = False
) -> dict[str, Any]:
    """Generate, check and time one size; its record as saved in RESULTS.json."""
    if k100:
        data = make_k100(args.work / f"k100-{users}", users)
    else:
        data = generate(users, seed=args.seed, work=args.work)
    cmds = commands(data, users, args, before, k100)
    if args.only:  # a quick look at a few commands; scorer_csv is every check's reference
        cmds = [c for c in cmds if c.name in {"scorer_csv", *args.only}]
    print(f"\n== {data.name}: {data}", file=sys.stderr)
    made: dict[str, dict[str, Any]] = {}
    if any(c.name == "scorer_prepared" for c in cmds):  # made before the check and the timing
        argv = [*SCORER, "prepare", str(data / "solution.csv"), "--out", str(data / PREPARED)]
        label = "`scorer prepare` the solution CSV (once, before the timed runs)"
        prepare = Command("prepare", label, [*argv, "--json"])
        sample, _ = run_once(prepare)
        made["scorer_prepared"] = row(prepare, [sample])  # shown above the score it serves
        print(f"prepare: {sample.wall:.2f} s", file=sys.stderr)
    results: dict[str, dict[str, Any]] = {}
    for command in cmds:  # the check run is also the warm-up (page cache, numba's cache)
        sample, stdout = run_once(command)
        results[command.name] = scores_of(stdout)
        print(f"check {command.name}: {sample.wall:.2f} s", file=sys.stderr)
    notes = check(results, cmds)
    samples, loads = timed(cmds, results, args.repeats)
    table = []
    for c in cmds:
        table += [made[c.name]] if c.name in made else []
        table.append(row(c, samples[c.name]))
    manifest = data / "manifest.json"
    rows = json.loads(manifest.read_text())["rows"] if manifest.is_file() else {}
    for name in ("submission", "solution"):
        if name not in rows:  # the k = 100 folder has no manifest
            rows[name] = pl.scan_csv(data / f"{name}.csv").select(pl.len()).collect().item()
    return {
        "key": data.name,
        "title": f"k = 100, {users:,} users" if k100 else f"{users:,} users",
        "users": users,
        "repeats": args.repeats,
        "rows": rows,
        "bytes": {p.name: p.stat().st_size for p in sorted(data.iterdir()) if p.is_file()},
        "table": table,
        "notes": notes,
        "load": loads,
    }


def code_version(root: Path = ROOT) -> str:
    """The commit, and a digest of the scorer's sources as they are (the tree may be dirty)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root
    ).stdout.strip()
    digest = hashlib.sha256()
    for path in sorted((root / "scorer").rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
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


@dataclass(frozen=True)
class Target:
    """One line of the targets table: a target, the figure measured, and whether it is met
    (None: reported without a target, or not measured)."""

    what: str
    figure: str
    met: bool | None


class Ratio(NamedTuple):
    """A target on a ratio of medians: `a`'s over `b`'s, of the size keyed `key`, at most
    `limit` (None: reported, no target)."""

    what: str
    key: str
    a: str
    b: str
    limit: float | None
    measure: str = "wall"


#: The sizes of issue 16 that have the careful twins, as RESULTS.json keys them (a run's data
#: folder) and as a target names them.
SIZES = {"100000": "100k users", "1000000": "1M users", "10000000": "10M users"}
SLOWER = f"now / before ≤ {1 + NOISE:.2f} ({NOISE:.0%} for noise)"
M = "1000000"
#: Issue 16's targets on ratios, but for the careful twins' (`careful`).
RATIOS = [
    Ratio("1M users, CSV, full validation: wall ≤ 2.0× the floor", M, "scorer_csv", "floor", 2.0),
    Ratio("1M users, CSV: peak RSS ≤ 1.8× the floor's", M, "scorer_csv", "floor", 1.8, "rss_mb"),
    Ratio(
        "1M users, Parquet: wall ≤ 2.5× the floor that reads both Parquet files",
        *(M, "scorer_parquet", "floor_parquet", 2.5),
    ),
    Ratio(
        "1M users, a prepared solution: wall ≤ 1.6× the floor that reads the submission alone",
        *(M, "scorer_prepared", "floor_submission", 1.6),
    ),
    Ratio(f"100k users: not slower, {SLOWER}", "100000", "scorer_csv", "before_csv", 1 + NOISE),
    Ratio(
        f"K = 100, 200k users: not slower, {SLOWER}",
        *("k100-200000", "scorer_csv", "before_csv", 1 + NOISE),
    ),
    Ratio(
        f"10M users in parts: not slower, {SLOWER}",
        "10000000",
        "scorer_csv",
        "before_csv",
        1 + NOISE,
    ),
]


def careful(key: str) -> list[Ratio]:
    """The careful twins' targets at one size."""
    size = SIZES[key]
    return [
        Ratio(
            f"{size}: one quoted cell ≤ 1.5× its clean twin",
            key,
            "scorer_quoted",
            "scorer_csv",
            1.5,
        ),
        Ratio(
            f"{size}: a space after one value (the careful reader), against its clean twin",
            *(key, "scorer_spaced", "scorer_csv", None),
        ),
        Ratio(
            f"{size}: the careful reader not slower, {SLOWER}",
            *(key, "scorer_spaced", "before_spaced", 1 + NOISE),
        ),
    ]


def key_of(run: dict[str, Any]) -> str:
    return str(run.get("key", run["users"]))  # records before issue 16 have no key


def versus(table: dict[str, Any], a: str, b: str, measure: str = "wall") -> tuple[str, float]:
    """`a`'s median over `b`'s, as a figure (`7.10 s / 3.60 s = 1.97x`) and a ratio; KeyError
    when either was not measured."""
    x, y = table[a][measure], table[b][measure]
    shown = f"{x:,.0f} MB / {y:,.0f} MB" if measure == "rss_mb" else f"{x:.2f} s / {y:.2f} s"
    return f"{shown} = {x / y:.2f}×", x / y


def targets(runs: list[dict[str, Any]]) -> list[Target]:
    """Issue 16's targets, each met or not, from the figures of one record's runs."""
    by_key = {key_of(r): {t["name"]: t for t in r["table"]} for r in runs}
    twins = [k for k in SIZES if "scorer_quoted" in by_key.get(k, {})] or [M]
    found = []
    for r in RATIOS + [r for key in twins for r in careful(key)]:
        try:
            figure, value = versus(by_key.get(r.key, {}), r.a, r.b, r.measure)
        except KeyError:
            found.append(Target(r.what, "not measured", None))
            continue
        found.append(Target(r.what, figure, None if r.limit is None else value <= r.limit))
    parts = by_key.get("10000000", {}).get("scorer_csv")
    found.insert(
        len(RATIOS),
        Target(
            f"10M users in parts: peak RSS ≤ {BUDGET_MB >> 10} GiB",
            f"{parts['rss_mb']:,.0f} MB" if parts else "not measured",
            parts["rss_mb"] <= BUDGET_MB if parts else None,
        ),
    )
    prepare = by_key.get(M, {}).get("prepare")
    if prepare:
        once = "1M users: `scorer prepare` the solution (once, before the timed runs; reported)"
        figure = f"{prepare['wall']:.2f} s, {prepare['rss_mb']:,.0f} MB"
        found.insert(4, Target(once, figure, None))
    return found


def targets_table(runs: list[dict[str, Any]]) -> list[str]:
    verdict = {True: "met", False: "**not met**", None: "–"}
    lines = ["| target | figure | met |", "|---|---|---|"]
    return lines + [f"| {t.what} | {t.figure} | {verdict[t.met]} |" for t in targets(runs)]


#: The ratio of each command's row: to its floor, or a twin to its clean file (default: floor).
BASES: dict[str, str | None] = {
    "floor": None,
    "prepare": None,
    "scorer_parquet": "floor_parquet",
    "scorer_prepared": "floor_submission",
    "scorer_quoted": "scorer_csv",
    "scorer_spaced": "scorer_csv",
    "before_quoted": "before_csv",
    "before_spaced": "before_csv",
}


def size_table(table: list[dict[str, Any]]) -> list[str]:
    """One size's commands: medians, ratios to their base, today ÷ before, each repeat's wall."""
    named = {r["name"]: r for r in table}
    out = [
        "| command | wall (median) | cpu | peak RSS | ratio to | wall × | cpu × | RSS × "
        "| ÷ before (wall) | walls |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    keys = ("wall", "cpu", "rss_mb")
    for r in table:
        base = named.get(BASES.get(r["name"], "floor") or "")
        ratios = [f"{r[k] / base[k]:.2f}" if base else "–" for k in keys]
        old = named.get("before_" + r["name"].removeprefix("scorer_"))
        then = f"{r['wall'] / old['wall']:.2f}" if old and r["name"].startswith("scorer_") else "–"
        out.append(
            f"| {r['label']} | {r['wall']:.2f} s | {r['cpu']:.2f} s | {r['rss_mb']:,.0f} MB | "
            f"{base['name'] if base else '–'} | {' | '.join(ratios)} | {then} | "
            f"{', '.join(f'{w:.2f}' for w in r['walls'])} |"
        )
    return out


def regenerate(argv: list[str]) -> str:
    """The commands that made a record (`--add` runs are saved as one argv joined by '&&')."""
    runs_of: list[list[str]] = [[]]
    for arg in argv:
        if arg == "&&":
            runs_of.append([])
        else:
            runs_of[-1].append(arg)
    return " && ".join(shlex.join([".venv/bin/python", "bench/run.py", *one]) for one in runs_of)


def render(record: dict[str, Any]) -> str:
    """The Markdown report of one record (as saved in RESULTS.json)."""
    info, runs = dict(record["info"]), record["runs"]
    when = info.pop("date")
    out = [
        "# Benchmark: `scorer score` against the floor, its careful twins and the code before",
        "",
        f"Regenerate with `{regenerate(record['argv'])}` from the repository root (`--peers` "
        "needs `python3 -m venv bench/.venv-peers && bench/.venv-peers/bin/pip install -r "
        "bench/requirements-peers.txt`).",
        "",
        f"- date: {when}",
        *[f"- {k}: {v}" for k, v in info.items()],
        "- repeats: "
        + ", ".join(
            f"{r.get('repeats', record['repeats'])} at {r.get('title', r['users'])}" for r in runs
        )
        + ", interleaved (the order rotates each repeat) after a run that checks the scores; "
        "medians shown",
        "- wall: the child's wall time from spawn to exit (start-up and imports included); "
        "cpu: its user + sys time; peak RSS: its `ru_maxrss` (`os.wait4`, bench/measure.py)",
        "- data: `bench/generate.py` (`scorer.synthetic.make_competition`, seed "
        f"{record['seed']}): 1–30 lost pairs a user, 20 ranked editions each, 50/50 "
        "public/private; k = 100: `generate.make_k100` (100 ranked editions, 0–30 lost); the "
        'careful twins: the submission with its first data row\'s rank quoted (`"1"`) or a '
        "space after its edition (`1004 ,`), every other byte the same",
        "- ratio to: each row's wall, cpu and peak RSS over those of the row named (its floor; a "
        "twin's clean file); ÷ before: today's wall over the same command's at `--before`",
        "",
        "The machine is shared: other sessions run tests and benchmarks on the same 2 cores, so "
        "wall times carry their load (the 1-minute load average is shown for each size). CPU "
        "time is less sensitive to it and is shown beside. Where the time goes inside "
        "`scorer score`: `bench/PROFILE.md`.",
    ]
    for run in runs:
        rows, sizes = run["rows"], run["bytes"]
        loads = ", ".join(f"{x:.1f}" for x in run["load"])

        def mb(name: str, sizes: dict[str, int] = sizes) -> str:
            csv, pq = sizes.get(f"{name}.csv", 0), sizes.get(f"{name}.parquet")
            return f"{csv / 1e6:,.0f} MB CSV" + (f", {pq / 1e6:,.0f} MB Parquet" if pq else "")

        out += [
            "",
            f"## {run.get('title') or format(run['users'], ',') + ' users'}",
            "",
            f"submission {rows['submission']:,} rows ({mb('submission')}); solution "
            f"{rows['solution']:,} rows ({mb('solution')}). Load average during the run: "
            f"{loads}.",
            "",
            *size_table(run["table"]),
            "",
            "Scores checked before timing:",
            "",
            *[f"- {note}" for note in run["notes"]],
            "",
            "<details><summary>commands</summary>",
            "",
            "```",
            *[f"{r['name']}: {r['command']}" for r in run["table"]],
            "```",
            "",
            "</details>",
        ]
    out += ["", "## Targets (issue 16)", "", *targets_table(runs)]
    return "\n".join(out) + "\n"


def readme_block(record: dict[str, Any]) -> str:
    """The README's performance table: issue 16's targets, from a record."""
    info = record["info"]
    commit = info["code"].split(",")[0]  # "commit abc1234", without the sources' digest
    before = info.get("before", "not run").split(" = ")[0]  # "92c2901", not its full hash
    return "\n".join(
        [
            f"Issue 16's targets, from [`bench/RESULTS.md`](bench/RESULTS.md) ({info['date']}, "
            f"{commit}; {info['cpu']}; medians, each command a fresh process; before: {before}):",
            "",
            *targets_table(record["runs"]),
        ]
    )


def with_block(text: str, block: str) -> str:
    """`text` with `block` between its performance markers."""
    start, end = (text.find(m) for m in MARKERS)
    if start < 0 or end < start:
        raise SystemExit(f"no {MARKERS[0]} … {MARKERS[1]} in the README")
    return text[: start + len(MARKERS[0])] + "\n" + block + "\n" + text[end:]


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
    checked = f"imports checked: today's commands run {_rel(now, ROOT)}"
    if before:
        then = imports_from(OLD_SCORER[:2], before.env, before.tree)
        checked += f", {before.rev}'s run {_rel(then, ROOT)}"
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
