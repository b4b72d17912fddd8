"""Hidden by construction (issue 24): before the reveal, no route of a real `scorer serve run`
shows a private score or which users are private, whoever asks (anonymous, each team, the
organiser) and in every format (JSON, the page, a team's page, errors, headers). Every route
the app has is crawled: a new route that this test does not visit fails it. After the
reveal the same crawl finds the private scores, so the test can see what it looks for."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.postgres_cluster import new_database
from support.serve_live import BROKEN, POPULAR, SAMPLE, SOLUTION, Live

from scorer.api import score
from scorer.serve.app import build
from scorer.serve.rescore import sha256_of

#: A team name made to be markup, a link and a formula: it must stay text everywhere.
HOSTILE = '<img src=x onerror=alert(1)>=HYPERLINK("https://evil.example")'

#: Each team's uploads.
UPLOADS = {"alpha": [SAMPLE, POPULAR], HOSTILE: [POPULAR, BROKEN]}


def forms(value: float) -> list[str]:
    """How a score can be written: in full, and rounded as pages and tables round it."""
    return [repr(value), f"{value:.6f}", f"{value:.4f}"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """A server on each store: its boards are built by its worker from the verdicts the
    store keeps, and published for the web process, which must hide as much."""
    folder = tmp_path_factory.mktemp("leaks") / "srv"
    db = (
        []
        if request.param == "sqlite"
        else ["--db", new_database(request.getfixturevalue("postgres"))]
    )
    server = Live(folder, "--title", "<b>Final</b>", *db, teams=tuple(UPLOADS))
    try:
        server.start()
        for team, files in UPLOADS.items():
            for path in files:
                server.scored(team, path)
        server.settle()
        yield server
    finally:  # a setup that failed leaves no server running either
        server.close()


def crawl(live: Live) -> tuple[dict[str, str], set[str]]:
    """Every route as everyone: each answer's text (headers and body) by who asked what,
    and the route paths visited."""
    seen: dict[str, str] = {}
    visited: set[str] = set()

    def keep(who: str, route: str, answer: httpx.Response) -> None:
        visited.add(route)
        headers = "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
        seen[f"{who} {answer.request.method} {answer.request.url}"] = f"{headers}\n\n{answer.text}"

    for who in ["anonymous", *UPLOADS, "admin"]:
        with live.client(None if who == "anonymous" else who) as api:
            for route, params in [
                ("/competition", {}),
                ("/targets", {}),
                ("/sample", {}),
                ("/leaderboard", {}),
                ("/leaderboard", {"phase": "final"}),
                ("/solution", {}),
                ("/solution.csv", {}),
                ("/submissions", {}),
                ("/admin/submissions", {}),
                ("/admin/audit", {}),
                ("/admin/status", {}),
                ("/admin/settings", {}),
                ("/admin/overview", {}),
                ("/admin/forecast", {}),
            ]:
                keep(who, f"/api/v1{route}", api.get(route, params=params))
            for ident in range(1, 6):
                keep(who, "/api/v1/submissions/{id}", api.get(f"/submissions/{ident}"))
            keep(who, "/api/v1/picks", api.put("/picks", json={"ids": [1]}))
            keep(who, "/api/v1/submissions", api.post("/submissions", content=b"x"))
            keep(who, "/api/v1/admin/teams", api.post("/admin/teams", json={"name": ""}))
            keep(who, "/api/v1/admin/reveal", api.get("/admin/reveal"))  # GET: not allowed
        own = {"Origin": live.url}  # as the server's own pages post
        with httpx.Client(base_url=live.url, timeout=120, headers=own) as page:
            token = live.tokens.get(who, live.admin)
            keep(who, "/", page.get("/"))
            keep(who, "/login", page.get("/login"))
            keep(who, "/login", page.post("/login", data={"token": token}))
            keep(who, "/team", page.get("/team"))
            keep(
                who, "/admin", page.get("/admin")
            )  # the organiser's, after the admin token's login
            keep(who, "/admin/login", page.get("/admin/login"))
            for ident in range(1, 6):
                keep(who, "/team/submissions/{id}", page.get(f"/team/submissions/{ident}"))
            keep(who, "/team/picks", page.post("/team/picks", data={"ids": "1"}))
            keep(who, "/upload", page.post("/upload", files={"file": ("a", b"x")}))
            keep(who, "/logout", page.post("/logout"))
            zipped = page.get("/download/participants.zip")  # 503 while it is being built
            keep(who, "/download/participants.zip", zipped)
    return seen, visited


def routes() -> set[str]:
    """Every path the app answers, its API mounted under /api/v1."""
    app = build(Path("unused"), server=object(), start=False)  # type: ignore[arg-type]
    paths: set[str] = set()
    for route in app.routes:
        inner = getattr(route, "routes", None)
        if inner is None:
            paths.add(route.path)  # type: ignore[attr-defined]
        else:
            paths |= {f"{route.path}{r.path}" for r in inner}  # type: ignore[attr-defined]
    return paths


def test_before_the_reveal_no_route_shows_a_private_figure(live: Live) -> None:
    private = [score(path, SOLUTION).private for path in (SAMPLE, POPULAR)]
    public = [score(path, SOLUTION).public for path in (SAMPLE, POPULAR)]
    secrets = [f for value in private for f in forms(value) if f not in map(str, public)]
    # nor the salt of the commitment, nor the solution's sha256, which the reveal publishes
    secrets += [(live.folder / "salt").read_text(), sha256_of(SOLUTION)]
    seen, visited = crawl(live)
    assert visited == routes()
    for where, text in seen.items():
        for secret in secrets:
            assert secret not in text, f"{where} shows a private score"
        assert '"private": {' not in text, f"{where} has a private board"
        if "content-type: text/html" in text:  # JSON carries names as data, a page as text
            assert "<img" not in text and "<b>Final" not in text, f"{where}: markup"
    # the targets are given sorted: their order tells nothing of the split
    users = seen[f"anonymous GET {live.url}/api/v1/targets"].split("\n\n", 1)[1].split()
    assert users[1:] == sorted(users[1:], key=int)
    # the page shows the title and the hostile name as text
    page = seen[f"anonymous GET {live.url}/"]
    assert "&lt;b&gt;Final&lt;/b&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_after_the_reveal_the_same_crawl_finds_the_private_scores(live: Live) -> None:
    with live.client("admin") as admin:
        assert admin.post("/admin/reveal").status_code == 200
    live.settle()  # the final boards, published by the worker after the reveal
    seen, _ = crawl(live)
    board = seen[f"anonymous GET {live.url}/api/v1/leaderboard?phase=final"]
    best = max(score(path, SOLUTION).private for path in (SAMPLE, POPULAR))
    assert re.search(re.escape(repr(best)), board)
    assert f"{best:.6f}" in seen[f"anonymous GET {live.url}/"]  # the page shows both boards
    # and the solution and the salt of the commitment, to anyone
    assert (live.folder / "salt").read_text() in seen[f"anonymous GET {live.url}/api/v1/solution"]
