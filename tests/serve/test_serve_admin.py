"""The organiser's page (issue 33, item 9): logging in with the admin token opens `/admin`,
with the phase and the next change, the teams, the uploads of each day, the queue, the
failures and the audit log's tail, every name as text and no script; a team's token or
session never opens it. In-process, on SQLite and on PostgreSQL through a web role."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from support.postgres_cluster import new_database, new_role
from support.serve_app import ask, browse
from support.serve_live import SAMPLE, SOLUTION

from scorer.leaderboard.runs import Saved
from scorer.leaderboard.schema import Status as Judged
from scorer.leaderboard.store import Fingerprint
from scorer.serve import session, site, teams
from scorer.serve.server import Server
from scorer.serve.store import Counted, utc
from scorer.serve.tokens import digest

#: A team name made to be markup: it must stay text on the page.
MARKUP = "<b>x</b>"


def made(tmp_path: Path, db: str | None = None, web_role: str | None = None) -> tuple[Server, str]:
    """A server's folder with teams `alpha` and `MARKUP`, and the admin token."""
    folder = tmp_path / "srv"
    settings = site.Settings(title="Lost <i>items</i>", end="2999-01-31T23:59:59+00:00", db=db)
    token = site.init(folder, SOLUTION, settings=settings, web_role=web_role)
    return Server(folder, workers=0), token


def upload(server: Server, token: str, name: str = "a.csv") -> int:
    files = {"file": (name, SAMPLE.read_bytes())}
    headers = {"Authorization": f"Bearer {token}"}
    answer = ask(server, "POST", "/api/v1/submissions", files=files, headers=headers)
    assert answer.status_code == 202, answer.text
    return int(answer.json()["id"])


def failed(server: Server, message: str) -> int:
    """The next queued upload claimed and failed by its own file (a worker's verdict)."""
    (job,) = server.store.claim_jobs(utc())
    error = {"code": "timed_out", "message": message}
    verdict = Saved(Fingerprint("s" * 64, "1.0", "{}"), Judged.FAILED, "a" * 64, None, error, 1, {})
    assert server.store.finish_job(job, verdict, Counted.REJECTED, utc())
    return job.id


async def organiser(client: httpx.AsyncClient, token: str) -> httpx.Response:
    """The organiser's login form, posted (`/admin/login`'s)."""
    return await client.post("/login", data={"token": token, "page": "admin"})


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Server, Server, str]:
    """The organiser's server and a web process's (on PostgreSQL, of a web role, on a
    machine of its own), and the admin token; teams `alpha` and `MARKUP` added."""
    if request.param == "sqlite":
        server, token = made(tmp_path)
        web = server
    else:
        postgres = request.getfixturevalue("postgres")
        url = new_database(postgres)
        role, as_web = new_role(postgres, url)
        server, token = made(tmp_path, url, role)
        site.from_database(as_web, tmp_path / "web")
        web = Server(tmp_path / "web", workers=0)
    for name in ("alpha", MARKUP):
        teams.add_team(server.folder, name)
    return server, web, token


def test_the_admin_token_opens_the_organiser_s_page_with_every_section(
    served: tuple[Server, Server, str],
) -> None:
    server, web, token = served
    gamma, alpha = (teams.add_team(server.folder, name) for name in ("gamma", "alpha2"))
    for _ in range(2):
        upload(web, alpha, "first <u>file.csv")
    upload(web, gamma)
    ident = failed(server, "took <i>too</i> long")
    web.change_settings({"daily_limit": 7}, None, False)
    today = utc()

    async def steps(page: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        return await organiser(page, token), await page.get("/admin")

    login, shown = browse(web, steps)
    assert (login.status_code, login.headers["location"]) == (303, "/admin")
    assert {"HttpOnly", "SameSite=Strict"} <= set(login.headers["set-cookie"].split("; "))
    assert shown.status_code == 200
    html = shown.text
    assert "<script" not in html.lower()
    assert "<h1>Lost &lt;i&gt;items&lt;/i&gt;: the organiser's page</h1>" in html
    assert "Phase: open (uploads are taken)" in html
    assert "Next change: ended at 31 Jan 2999, 23:59 UTC." in html
    assert "Limits: 7 a UTC day, 20 rejected, none in all; 2 picks a team." in html
    assert "Teams (4)" in html
    # alpha2: two uploads, one failed by its own file (counted as rejected), one queued
    row = html.split("<bdi>alpha2</bdi></td>")[1].split("</tr>")[0]
    cells = [cell.split(">", 1)[1] for cell in row.split("</td>")[:-1]]
    assert cells == ["2", "0", "0", "1", "1", "6", "active"]
    assert "<bdi>&lt;b&gt;x&lt;/b&gt;</bdi>" in html and MARKUP not in html
    day = f"{today.day} {today:%b %Y}"
    assert f"<tr><td>{day}</td><td>3</td><td>0</td><td>0</td><td>1</td></tr>" in html
    assert "<p>2 queued, 0 being scored.</p>" in html
    failure = html.split('<section id="failures">')[1].split("</section>")[0]
    assert f"<td>{ident}</td>" in failure and "<bdi>alpha2</bdi>" in failure
    assert "first &lt;u&gt;file.csv" in failure
    assert "timed_out: took &lt;i&gt;too&lt;/i&gt; long" in failure
    audit = html.split('<section id="audit">')[1]
    assert "<td>settings</td>" in audit and "daily_limit: {&quot;now&quot;: 7" in audit
    assert "<td>admin_login</td>" in audit and "team: &lt;b&gt;x&lt;/b&gt;" in audit
    assert "UTC</td>" in audit and "+00:00</td>" not in audit  # times as people read them
    # the JSON twin: the same figures, for the admin token only
    twin = ask(web, "GET", "/api/v1/admin/overview", headers={"Authorization": f"Bearer {token}"})
    found = {t["team"]: t for t in twin.json()["teams"]}
    assert found["alpha2"] | {"remaining_today": 6} == {
        "team": "alpha2",
        "revoked": False,
        "uploads": 2,
        "scored": 0,
        "rejected": 0,
        "failed": 1,
        "waiting": 1,
        "remaining_today": 6,
        "locked": None,
    }
    assert twin.json()["failures"][0]["message"] == "took <i>too</i> long"
    assert twin.json()["stage"] == "open" and twin.json()["queued"] == 2


def test_a_team_s_token_or_session_never_opens_it(tmp_path: Path) -> None:
    server, token = made(tmp_path)
    alpha = teams.add_team(server.folder, "alpha")

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        nobody = await page.get("/admin")
        assert (await page.post("/login", data={"token": alpha})).status_code == 303
        return [
            nobody,
            await page.get("/admin"),  # a team's session
            await page.get("/admin", headers={"Authorization": f"Bearer {alpha}"}),
            await organiser(page, alpha),  # a team's token on the organiser's form
            await page.get("/team"),  # still the team's session: nothing opened
        ]

    nobody, session_of_team, token_of_team, on_form, team = browse(server, steps)
    assert (nobody.status_code, nobody.headers["location"]) == (303, "/admin/login")
    for refused in (session_of_team, token_of_team):
        assert refused.status_code == 403
        assert "This page is the organiser&#x27;s: a team&#x27;s token or session" in refused.text
        assert "Teams (" not in refused.text and 'href="/admin/login"' in refused.text
    assert on_form.status_code == 401
    assert "This is not the admin token." in on_form.text
    assert "a team&#x27;s token does not open the organiser&#x27;s page" in on_form.text
    assert team.status_code == 200
    api = ask(server, "GET", "/api/v1/admin/overview", headers={"Authorization": f"Bearer {alpha}"})
    assert (api.status_code, api.json()["error"]["code"]) == (401, "unauthorized")
    curl = ask(server, "GET", "/admin", headers={"Authorization": f"Bearer {token}"})
    assert curl.status_code == 200 and "Teams (1)" in curl.text  # a script with the token


def test_a_wrong_admin_token_is_told_so_in_plain_words(tmp_path: Path) -> None:
    server, token = made(tmp_path)

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        return [
            await page.get("/admin/login"),
            await organiser(page, token[:-1]),
            await page.post("/login", data={"token": "x" * 43}),  # the team's form
            await page.get("/admin"),
        ]

    form, wrong, on_team_form, after = browse(server, steps)
    assert form.status_code == 200 and "<h2>The organiser&#x27;s page</h2>" in form.text
    assert 'action="/login"' in form.text and 'name="page" value="admin"' in form.text
    assert wrong.status_code == 401 and 'role="alert">This is not the admin token.' in wrong.text
    assert "it is the token `scorer serve init` printed, once" in wrong.text
    assert 'name="page" value="admin"' in wrong.text  # the organiser's form again
    assert on_team_form.status_code == 401 and "not a team&#x27;s token" in on_team_form.text
    assert (after.status_code, after.headers["location"]) == (303, "/admin/login")


def test_logging_out_ends_the_session_kept_only_as_its_hash(tmp_path: Path) -> None:
    server, token = made(tmp_path)

    def kept() -> list[tuple[str]]:
        return [tuple(row) for row in server.store._read("SELECT * FROM admin_sessions")]

    held: list[list[tuple[str]]] = []

    async def steps(page: httpx.AsyncClient) -> list[httpx.Response]:
        login = await organiser(page, token)
        held.append(kept())
        opened = await page.get("/admin")
        out = await page.post("/logout")
        held.append(kept())
        return [login, opened, out, await page.get("/admin")]

    login, opened, out, after = browse(server, steps)
    ident = login.headers["set-cookie"].split(";")[0].split("=", 1)[1]
    (row,) = held[0]
    assert row[0] == digest(ident) and ident not in row  # the id's SHA-256 only
    assert opened.status_code == 200
    assert (out.status_code, out.headers["location"]) == (303, "/login")
    assert held[1] == [] and (after.status_code, after.headers["location"]) == (303, "/admin/login")
    # a new session is kept as its hash, and ends when its lifetime does
    fresh = "f" * 43
    assert server.store.open_admin_session(digest(fresh), digest(token), session.LIFETIME)
    assert server.store.admin_session(digest(fresh))
    later = utc() + session.LIFETIME + timedelta(seconds=1)
    server.store.clock = lambda: later
    assert not server.store.admin_session(digest(fresh))
    assert not server.store.open_admin_session(digest("g"), digest("not it"), session.LIFETIME)


def test_a_web_role_opens_an_organiser_s_session_only_through_its_function(
    tmp_path: Path, postgres: str
) -> None:
    url = new_database(postgres)
    role, web = new_role(postgres, url)
    _, token = made(tmp_path, url, role)
    with psycopg.connect(web, autocommit=True) as db:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("SELECT count(*) FROM admin_sessions")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("INSERT INTO admin_sessions VALUES ('h', '2999-01-01')")
    with psycopg.connect(web, autocommit=True) as db:
        wrong = db.execute("SELECT open_admin_session('h', %s, 60)", (digest("guess"),))
        assert wrong.fetchone() == (False,)
        assert db.execute("SELECT admin_session('h')").fetchone() == (False,)
        right = db.execute("SELECT open_admin_session('h', %s, 60)", (digest(token),))
        assert right.fetchone() == (True,)
        assert db.execute("SELECT admin_session('h')").fetchone() == (True,)
        db.execute("SELECT close_session('h')")
        assert db.execute("SELECT admin_session('h')").fetchone() == (False,)


def test_the_page_has_no_form_but_log_out_and_answers_with_the_guard_headers(
    tmp_path: Path,
) -> None:
    server, token = made(tmp_path)
    page = ask(server, "GET", "/admin", headers={"Authorization": f"Bearer {token}"})
    assert page.text.count("<form") == 1 and 'action="/logout"' in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")  # no script
    assert page.headers["cache-control"] == "no-store"


def test_the_status_is_not_whole_between_the_reveal_and_the_final_boards(tmp_path: Path) -> None:
    """The status an organiser (and `settle`) waits on: revealed, the final boards not yet
    built, it names them unpublished, so that the boards never all agree in that moment."""
    server, token = made(tmp_path)
    headers = {"Authorization": f"Bearer {token}"}
    assert ask(server, "GET", "/api/v1/admin/status", headers=headers).json()["boards"] == {}
    ask(server, "POST", "/api/v1/admin/reveal", headers=headers)
    status = ask(server, "GET", "/api/v1/admin/status", headers=headers).json()
    assert (status["phase"], status["boards"]) == ("final", {"final": None})
    assert ask(server, "GET", "/api/v1/leaderboard?phase=final").status_code == 503
