"""Jobs per minute of 1 and 2 `scorer serve worker` processes on one PostgreSQL store, and
how long a web process takes to accept one large upload on PostgreSQL and on SQLite.

Run from the repository's root: `.venv/bin/python bench/workers_bench.py` (about 15 minutes).

One throwaway cluster (tests/support/postgres_cluster.py), a new database a pass: `scorer serve init
--db` with a `--users` competition (bench/generate.py, or bench/serve_bench.py's cache), 20
teams, a web process `scorer serve run --db URL --no-workers`, and `--jobs` uploads posted to
it, every one queued before any worker starts. Each upload is another variant of the same
submission (its first i users moved to the end: the same score, other bytes), so no worker
finds its verdict in its cache. Then K `scorer serve worker --workers 1` start, and the clock
runs from their start until the database holds every verdict (read every 0.2 s). A round
has four passes: K = 1 and 2, each with the web process up (as a server runs: it answers
requests and reads the boards the workers publish in the store, on the same cores) and with
it stopped once the uploads are in (the workers alone); the next round runs them in reverse
order, so the machine's drift falls on all. Each worker's output is timed line by line into its log:
its first verdict (the start-up) and its steady rate after it. The CPU the workers used (their
judging processes included), the web process's and the whole machine's (/proc/stat) say
whether a pass had the cores to itself.

With `--big` (on by default when the 1M-user submission of bench/serve_bench.py's cache is
there), the upload alone: one 1M-user CSV (368 MB) posted 3 times to a web process on
PostgreSQL (`--no-workers`: nothing scores it) and to one on SQLite (`run DIR`, which scores
it: each upload waits for the verdict before it, and for the server's CPU to settle).

It writes its section of bench/SERVE.md, between its markers, in place. Every file it makes
is under `--root` (the worker's and web processes' folders too: TMPDIR points there), the
logs kept; the cluster is the tests', in a temporary folder it removes itself."""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402 - after the paths above
from generate import FORMAT, generate  # noqa: E402
from leaderboard_bench import commit  # noqa: E402
from report import put_section  # noqa: E402
from serve_bench import stop  # noqa: E402
from support.postgres_cluster import cluster, free_port, new_database  # noqa: E402 - the tests' cluster

from scorer.serve.postgres import PostgresStore  # noqa: E402
from scorer.serve.store import FINAL, Limits  # noqa: E402

START, END = "<!-- workers: written by bench/workers_bench.py -->", "<!-- workers end -->"

#: Where bench/serve_bench.py keeps its generated competitions: used when they are there.
CACHE = Path("/tmp/servebench/data")

#: The time between two reads of the verdicts, in seconds.
POLL = 0.2

#: How long a server may take to answer at its start; a pass to finish (a process is given
#: `serve_bench.stop`'s 60 s to stop).
READY, DEADLINE = 120.0, 1800.0


@dataclass
class Served:
    """A web process on a fresh competition: its address, admin token and teams' tokens."""

    url: str
    admin: str
    tokens: list[str]
    process: subprocess.Popen[bytes]

    def auth(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def statuses(self, client: httpx.Client) -> dict[int, str]:
        answer = client.get(f"{self.url}/api/v1/admin/submissions", headers=self.auth(self.admin))
        answer.raise_for_status()
        return {int(row["id"]): str(row["status"]) for row in answer.json()["submissions"]}


@dataclass
class Worker:
    """A `scorer serve worker` whose output is timed line by line into its log."""

    process: subprocess.Popen[bytes]
    log: Path
    started: float
    verdicts: list[float] = field(default_factory=list)
    tracebacks: int = 0
    reader: threading.Thread | None = None

    def read(self, stream: IO[bytes]) -> None:
        with self.log.open("wb") as log:
            for line in stream:
                at = time.perf_counter() - self.started
                log.write(f"{at:8.2f} ".encode() + line)
                log.flush()
                text = line.decode(errors="replace")
                if text.startswith("scorer serve worker: submission "):
                    self.verdicts.append(at)
                if text.startswith("Traceback"):
                    self.tracebacks += 1


def scorer(*args: str) -> list[str]:
    return [sys.executable, "-m", "scorer", *args]


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(scorer(*args), capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scorer {shlex.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def cpu(pid: int) -> float:
    """CPU seconds a running process has used (its threads', not its children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def settle(pid: int, limit: float = 120.0) -> None:
    """Wait until the process used under 5% of a core over a second (a board built after a
    verdict, a write finishing), at most `limit` seconds."""
    deadline = time.monotonic() + limit
    before = cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu(pid)
        if now - before < 0.05:
            return
        before = now


def machine() -> float:
    """CPU seconds the machine's cores have been busy since boot (/proc/stat: all but idle
    and iowait), everyone's processes."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def children() -> float:
    """CPU seconds of this process's children that ended (and of theirs, that they waited
    for): a worker's judging processes count in it."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@contextmanager
def served(
    folder: Path, solution: Path, db: str | None, daily: int, env: dict[str, str]
) -> Iterator[Served]:
    """A new competition of `solution` in `folder` (its store the database `db`, or SQLite in
    the folder), 20 teams, and a web process on it: `--no-workers` on PostgreSQL."""
    store = ["--db", db] if db is not None else []
    limits = ["--daily-limit", str(daily), "--rejected-limit", str(daily)]
    made = cli(
        env, "serve", "init", str(folder), "--solution", str(solution), *store, *limits, "--json"
    )
    admin = json.loads(made)["admin_token"]
    teams, tokens = folder.parent / f"{folder.name}-teams.csv", folder / "tokens.csv"
    teams.write_text("team\n" + "".join(f"team {n}\n" for n in range(20)), encoding="utf-8")
    cli(env, "serve", "team", "add", str(folder), "--from", str(teams), "--out", str(tokens))
    with tokens.open(encoding="utf-8", newline="") as rows:
        secrets = [row["token"] for row in csv.DictReader(rows)]
    port = free_port()
    where = [*store, "--no-workers"] if db is not None else [str(folder)]
    with (folder.parent / f"{folder.name}-web.log").open("wb") as log:
        process = subprocess.Popen(
            scorer("serve", "run", *where, "--port", str(port)),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + READY
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the web process exited {process.returncode}: see {log.name}")
            with suppress(httpx.TransportError):
                if httpx.get(f"{url}/api/v1/competition", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"the web process did not answer in {READY:.0f} s")
            time.sleep(POLL)
        yield Served(url, admin, secrets, process)
    finally:
        stop(process)


def post(served: Served, team: int, name: str, body: bytes | IO[bytes]) -> tuple[int, float]:
    """One upload: its id, and the seconds from the POST to its 202."""
    started = time.perf_counter()
    answer = httpx.post(
        f"{served.url}/api/v1/submissions",
        headers=served.auth(served.tokens[team % len(served.tokens)]),
        files={"file": (name, body, "text/csv")},
        timeout=DEADLINE,
    )
    took = time.perf_counter() - started
    if answer.status_code != 202:
        raise SystemExit(f"upload {name} refused: {answer.status_code} {answer.text}")
    return int(answer.json()["id"]), took


def variants(source: Path, count: int) -> Iterator[bytes]:
    """`count` variants of a submission sorted by user: the i-th has its first i users' rows
    moved to the end (row order changes nothing: the same score, other bytes)."""
    data = source.read_bytes()
    header, body = data[: data.index(b"\n") + 1], data[data.index(b"\n") + 1 :]
    cuts, user, at = [0], b"", 0
    while len(cuts) < count:
        if at >= len(body):
            raise SystemExit(f"{source}: fewer than {count} users, one a variant")
        this = body[at : body.index(b",", at)]
        if user and this != user:
            cuts.append(at)
        user, at = this, body.index(b"\n", at) + 1
    for cut in cuts:
        yield header + body[cut:] + body[:cut]


def competition(users: int, root: Path) -> Path:
    """The folder of a `users` competition: bench/serve_bench.py's cache when it holds it,
    else generated under `root`."""
    cached = CACHE / str(users)
    with suppress(OSError, ValueError):
        found = json.loads((cached / "manifest.json").read_text())
        if (found.get("format"), found.get("users"), found.get("seed")) == (FORMAT, users, 0):
            return cached
    return generate(users, work=root / "data")


def one_pass(
    url: str,
    root: Path,
    solution: Path,
    bodies: list[bytes],
    setup: tuple[bool, int],
    name: str,
    env: dict[str, str],
) -> dict[str, Any]:
    """Every upload queued through a web process, then `k` workers started (the web process
    kept up, or stopped first) and timed until the database holds every verdict."""
    web_up, k = setup
    folder = root / name
    jobs = len(bodies)
    db = new_database(url)
    store = PostgresStore(db, Limits(daily=None))  # read only: the verdicts as they come
    with served(folder, solution, db, jobs, env) as web:
        for n, body in enumerate(bodies):
            post(web, n, f"upload-{n}.csv", body)
        settle(web.process.pid)
        if not web_up:
            stop(web.process)
        busy, spent = machine(), children()
        web_cpu = cpu(web.process.pid) if web_up else 0.0
        started = time.perf_counter()
        workers = []
        for n in range(k):
            process = subprocess.Popen(
                scorer("serve", "worker", "--db", db, "--workers", "1"),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
            )
            worker = Worker(process, root / f"{name}-worker{n + 1}.log", started)
            worker.reader = threading.Thread(target=worker.read, args=(process.stdout,))
            worker.reader.start()
            workers.append(worker)
        final: dict[int, float] = {}
        try:
            while len(final) < jobs:
                now = time.perf_counter() - started
                for entry in store.entries():
                    if entry.status in FINAL and entry.id not in final:
                        final[entry.id] = now
                if now > DEADLINE:
                    raise SystemExit(f"{name}: {len(final)} of {jobs} verdicts in {now:.0f} s")
                if any(w.process.poll() is not None for w in workers):
                    raise SystemExit(f"{name}: a worker exited; see its log under {root}")
                time.sleep(POLL)
            busy, ended = machine() - busy, time.perf_counter() - started
            web_cpu = cpu(web.process.pid) - web_cpu if web_up else 0.0
        finally:
            for worker in workers:
                stop(worker.process)
                if worker.reader is not None:
                    worker.reader.join()
        spent = children() - spent  # the workers' processes, their judging ones included
        statuses = Counter(str(entry.status) for entry in store.entries())
    shutil.rmtree(folder)
    total = max(final.values())
    # Each worker's rate after its first verdict, summed: its start-up left out.
    steady = sum(
        (len(w.verdicts) - 1) / (w.verdicts[-1] - w.verdicts[0]) * 60
        for w in workers
        if len(w.verdicts) > 1 and w.verdicts[-1] > w.verdicts[0]
    )
    result = {
        "web": web_up,
        "k": k,
        "jobs": jobs,
        "total": total,
        "per_minute": jobs / total * 60,
        "first": min(final.values()),
        "steady": steady,
        "split": [len(w.verdicts) for w in workers],
        "statuses": dict(statuses),
        "busy": busy / ended,
        "workers_cpu": spent / ended,
        "web_cpu": web_cpu / ended if web_up else None,
        "per_job": [
            statistics.median(b - a for a, b in itertools.pairwise(w.verdicts))
            for w in workers
            if len(w.verdicts) > 1
        ],
        "tracebacks": [str(w.log) for w in workers if w.tracebacks],
    }
    print(f"{name}: {json.dumps(result)}", file=sys.stderr)
    return result


def accepts(
    url: str, root: Path, data: Path, rounds: int, env: dict[str, str]
) -> dict[str, list[float]]:
    """Seconds from the POST of `data`'s submission to its 202, on each store, `rounds` times
    (the two alternating)."""
    times: dict[str, list[float]] = {"PostgreSQL": [], "SQLite": []}
    solution, upload = data / "solution.csv", data / "submission.csv"
    with (
        served(root / "big-postgres", solution, new_database(url), 10, env) as postgres,
        served(root / "big-sqlite", solution, None, 10, env) as sqlite,
        httpx.Client(timeout=60) as client,
    ):
        for n in range(rounds):
            for store, web in (("PostgreSQL", postgres), ("SQLite", sqlite)):
                settle(web.process.pid)
                with upload.open("rb") as body:
                    ident, took = post(web, n, upload.name, body)
                times[store].append(took)
                print(f"big upload, {store}: {took:.2f} s", file=sys.stderr)
                if web is sqlite:  # it scores what it accepts: the verdict before the next
                    deadline = time.monotonic() + DEADLINE
                    while web.statuses(client)[ident] not in FINAL:
                        if time.monotonic() > deadline:
                            raise SystemExit(f"no verdict on SQLite in {DEADLINE:.0f} s")
                        time.sleep(POLL)
    shutil.rmtree(root / "big-postgres")
    shutil.rmtree(root / "big-sqlite")
    return times


#: A round's passes: (the web process up, worker processes) -> that pass's figures.
Round = dict[tuple[bool, int], dict[str, Any]]

#: The passes of a round, in this order in odd rounds and the reverse in even ones.
PASSES = ((True, 1), (True, 2), (False, 1), (False, 2))


def render(
    rounds: list[Round], big: dict[str, list[float]] | None, big_size: int, args: argparse.Namespace
) -> list[str]:
    command = shlex.join([".venv/bin/python", "bench/workers_bench.py", *sys.argv[1:]])

    def ratio(found: Round, web: bool, key: str = "per_minute") -> float:
        return float(found[web, 2][key] / found[web, 1][key])

    def median(web: bool, k: int, key: str) -> float:
        return statistics.median(float(found[web, k][key]) for found in rounds)

    def ratios(web: bool, key: str = "per_minute") -> float:
        return statistics.median(ratio(found, web, key) for found in rounds)

    lines = [
        START,
        "## Jobs per minute with 1 and 2 worker processes",
        "",
        f"`{command}` (commit {commit()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC): on one "
        f"throwaway PostgreSQL cluster (fsync off), a database a pass: {args.jobs} uploads of a "
        f"{args.users:,}-user submission from 20 teams (each a variant: other bytes, the same "
        "score, so no worker's cache of verdicts spares it), all queued through a "
        "`serve run --no-workers` web process before any worker starts; then 1 or 2 "
        "`scorer serve worker --workers 1`, timed from their start until the database holds "
        "every verdict (read every 0.2 s). Each is run twice: with the web process up, as a "
        "server runs (it reads the boards the workers build from the store's verdicts and "
        "publish there, on the same 2 cores), and with it stopped once the uploads are "
        "in: the workers alone. A round runs the four passes, the next round in reverse "
        "order; the cores are shared with other sessions, so compare within a round. Jobs a "
        "minute:",
        "",
        "| round | web process up: 1 worker | 2 workers | ratio "
        "| workers alone: 1 worker | 2 workers | ratio |",
        "|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for n, found in enumerate(rounds, 1):
        cells = [
            f"{found[web, 1]['per_minute']:.1f} | {found[web, 2]['per_minute']:.1f} "
            f"| {ratio(found, web):.2f}×"
            for web in (True, False)
        ]
        lines.append(f"| {n} | {' | '.join(cells)} |")
    cells = [
        f"{median(web, 1, 'per_minute'):.1f} | {median(web, 2, 'per_minute'):.1f} "
        f"| {ratios(web):.2f}×"
        for web in (True, False)
    ]
    lines += [
        f"| median | {' | '.join(cells)} |",
        "",
        "Each pass: its wall time; the first verdict (the workers' start-up: imports, the "
        "solution fetched from the database, the first judging); the steady rate (each "
        "worker's verdicts a minute after its first, summed); the median time between two "
        "verdicts of one worker (a job's cost); the verdicts each worker gave; the CPU the "
        "workers used (their judging processes included), the web process's, and the "
        "machine's cores busy (/proc/stat: every process, PostgreSQL's and other sessions' "
        "too), each in cores over the pass.",
        "",
        "| round | web process | workers | wall | first verdict | steady jobs/min "
        "| a job, each worker | verdicts each | workers' CPU | web process's CPU "
        "| machine busy |",
        "|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, found in enumerate(rounds, 1):
        for (web, k), result in found.items():
            each = " / ".join(f"{t:.2f} s" for t in result["per_job"])
            split = " + ".join(str(v) for v in result["split"])
            web_cpu = "—" if result["web_cpu"] is None else f"{result['web_cpu']:.2f}"
            lines.append(
                f"| {n} | {'up' if web else 'stopped'} | {k} | {result['total']:.1f} s "
                f"| {result['first']:.1f} s | {result['steady']:.1f} | {each} | {split} "
                f"| {result['workers_cpu']:.2f} | {web_cpu} | {result['busy']:.2f} |"
            )
    verdicts: Counter[str] = Counter()
    for found in rounds:
        for result in found.values():
            verdicts.update(result["statuses"])
    logs = [log for found in rounds for result in found.values() for log in result["tracebacks"]]

    def seconds(web: bool, k: int, key: str) -> float:
        """CPU seconds a verdict, from a pass's cores (`key`) over its wall time."""
        return statistics.median(
            float(found[web, k][key] * found[web, k]["total"] / found[web, k]["jobs"])
            for found in rounds
        )

    lines += [
        "",
        f"Medians of the rounds: with the web process up, 2 workers give {ratios(True):.2f}× "
        f"the jobs a minute of 1 ({ratios(True, 'steady'):.2f}× after the first verdict); "
        f"alone, {ratios(False):.2f}× ({ratios(False, 'steady'):.2f}×). One worker alone "
        f"keeps {median(False, 1, 'workers_cpu'):.2f} cores busy (its judging process's "
        "polars threads, and its own work on the next job); with two, the machine had "
        f"{median(False, 2, 'busy'):.2f} of its 2 cores busy. With one worker, the web "
        f"process used {median(True, 1, 'web_cpu'):.2f} of a core, "
        f"{seconds(True, 1, 'web_cpu'):.1f} CPU-seconds a verdict against "
        f"{seconds(False, 1, 'workers_cpu'):.1f} for the worker that judged it alone. "
        f"Verdicts: {', '.join(f'{n} {status}' for status, n in verdicts.most_common())}; "
        f"worker logs with a traceback: {len(logs) or 'none'}.",
    ]
    if big is not None:
        base = statistics.median(big["SQLite"])
        lines += [
            "",
            f"The upload alone: one {big_size / 1e6:.0f} MB CSV (1,000,000 users) posted "
            f"{len(big['SQLite'])} times to a web process on each store, alternating, timed "
            "from the POST to its 202 (the cap on an upload is 1 GiB by default). On PostgreSQL "
            "it goes into the store's `files` table in the transaction that accepts it (fsync "
            "off in this cluster: a durable one pays more); on SQLite into the folder, "
            "fsynced, and that server scores it before the next upload is posted.",
            "",
            "| store | POST to 202, median | each | × SQLite |",
            "|:---|---:|---:|---:|",
        ]
        for store in ("SQLite", "PostgreSQL"):
            each = ", ".join(f"{t:.2f} s" for t in big[store])
            middle = statistics.median(big[store])
            lines.append(f"| {store} | {middle:.2f} s | {each} | {middle / base:.1f}× |")
    else:
        lines += ["", f"The upload alone was not measured ({args.big_note})."]
    lines += ["", END]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--big",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the 1M-user upload on each store (default: when its file is cached)",
    )
    parser.add_argument("--root", type=Path, default=None, help="default: a new temp folder")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "SERVE.md")
    args = parser.parse_args()
    root: Path = args.root or Path(tempfile.mkdtemp(prefix="workers-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(root / "tmp")}  # the processes' own folders, here
    cached = CACHE / "1000000" / "submission.csv"
    if args.big is None:
        args.big = cached.is_file()
        args.big_note = f"{cached} is not there; `--big` generates it"
    else:
        args.big_note = "`--no-big`"
    data = competition(args.users, root)
    bodies = list(variants(data / "submission.csv", args.jobs))
    rounds: list[Round] = []
    big: dict[str, list[float]] | None = None
    size = 0
    with cluster() as url:
        for n in range(args.rounds):
            found: Round = {}
            for web, k in PASSES if n % 2 == 0 else PASSES[::-1]:
                name = f"round{n + 1}-{'web' if web else 'alone'}-k{k}"
                found[web, k] = one_pass(
                    url, root, data / "solution.csv", bodies, (web, k), name, env
                )
            rounds.append(found)
        del bodies
        if args.big:
            large = competition(1_000_000, root)
            size = (large / "submission.csv").stat().st_size
            big = accepts(url, root, large, 3, env)
    lines = render(rounds, big, size, args)
    put_section(args.out, lines)
    print("\n".join(lines))
    print(f"logs under {root}", file=sys.stderr)


if __name__ == "__main__":
    main()
