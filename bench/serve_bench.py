"""Measure a real `scorer serve run` on a loopback port: uploads accepted a second, the time
from upload to verdict at 100,000 and 1,000,000 users, and the page's response time while
the server scores ten submissions of 1M users against the same page idle; write bench/SERVE.md.

    .venv/bin/python bench/serve_bench.py --root /tmp/servebench

One run, three servers, each a fresh folder under ROOT (`scorer serve init`, then
`scorer serve run` in a subprocess, stopped with SIGTERM):

1. uploads: the bundled competition (data/solution.csv, 1,000 users) with limits no team
   reaches; `--clients` concurrent httpx clients of `--teams` teams post small valid
   uploads (the sample submission, its users rotated, so each file's bytes differ and each
   is scored) for `--seconds` seconds. Uploads a second: the 202 answers over the wall time,
   and then how long the scoring loop takes to give every accepted upload its verdict.
2. verdicts: a competition of 100,000 users and one of 1,000,000 (bench/generate.py,
   written under ROOT/data, kept for reruns); the server inited with that solution; a few
   different submissions uploaded one after the other, each timed from the POST to the
   GET that shows it scored (the first after a start may pay for loading the solution).
3. the page under load, on the 1M server: GET / `--page-requests` times idle; then, while
   ten other 1M submissions are uploaded and scored, one GET / every 0.2 s; idle again
   after. Each GET is timed to its last byte.

The variants of a submission move their first users' rows to the end of the file (row
order changes nothing): the same score, other bytes, so the server's cache of verdicts by
sha256 never spares a run. Client and server share the machine's cores: the figures are
what one machine gives, and ratios within the run are the comparable ones.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

import httpx
import polars as pl
from generate import generate
from leaderboard_bench import CORES, NOTES, commit

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"

#: How long to wait for a server to answer, a verdict to come, the scoring loop to drain.
START, VERDICT, DRAIN = 120.0, 900.0, 600.0

#: The time between two GET / while the server is loaded, in seconds.
PACE = 0.2


class Served:
    """A `scorer serve run` on a loopback port, its folder made fresh: teams and tokens, and
    the server's process id."""

    def __init__(
        self, folder: Path, url: str, admin: str, tokens: dict[str, str], pid: int = 0
    ) -> None:
        self.folder, self.url, self.admin, self.tokens = folder, url, admin, tokens
        self.pid = pid

    def auth(self, team: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[team]}"}


def cli(*args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "scorer", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"scorer {' '.join(args)} exited {done.returncode}: {done.stdout}")
    return json.loads(done.stdout)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve(
    folder: Path,
    solution: Path,
    teams: list[str],
    workers: int,
    limit: int = 5,
    init: tuple[str, ...] = (),
) -> Iterator[Served]:
    """A fresh server folder for `solution`, its teams, and the server running on it; `init`,
    more options of `scorer serve init` (`--competition FILE`)."""
    if folder.exists():
        shutil.rmtree(folder)
    started = time.perf_counter()
    limits = ["--daily-limit", str(limit), "--rejected-limit", str(limit)]
    made = ["serve", "init", str(folder), "--solution", str(solution), *limits, *init]
    admin = cli(*made, "--json")
    print(f"{folder.name}: init {time.perf_counter() - started:.1f} s", file=sys.stderr)
    tokens = {t: cli("serve", "team", "add", str(folder), t, "--json")["token"] for t in teams}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = ["serve", "run", str(folder), "--port", str(port), "--workers", str(workers)]
    with (folder.parent / f"{folder.name}.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "scorer", *command], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + START
        while True:
            if server.poll() is not None:
                raise SystemExit(f"the server exited {server.returncode}: see {log.name}")
            try:
                if httpx.get(f"{url}/api/v1/competition", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the server did not answer in {START:.0f} s")
            time.sleep(0.2)
        yield Served(folder, url, admin["admin_token"], tokens, server.pid)
    finally:
        stop(server)


def stop(process: subprocess.Popen[bytes], grace: float = 60) -> None:
    """SIGTERM (the server stops cleanly), then SIGKILL past `grace` seconds."""
    process.terminate()
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    if process.poll() is None:
        process.kill()
        process.wait()


def rotated(lines: list[bytes], users: int, k: int, i: int) -> list[bytes]:
    """A submission's data lines (`k` a user, sorted by user) with its first `i` users moved
    to the end; past `users` variants, the users' order is also reversed."""
    cut = (i % users) * k
    order = lines[cut:] + lines[:cut]
    if (i // users) % 2:
        order = [line for u in range(users - 1, -1, -1) for line in order[u * k : (u + 1) * k]]
    return order


def variant(source: Path, target: Path, i: int, k: int = 20) -> Path:
    """`source` with its first `i` users' rows moved to the end, written once as `target`."""
    if not target.is_file():
        partial = target.with_suffix(".partial")
        with source.open("rb") as read, partial.open("wb") as write:
            write.write(read.readline())
            head = [read.readline() for _ in range(i * k)]
            shutil.copyfileobj(read, write, 64 << 20)
            write.writelines(head)
        partial.replace(target)
    return target


def entry(served: Served, team: str, ident: int) -> dict[str, Any]:
    answer = httpx.get(
        f"{served.url}/api/v1/submissions/{ident}", headers=served.auth(team), timeout=60
    )
    found: dict[str, Any] = answer.json()
    return found


def post(served: Served, team: str, path: Path) -> int:
    with path.open("rb") as handle:
        answer = httpx.post(
            f"{served.url}/api/v1/submissions",
            headers=served.auth(team),
            files={"file": (path.name, handle, "text/csv")},
            timeout=VERDICT,
        )
    if answer.status_code != 202:
        raise SystemExit(f"upload of {path.name} refused: {answer.status_code} {answer.text}")
    ident: int = answer.json()["id"]
    return ident


def time_to_verdict(served: Served, team: str, path: Path) -> dict[str, Any]:
    """Seconds from the POST to its 202 (the upload), and to the GET that shows it scored."""
    started = time.perf_counter()
    ident = post(served, team, path)
    uploaded = time.perf_counter() - started
    while True:
        found = entry(served, team, ident)
        if found["status"] not in ("queued", "scoring"):
            break
        if time.perf_counter() - started > VERDICT:
            raise SystemExit(f"{path.name}: no verdict in {VERDICT:.0f} s")
        time.sleep(0.1)
    if found["status"] != "scored":
        raise SystemExit(f"{path.name}: {found['status']}: {found.get('report')}")
    total = time.perf_counter() - started
    print(f"{path.name}: upload {uploaded:.1f} s, verdict {total:.1f} s", file=sys.stderr)
    return {"file": path.name, "bytes": path.stat().st_size, "upload": uploaded, "verdict": total}


def statuses(served: Served) -> Counter[str]:
    answer = httpx.get(
        f"{served.url}/api/v1/admin/submissions",
        headers={"Authorization": f"Bearer {served.admin}"},
        timeout=60,
    )
    return Counter(row["status"] for row in answer.json()["submissions"])


class Watcher(threading.Thread):
    """The organiser's list of submissions every `every` seconds: when each was last seen
    queued, first seen claimed (`scoring`) and first seen with its verdict, by `clock`;
    after each look, `looked` with the list."""

    def __init__(
        self, served: Served, every: float = 0.5, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        super().__init__(daemon=True)
        self.served, self.every, self.clock = served, every, clock
        self.queued: dict[int, float] = {}
        self.claimed: dict[int, float] = {}
        self.seen: dict[int, float] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.served.admin}"}
        with httpx.Client(base_url=self.served.url, headers=headers, timeout=60) as client:
            while not self.stopped.is_set():
                rows = client.get("/api/v1/admin/submissions").json()["submissions"]
                now = self.clock()
                for row in rows:
                    if row["status"] == "queued":
                        self.queued[int(row["id"])] = now
                    elif row["status"] == "scoring":
                        self.claimed.setdefault(int(row["id"]), now)
                    else:
                        self.seen.setdefault(int(row["id"]), now)
                self.looked(rows)
                self.stopped.wait(self.every)

    def looked(self, rows: list[dict[str, Any]]) -> None:
        """What a look does besides noting the times: nothing here."""


def directly(submission: Path, solution: Path, workers: int) -> dict[str, float]:
    """Wall seconds of the same work without the server, each command a process of its own:
    `scorer score`; `scorer leaderboard score` of a log of that one file (what a server's
    run does), then `scorer leaderboard show` of its public board (what the page shows)."""
    seconds = {}
    folder = submission.parent / f"alone-{submission.stem}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    log = folder / "manifest.csv"
    log.write_text(f"team,path,submitted_at,selected\nalone,{submission},2024-05-01T00:00Z,0\n")
    db = str(folder / "board.db")
    for name, args in (
        ("score", ["score", str(submission), "--solution", str(solution)]),
        ("run", ["leaderboard", "score", str(log), "--solution", str(solution), "--db", db]),
        ("board", ["leaderboard", "show", "--db", db]),
    ):
        started = time.perf_counter()
        cli(*args, *(["--workers", str(workers)] if name == "run" else []), "--json")
        seconds[name] = time.perf_counter() - started
    shutil.rmtree(folder)
    return seconds


def drained(served: Served, since: float) -> tuple[float, Counter[str]]:
    """Seconds from `since` until no submission is queued or scoring (at most DRAIN)."""
    while True:
        found = statuses(served)
        if not (found["queued"] or found["scoring"]) or time.perf_counter() - since > DRAIN:
            return time.perf_counter() - since, found
        time.sleep(0.5)


async def flood(
    served: Served, body: list[bytes], users: int, clients: int, seconds: float
) -> tuple[list[tuple[float, float, int]], float]:
    """`clients` concurrent clients posting variants of `body` (header, then data lines) for
    `seconds`: (start, end, status) of each upload, and when the first one started."""
    header, lines = body[0], body[1:]
    teams = list(served.tokens)
    numbers = count()
    done: list[tuple[float, float, int]] = []
    began = time.perf_counter()
    stop = began + seconds
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=served.url, timeout=120, limits=limits) as client:

        async def one() -> None:
            while time.perf_counter() < stop:
                i = next(numbers)
                data = header + b"".join(rotated(lines, users, 20, i))
                team = teams[i % len(teams)]
                started = time.perf_counter()
                answer = await client.post(
                    "/api/v1/submissions",
                    headers=served.auth(team),
                    files={"file": (f"upload-{i}.csv", data, "text/csv")},
                )
                done.append((started, time.perf_counter(), answer.status_code))

        await asyncio.gather(*(one() for _ in range(clients)))
    return done, began


def page_times(url: str, requests: int, client: httpx.Client | None = None) -> list[float]:
    """Seconds of `requests` GET `url` one after the other (a short pause between them),
    through `client` (a team's, logged in) or a new one."""
    times = []
    with nullcontext(client) if client is not None else httpx.Client(timeout=120) as through:
        for _ in range(requests):
            started = time.perf_counter()
            answer = through.get(url)
            answer.raise_for_status()
            times.append(time.perf_counter() - started)
            time.sleep(0.05)
    return times


class Poller(threading.Thread):
    """GET / every PACE seconds until stopped, each time tagged with the phase it fell in."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.phase = url, "uploading"
        self.times: dict[str, list[float]] = {"uploading": [], "scoring": []}
        self.stopped = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self.stopped.is_set():
                phase, started = self.phase, time.perf_counter()
                client.get(self.url).raise_for_status()
                self.times[phase].append(time.perf_counter() - started)
                self.stopped.wait(PACE)


def quantiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "median": statistics.median(ordered),
        "p95": p95,
        "max": ordered[-1],
    }


def uploads_phase(root: Path, options: argparse.Namespace) -> dict[str, Any]:
    teams = [f"team-{t:02d}" for t in range(options.teams)]
    body = (DATA / "sample_submission.csv").read_bytes().splitlines(keepends=True)
    users = (len(body) - 1) // 20
    with serve(root / "uploads", DATA / "solution.csv", teams, options.workers, 10**6) as served:
        done, began = asyncio.run(flood(served, body, users, options.clients, options.seconds))
        accepted = [end for _, end, status in done if status == 202]
        wall = max(end for _, end, _ in done) - began
        seconds = [0] * (int(wall) + 1)
        for end in accepted:
            seconds[int(end - began)] += 1
        drain, found = drained(served, max(accepted))
    full = seconds[: int(options.seconds)]  # whole seconds of the flood, the tail's left out
    return {
        "clients": options.clients,
        "teams": options.teams,
        "bytes": len(b"".join(body)),
        "uploads": len(done),
        "distinct": min(len(done), 2 * users),
        "accepted": len(accepted),
        "others": dict(Counter(status for *_, status in done if status != 202)),
        "wall": wall,
        "per_second": len(accepted) / wall,
        "seconds": seconds,
        "per_second_median": statistics.median(full),
        "post": quantiles([end - start for start, end, status in done if status == 202]),
        "drain": drain,
        "verdicts": dict(found),
    }


def variants(root: Path, users: int, how_many: int) -> tuple[Path, list[Path]]:
    """The solution of a competition of `users` users, and `how_many` variants of its
    submission."""
    data = generate(users, work=root / "data")
    (root / "variants").mkdir(parents=True, exist_ok=True)
    files = [
        variant(data / "submission.csv", root / "variants" / f"{users}-{i}.csv", i)
        for i in range(how_many)
    ]
    return data / "solution.csv", files


def verdicts_phase(root: Path, options: argparse.Namespace) -> dict[str, Any]:
    solution, files = variants(root, options.medium, options.verdicts)
    direct = directly(files[0], solution, options.workers)
    with serve(root / "verdicts", solution, ["latency"], options.workers) as served:
        runs = [time_to_verdict(served, "latency", f) for f in files]
    return {"users": options.medium, "runs": runs, "direct": direct}


def load_phase(root: Path, options: argparse.Namespace) -> dict[str, Any]:
    users = options.large
    solution, files = variants(root, users, options.verdicts + options.load)
    teams = ["latency", *(f"team-{t}" for t in range(options.load // 2 or 1))]
    direct = directly(files[0], solution, options.workers)
    with serve(root / "load", solution, teams, options.workers) as served:
        first = [time_to_verdict(served, "latency", f) for f in files[: options.verdicts]]
        idle = page_times(f"{served.url}/", options.page_requests)
        poller, watcher = Poller(f"{served.url}/"), Watcher(served)
        poller.start()
        watcher.start()
        started = time.perf_counter()
        accepted = {}  # id: when its 202 came
        for n, path in enumerate(files[options.verdicts :]):
            team = teams[1 + n % (len(teams) - 1)]
            accepted[post(served, team, path)] = time.perf_counter()
            print(f"load: uploaded {path.name}", file=sys.stderr)
        uploaded = time.perf_counter() - started
        poller.phase = "scoring"
        drain, found = drained(served, time.perf_counter())
        for thread in (poller, watcher):
            thread.stopped.set()
            thread.join()
        waits = [watcher.seen[i] - at for i, at in accepted.items() if i in watcher.seen]
        after = page_times(f"{served.url}/", options.page_requests)
    return {
        "direct": direct,
        "waits": waits,
        "users": users,
        "submissions": options.load,
        "first": first,
        "upload_seconds": uploaded,
        "scoring_seconds": drain,
        "verdicts": dict(found),
        "idle": quantiles(idle),
        "uploading": quantiles(poller.times["uploading"]),
        "scoring": quantiles(poller.times["scoring"]),
        "idle_after": quantiles(after),
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.0f} s"


def render(results: dict[str, Any], options: argparse.Namespace) -> str:
    up, ver, load = results["uploads"], results["verdicts"], results["load"]
    refused = ", ".join(f"{n} × {code}" for code, n in up["others"].items()) or "none"
    full = up["seconds"][: int(options.seconds)]

    def verdicts(found: dict[str, Any], times: list[dict[str, Any]]) -> str:
        later = ", ".join(f"{t['verdict']:.1f} s" for t in times[1:])
        uploads = ", ".join(f"{t['upload']:.1f} s" for t in times)
        first, size = times[0]["verdict"], times[0]["bytes"] / 1e6
        warm = statistics.median(t["verdict"] for t in times[1:] or times)
        alone = found["direct"]
        return (
            f"| {found['users']:,} users ({size:.0f} MB CSV) | {first:.1f} s | {later} "
            f"| {uploads} | {alone['score']:.1f} s | {warm / alone['score']:.1f} "
            f"| {alone['run']:.1f} s + {alone['board']:.1f} s |"
        )

    idle = load["idle"]
    page = [
        "| GET / | requests | median | p95 | max | median / idle | p95 / idle |",
        "|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label in (
        ("idle", "idle, before"),
        (
            "uploading",
            f"while the {load['submissions']} uploads come in (and the first are scored)",
        ),
        ("scoring", f"while the {load['submissions']} are scored, after the last upload"),
        ("idle_after", "idle, after (every submission on the board)"),
    ):
        q = load[name]
        page.append(
            f"| {label} | {q['n']} | {ms(q['median'])} | {ms(q['p95'])} | {ms(q['max'])} "
            f"| {q['median'] / idle['median']:.1f} | {q['p95'] / idle['p95']:.1f} |"
        )
    command = " ".join([".venv/bin/python bench/serve_bench.py", *sys.argv[1:]])
    waits = (
        f"{statistics.median(load['waits']):.1f} s (median), the last {max(load['waits']):.1f} s"
        if load["waits"]
        else "(no verdict seen)"
    )
    loads = ", ".join(f"{name} {x:.1f}" for name, x in results["loadavg"].items())
    return "\n".join(
        [
            "# Benchmark: `scorer serve run`, uploads, verdicts and the page under load",
            "",
            f"Regenerate with `{command}` from the repository root.",
            "",
            f"- date: {results['date']}",
            f"- code: commit {results['commit']}",
            f"- cpu: {CORES} cores ({platform.machine()}); memory: "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / (1 << 30):.0f} GiB",
            f"- python: {platform.python_version()}; polars: {pl.__version__}; httpx "
            f"{httpx.__version__} (the clients, on the same machine as the server)",
            f"- server: `scorer serve run --workers {options.workers}` on a loopback port, "
            "default memory budget and deadline; each phase on a fresh folder",
            f"- load average (1 min) at the start of each phase: {loads}",
            f"- total time of the run: {results['seconds']:.0f} s",
            "",
            "## Uploads",
            "",
            "| measure | figure | detail |",
            "|:---|---:|:---|",
            f"| uploads accepted a second | {up['per_second']:.1f} /s | {up['accepted']} "
            f"answered 202 of {up['uploads']} in {up['wall']:.1f} s ({up['clients']} "
            f"concurrent clients, {up['teams']} teams, {up['bytes'] / 1e3:.0f} KB each, "
            f"{up['distinct']} different files); refused: {refused} |",
            f"| accepted in each whole second of the flood | {up['per_second_median']:.0f} "
            f"(median) | min {min(full)}, max {max(full)} |",
            f"| POST to 202 of one upload | {ms(up['post']['median'])} (median) "
            f"| p95 {ms(up['post']['p95'])} |",
            f"| scoring backlog after the last 202 | {up['drain']:.1f} s | verdicts: "
            + ", ".join(f"{n} {status}" for status, n in sorted(up["verdicts"].items()))
            + " |",
            "",
            "## Time from upload to verdict",
            "",
            "From the POST's first byte to the GET that shows the submission scored, "
            "one submission at a time, the server otherwise idle. The first after the "
            "server's start; then the next ones (other bytes, same score); the upload's "
            "part of each (the POST until its 202). Then the same file without the server, "
            "each command a process of its own, start-up included: `scorer score`; and "
            "`scorer leaderboard score` of a log of that one file (the work of a server's "
            "run) plus `scorer leaderboard show` of its public board (the page's boards, "
            "which a verdict waits for).",
            "",
            "| submission | first | next | of which the upload | `scorer score` alone "
            "| next (median) / alone | `leaderboard score` + `show` alone |",
            "|:---|---:|---:|---:|---:|---:|---:|",
            verdicts(ver, ver["runs"]),
            verdicts(load, load["first"]),
            "",
            "## The page while the server scores",
            "",
            f"GET / on the {load['users']:,}-user server: {options.page_requests} requests "
            f"one after the other idle; one every {PACE} s while {load['submissions']} "
            f"submissions of {load['users']:,} users are uploaded one after the other "
            f"({load['upload_seconds']:.0f} s) and scored ({load['scoring_seconds']:.0f} s "
            "after the last upload; verdicts: "
            + ", ".join(f"{n} {status}" for status, n in sorted(load["verdicts"].items()))
            + "). Each time is the whole response, to its last byte. From its 202 to its "
            f"verdict, each of the {load['submissions']} waited {waits}.",
            "",
            *page,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/servebench"))
    parser.add_argument("--workers", type=int, default=1, help="the server's (its default)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent uploaders")
    parser.add_argument("--teams", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0, help="how long they upload")
    parser.add_argument("--medium", type=int, default=100_000, help="users, verdict phase")
    parser.add_argument("--large", type=int, default=1_000_000, help="users, load phase")
    parser.add_argument("--verdicts", type=int, default=3, help="uploads timed to verdict")
    parser.add_argument("--load", type=int, default=10, help="large uploads scored under load")
    parser.add_argument("--page-requests", type=int, default=100, help="idle GET / a series")
    parser.add_argument("--keep", action="store_true", help="keep the folders and variants")
    parser.add_argument("--output", type=Path, default=HERE / "SERVE.md")
    options = parser.parse_args()
    root: Path = options.root
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "commit": commit(),
        "loadavg": {},
    }
    try:
        for name, phase in (
            ("uploads", uploads_phase),
            ("verdicts", verdicts_phase),
            ("load", load_phase),
        ):
            results["loadavg"][name] = os.getloadavg()[0]
            results[name] = phase(root, options)
            print(f"{name}: done at {time.perf_counter() - started:.0f} s", file=sys.stderr)
    finally:
        if not options.keep:  # the generated competitions (ROOT/data) stay for a rerun
            for stale in ("uploads", "verdicts", "load", "variants"):
                shutil.rmtree(root / stale, ignore_errors=True)
    results["seconds"] = time.perf_counter() - started
    (root / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    text = render(results, options)
    notes = options.output.read_text() if options.output.is_file() else ""
    kept = notes[notes.index(NOTES) :] if NOTES in notes else NOTES + "\n"
    options.output.write_text(text + "\n" + kept)
    print(text)


if __name__ == "__main__":
    main()
