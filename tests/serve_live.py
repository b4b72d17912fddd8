"""A real `scorer serve run` for the tests: a server folder made by the CLI, the server started
as a subprocess on a free loopback port, driven with httpx, stopped by a signal or killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from scorer.leaderboard.boards import iso
from scorer.leaderboard.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
SOLUTION = DATA / "solution.csv"
SAMPLE = DATA / "sample_submission.csv"
POPULAR = DATA / "popularity_submission.csv"
BROKEN = DATA / "broken" / "semicolons.csv"
FINAL = ("scored", "rejected", "failed")


def scorer(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`scorer ARGS` as a participant runs it, from the repository's root."""
    done = subprocess.run(
        [sys.executable, "-m", "scorer", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answering(
    url: str, process: subprocess.Popen[Any], log: Callable[[], str], timeout: float = 60
) -> None:
    """Wait until the server `process` started answers at `url`; fail, with its `log`, when
    it ends first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(f"{url}/api/v1/competition", timeout=1)
            return
        except httpx.TransportError:
            assert process.poll() is None, f"the server stopped: {log()}"
            assert time.monotonic() < deadline, f"the server did not answer: {log()}"
            time.sleep(0.1)


class Live:
    """A server folder and, once `start`ed, its server. `tokens`: each team's token."""

    def __init__(self, folder: Path, *options: str, teams: tuple[str, ...] = ("alpha", "beta")):
        self.folder = folder
        made = scorer("serve", "init", folder, "--solution", SOLUTION, *options, "--json")
        self.admin: str = json.loads(made.stdout)["admin_token"]
        self.tokens: dict[str, str] = {}
        for team in teams:
            added = scorer("serve", "team", "add", folder, team, "--json")
            self.tokens[team] = json.loads(added.stdout)["token"]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[str] | None = None
        self.log = folder.parent / f"{folder.name}.log"

    def start(self, *options: str) -> Live:
        handle = self.log.open("a")
        listen = ["--port", str(self.port), *options]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scorer", "serve", "run", self.folder, *listen],
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )
        answering(self.url, self.process, self.log.read_text)
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Send `sig` and wait: the exit code."""
        assert self.process is not None
        os.kill(self.process.pid, sig)
        code = self.process.wait(timeout)
        self.process = None
        return code

    def client(self, team: str | None = None) -> httpx.Client:
        """A client as a team (its token), as the organiser (`"admin"`) or anonymous."""
        token = self.admin if team == "admin" else self.tokens.get(team or "")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=f"{self.url}/api/v1", headers=headers, timeout=120)

    def upload(self, team: str, path: Path, name: str | None = None) -> httpx.Response:
        with self.client(team) as client:
            return client.post(
                "/submissions", files={"file": (name or path.name, path.read_bytes())}
            )

    def verdict(self, team: str, ident: int, timeout: float = 120) -> dict[str, Any]:
        """A submission once it has its verdict."""
        deadline = time.monotonic() + timeout
        with self.client(team) as client:
            while True:
                found: dict[str, Any] = client.get(f"/submissions/{ident}").json()
                if found["status"] in FINAL or time.monotonic() > deadline:
                    return found
                time.sleep(0.1)

    def scored(self, team: str, path: Path) -> dict[str, Any]:
        answer = self.upload(team, path)
        assert answer.status_code == 202, answer.text
        return self.verdict(team, answer.json()["id"])

    def settle(self, timeout: float = 120) -> None:
        """Wait until every submission has its verdict, the leaderboard database's last run
        holds them all, and the board served is that run's (the server builds it after)."""
        deadline = time.monotonic() + timeout
        with self.client("admin") as client:
            while time.monotonic() < deadline:
                rows = client.get("/admin/submissions").json()["submissions"]
                board = client.get("/leaderboard").json()
                with Store(self.folder / "board.sqlite", create=False) as store:
                    run, running = store.published(), store.unfinished()
                latest = None if run is None or run.finished_at is None else iso(run.finished_at)
                done = all(r["status"] in FINAL for r in rows) and running is None
                # the run covers every verdict: on PostgreSQL the boards are copied from the
                # verdicts at most every few seconds (`mirror.EVERY`), so one may be behind
                # (a failure refunded is not on the boards: between these two counts)
                judged = sum(r["status"] in FINAL[:2] for r in rows)
                total = 0 if run is None else run.total
                done = done and judged <= total <= len(rows)
                # (a board built before the run under way began is not stale, and is not it)
                if done and board["as_of"] == latest and board["stale"] is None:
                    return
                time.sleep(0.2)
        raise AssertionError("the server did not settle")

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
