"""The organiser's commands on a machine without the server's folder (issue 33, item 10):
`team`, `reveal`, `export`, `settings` and `show` take `--db URL` instead of DIR for a store
in PostgreSQL, work in a private copy of the competition removed when they end, and give what
DIR gives; exactly one of the two is a usage error otherwise, and a web process's role is
refused in words."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import ROOT
from support.postgres_cluster import new_database, new_role
from typer.testing import CliRunner

from scorer.cli import app
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.serve import site
from scorer.serve.site import SCRATCH
from scorer.serve.store import Status
from scorer.serve.worker import Worker

SOLUTION, SAMPLE = ROOT / "data" / "solution.csv", ROOT / "data" / "sample_submission.csv"
runner = CliRunner()


def serve(*args: str | Path) -> Any:
    return runner.invoke(app, ["serve", *map(str, args)])


def ok(*args: str | Path) -> Any:
    done = serve(*args)
    assert done.exit_code == 0, (args, done.output)
    return done


def leftovers() -> list[Path]:
    """This process's private folders still on disk."""
    return list(Path(tempfile.gettempdir()).glob(f"{SCRATCH}{os.getpid()}-*"))


@pytest.fixture
def made(tmp_path: Path, postgres: str) -> tuple[Path, str, str]:
    """A server made in a new database with a web role: its folder, the organiser's URL and
    the web role's."""
    url = new_database(postgres)
    role, web = new_role(postgres, url)
    ok("init", tmp_path / "srv", "--solution", SOLUTION, "--db", url, "--web-role", role)
    return tmp_path / "srv", url, web


def judged(folder: Path, team: str) -> int:
    """`SAMPLE` accepted for `team` as the server accepts an upload, and judged by a worker:
    its id."""
    store = site.store_of(folder)
    (found,) = [ident for ident, name in store.team_ids() if name == team]
    kept = folder / site.UPLOADS / "one" / "mine.csv"
    kept.parent.mkdir()
    kept.write_bytes(SAMPLE.read_bytes())
    sha = hashlib.sha256(kept.read_bytes()).hexdigest()
    accepted = store.accept_upload(
        found, sha, kept.stat().st_size, str(kept.relative_to(folder)), ".csv", kept
    )
    assert accepted.id is not None
    home = folder.parent / "worker"
    home.mkdir()
    worker = Worker(store, home, folder / site.SOLUTION, LOST_ITEMS, Isolation(workers=1))
    worker.start()
    deadline = time.monotonic() + 120
    try:
        while (entry := store.entry(accepted.id)) is None or entry.status is not Status.SCORED:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        while store.versions().get("public") != store.last_change()[0]:  # boards published
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        worker.stop()
    return accepted.id


def test_every_organiser_command_takes_db_instead_of_dir(
    made: tuple[Path, str, str], tmp_path: Path
) -> None:
    folder, url, _ = made
    added = json.loads(ok("team", "add", "--db", url, "alpha", "--json").stdout)
    assert added["team"] == "alpha" and added["token"]
    (tmp_path / "teams.csv").write_text("team\nbeta\ngamma\n", encoding="utf-8")
    slips = tmp_path / "tokens.csv"
    said = ok("team", "add", "--db", url, "--from", tmp_path / "teams.csv", "--out", slips)
    assert "Added 2 teams" in said.stdout and slips.read_text().startswith("team,token\n")
    replaced = json.loads(ok("team", "token", "--db", url, "alpha", "--json").stdout)
    assert replaced["token"] != added["token"]
    assert ok("team", "revoke", "--db", url, "gamma").stdout == "Revoked 'gamma'\n"
    listed = json.loads(ok("team", "list", "--db", url, "--json").stdout)
    assert listed == json.loads(ok("team", "list", folder, "--json").stdout)
    assert {t["team"]: t["revoked"] for t in listed} == {
        "alpha": False,
        "beta": False,
        "gamma": True,
    }
    again = serve("team", "add", "--db", url, "GAMMA")  # the way back: by --db, no folder
    assert again.exit_code == 2 and "team 'GAMMA' is team 'gamma' written differently" in (
        again.output
    )
    assert "`scorer serve team token --db URL gamma` gives it a new token" in again.output
    missing = serve("team", "token", "--db", url, "nobody")
    assert missing.exit_code == 2 and "--db URL: no team named 'nobody'" in missing.output

    changed = json.loads(ok("settings", "--db", url, "--daily-limit", "7", "--json").stdout)
    assert changed["settings"]["daily_limit"] == 7 and "daily_limit" in changed["changed"]
    assert json.loads(ok("settings", folder, "--json").stdout)["settings"]["daily_limit"] == 7

    judged(folder, "alpha")
    assert ok("show", "--db", url, "--format", "csv").stdout == (
        ok("show", folder, "--format", "csv").stdout
    )
    ok("export", "--db", url, "--out", tmp_path / "by-db")
    ok("export", folder, "--out", tmp_path / "by-dir")
    for name in ("manifest.csv", "submissions/1.csv"):
        by_db = (tmp_path / "by-db" / name).read_bytes()
        assert by_db == (tmp_path / "by-dir" / name).read_bytes()
    assert (tmp_path / "by-db" / "submissions" / "1.csv").read_bytes() == SAMPLE.read_bytes()

    fixed = tmp_path / "fixed.csv"  # user 10000 never had edition 500037
    lines = SOLUTION.read_text().splitlines(keepends=True)
    fixed.write_text("".join(line for line in lines if not line.startswith("10000,500037,")))
    done = json.loads(ok("solution", "--db", url, "--solution", fixed, "--json").stdout)
    assert (done["changed"], done["rescored"]) == (True, 1)
    store = site.store_of(folder)
    assert store.solution().sha256 == hashlib.sha256(fixed.read_bytes()).hexdigest()  # type: ignore[union-attr]
    assert store.entry(1).status is Status.QUEUED  # type: ignore[union-attr]

    assert "revealed" in ok("reveal", "--db", url).stdout
    assert site.store_of(folder).revealed() is not None
    assert leftovers() == []  # each command's private copy went with it


#: Each organiser's command, "{}" where DIR or --db goes.
COMMANDS = [
    ["team", "add", "{}", "delta"],
    ["team", "token", "{}", "alpha"],
    ["team", "revoke", "{}", "alpha"],
    ["team", "list", "{}"],
    ["settings", "{}", "--daily-limit", "9"],
    ["reveal", "{}"],
    ["show", "{}"],
    ["export", "{}", "--out", "out"],
    ["solution", "{}", "--solution", str(SOLUTION)],
]


def given(command: list[str], *place: str) -> list[str]:
    """`command` with `place` (DIR, or --db URL, or both, or nothing) where "{}" is."""
    at = command.index("{}")
    return [*command[:at], *place, *command[at + 1 :]]


def test_dir_or_db_exactly_one_else_a_usage_error_in_plain_words(
    made: tuple[Path, str, str], tmp_path: Path
) -> None:
    folder, url, _ = made
    out = str(tmp_path / "out")
    for command in COMMANDS:
        command = [out if arg == "out" else arg for arg in command]
        both = given(command, str(folder), "--db", url)
        # neither: a command with a NAME after DIR reads the NAME as the folder
        neither = given(command) if command[0] != "team" else command[:2]
        for args in (both, neither):
            done = serve(*args)
            assert done.exit_code == 2, (args, done.output)
            assert "give the server's folder DIR, or --db URL" in done.output, args
            assert "Traceback" not in done.output
    assert site.store_of(folder).revealed() is None and site.store_of(folder).teams() == []


def test_a_web_role_is_refused_the_organiser_s_commands_in_words(
    made: tuple[Path, str, str], tmp_path: Path
) -> None:
    folder, _, web = made
    for command in COMMANDS:
        args = given([str(tmp_path / a) if a == "out" else a for a in command], "--db", web)
        done = serve(*args)
        assert done.exit_code == 2, (args, done.output)
        assert "this database role is a web process's" in done.output, args
        assert "the organiser's role" in done.output and "Traceback" not in done.output
    assert site.store_of(folder).revealed() is None and site.store_of(folder).teams() == []
    assert leftovers() == []
