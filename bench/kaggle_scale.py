"""Replay an H&M-sized competition through `scorer serve run` on this machine, and judge from
its figures whether one 16-core machine holds a deadline day of 15,000 uploads; write
bench/KAGGLE_SCALE.md.

    .venv/bin/python bench/kaggle_scale.py             # H&M's size: 6 minutes, 9 the first time
    .venv/bin/python bench/kaggle_scale.py --quick     # 20,000 customers, a minute

The competition is bench/kaggle_data.py's (data/hm-kaggle's rules: MAP@12, empty customers
left out, 64-hex customer ids, 10-digit articles), written once under `--work` and kept.
One server folder, made fresh under `--root` (`scorer serve init --competition`, `--teams`
teams, no daily limit reached), and `scorer serve run --workers N` on a loopback port
(N = this machine's cores by default, so that each worker has about one core, as 16
workers would on 16 cores). Then:

1. the start: N uploads at once, waited for (each worker's first verdict pays for
   loading the solution and starting its judging process);
2. the page idle: GET / and a team's page (/team, logged in) `--page-requests` times each;
3. the batch: `--uploads` other submissions posted one after the other by the teams in
   turn, each a distinct file (no cache spares a verdict); meanwhile, every `PACE` seconds,
   the organiser's list of submissions (when each was first seen claimed, `scoring`) and
   both pages timed, tagged by whether a worker was judging then; the server's processes
   sampled from /proc (CPU and peak memory of the web process, its worker loop, and each
   judging process);
4. the page idle again; the server stopped; the audit log (`GET /api/v1/admin/audit`) read
   first for when each upload was accepted and got its verdict.

Bytes kept per upload: everything the server's folder holds after it stopped, less what it
held before the first upload, over the uploads: what the server keeps of an upload,
whatever form it keeps it in. Also `scorer score` of one submission alone (bench/measure.py),
for its time and peak memory. The deadline day is bench/deadline.py's queue, fed with the
batch's verdict times; bench/kaggle_report.py writes the report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import kaggle_data
from kaggle_report import render
from leaderboard_bench import commit, with_notes
from measure import fresh
from serve_bench import Served, Watcher, page_times, post, serve

HERE = Path(__file__).resolve().parent

#: The seconds between two looks at the queue (and two timings of each page) during the batch.
PACE = 0.25

#: How long every verdict of a phase may take to come, in seconds.
DRAIN = 1800.0

#: The statuses of a submission with no verdict yet.
WAITING = ("queued", "scoring")

#: The pages timed: the public page, and a team's own (its submissions).
PAGES = ("/", "/team")


def proc_stat(pid: int) -> tuple[int, float]:
    """A process's parent and the CPU seconds it has used (its threads', not its children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def busy_seconds() -> float:
    """CPU seconds the machine's cores have been busy since boot (/proc/stat, all but idle
    and iowait): every process's, other sessions' too."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


class Tree(threading.Thread):
    """The server's process and its descendants, sampled every half second: each one's CPU
    seconds (the last seen) and peak memory."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.cpu: dict[int, float] = {}
        self.peak: dict[int, float] = {}
        self.stopped = threading.Event()

    def sample(self) -> None:
        parents, used = {}, {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parents[int(entry.name)], used[int(entry.name)] = proc_stat(int(entry.name))
                except (OSError, ValueError, IndexError):  # gone meanwhile
                    continue
        ours, grown = {self.root}, True
        while grown:
            more = {pid for pid, parent in parents.items() if parent in ours} - ours
            ours |= more
            grown = bool(more)
        for pid in ours & used.keys():
            self.cpu[pid] = used[pid]
            try:
                self.peak[pid] = max(self.peak.get(pid, 0.0), peak_mb(pid))
            except OSError:
                continue

    def run(self) -> None:
        while not self.stopped.is_set():
            self.sample()
            self.stopped.wait(0.5)

    def used(self) -> float:
        return sum(self.cpu.values())


class Watch(Watcher):
    """The organiser's list every PACE seconds (by the epoch's clock, as the audit log's
    times), then each page timed, tagged `busy` when a worker was judging at that look."""

    def __init__(self, served: Served, clients: dict[str, httpx.Client]) -> None:
        super().__init__(served, PACE, time.time)
        self.clients = clients
        self.times: dict[str, dict[str, list[float]]] = {
            phase: {page: [] for page in PAGES} for phase in ("busy", "idle")
        }

    def looked(self, rows: list[dict[str, Any]]) -> None:
        phase = "busy" if any(row["status"] == "scoring" for row in rows) else "idle"
        for page in PAGES:
            started = time.perf_counter()
            self.clients[page].get(page).raise_for_status()
            self.times[phase][page].append(time.perf_counter() - started)


def disk(folder: Path) -> dict[str, int]:
    """The bytes of every file under `folder`, summed by its entry at the top."""
    sizes: dict[str, int] = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            top = path.relative_to(folder).parts[0]
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    return sizes


def audit(served: Served) -> dict[str, dict[int, float]]:
    """When each upload was accepted and got its verdict (epoch seconds), from the audit log."""
    answer = httpx.get(
        f"{served.url}/api/v1/admin/audit",
        headers={"Authorization": f"Bearer {served.admin}"},
        timeout=120,
    )
    answer.raise_for_status()
    found: dict[str, dict[int, float]] = {"upload": {}, "verdict": {}}
    for event in answer.json()["audit"]:
        if event["event"] in found:
            found[event["event"]][int(event["id"])] = datetime.fromisoformat(
                event["at"]
            ).timestamp()
    return found


def finals(served: Served, ids: set[int]) -> dict[int, str]:
    """Wait until every one of `ids` has its verdict; their statuses."""
    deadline = time.monotonic() + DRAIN
    with httpx.Client(base_url=served.url, timeout=120) as client:
        while True:
            rows = client.get(
                "/api/v1/admin/submissions", headers={"Authorization": f"Bearer {served.admin}"}
            ).json()["submissions"]
            found = {int(r["id"]): str(r["status"]) for r in rows if int(r["id"]) in ids}
            if len(found) == len(ids) and not any(s in WAITING for s in found.values()):
                return found
            if time.monotonic() > deadline:
                raise SystemExit(f"no verdict for every upload in {DRAIN:.0f} s: {found}")
            time.sleep(0.5)


def logged_in(served: Served, team: str) -> httpx.Client:
    """A client with `team`'s session cookie, as a browser has after /login."""
    client = httpx.Client(base_url=served.url, timeout=120)
    answer = client.post(
        "/login", data={"token": served.tokens[team]}, headers={"Origin": served.url}
    )
    if answer.status_code != 303:
        raise SystemExit(f"/login answered {answer.status_code}: {answer.text[:200]}")
    return client


def replay(data: Path, files: list[Path], options: argparse.Namespace) -> dict[str, Any]:
    """The server's run (steps 1 to 4 of the module's docstring): its raw figures."""
    teams = [f"team-{t:02d}" for t in range(options.teams)]
    init = ("--competition", str(data / "competition.toml"), "--targets", str(data / "targets.csv"))
    folder = options.root / "server"
    warm, batch = files[: options.workers], files[options.workers :]
    with serve(folder, data / "solution.csv", teams, options.workers, 10**6, init) as served:
        tree = Tree(served.pid)
        tree.start()
        before = disk(folder)
        started = time.time()
        first = {
            post(served, teams[n % len(teams)], path): time.time() for n, path in enumerate(warm)
        }
        finals(served, set(first))
        clients = {
            "/": httpx.Client(base_url=served.url, timeout=120),
            "/team": logged_in(served, teams[0]),
        }
        idle = {p: page_times(p, options.page_requests, clients[p]) for p in PAGES}
        watch = Watch(served, clients)
        watch.start()
        cpu, machine, began = tree.used(), busy_seconds(), time.time()
        posted: dict[int, dict[str, Any]] = {}
        for n, path in enumerate(batch):
            at = time.time()
            ident = post(served, teams[n % len(teams)], path)
            posted[ident] = {"file": path.name, "posted": at, "accepted_by_client": time.time()}
            print(f"batch: {path.name} uploaded as {ident}", file=sys.stderr)
        statuses = finals(served, set(posted))
        ended = time.time()
        cpu, machine = tree.used() - cpu, busy_seconds() - machine
        watch.stopped.set()
        watch.join()
        after = {p: page_times(p, options.page_requests, clients[p]) for p in PAGES}
        for client in clients.values():
            client.close()
        times = audit(served)
    tree.stopped.set()
    tree.join()
    kept = disk(folder)
    for ident, row in posted.items():
        # A claim and its verdict between two looks: claimed after the last look that saw it
        # queued (or its acceptance), a worker's time overstated by at most a look. A look is
        # timed as it is sent, the acceptance in the server's transaction: a look that saw
        # the upload queued may bear an earlier time, and no claim comes before its upload.
        accepted, verdict = times["upload"][ident], times["verdict"][ident]
        seen = watch.claimed.get(ident, watch.queued.get(ident, accepted))
        row.update(
            accepted=accepted,
            claimed=min(max(seen, accepted), verdict),
            claim_seen=ident in watch.claimed,
            verdict=verdict,
            status=statuses[ident],
        )
    return {
        "first": [times["verdict"][i] - at for i, at in first.items()],
        "start_to_batch": began - started,
        "batch": list(posted.values()),
        "window": ended - began,
        "cpu": cpu,
        "machine": machine,
        "peaks": {
            ("server" if pid == served.pid else str(pid)): mb for pid, mb in tree.peak.items()
        },
        "pages": {"idle": idle, "busy": watch.times["busy"], "after": after},
        "disk": {"before": before, "after": kept},
        "uploads": len(files),
        "pace": PACE,
        "csv_bytes": sum(path.stat().st_size for path in files),
    }


def alone(data: Path, submission: Path, root: Path) -> dict[str, float]:
    """`scorer score` of one submission, a process of its own: wall, CPU, peak memory."""
    command = [sys.executable, "-m", "scorer", "score", str(submission)]
    command += [
        "--solution",
        str(data / "solution.csv"),
        "--competition",
        str(data / "competition.toml"),
    ]
    return fresh([*command, "--json"], root / "alone.json", root / "alone.out")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 customers, 4 uploads")
    parser.add_argument("--users", type=int, default=None, help="default: H&M's 1,371,980")
    parser.add_argument("--uploads", type=int, default=None, help="the batch (default 24)")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--teams", type=int, default=6)
    parser.add_argument("--page-requests", type=int, default=None, help="idle, each page")
    parser.add_argument("--work", type=Path, default=HERE / "work", help="the data, kept")
    parser.add_argument("--root", type=Path, default=None, help="the server's folder")
    parser.add_argument("--keep", action="store_true", help="keep the server's folder")
    parser.add_argument("--output", type=Path, default=None)
    options = parser.parse_args(argv)
    small = options.quick
    options.users = options.users or (20_000 if small else kaggle_data.HM_USERS)
    options.uploads = options.uploads or (4 if small else 24)
    options.page_requests = options.page_requests or (10 if small else 100)
    options.root = options.root or options.work / "kaggle-scale"
    options.output = options.output or (
        options.root / "KAGGLE_SCALE.md" if small else HERE / "KAGGLE_SCALE.md"
    )
    options.root.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    results: dict[str, Any] = {
        "argv": sys.argv[1:] if argv is None else argv,
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "commit": commit(),
        "loadavg": [os.getloadavg()[0]],
        "workers": options.workers,
        "teams": options.teams,
    }
    count = options.workers + options.uploads
    data = kaggle_data.generate(options.users, count, work=options.work)
    files = [data / f"submission-{n}.csv" for n in range(count)]
    results["data"] = json.loads((data / "manifest.json").read_text())
    results["alone"] = alone(data, files[0], options.root)
    try:
        results["replay"] = replay(data, files, options)
    finally:
        if not options.keep:
            shutil.rmtree(options.root / "server", ignore_errors=True)
    results["loadavg"].append(os.getloadavg()[0])
    results["seconds"] = time.perf_counter() - began
    (options.root / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    text = render(results)
    with_notes(options.output, text)
    print(text)


if __name__ == "__main__":
    main()
