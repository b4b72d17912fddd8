"""Defences against probing on a server (`[board]` of its spec): before the reveal a team
reads its public scores as the spec shows them, on every route and page, and the public board
too; after the reveal, exact."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import httpx
from support.serve_app import ask, browse
from support.serve_live import SAMPLE, SOLUTION, until

from scorer.api import score
from scorer.board import BoardRules
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.serve import site, teams
from scorer.serve.server import Server
from scorer.serve.store import Status
from scorer.serve.worker import Worker

DIGITS = 2


def test_public_scores_are_rounded_for_teams_until_the_reveal(tmp_path: Path) -> None:
    spec = tmp_path / "competition.toml"
    rules = replace(LOST_ITEMS, board=BoardRules(public_digits=DIGITS))
    spec.write_text(rules.to_toml(), encoding="utf-8")
    folder = tmp_path / "srv"
    admin = site.init(folder, SOLUTION, competition=spec, settings=site.Settings(title="t"))
    token = teams.add_team(folder, "alpha")
    server = Server(folder, workers=0)
    assert server.competition.board.public_digits == DIGITS
    team = {"Authorization": f"Bearer {token}"}
    files = {"file": ("a.csv", SAMPLE.read_bytes())}
    ident = ask(server, "POST", "/api/v1/submissions", files=files, headers=team).json()["id"]
    worker = Worker(server.store, tmp_path, folder / site.SOLUTION, rules, Isolation(workers=1))
    worker.start()
    try:
        until(lambda: server.store.entry(ident).status is Status.SCORED)  # type: ignore[union-attr]
        until(lambda: server.store.versions().get("public") == server.store.last_change()[0])
        exact = score(SAMPLE, SOLUTION).public
        assert exact is not None and round(exact, DIGITS) != exact
        assert server.store.entry(ident).public_score == exact  # type: ignore[union-attr]

        def seen() -> list[float]:
            mine = ask(server, "GET", "/api/v1/submissions", headers=team).json()
            one = ask(server, "GET", f"/api/v1/submissions/{ident}", headers=team).json()
            board = ask(server, "GET", "/api/v1/leaderboard").json()
            (row,) = board["public"]["rows"]
            return [mine["submissions"][0]["public_score"], one["public_score"], row["score"]]

        assert seen() == [round(exact, DIGITS)] * 3

        async def steps(page: httpx.AsyncClient) -> list[str]:
            await page.post("/login", data={"token": token})
            paths = ("/team", f"/team/submissions/{ident}", "/")
            return [(await page.get(path)).text for path in paths]

        pages = browse(server, steps)
        for text in pages:
            assert f"{exact:.6f}" not in text and f"{exact:.4f}" not in text
        assert f"{round(exact, DIGITS):.6f}" in pages[0]

        ask(server, "POST", "/api/v1/admin/reveal", headers={"Authorization": f"Bearer {admin}"})
        until(lambda: server.store.versions().get("final") == server.store.last_change()[0])
        assert seen()[:2] == [exact, exact]
        final = ask(server, "GET", "/api/v1/leaderboard", params={"phase": "final"}).json()
        assert final["public"]["rows"][0]["score"] == exact
        assert json.dumps(exact) in ask(server, "GET", "/api/v1/leaderboard").text
    finally:
        worker.stop()
