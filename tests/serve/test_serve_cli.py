"""`scorer serve init` and `scorer serve team` (issue 24, first step): a server folder made
from checked files, tokens shown once and stored only as their hash, teams added, revoked
and listed."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from support.paths import ROOT
from support.postgres_cluster import new_database, new_role
from typer.testing import CliRunner

from scorer.cli import app
from scorer.envelope import command_of
from scorer.serve import site
from scorer.serve.postgres import PostgresStore
from scorer.serve.tokens import digest

SOLUTION = ROOT / "data" / "solution.csv"
runner = CliRunner()


def serve(*args: str | Path) -> object:
    return runner.invoke(app, ["serve", *map(str, args)])


def made(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "srv"
    done = serve("init", folder, "--solution", SOLUTION, "--title", "Final", "--json")
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    return folder, json.loads(done.stdout)["admin_token"]  # type: ignore[attr-defined]


def every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_init_makes_a_private_folder_and_shows_the_admin_token_once(tmp_path: Path) -> None:
    folder, token = made(tmp_path)
    assert len(token) >= 43  # 32 random bytes, URL-safe
    settings = site.settings_of(folder)
    assert (settings.title, settings.daily_limit, settings.picks) == ("Final", 5, 2)
    assert settings.admin_sha256 == digest(token)
    assert token.encode() not in every_byte(folder)  # only its hash is kept
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / site.SOLUTION).stat().st_mode) == 0o600
    users = (folder / site.TARGETS).read_text().split()
    assert users[0] == "user_id" and users[1:] == sorted(users[1:], key=int)  # tells no split


def test_init_refuses_a_folder_in_use_and_a_broken_solution(tmp_path: Path) -> None:
    folder, _ = made(tmp_path)
    again = serve("init", folder, "--solution", SOLUTION)
    assert again.exit_code == 2 and "not a new or empty folder" in again.stderr  # type: ignore[attr-defined]
    broken = tmp_path / "broken.csv"
    broken.write_text("user_id,edition_id,stage\n1,x,public\n")
    refused = serve("init", tmp_path / "other", "--solution", broken)
    assert refused.exit_code == 2  # type: ignore[attr-defined]
    assert not (tmp_path / "other").exists()  # never half a folder
    late = serve(
        "init",
        tmp_path / "t",
        "--solution",
        SOLUTION,
        "--freeze",
        "2027-03-01",
        "--end",
        "2027-02-01",
    )
    assert late.exit_code == 2 and "--freeze" in late.stderr  # type: ignore[attr-defined]


def test_teams_get_tokens_stored_as_hashes_and_can_be_revoked(tmp_path: Path) -> None:
    folder, _ = made(tmp_path)
    added = serve("team", "add", folder, "alpha", "--json")
    token = json.loads(added.stdout)["token"]  # type: ignore[attr-defined]
    store = site.store_of(folder)
    assert store.team_of(digest(token)) is not None
    assert token.encode() not in every_byte(folder)
    twice = serve("team", "add", folder, "alpha")
    assert twice.exit_code == 2 and "exists already" in twice.stderr  # type: ignore[attr-defined]
    hidden = serve("team", "add", folder, "al\u202epha")
    assert hidden.exit_code == 2 and "invisible" in hidden.stderr  # type: ignore[attr-defined]
    assert serve("team", "revoke", folder, "alpha").exit_code == 0  # type: ignore[attr-defined]
    assert store.team_of(digest(token)) is None  # a revoked token opens nothing
    listed = serve("team", "list", folder, "--json")
    assert json.loads(listed.stdout) == [{"team": "alpha", "revoked": True}]  # type: ignore[attr-defined]


def test_teams_from_a_csv_file_get_printable_slips(tmp_path: Path) -> None:
    folder, _ = made(tmp_path)
    teams = tmp_path / "teams.csv"
    teams.write_text("team\nbeta\ngamma\n")
    slips = tmp_path / "tokens.csv"
    done = serve("team", "add", folder, "--from", teams, "--out", slips)
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    rows = [line.split(",") for line in slips.read_text().splitlines()]
    assert [row[0] for row in rows] == ["team", "beta", "gamma"]
    assert stat.S_IMODE(slips.stat().st_mode) == 0o600
    store = site.store_of(folder)
    assert all(store.team_of(digest(token)) is not None for _, token in rows[1:])


def test_a_command_line_names_its_command() -> None:
    assert command_of(["serve", "team", "add", "DIR", "x", "--json"]) == "serve team add"
    assert command_of(["leaderboard", "score", "m.csv"]) == "leaderboard score"
    assert command_of(["score", "s.csv", "--json"]) == "score"


def test_the_title_is_the_competition_s_name_unless_given(tmp_path: Path) -> None:
    hm = ROOT / "data" / "hm"
    folder = tmp_path / "hm"
    done = serve(
        "init", folder, "--solution", hm / "solution.csv", "--competition", hm / "competition.toml"
    )
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    assert site.settings_of(folder).title == "H&M-style"
    assert (folder / site.COMPETITION).read_text() == (hm / "competition.toml").read_text()


def test_init_on_postgresql_refuses_another_address_and_a_dead_server(tmp_path: Path) -> None:
    for url, said in [
        ("mysql://x", "expected a postgresql:// address"),
        ("postgresql://scorer@127.0.0.1:1/none?connect_timeout=2", "cannot use the database"),
    ]:
        done = serve("init", tmp_path / "srv", "--solution", SOLUTION, "--db", url)
        assert done.exit_code == 2, done.output  # type: ignore[attr-defined]
        assert said in done.output  # type: ignore[attr-defined]
        assert not (tmp_path / "srv").exists()  # nothing half made


def test_init_on_postgresql_keeps_the_store_in_the_database(tmp_path: Path, postgres: str) -> None:
    url = new_database(postgres)
    folder = tmp_path / "srv"
    assert serve("init", folder, "--solution", SOLUTION, "--db", url).exit_code == 0  # type: ignore[attr-defined]
    assert serve("team", "add", folder, "alpha").exit_code == 0  # type: ignore[attr-defined]
    assert not (folder / "store.sqlite").exists()
    assert PostgresStore(url, site.settings_of(folder).limits).teams() == [("alpha", False)]


def test_a_database_holds_one_competition_and_gives_each_machine_what_it_needs(
    tmp_path: Path, postgres: str
) -> None:
    url = new_database(postgres)
    assert serve("init", tmp_path / "srv", "--solution", SOLUTION, "--db", url).exit_code == 0  # type: ignore[attr-defined]
    again = serve("init", tmp_path / "again", "--solution", SOLUTION, "--db", url)
    assert again.exit_code == 2  # type: ignore[attr-defined]
    assert "the database holds a competition already" in again.output  # type: ignore[attr-defined]
    assert not (tmp_path / "again").exists()
    # a web process gets the settings and the targets, never the hidden solution
    web = site.from_database(url, tmp_path / "web")
    assert web == site.settings_of(tmp_path / "srv")
    assert sorted(p.name for p in (tmp_path / "web").iterdir()) == [
        "sample_submission.csv",
        "settings.json",
        "targets.csv",
        "uploads",
    ]
    assert (tmp_path / "web" / "targets.csv").read_bytes() == (
        tmp_path / "srv" / "targets.csv"
    ).read_bytes()
    # a worker gets the solution too, to the byte
    site.from_database(url, tmp_path / "worker", solution=True)
    assert (tmp_path / "worker" / "solution.csv").read_bytes() == SOLUTION.read_bytes()
    assert stat.S_IMODE((tmp_path / "worker").stat().st_mode) == 0o700


def test_run_and_worker_refuse_what_they_cannot_serve(tmp_path: Path, postgres: str) -> None:
    folder, _ = made(tmp_path)
    empty = new_database(postgres)
    for args, said in [
        (["run"], "give the server's folder DIR, or --db URL"),
        (["run", folder, "--db", empty], "give the server's folder DIR, or --db URL"),
        (["run", folder, "--no-workers"], "--no-workers needs a PostgreSQL store"),
        (["run", "--db", empty], "the database holds no competition"),
        (["worker", "--db", empty], "the database holds no competition"),
        (["worker", "--db", "mysql://x"], "expected a postgresql:// address"),
    ]:
        done = serve(*args)
        assert done.exit_code == 2, (args, done.output)  # type: ignore[attr-defined]
        assert said in done.output, args  # type: ignore[attr-defined]
        assert "Traceback" not in done.output  # type: ignore[attr-defined]


#: What a web role may not do, however its process is broken into: write a table but through
#: the functions that hold the rules, or read a per-user score, a private score or the split.
WEB_ROLE_DENIED = (
    "UPDATE verdicts SET status = 'scored'",
    "SELECT private FROM verdicts",
    "SELECT overall FROM verdicts",
    "SELECT scores FROM verdicts",
    "SELECT count(*) FROM per_user",
    "UPDATE submissions SET status = 'queued'",
    "INSERT INTO submissions (team, submitted_at, sha256, size, path, suffix, status)"
    " VALUES (1, 'x', 'x', 1, 'x', '', 'queued')",
    "DELETE FROM submissions",
    "UPDATE state SET value = '{}'",
    "INSERT INTO state VALUES ('revealed_at', 'x')",
    "UPDATE teams SET revoked = 0",
    "INSERT INTO picks VALUES (1, 1)",
    "DELETE FROM picks",
    "UPDATE files SET data = ''",
    "INSERT INTO files VALUES ('submissions/1', 9, '')",
    "DELETE FROM files",
    "INSERT INTO audit (at, event, detail) VALUES ('x', 'x', '{}')",
    "INSERT INTO refusals VALUES (1, 'x', 'x', 1)",
    "UPDATE boards SET json = ''",
    "SELECT id_sha256 FROM sessions",  # sessions: through their functions only
    "SELECT count(*) FROM sessions",
    "INSERT INTO sessions VALUES ('x', 1, 'x', 'x')",
    "DELETE FROM sessions",
)


def test_a_web_role_serves_the_competition_and_never_reads_the_solution(
    tmp_path: Path, postgres: str
) -> None:
    url = new_database(postgres)
    role, web = new_role(postgres, url)
    alone = serve("init", tmp_path / "srv", "--solution", SOLUTION, "--web-role", role)
    assert alone.exit_code == 2  # type: ignore[attr-defined]
    assert "--web-role needs a PostgreSQL store" in alone.output  # type: ignore[attr-defined]
    unknown = serve(
        "init", tmp_path / "srv", "--solution", SOLUTION, "--db", url, "--web-role", "nobody"
    )
    assert unknown.exit_code == 2  # type: ignore[attr-defined]
    assert "--web-role: the database has no role named 'nobody'" in unknown.output  # type: ignore[attr-defined]
    owner = serve(  # the tests' cluster's superuser, who makes the tables
        "init", tmp_path / "srv", "--solution", SOLUTION, "--db", url, "--web-role", "scorer"
    )
    assert owner.exit_code == 2  # type: ignore[attr-defined]
    assert "--web-role: the role 'scorer' may read the solution" in owner.output  # type: ignore[attr-defined]
    # nothing was written: the same database takes the competition at once
    done = serve("init", tmp_path / "srv", "--solution", SOLUTION, "--db", url, "--web-role", role)
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    # the web role reads the competition, and not a byte of the solution
    organiser = site.settings_of(tmp_path / "srv")
    assert site.from_database(web, tmp_path / "web") == replace(organiser, db=web)
    with psycopg.connect(web) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("SELECT count(*) FROM hidden")
    for denied in WEB_ROLE_DENIED:  # held by the database, not by the web process's code
        with psycopg.connect(web) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute(denied)
    organiser_store = site.postgres(site.store_of(tmp_path / "srv"))
    team = organiser_store.add_team("alpha", digest("t"))
    kept = organiser_store.accept_upload(team, "a" * 64, 1, "uploads/x/a.csv", ".csv", SOLUTION)
    assert kept.id is not None
    with psycopg.connect(web, autocommit=True) as db:  # a session: through its functions only
        opened = db.execute("SELECT open_session('h', %s, %s, 60)", (team, digest("t")))
        assert opened.fetchone() == (True,)
        assert db.execute("SELECT * FROM session_team('h')").fetchone() == (team, "alpha")
        db.execute("SELECT close_session('h')")
        assert db.execute("SELECT * FROM session_team('h')").fetchone() == (None, None)
    with psycopg.connect(web, autocommit=True) as db:
        # another team's upload is not a row it can read; its own chunks it cannot read back
        found = db.execute("SELECT count(*) FROM files").fetchone()
        assert found == (2,)  # the targets and the sample
    listed = hashlib.sha256((tmp_path / "srv" / site.TARGETS).read_bytes()).hexdigest()
    organiser_store.keep_small(kept.id, "uploads/x/a.csv", b"a kept form", listed, tmp_path)
    with psycopg.connect(web, autocommit=True) as db:  # nor its kept form (`sqlkept`)
        found = db.execute("SELECT count(*) FROM files WHERE name LIKE 'kept/%'").fetchone()
        assert found == (0,)
    with psycopg.connect(web, autocommit=True) as db:
        db.execute("SELECT set_config('scorer.clock', '2000-01-01T00:00:00+00:00', false)")
        accepted = [  # within the limits, judged by the database with its own clock
            db.execute(
                "SELECT * FROM accept_upload(%s, %s, 1, 'u/x/b.csv', '.csv', '')", (team, sha)
            ).fetchone()
            for sha in ("b" * 64, "c" * 64, "d" * 64, "e" * 64, "f" * 64)
        ]
        assert [refused for _, refused, _ in accepted] == [None] * 4 + ["daily_limit"]
        assert all(not at.startswith("2000") for _, _, at in accepted)  # the clock is its own
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("SELECT scorer_now()")
    for args in (["worker", "--db", web], ["run", "--db", web]):  # a worker, in-process or not
        refused = serve(*args)
        assert refused.exit_code == 2, refused.output  # type: ignore[attr-defined]
        assert "this database role may not read the solution" in refused.output  # type: ignore[attr-defined]
        assert "Traceback" not in refused.output  # type: ignore[attr-defined]


def test_a_machine_s_private_folder_goes_with_it_and_a_dead_one_s_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = tmp_path / f"scorer-serve-{int(ended.stdout)}-k1ll3d"  # a worker killed with -9
    dead.mkdir()
    (dead / "solution.csv").write_text("user_id,edition_id\n")
    running = tmp_path / f"scorer-serve-{os.getpid()}-l1v3"  # one still running
    running.mkdir()
    other = tmp_path / "scorer-serve-n0p1d"  # not named as `scratch` names its folders
    other.mkdir()
    with site.scratch() as home:
        assert home.name.startswith(f"scorer-serve-{os.getpid()}-")
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        assert not dead.exists() and running.exists() and other.exists()
    assert not home.exists()
