"""Teams and tokens (issue 33): a name is one team as the manifest reads it, on every path that
adds one (a file, all or nothing; one name; the API; the database itself); a team's token
replaced; a revoked team's name kept; tokens.csv in LF; a team a lock holds told so. Every
test runs on both stores: SQLite in the folder, and PostgreSQL in a throwaway cluster."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from support.postgres_cluster import new_database, new_role
from support.serve_app import ask, browse
from support.serve_live import SAMPLE, SOLUTION
from typer.testing import CliRunner

from scorer.cli import app
from scorer.serve import site, teams
from scorer.serve.client import bearer
from scorer.serve.postgres import PostgresStore
from scorer.serve.server import Server
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcore import TeamTaken
from scorer.serve.sqlite import SqliteStore
from scorer.serve.store import Limits
from scorer.serve.tokens import digest, new_token

runner = CliRunner()


def serve(*args: str | Path) -> Any:
    return runner.invoke(app, ["serve", *map(str, args)])


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest) -> str | None:
    """The store of a new server: None for SQLite in its folder, else a new database's URL."""
    return None if request.param == "sqlite" else new_database(request.getfixturevalue("postgres"))


@pytest.fixture
def folder(tmp_path: Path, db: str | None) -> Path:
    made = tmp_path / "srv"
    site.init(made, SOLUTION, settings=site.Settings(title="t", db=db))
    return made


def names(folder: Path) -> list[tuple[str, bool]]:
    return site.store_of(folder).teams()


def test_a_file_with_a_team_listed_twice_adds_none_and_names_both_lines(
    folder: Path, tmp_path: Path
) -> None:
    teams = tmp_path / "teams.csv"
    full_width = "\uff21\uff2c\uff30\uff28\uff21"  # ALPHA in full-width letters
    teams.write_text(
        "team\nBookworms\nalpha\nbookworms\nbeta\nbeta\n BOOKWORMS\u00a0\n"
        f"{full_width}\nCafe\u0301\nCaf\u00e9\n",
        encoding="utf-8",
    )
    slips = tmp_path / "tokens.csv"
    done = serve("team", "add", folder, "--from", teams, "--out", slips)
    assert done.exit_code == 2, done.output
    said = done.stderr
    assert f"{teams}: 5 problems with the teams; none was added" in said
    assert "line 4: team 'bookworms' is team 'Bookworms' written differently (line 2)" in said
    assert "line 6: team 'beta' is listed twice (line 5)" in said
    assert "line 8: team 'ＡＬＰＨＡ' is team 'alpha' written differently (line 3)" in said
    assert "line 10: team 'Café' is listed twice (line 9)" in said  # one name in NFC
    assert "line 7: team ' BOOKWORMS\\xa0' is team 'Bookworms'" in said  # escaped, not raw
    assert names(folder) == [] and not slips.exists()  # nothing added, no tokens file
    teams.write_text("team\nBookworms\nalpha\nbeta\n", encoding="utf-8")
    again = serve("team", "add", folder, "--from", teams, "--out", slips)
    assert again.exit_code == 0, again.output
    assert names(folder) == [("Bookworms", False), ("alpha", False), ("beta", False)]


def test_tokens_csv_ends_its_lines_in_lf_and_each_token_opens_its_team(
    folder: Path, tmp_path: Path
) -> None:
    teams, slips = tmp_path / "teams.csv", tmp_path / "tokens.csv"
    teams.write_text("team\nbeta\ngamma\n", encoding="utf-8")
    assert serve("team", "add", folder, "--from", teams, "--out", slips).exit_code == 0
    written = slips.read_bytes()
    assert b"\r" not in written and written.count(b"\n") == 3
    assert stat.S_IMODE(slips.stat().st_mode) == 0o600
    store = site.store_of(folder)
    for line in written.decode().splitlines()[1:]:
        team, token = line.split(",")
        found = store.team_of(digest(token))
        assert found is not None and found.name == team


def test_a_token_copied_with_a_carriage_return_is_sent_without_it() -> None:
    """A token copied from a CRLF file (an older tokens.csv, or one saved by a spreadsheet)
    keeps its CR: `scorer submit` sends the token without it."""
    token = new_token()
    assert bearer(f"{token}\r") == token
    assert bearer(f" {token}\r\n") == token


def test_a_name_that_is_a_team_already_is_refused_and_nothing_added(
    folder: Path, tmp_path: Path
) -> None:
    assert serve("team", "add", folder, "Bookworms").exit_code == 0
    one = serve("team", "add", folder, "  bookworms ")
    assert one.exit_code == 2
    assert (
        "team '  bookworms ' is team 'Bookworms' written differently, and it exists" in one.stderr
    )
    teams, slips = tmp_path / "teams.csv", tmp_path / "tokens.csv"
    teams.write_text("team\ngamma\nBOOKWORMS\n", encoding="utf-8")
    done = serve("team", "add", folder, "--from", teams, "--out", slips)
    assert done.exit_code == 2
    assert "line 3: team 'BOOKWORMS' is team 'Bookworms' written differently" in done.stderr
    assert names(folder) == [("Bookworms", False)] and not slips.exists()


def test_a_revoked_team_s_name_is_not_given_to_a_new_team(folder: Path) -> None:
    assert serve("team", "add", folder, "alpha").exit_code == 0
    assert serve("team", "revoke", folder, "alpha").exit_code == 0
    for spelling in ("alpha", "ALPHA"):
        done = serve("team", "add", folder, spelling)
        assert done.exit_code == 2
        assert "is a revoked team of the server" in done.stderr
        assert f"`scorer serve team token {folder} alpha` gives it a new token" in done.stderr
    assert names(folder) == [("alpha", True)]


def test_a_new_token_replaces_the_old_one_at_once_and_is_audited(
    folder: Path, tmp_path: Path
) -> None:
    old = json.loads(serve("team", "add", folder, "Bookworms", "--json").stdout)["token"]
    done = serve("team", "token", folder, "bookworms", "--json")  # any spelling of the team
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    assert (answer["team"], answer["was_revoked"]) == ("Bookworms", False)
    store = site.store_of(folder)
    assert store.team_of(digest(old)) is None  # the old token opens nothing
    found = store.team_of(digest(answer["token"]))
    assert found is not None and found.name == "Bookworms"
    (event,) = [e for e in store.audit() if e["event"] == "team_token"]
    assert (event["team"], event["was_revoked"]) == ("Bookworms", False)
    assert answer["token"] not in json.dumps(store.audit())
    out = tmp_path / "bookworms.token"
    written = serve("team", "token", folder, "Bookworms", "--out", out)
    assert written.exit_code == 0 and "the old one no longer works" in written.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert store.team_of(digest(out.read_text().strip())) is not None
    assert store.team_of(digest(answer["token"])) is None
    again = serve("team", "token", folder, "Bookworms", "--out", out)
    assert again.exit_code == 2 and "exists already" in again.stderr
    unknown = serve("team", "token", folder, "nobody")
    assert unknown.exit_code == 2 and "no team named 'nobody'" in unknown.stderr


def test_a_new_token_lets_a_revoked_team_back_in(folder: Path) -> None:
    """The decision written in task.md: an organiser gives a revoked team a new token to let
    it back in (a leaked token revoked, then replaced); its old token stays refused."""
    old = json.loads(serve("team", "add", folder, "alpha", "--json").stdout)["token"]
    assert serve("team", "revoke", folder, "alpha").exit_code == 0
    done = serve("team", "token", folder, "alpha")
    assert done.exit_code == 0
    assert "it was revoked, and this token lets it back in" in done.stdout
    token = done.stdout.split("shown this once: ")[1].split(";")[0]
    store = site.store_of(folder)
    assert store.team_of(digest(token)) is not None and store.team_of(digest(old)) is None
    assert names(folder) == [("alpha", False)]


def test_the_store_itself_refuses_a_second_spelling_and_adds_all_or_none(folder: Path) -> None:
    store = site.store_of(folder)
    store.add_team("Bookworms", digest(new_token()))
    with pytest.raises(TeamTaken) as taken:
        store.add_team("BOOKWORMS", digest(new_token()))
    assert (taken.value.existing, taken.value.revoked) == ("Bookworms", False)
    with pytest.raises(TeamTaken) as twice:  # one transaction: gamma is not added either
        store.add_teams([("gamma", digest(new_token())), ("Gamma", digest(new_token()))])
    assert (twice.value.name, twice.value.existing) == ("Gamma", "gamma")
    assert store.teams() == [("Bookworms", False)]
    assert len(store.add_teams([("x", digest("1")), ("y", digest("2"))])) == 2
    assert [name for name, _ in store.teams()] == ["Bookworms", "x", "y"]


def test_the_database_holds_the_rule_without_the_store_s_code(folder: Path, db: str | None) -> None:
    site.store_of(folder).add_team("Bookworms", digest(new_token()))
    insert = "INSERT INTO teams (name, name_key, token_sha256) VALUES ('b', 'bookworms', 'x')"
    if db is None:
        with sqlite3.connect(folder / site.STORE) as raw, pytest.raises(sqlite3.IntegrityError):
            raw.execute(insert)
    else:
        with psycopg.connect(db) as raw, pytest.raises(psycopg.errors.UniqueViolation):
            raw.execute(insert)


#: The teams table before `name_key`, as an older scorer made it.
OLD_TEAMS = (
    "CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " token_sha256 TEXT NOT NULL UNIQUE, revoked INTEGER NOT NULL DEFAULT 0)"
)


def test_a_store_made_before_the_rule_is_upgraded_when_opened(
    tmp_path: Path, db: str | None
) -> None:
    """Two spellings of one team added before the rule both keep their tokens; the first
    holds the name, and no third spelling is added."""
    old = [("Bookworms", digest("a")), ("bookworms", digest("b"))]
    if db is None:
        path = tmp_path / "store.sqlite"
        with sqlite3.connect(path) as raw:
            raw.execute(OLD_TEAMS)
            raw.cursor().executemany("INSERT INTO teams (name, token_sha256) VALUES (?, ?)", old)
        raw.close()
        store: SqlStore = SqliteStore(path, Limits())
    else:
        PostgresStore(db, Limits())
        with psycopg.connect(db) as raw:
            raw.execute("ALTER TABLE teams DROP COLUMN name_key")
            raw.cursor().executemany("INSERT INTO teams (name, token_sha256) VALUES (%s, %s)", old)
        store = PostgresStore(db, Limits())
    assert [t.name for t in map(store.team_of, (digest("a"), digest("b"))) if t] == [
        "Bookworms",
        "bookworms",
    ]
    with pytest.raises(TeamTaken) as taken:
        store.add_team("BOOKWORMS", digest("c"))
    assert taken.value.existing == "Bookworms"
    store.add_team("alpha", digest("d"))
    again = (
        SqliteStore(tmp_path / "store.sqlite", Limits())
        if db is None
        else PostgresStore(db, Limits())
    )
    assert [name for name, _ in again.teams()] == ["Bookworms", "alpha", "bookworms"]


def test_a_web_role_of_an_older_database_adds_teams_once_the_organiser_upgraded_it(
    tmp_path: Path, postgres: str
) -> None:
    url = new_database(postgres)
    role, web = new_role(postgres, url)
    folder = tmp_path / "srv"
    site.init(folder, SOLUTION, settings=site.Settings(title="t", db=url), web_role=role)
    with psycopg.connect(url) as raw:  # as an older scorer made it: no key, the old function
        raw.execute("ALTER TABLE teams DROP COLUMN name_key")
        raw.execute("DROP FUNCTION add_team(TEXT, TEXT, TEXT)")
        raw.execute(
            "CREATE FUNCTION add_team(p_name TEXT, p_token_sha256 TEXT) RETURNS BIGINT"
            " LANGUAGE sql SECURITY DEFINER AS $$ INSERT INTO teams (name, token_sha256)"
            " VALUES (p_name, p_token_sha256) RETURNING id $$"
        )
        raw.execute(f'GRANT EXECUTE ON FUNCTION add_team(TEXT, TEXT) TO "{role}"')
    with pytest.raises(ValueError, match="made by an older scorer"):
        PostgresStore(web, Limits())
    assert serve("team", "list", folder).exit_code == 0  # the organiser's: upgraded
    store = PostgresStore(web, Limits())
    store.add_team("alpha", digest("a"))
    with pytest.raises(TeamTaken):
        store.add_team("Alpha", digest("b"))
    with psycopg.connect(url) as raw:
        gone = raw.execute("SELECT to_regprocedure('add_team(TEXT, TEXT)')").fetchone()
    assert gone == (None,)


def test_the_api_refuses_a_team_taken_with_its_own_code(tmp_path: Path, db: str | None) -> None:
    folder = tmp_path / "srv"
    admin = site.init(folder, SOLUTION, settings=site.Settings(title="t", db=db))
    server = Server(folder, workers=0)
    head = {"Authorization": f"Bearer {admin}"}
    made = ask(server, "POST", "/api/v1/admin/teams", json={"name": "Bookworms"}, headers=head)
    assert made.status_code == 201
    for name, revoked in (("bookworms", False), ("BOOKWORMS", True)):
        if revoked:
            server.store.revoke_team("Bookworms", site.dt.datetime.now(site.dt.UTC))
        taken = ask(server, "POST", "/api/v1/admin/teams", json={"name": name}, headers=head)
        assert taken.status_code == 409
        error = taken.json()["error"]
        assert (error["code"], error["team"], error["revoked"]) == (
            "team_taken",
            "Bookworms",
            revoked,
        )
    assert [n for n, _ in server.store.teams()] == ["Bookworms"]


def test_a_team_a_lock_holds_is_told_its_uploads_are_closed_everywhere(
    tmp_path: Path, db: str | None
) -> None:
    folder = tmp_path / "srv"
    settings = site.Settings(title="t", db=db, daily_limit=5, total_limit=1)
    site.init(folder, SOLUTION, settings=settings)
    token = teams.add_team(folder, "alpha")
    server = Server(folder, workers=0, max_upload=SAMPLE.stat().st_size + 10)
    head = {"Authorization": f"Bearer {token}"}
    files = {"file": ("a.csv", SAMPLE.read_bytes())}
    first = ask(server, "POST", "/api/v1/submissions", files=files, headers=head)
    assert first.status_code == 202
    closed = "uploads are closed for your team"
    assert first.json()["remaining_today"] == 0 and closed in first.json()["closed"]
    listed = ask(server, "GET", "/api/v1/submissions", headers=head).json()
    assert listed["remaining_today"] == 0 and "contact the organiser" in listed["closed"]
    refused = ask(server, "POST", "/api/v1/submissions", files=files, headers=head)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["limit"], error["remaining_today"]) == (
        "limit_reached",
        "total_limit",
        0,
    )
    assert closed in error["message"] and "contact the organiser" in error["message"]

    async def steps(page: httpx.AsyncClient) -> httpx.Response:
        await page.post("/login", data={"token": token})
        return await page.post("/upload", files=files)

    page = browse(server, steps)
    assert page.status_code == 429 and closed in page.text and "contact the organiser" in page.text
