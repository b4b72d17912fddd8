"""bench/run.py's runner: the commands of one size, each run as a fresh process through
bench/measure.py, their scores checked against `scorer score` on the CSV files, then timed."""

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
from pathlib import Path
from typing import Any

import polars as pl
from generate import DEFAULT_WORK, TWINS, generate, make_k100, text_twin, twin

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

#: Agreement required between a peer's split means and ours (every `scorer` command: the bits).
TOLERANCE = 1e-9
#: The JSON fields of a `scorer score` that every `scorer` command must give bit for bit.
SAME = ("metric", "k", "overall", "public", "private", "users", "metrics")
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
        words = [relative(a, root) for a in self.argv]
        return (env + " " if env else "") + shlex.join(words)


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float


def relative(arg: str, root: Path) -> str:
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
    if full and args.text_ids:
        text = text_twin(data)
        argv = [*SCORER, "score", str(text / "submission.csv"), "--solution"]
        argv += [str(text / "solution.csv"), "--competition", str(text / "competition.toml")]
        label = "`scorer score` CSV, text ids (32-hex users, 10-digit editions)"
        found.append(Command("scorer_text", label, [*argv, "--json"], exact=True))
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
