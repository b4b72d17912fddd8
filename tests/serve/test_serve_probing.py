"""Defences against probing on a server (`[board]` of its spec): before the reveal a team
reads its public scores as the spec shows them, on every route and page, and the public board
too; after the reveal, exact."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import httpx
import polars as pl
import pytest
from support.serve_app import ask, browse
from support.serve_live import DATA, SAMPLE, SOLUTION, until

from scorer.api import score
from scorer.board import BoardRules, Ladder
from scorer.competition import LOST_ITEMS, Split
from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.ladder import ladder
from scorer.serve import boards, site, teams
from scorer.serve.server import Server
from scorer.serve.store import Status
from scorer.serve.worker import Worker

DIGITS = 2
POPULAR = DATA / "popularity_submission.csv"


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


def served(tmp_path: Path, rules: BoardRules, *names: str) -> tuple[Server, str, list[str]]:
    """A server of the bundled competition under `rules`, its organiser's token and one
    token for each team of `names`."""
    spec = tmp_path / "competition.toml"
    spec.write_text(replace(LOST_ITEMS, board=rules).to_toml(), encoding="utf-8")
    folder = tmp_path / "srv"
    admin = site.init(folder, SOLUTION, competition=spec, settings=site.Settings(title="t"))
    tokens = [teams.add_team(folder, name) for name in names]
    return Server(folder, workers=0), admin, tokens


def uploaded(server: Server, token: str, *contents: bytes) -> list[int]:
    """Each file submitted in turn, its verdict awaited before the next is sent (the
    Ladder's order is the verdicts')."""
    idents = []
    for content in contents:
        files = {"file": ("a.csv", content)}
        headers = {"Authorization": f"Bearer {token}"}
        ident = ask(server, "POST", "/api/v1/submissions", files=files, headers=headers)
        idents.append(ident.json()["id"])
        until(lambda: server.store.entry(idents[-1]).status is Status.SCORED)  # type: ignore[union-attr]
    until(lambda: server.store.versions().get("public") == server.store.last_change()[0])
    return idents


def reversed_ranks(path: Path) -> bytes:
    """A worse submission: each user's list of `path` in the reverse order."""
    frame = pl.read_csv(path)
    return frame.with_columns(rank=21 - pl.col("rank")).write_csv().encode()


def test_under_the_ladder_a_team_reads_the_best_its_paired_tests_allowed(
    tmp_path: Path,
) -> None:
    server, admin, (token,) = served(tmp_path, BoardRules(ladder=Ladder.PARAMETER_FREE), "a")
    rules = server.competition
    worker = Worker(server.store, tmp_path, server.folder / site.SOLUTION, rules, Isolation(1))
    worker.start()
    try:
        worse, better = reversed_ranks(POPULAR), POPULAR.read_bytes()
        idents = uploaded(server, token, worse, better, SAMPLE.read_bytes(), worse)
        arrays = server.store.per_user(idents, Split.PUBLIC)
        expected = ladder([arrays[i] for i in idents])
        assert expected[-1] == expected[-2]  # the last, worse, repeats the best so far
        exact = [server.store.entry(i).public_score for i in idents]  # type: ignore[union-attr]
        assert exact[-1] != expected[-1]
        team = {"Authorization": f"Bearer {token}"}
        mine = ask(server, "GET", "/api/v1/submissions", headers=team).json()["submissions"]
        assert {row["id"]: row["public_score"] for row in mine} == dict(
            zip(idents, expected, strict=True)
        )
        one = ask(server, "GET", f"/api/v1/submissions/{idents[-1]}", headers=team).json()
        assert one["public_score"] == expected[-1]
        (row,) = ask(server, "GET", "/api/v1/leaderboard").json()["public"]["rows"]
        assert row["score"] == max(expected)

        ask(server, "POST", "/api/v1/admin/reveal", headers={"Authorization": f"Bearer {admin}"})
        until(lambda: server.store.versions().get("final") == server.store.last_change()[0])
        mine = ask(server, "GET", "/api/v1/submissions", headers=team).json()["submissions"]
        assert {row["id"]: row["public_score"] for row in mine} == dict(
            zip(idents, exact, strict=True)
        )
    finally:
        worker.stop()


def test_the_organiser_reads_the_forecast_and_after_the_reveal_the_ranks_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(boards, "FORECAST_EVERY", 0)  # a forecast at every change
    server, admin, tokens = served(tmp_path, BoardRules(), "a", "b")
    organiser = {"Authorization": f"Bearer {admin}"}
    assert ask(server, "GET", "/api/v1/admin/forecast").status_code == 401
    team = {"Authorization": f"Bearer {tokens[0]}"}
    assert ask(server, "GET", "/api/v1/admin/forecast", headers=team).status_code == 401
    answer = ask(server, "GET", "/api/v1/admin/forecast", headers=organiser)
    assert (answer.status_code, answer.json()["error"]["code"]) == (503, "building")
    rules = server.competition
    worker = Worker(server.store, tmp_path, server.folder / site.SOLUTION, rules, Isolation(1))
    worker.start()
    try:
        uploaded(server, tokens[0], SAMPLE.read_bytes())
        uploaded(server, tokens[1], POPULAR.read_bytes())
        until(lambda: server.store.versions().get("forecast") == server.store.last_change()[0])
        found = ask(server, "GET", "/api/v1/admin/forecast", headers=organiser).json()
        assert found["phase"] == "public" and found["level"] == 0.9
        assert [(row["team"], row["public_rank"]) for row in found["rows"]] == [
            ("a", 1),
            ("b", 2),
        ]
        assert all("private_rank" not in row for row in found["rows"])
        status = ask(server, "GET", "/api/v1/admin/status", headers=organiser).json()
        assert status["forecast"] == server.store.versions()["forecast"]
        assert "forecast" not in status["boards"] and "ladder" not in status["boards"]
        assert "forecast" not in ask(server, "GET", "/api/v1/leaderboard").json()

        ask(server, "POST", "/api/v1/admin/reveal", headers=organiser)
        until(lambda: server.store.versions().get("final") == server.store.last_change()[0])
        after = ask(server, "GET", "/api/v1/admin/forecast", headers=organiser).json()
        final = ask(server, "GET", "/api/v1/leaderboard", params={"phase": "final"}).json()
        got = {row["team"]: row["rank"] for row in final["private"]["rows"]}
        assert after["phase"] == "final"
        assert {row["team"]: row["private_rank"] for row in after["rows"]} == got
        assert after["covered"] == sum(row["inside"] for row in after["rows"])
    finally:
        worker.stop()
