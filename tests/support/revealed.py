"""A competition served, judged and revealed in-process, for the tests of commit, then
reveal (tests/serve/test_serve_commit.py) and of `scorer verify` (tests/serve/test_verify.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
from typer.testing import CliRunner

from scorer.cli import app
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.serve import site, teams
from scorer.serve.server import Server
from scorer.serve.worker import Worker
from support.postgres_cluster import new_database, new_role
from support.serve_app import ask
from support.serve_live import SOLUTION, until


class Served:
    """A competition made by the organiser and served by a web process (on PostgreSQL, of a
    web role, on a machine of its own): the organiser's folder, the web process's server,
    the admin token, each team's token, and the web role's URL (None with SQLite)."""

    def __init__(self, tmp_path: Path, postgres: str | None) -> None:
        self.folder, url, role = tmp_path / "srv", None, None
        if postgres is not None:
            url = new_database(postgres)
            role, self.web_url = new_role(postgres, url)
        settings = site.Settings(title="Lost <i>items</i>", db=url)
        self.admin = site.init(self.folder, SOLUTION, settings=settings, web_role=role)
        self.tokens = {name: teams.add_team(self.folder, name) for name in ("alpha", "beta")}
        if postgres is None:
            self.web, self.web_url = Server(self.folder, workers=0), None
        else:
            site.from_database(str(self.web_url), tmp_path / "web")
            self.web = Server(tmp_path / "web", workers=0)
        self.home = tmp_path / "home"

    def get(self, url: str) -> httpx.Response:
        return ask(self.web, "GET", url)

    def upload(self, team: str, path: Path) -> int:
        files = {"file": (path.name, path.read_bytes())}
        headers = {"Authorization": f"Bearer {self.tokens[team]}"}
        answer = ask(self.web, "POST", "/api/v1/submissions", files=files, headers=headers)
        assert answer.status_code == 202, answer.text
        return int(answer.json()["id"])

    def judged_and_revealed(self) -> None:
        """Every upload judged by a worker of the organiser's, then the reveal (through the
        web process, as the organiser's API asks it), and the final boards published."""
        store = site.store_of(self.folder)
        self.home.mkdir()
        mine = self.home / site.SOLUTION if store.HOLDS_FILES else self.folder / site.SOLUTION
        mine.write_bytes(SOLUTION.read_bytes())
        worker = Worker(store, self.home, mine, LOST_ITEMS, Isolation(workers=1))
        worker.start()
        try:
            until(lambda: not store.queue()["queued"] and not store.queue()["scoring"])
            headers = {"Authorization": f"Bearer {self.admin}"}
            revealed = ask(self.web, "POST", "/api/v1/admin/reveal", headers=headers)
            assert revealed.status_code == 200, revealed.text
            worker.nudge()
            until(lambda: store.versions().get("final") == store.last_change()[0])
        finally:
            worker.stop()


def export(served: Served, out: Path) -> Path:
    """`scorer serve export` of the organiser's folder into `out`."""
    said = CliRunner().invoke(app, ["serve", "export", str(served.folder), "--out", str(out)])
    assert said.exit_code == 0, said.output
    return out
