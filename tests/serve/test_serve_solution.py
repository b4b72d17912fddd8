"""`scorer serve solution`: a fixed solution put in place of a live server's, on both stores.
Checked first, as at `init`, with the same target users; every judged submission judged again
against it by the worker already running, the boards saying so until they all are; each
team's public score then that of `scorer score` against the new solution, and the server's
export rescored by `scorer leaderboard score --solution NEW` gives its boards."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from support.postgres_cluster import new_database
from support.serve_live import DATA, SAMPLE, SOLUTION, own_worker, scorer, until, upload

from scorer.api import score
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.schema import Phase
from scorer.serve import site
from scorer.serve.boards import current
from scorer.serve.rescore import sha256_of
from scorer.serve.store import Status
from scorer.serve.worker import Worker


@pytest.fixture(params=["sqlite", "postgres"])
def folder(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A server folder on each store."""
    url = None if request.param == "sqlite" else new_database(request.getfixturevalue("postgres"))
    site.init(tmp_path / "srv", SOLUTION, settings=site.Settings(title="t", db=url))
    return tmp_path / "srv"


@pytest.fixture
def fixed(tmp_path: Path) -> Path:
    """The solution with a fix: every other user keeps only its first hidden pair."""
    rows = pl.read_csv(SOLUTION).with_row_index("row")
    first = rows.group_by("user_id").agg(pl.col("row").min().alias("first"))
    kept = rows.join(first, on="user_id").filter(
        (pl.col("user_id") % 2 == 0) | (pl.col("row") == pl.col("first"))
    )
    path = tmp_path / "fixed.csv"
    kept.sort("row").drop("row", "first").write_csv(path)
    return path


def test_a_fixed_solution_is_judged_against_by_the_running_worker_and_the_export_agrees(
    tmp_path: Path, folder: Path, fixed: Path
) -> None:
    store = site.store_of(folder)
    team = store.add_team("alpha", "0" * 64)
    ids = [upload(store, folder, team, "one"), upload(store, folder, team, "two")]
    home = tmp_path / "home"
    running, mine = own_worker(store, folder, home)
    running.start()
    try:
        until(lambda: all(store.entry(i).status is Status.SCORED for i in ids))  # type: ignore[union-attr]
        was = score(SAMPLE, SOLUTION).public
        assert [store.entry(i).public_score for i in ids] == [was, was]  # type: ignore[union-attr]

        running.stop()  # still: the boards while the rescore waits for a worker
        said = scorer("serve", "solution", folder, "--solution", fixed, "--json")
        done = json.loads(said.stdout)
        assert done == {
            "status": "ok",
            "changed": True,
            "was": sha256_of(SOLUTION),
            "now": sha256_of(fixed),
            "rescored": 2,
        }
        assert (folder / site.SOLUTION).read_bytes() == fixed.read_bytes()
        boards = current(store, LOST_ITEMS, Phase.PUBLIC)
        assert boards.stale is not None and (boards.stale.judged, boards.stale.total) == (0, 2)
        assert boards.public.rows == ()
        (event,) = [e for e in store.audit() if e["event"] == "solution"]
        assert (event["was"], event["now"], event["rescored"]) == (done["was"], done["now"], 2)

        running = Worker(store, home, mine, LOST_ITEMS, Isolation(workers=1))
        running.start()
        until(lambda: store.rescoring() is None)
        now = score(SAMPLE, fixed).public
        assert now != was
        assert [store.entry(i).public_score for i in ids] == [now, now]  # type: ignore[union-attr]
        until(lambda: store.versions().get("public") == store.last_change()[0])
        public = json.loads(store.published("public")[1])  # type: ignore[index]
        assert public["stale"] is None
        assert [row["score"] for row in public["public"]["rows"]] == [now]

        # the export, rescored by the leaderboard against the new solution: the same boards
        out, db = tmp_path / "export", tmp_path / "rescored.sqlite"
        scorer("serve", "export", folder, "--out", out)
        scorer("leaderboard", "score", out / "manifest.csv", "--solution", fixed, "--db", db)
        shown = scorer("leaderboard", "show", "--db", db, "--format", "json")
        assert json.loads(shown.stdout)["public"] == public["public"]

        # the worker already running takes the next solution on its own, from the store
        upload(store, folder, team, "three")
        scorer("serve", "solution", folder, "--solution", SOLUTION)
        until(lambda: store.rescoring() is None and not store.queue()["queued"])
        assert {e.public_score for e in store.entries()} == {was}
        assert mine.read_bytes() == SOLUTION.read_bytes()
        assert store.entry(ids[0]).counted == "daily"  # type: ignore[union-attr]
    finally:
        running.stop()


def test_a_solution_with_other_target_users_is_refused_and_nothing_changes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "srv"
    scorer("serve", "init", folder, "--solution", SOLUTION)
    fewer = tmp_path / "fewer.csv"
    rows = pl.read_csv(SOLUTION)
    rows.filter(pl.col("user_id") != rows["user_id"][0]).write_csv(fewer)
    refused = scorer("serve", "solution", folder, "--solution", fewer, check=False)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"Error: {fewer}: its target users are not the server's (1 of them missing, 0 others); "
        "the target users of a live competition do not change (participants submitted for "
        "them)\n"
    )
    broken = tmp_path / "broken.csv"
    broken.write_text("user_id,edition_id,stage\n1,2,nowhere\n")
    assert scorer("serve", "solution", folder, "--solution", broken, check=False).returncode == 2
    assert sha256_of(folder / site.SOLUTION) == sha256_of(SOLUTION)
    assert site.store_of(folder).solution() is None
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
    others = tmp_path / "targets.csv"
    others.write_text("".join((DATA / "targets.csv").read_text().splitlines(True)[:-1]))
    listed = scorer(
        "serve", "solution", folder, "--solution", SOLUTION, "--targets", others, check=False
    )
    assert listed.returncode == 2 and "do not change" in listed.stderr
    scorer("serve", "solution", folder, "--solution", SOLUTION, "--targets", DATA / "targets.csv")


def test_the_same_solution_again_judges_nothing_again(tmp_path: Path) -> None:
    folder = tmp_path / "srv"
    scorer("serve", "init", folder, "--solution", SOLUTION)
    said = scorer("serve", "solution", folder, "--solution", SOLUTION)
    assert said.stdout == (
        f"The solution is unchanged (sha256 {sha256_of(SOLUTION)}): nothing to judge again.\n"
    )
    assert not [e for e in site.store_of(folder).audit() if e["event"] == "solution"]
