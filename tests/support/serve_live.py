"""A real `scorer serve run` for the tests: a server folder made by the CLI, the server started
as a subprocess on a free loopback port, driven with httpx, stopped by a signal or killed."""

from __future__ import annotations

import hashlib
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

from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.serve import site
from scorer.serve.sql import SqlStore
from scorer.serve.worker import Worker
from support.paths import ROOT

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

    def upload(
        self, team: str, path: Path, name: str | None = None, description: str = ""
    ) -> httpx.Response:
        with self.client(team) as client:
            return client.post(
                "/submissions",
                files={"file": (name or path.name, path.read_bytes())},
                data={"description": description} if description else None,
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

    def scored(self, team: str, path: Path, description: str = "") -> dict[str, Any]:
        answer = self.upload(team, path, description=description)
        assert answer.status_code == 202, answer.text
        return self.verdict(team, answer.json()["id"])

    def settle(self, timeout: float = 120) -> None:
        """Wait until no submission waits for its verdict and every board is published as
        of the latest change (`/admin/status`: the worker publishes them after it)."""
        deadline = time.monotonic() + timeout
        with self.client("admin") as client:
            while time.monotonic() < deadline:
                status = client.get("/admin/status").json()
                boards = set(status["boards"].values())
                waiting = status["queued"] + status["scoring"]
                if waiting == 0 and boards == {status["last_change"]}:
                    return
                time.sleep(0.1)
        raise AssertionError("the server did not settle")

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def until(done: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def upload(store: SqlStore, folder: Path, team: int, name: str, sent: Path = SAMPLE) -> int:
    """`sent` (the sample) accepted as the server accepts an upload: in its folder, and in a
    store that holds the files, in the database."""
    kept = folder / site.UPLOADS / name / "mine.csv"
    kept.parent.mkdir()
    kept.write_bytes(sent.read_bytes())
    path = str(kept.relative_to(folder))
    source = kept if store.HOLDS_FILES else None
    sha = hashlib.sha256(kept.read_bytes()).hexdigest()
    ident = store.accept_upload(team, sha, kept.stat().st_size, path, ".csv", source).id
    assert ident is not None
    return ident


def own_worker(store: SqlStore, folder: Path, home: Path) -> tuple[Worker, Path]:
    """A worker with a private folder, `home` (made), as `serve worker` has one: a worker of
    a database reads the solution from a copy of its own, the server's worker from the
    folder. The worker, not started, and the solution it reads."""
    home.mkdir()
    mine = home / site.SOLUTION if store.HOLDS_FILES else folder / site.SOLUTION
    mine.write_bytes(SOLUTION.read_bytes())
    return Worker(store, home, mine, LOST_ITEMS, Isolation(workers=1)), mine
