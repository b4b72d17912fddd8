"""Commit, then reveal: a server publishes a commitment to its hidden solution from `init` on,
on `/api/v1/competition` and its page; the reveal publishes the solution and the salt
(`/api/v1/solution`, 403 before); a fixed solution gets a new commitment, the history kept.
On PostgreSQL the web role reads neither the salt nor the solution before the reveal, and
serves both after it. In-process, on SQLite and on PostgreSQL through a web role."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import psycopg
import pytest
from support.revealed import Served, export
from support.serve_live import POPULAR, SAMPLE, SOLUTION
from typer.testing import CliRunner

from scorer.cli import app
from scorer.commitment import NEW_SOLUTION, commitment_of, split_of
from scorer.serve import site
from scorer.serve.rescore import sha256_of
from scorer.version import __version__

runner = CliRunner()


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    postgres = None if request.param == "sqlite" else request.getfixturevalue("postgres")
    return Served(tmp_path, postgres)


def salt_of(served: Served) -> str:
    """The salt, as the organiser's folder keeps it."""
    return (served.folder / site.SALT).read_text(encoding="ascii")


def test_the_commitment_is_on_the_api_and_the_page_from_init_and_tells_nothing(
    served: Served,
) -> None:
    answer = served.get("/api/v1/competition")
    assert answer.status_code == 200
    made = answer.json()["commitment"]
    expected = commitment_of(sha256_of(SOLUTION), split_of(SOLUTION), __version__, salt_of(served))
    assert made["hash"] == expected
    assert made["scorer_version"] == __version__
    assert made["split"] == split_of(SOLUTION).to_dict()
    assert (
        made["committed_at"].endswith("+00:00") and made["reason"] == "the competition's solution"
    )
    assert answer.json()["commitment_history"] == [made]
    # neither the salt nor the solution's sha256 on any answer before the reveal
    page = served.get("/")
    for text in (answer.text, page.text):
        assert salt_of(served) not in text and sha256_of(SOLUTION) not in text
    assert f"<code>{expected[:12]}…</code>" in page.text
    assert f'value="{expected}"' in page.text  # the whole hash, to copy
    assert "published with the final board" in page.text


def test_the_solution_is_403_before_the_reveal_and_its_exact_bytes_after(served: Served) -> None:
    for route in ("/api/v1/solution", "/api/v1/solution.csv"):
        refused = served.get(route)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "not_revealed"
        assert salt_of(served) not in refused.text
    served.upload("alpha", SAMPLE)
    served.judged_and_revealed()
    answer = served.get("/api/v1/solution")
    assert answer.status_code == 200, answer.text
    published = served.get("/api/v1/competition").json()["commitment"]
    assert answer.json() == {
        "commitment": published,
        "salt": salt_of(served),
        "scorer_version": __version__,
        "split": split_of(SOLUTION).to_dict(),
        "solution_sha256": sha256_of(SOLUTION),
        "csv": "/api/v1/solution.csv",
    }
    csv = served.get("/api/v1/solution.csv")
    assert csv.status_code == 200 and csv.content == SOLUTION.read_bytes()
    assert csv.headers["content-type"].startswith("text/csv")
    assert 'filename="solution.csv"' in csv.headers["content-disposition"]
    assert 'href="/api/v1/solution.csv"' in served.get("/").text


def test_a_web_role_reads_neither_salt_nor_solution_before_the_reveal_and_serves_both_after(
    tmp_path: Path, postgres: str
) -> None:
    served = Served(tmp_path, postgres)
    web = str(served.web_url)
    for denied in ("SELECT data FROM hidden WHERE name = 'salt'", "SELECT * FROM hidden"):
        with psycopg.connect(web) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute(denied)
    with psycopg.connect(web) as db:  # nothing published under `revealed/` yet
        found = db.execute("SELECT count(*) FROM files WHERE name LIKE 'revealed/%'").fetchone()
        assert found == (0,)
        state = db.execute("SELECT string_agg(value, '') FROM state").fetchone()
        assert salt_of(served) not in str(state)
    assert served.web.store.revealed_file(site.SALT, tmp_path) is None
    served.judged_and_revealed()
    with psycopg.connect(web) as db:
        (salt,) = db.execute("SELECT data FROM files WHERE name = 'revealed/salt'").fetchone()
        assert bytes(salt).decode() == salt_of(served)
    with psycopg.connect(web) as db, pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("SELECT * FROM hidden")  # still: the reveal copies, it grants nothing
    assert served.get("/api/v1/solution.csv").content == SOLUTION.read_bytes()


def test_a_new_solution_gets_a_new_salt_and_commitment_and_the_history_is_kept(
    served: Served, tmp_path: Path
) -> None:
    first = served.get("/api/v1/competition").json()["commitment"]
    fixed = tmp_path / "fixed.csv"
    lines = SOLUTION.read_text().splitlines(keepends=True)
    fixed.write_text("".join(lines[:1] + lines[2:]))  # one hidden pair dropped
    was_salt = salt_of(served)
    said = runner.invoke(app, ["serve", "solution", str(served.folder), "--solution", str(fixed)])
    assert said.exit_code == 0, said.output
    answer = served.get("/api/v1/competition").json()
    now = answer["commitment"]
    assert salt_of(served) != was_salt
    assert now["hash"] == commitment_of(
        sha256_of(fixed), split_of(fixed), __version__, salt_of(served)
    )
    assert now["reason"] == NEW_SOLUTION and now["committed_at"] >= first["committed_at"]
    assert answer["commitment_history"] == [first, now]
    page = served.get("/").text
    assert "The solution was replaced on" in page and first["hash"] in page
    events = [e for e in site.store_of(served.folder).audit() if e["event"] == "commitment"]
    assert [e["hash"] for e in events] == [first["hash"], now["hash"]]
    # the same file again: nothing changes
    runner.invoke(app, ["serve", "solution", str(served.folder), "--solution", str(fixed)])
    assert served.get("/api/v1/competition").json()["commitment_history"] == [first, now]


def test_init_prints_the_commitment_and_json_holds_it(tmp_path: Path) -> None:
    args = ["serve", "init", str(tmp_path / "a"), "--solution", str(SOLUTION)]
    said = runner.invoke(app, args)
    assert said.exit_code == 0, said.output
    made = site.store_of(tmp_path / "a").commitments()[0]
    assert f"Commitment to the solution, published from now on: {made.hash}" in said.output
    as_json = runner.invoke(
        app, ["serve", "init", str(tmp_path / "b"), "--solution", str(SOLUTION), "--json"]
    )
    data = json.loads(as_json.stdout)
    assert data["commitment"] == site.store_of(tmp_path / "b").commitments()[0].to_dict()
    assert (tmp_path / "b" / site.SALT).stat().st_mode & 0o777 == 0o600


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Served, Path]:
    served = Served(tmp_path, None)
    served.upload("alpha", SAMPLE)
    served.upload("beta", POPULAR)
    served.judged_and_revealed()
    return served, export(served, tmp_path / "export")


def test_the_export_carries_the_board_its_manifest_s_sha256_and_the_commitments(
    exported: tuple[Served, Path],
) -> None:
    served, out = exported
    board = json.loads((out / "board.json").read_text())
    assert board == served.get("/api/v1/leaderboard?phase=final").json()
    manifest = (out / "manifest.csv").read_bytes()
    assert board["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
    assert manifest.splitlines()[0] == b"team,path,submitted_at,selected,description,sha256"
    kept = json.loads((out / "commitment.json").read_text())
    assert kept["salt"] == salt_of(served)
    assert kept["commitment"] == served.get("/api/v1/competition").json()["commitment"]


def test_an_export_before_the_reveal_has_no_board_and_says_so(tmp_path: Path) -> None:
    served = Served(tmp_path, None)
    served.upload("alpha", SAMPLE)
    out = tmp_path / "export"
    said = runner.invoke(app, ["serve", "export", str(served.folder), "--out", str(out)])
    assert said.exit_code == 0, said.output
    assert "no final board yet (it is published after the reveal" in said.output
    assert not (out / "board.json").exists()
    assert json.loads((out / "commitment.json").read_text())["salt"] is None


def test_serve_reveal_publishes_the_solution_and_no_solution_is_taken_after_it(
    tmp_path: Path,
) -> None:
    served = Served(tmp_path, None)
    said = runner.invoke(app, ["serve", "reveal", str(served.folder)])
    assert said.exit_code == 0, said.output
    assert served.get("/api/v1/solution.csv").content == SOLUTION.read_bytes()
    args = ["serve", "solution", str(served.folder), "--solution", str(SOLUTION)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "the final board is revealed, and the solution with it" in refused.output
