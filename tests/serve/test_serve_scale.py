"""The server beyond one machine, on loopback: one PostgreSQL, web processes that only serve
(`scorer serve run --db URL --no-workers`) and workers that only score (`scorer serve
worker --db URL`), each a real process, killed with SIGKILL while they judge. Every accepted
file gets exactly one verdict, the limits hold across the web processes, and every web
process's boards equal `scorer leaderboard score` on the export, to the bit."""

from __future__ import annotations

import csv
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from support.postgres_cluster import new_database, new_role
from support.serve_live import FINAL, POPULAR, ROOT, SAMPLE, SOLUTION, answering, free_port, scorer

from scorer.api import score

PUBLIC = {SAMPLE: score(SAMPLE, SOLUTION).public, POPULAR: score(POPULAR, SOLUTION).public}

#: What a judging process prints when its worker was SIGKILLed while starting it: Python's
#: multiprocessing finds the pipe that was to bring its instructions closed. The kill's doing,
#: in the killed worker's log, not a traceback of the scorer's.
ORPHANED = re.compile(
    r"Traceback \(most recent call last\):\n"
    r"(?:  .*\n)*?  File \".*/multiprocessing/spawn\.py\", line \d+, in _main\n"
    r"(?:  .*\n)*?EOFError: Ran out of input\n"
)

#: The boards' keys that must equal the rescored export's (`as_of` is another run's time).
BOARD_KEYS = ("public", "private", "unranked", "confidence", "metric", "competition")


class Machines:
    """The processes of one competition on loopback: web processes and workers, each
    started with only the database's URL, as on a machine of its own; the web processes
    log in as the web role (`web_url`), which may not read the solution."""

    def __init__(self, url: str, web_url: str, logs: Path) -> None:
        self.url, self.web_url, self.logs = url, web_url, logs
        self.tmp = logs.parent / "tmp"  # the machines' temporary folder: their private ones
        self.tmp.mkdir()
        self.webs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.started = 0

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        self.started += 1
        log = (self.logs / f"{args[0]}-{self.started}.log").open("ab")
        url = self.web_url if args[0] == "run" else self.url
        return subprocess.Popen(
            [sys.executable, "-m", "scorer", "serve", *args, "--db", url],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(self.tmp)},
        )

    def web(self) -> str:
        port = free_port()
        process = self._spawn("run", "--no-workers", "--port", str(port))
        base = f"http://127.0.0.1:{port}"
        answering(base, process, self.log_text)
        self.webs.append((base, process))
        return base

    def worker(self, *options: str) -> subprocess.Popen[bytes]:
        process = self._spawn("worker", *options)
        self.workers.append(process)
        return process

    def judging(self) -> dict[subprocess.Popen[bytes], int]:
        """The workers running that are judging a file now, each with the file's id: its
        folder (`job-N`) is in the worker's private one from the claim's start of the
        judging until the verdict is written."""
        found: dict[subprocess.Popen[bytes], int] = {}
        for process in self.workers:
            if process.poll() is None:
                for job in self.tmp.glob(f"scorer-serve-{process.pid}-*/work/job-*"):
                    found[process] = int(job.name.removeprefix("job-"))
        return found

    def swept(self, dead: list[int], timeout: float = 60) -> bool:
        """Whether, within `timeout`, nothing of the `dead` processes is left in the machines'
        temporary folder, while the private folders of the processes running are: every file
        of a process (the solution's copy, the uploads judged, each judging process's own
        folder) lives in its private folder, and nothing beside them."""
        deadline = time.monotonic() + timeout
        while True:
            found = list(self.tmp.iterdir())
            stray = [p.name for p in found if not p.name.startswith("scorer-serve-")]
            left = {int(p.name.split("-")[2]) for p in found if p.name not in stray}
            if left and not stray and not left & set(dead):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("*.log")))

    def close(self) -> None:
        for process in [p for _, p in self.webs] + self.workers:
            if process.poll() is None:
                process.kill()
            process.wait()


@pytest.fixture
def machines(tmp_path: Path, postgres: str) -> Iterator[tuple[Machines, Path, str, dict[str, str]]]:
    """A competition in a new database, made by the organiser's `init` with a web role, with
    20 teams."""
    url, folder = new_database(postgres), tmp_path / "organiser"
    role, web_url = new_role(postgres, url)
    made = scorer(
        "serve", "init", folder, "--solution", SOLUTION, "--db", url, "--web-role", role, "--json"
    )
    admin = json.loads(made.stdout)["admin_token"]
    names = tmp_path / "teams.csv"
    names.write_text("team\n" + "".join(f"team-{n:02d}\n" for n in range(20)), encoding="utf-8")
    slips = tmp_path / "tokens.csv"
    scorer("serve", "team", "add", folder, "--from", names, "--out", slips)
    with slips.open(newline="", encoding="utf-8") as handle:
        tokens = {row["team"]: row["token"] for row in csv.DictReader(handle)}
    logs = tmp_path / "logs"
    logs.mkdir()
    running = Machines(url, web_url, logs)
    yield running, folder, admin, tokens
    running.close()


def test_two_web_processes_and_three_killed_workers_give_one_verdict_per_file_and_the_boards(
    machines: tuple[Machines, Path, str, dict[str, str]], tmp_path: Path
) -> None:
    running, folder, admin, tokens = machines
    webs = [running.web(), running.web()]
    for _ in range(3):
        running.worker("--lease", "2")
    files = [(team, SAMPLE if n % 2 else POPULAR) for team in tokens for n in range(10)]
    random.Random(25).shuffle(files)

    def upload(index: int) -> tuple[str, int, int | None]:
        team, path = files[index]
        headers = {"Authorization": f"Bearer {tokens[team]}"}
        # a name of its own: each file judged, none given the verdict of the same bytes
        sent = {"file": (f"{index}-{path.name}", path.read_bytes())}
        with httpx.Client(base_url=webs[index % 2], headers=headers, timeout=120) as client:
            answer = client.post("/api/v1/submissions", files=sent)
        return team, answer.status_code, answer.json().get("id")

    stop = threading.Event()
    kills: list[int] = []
    cut: list[int] = []  # the files whose worker was killed before it wrote their verdict

    def killer() -> None:
        """SIGKILL a worker while it judges a file (its `job-N` folder seen), and start
        another in its place; until five are killed, one at least before it could write
        its file's verdict (the file still `scoring` once it is dead)."""
        chance = random.Random(9)
        with psycopg.connect(running.url, autocommit=True) as database:
            while not stop.is_set() and (len(kills) < 5 or not cut):
                judging = sorted(running.judging().items(), key=lambda found: found[0].pid)
                if not judging:
                    stop.wait(0.02)  # looking again for a worker that judges
                    continue
                victim, job = chance.choice(judging)
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait()
                kills.append(victim.pid)
                running.workers.remove(victim)
                running.worker("--lease", "2")
                held = database.execute("SELECT status FROM submissions WHERE id = %s", (job,))
                if held.fetchone() == ("scoring",):
                    cut.append(job)

    chaos = threading.Thread(target=killer)
    chaos.start()
    try:
        with ThreadPoolExecutor(max_workers=40) as pool:
            answers = list(pool.map(upload, range(len(files))))
        accepted = {ident: team for team, code, ident in answers if code == 202}
        assert Counter(code for _, code, _ in answers) == {202: 100, 429: 100}
        assert Counter(accepted.values()) == {team: 5 for team in tokens}  # 5 a team, no more
        chaos.join(300)  # the workers are killed while they judge
    finally:
        stop.set()
        chaos.join()
    assert len(kills) >= 5 and cut, (kills, cut)

    headers = {"Authorization": f"Bearer {admin}"}
    admin_client = httpx.Client(base_url=f"{webs[0]}/api/v1", headers=headers, timeout=60)
    rows = final(webs[0], admin)
    assert sorted(r["id"] for r in rows) == sorted(accepted)
    assert Counter(r["team"] for r in rows if r["status"] == "scored") == {t: 5 for t in tokens}
    assert {r["public_score"] for r in rows} == set(PUBLIC.values())  # the scorer's, to the bit
    # exactly one verdict a file: one audited, one kept whole for the boards
    audit = admin_client.get("/admin/audit").json()["audit"]
    assert Counter(e["id"] for e in audit if e["event"] == "verdict") == dict.fromkeys(accepted, 1)
    taken_again = {i for e in audit if e["event"] == "requeued" for i in e["ids"]}
    assert set(cut) <= taken_again <= set(accepted)  # killed mid-job, judged by another
    with psycopg.connect(running.url) as database:
        kept = database.execute("SELECT submission FROM verdicts").fetchall()
    assert sorted(i for (i,) in kept) == sorted(accepted)
    # a killed worker's private folder, the solution in it, is removed by the next to start
    # (the last one killed: by its replacement, once that has started)
    assert running.swept(kills)

    for n, team in enumerate(tokens):  # each team picks its first, through either process
        first = min(i for i, owner in accepted.items() if owner == team)
        picked = httpx.put(
            f"{webs[n % 2]}/api/v1/picks",
            json={"ids": [first]},
            headers={"Authorization": f"Bearer {tokens[team]}"},
        )
        assert picked.json()["ids"] == [first], picked.text
    admin_client.post("/admin/reveal")
    rescored = export_rescored(folder, tmp_path)
    assert len(rescored["public"]["rows"]) == 20
    assert {row["pick"] for row in rescored["private"]["rows"]} == {"selected"}
    for web in webs:  # each web process's boards, once it has copied the last verdict
        assert converged(web, rescored), web
    assert "Traceback" not in ORPHANED.sub("", running.log_text())


def export_rescored(folder: Path, tmp_path: Path) -> dict[str, Any]:
    """The final board `scorer leaderboard score` gives on the server's export."""
    out, db = tmp_path / "export", tmp_path / "rescored.sqlite"
    scorer("serve", "export", folder, "--out", out)
    scorer("leaderboard", "score", out / "manifest.csv", "--solution", SOLUTION, "--db", db)
    shown = scorer("leaderboard", "show", "--db", db, "--phase", "final", "--format", "json")
    rescored: dict[str, Any] = json.loads(shown.stdout)
    return rescored


def final(web: str, admin: str, timeout: float = 300) -> list[dict[str, Any]]:
    """Every submission, once each has its verdict."""
    headers = {"Authorization": f"Bearer {admin}"}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=f"{web}/api/v1", headers=headers, timeout=60) as client:
        while True:
            rows: list[dict[str, Any]] = client.get("/admin/submissions").json()["submissions"]
            if all(r["status"] in FINAL for r in rows) or time.monotonic() > deadline:
                return rows
            time.sleep(0.5)


def test_connections_cut_while_files_are_scored_lose_nothing(
    machines: tuple[Machines, Path, str, dict[str, str]], tmp_path: Path
) -> None:
    running, folder, admin, tokens = machines
    web = running.web()
    for _ in range(2):
        running.worker("--lease", "2")
    teams = list(tokens)[:10]
    for team in teams:
        for path in (SAMPLE, POPULAR):
            headers = {"Authorization": f"Bearer {tokens[team]}"}
            sent = {"file": (path.name, path.read_bytes())}
            answer = httpx.post(f"{web}/api/v1/submissions", files=sent, headers=headers)
            assert answer.status_code == 202, answer.text
    database = running.url.rsplit("/", 1)[1]
    cuts = 0
    with psycopg.connect(running.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as db:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:  # every connection of every process, cut
            cut = db.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchone()
            cuts += cut[0] if cut else 0
            time.sleep(0.3)
    assert cuts > 0
    rows = final(web, admin)
    assert [r["status"] for r in rows] == ["scored"] * 20  # each judged, none refunded
    with httpx.Client(base_url=f"{web}/api/v1", headers={"Authorization": f"Bearer {admin}"}) as c:
        audit = c.get("/admin/audit").json()["audit"]
        assert Counter(e["id"] for e in audit if e["event"] == "verdict") == {
            r["id"]: 1 for r in rows
        }
        c.post("/admin/reveal")
    rescored = export_rescored(folder, tmp_path)
    assert len(rescored["public"]["rows"]) == 10
    assert converged(web, rescored)
    assert "Traceback" not in running.log_text()


def converged(web: str, rescored: dict[str, Any], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        board = httpx.get(f"{web}/api/v1/leaderboard", params={"phase": "final"}).json()
        if all(board.get(key) == rescored[key] for key in BOARD_KEYS):
            return True
        time.sleep(0.3)
    for key in BOARD_KEYS:
        assert board.get(key) == rescored[key], key
    return False


#: The addresses the README's layout gives its database: as the organiser, as the web role.
LAYOUT_DB = "postgresql://scorer@db/lostitems"
LAYOUT_WEB = "postgresql://web@db/lostitems"


def layout() -> list[list[str]]:
    """The `scorer` commands of the README's three-machine layout, in order, split as bash
    splits them."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Beyond one machine", 1)[1].split("```text\n", 1)[1]
    block = section.split("```", 1)[0]
    return [line.split() for line in block.splitlines() if line.startswith("scorer ")]


def test_the_readme_s_three_machine_layout_runs_as_printed(tmp_path: Path, postgres: str) -> None:
    url = new_database(postgres)
    _, web_url = new_role(postgres, url, "web")  # `createuser web` (the cluster trusts loopback)
    ours = {LAYOUT_DB: url, LAYOUT_WEB: web_url}
    commands = [[ours.get(word, word) for word in c[1:]] for c in layout()]
    assert [c[:2] for c in commands] == [
        ["serve", "init"],
        ["serve", "team"],
        ["serve", "run"],
        ["serve", "worker"],
        ["serve", "settings"],
        ["serve", "export"],
    ]
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "teams.csv").write_text("team\nTeam A\n", encoding="utf-8")

    def scorer_here(args: list[str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "scorer", *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        return done

    init, team, web, worker, settings, export = commands
    assert web[web.index("--db") + 1] == web_url  # the page is served as the web role
    scorer_here(init)
    scorer_here(team)
    with (tmp_path / "tokens.csv").open(newline="", encoding="utf-8") as handle:
        (token,) = [row["token"] for row in csv.DictReader(handle)]
    port = free_port()
    running = [
        subprocess.Popen([sys.executable, "-m", "scorer", *web, "--port", str(port)], cwd=tmp_path),
        *(subprocess.Popen([sys.executable, "-m", "scorer", *worker], cwd=tmp_path) for _ in "12"),
    ]
    try:
        base = f"http://127.0.0.1:{port}"
        answering(base, running[0], lambda: "")  # (its output is the test's)
        submitted = scorer_here(
            ["submit", "data/sample_submission.csv", "--server", base, "--token", token]
        )
        assert f"scored, public score {PUBLIC[SAMPLE]:.6f}" in submitted.stdout
        assert "Changed: end" in scorer_here(settings).stdout  # from a machine without DIR
        assert scorer_here(export).stdout.startswith("Wrote 1 submissions")
    finally:
        for process in running:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(60) for process in running]
    assert codes == [0, 0, 0]  # each stops cleanly


def test_only_a_judging_process_orphaned_while_starting_is_left_out_of_the_logs_checked() -> None:
    orphaned = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 122, in spawn_main\n'
        "    exitcode = _main(fd, parent_sentinel)\n"
        "               ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 130, in _main\n'
        "    preparation_data = reduction.pickle.load(from_parent)\n"
        "EOFError: Ran out of input\n"
    )
    ours = (
        "Traceback (most recent call last):\n"
        '  File "/repo/scorer/serve/remote.py", line 80, in run\n'
        "EOFError: Ran out of input\n"
    )
    said = "scorer serve worker: submission 1: scored\n"
    assert ORPHANED.sub("", said + orphaned + said) == said + said
    assert ORPHANED.sub("", orphaned + ours) == ours
    assert ORPHANED.sub("", ours + orphaned) == ours
    assert ORPHANED.sub("", ours + said) == ours + said
