"""The one worker loop (`scorer serve run`'s in process, `scorer serve worker`'s anywhere), in
this process, on both stores: a worker that stops hands back the job it holds, unjudged; the
next judges it, writes its verdict whole, and publishes the boards it changed; the same bytes
sent again reuse that verdict; nothing of a job is left in the worker's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import ROOT
from support.postgres_cluster import new_database
from support.serve_live import until, upload
from support.slow_judges import hanging

from scorer.api import score
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.serve import site
from scorer.serve.store import Status
from scorer.serve.worker import Worker

SOLUTION, SAMPLE = ROOT / "data" / "solution.csv", ROOT / "data" / "sample_submission.csv"


@pytest.fixture(params=["sqlite", "postgres"])
def folder(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A server folder on either store."""
    url = None if request.param == "sqlite" else new_database(request.getfixturevalue("postgres"))
    site.init(tmp_path / "srv", SOLUTION, settings=site.Settings(title="t", db=url))
    return tmp_path / "srv"


def test_a_stopped_worker_hands_its_job_back_and_the_next_keeps_the_verdict_whole(
    tmp_path: Path, folder: Path
) -> None:
    store = site.store_of(folder)
    team = store.add_team("alpha", "0" * 64)
    ident = upload(store, folder, team, "one")

    def worker(name: str, **isolation: object) -> Worker:
        home = tmp_path / name
        home.mkdir()
        judging = Isolation(workers=1, **isolation)  # type: ignore[arg-type]
        return Worker(store, home, folder / site.SOLUTION, LOST_ITEMS, judging)

    def status(ident: int = ident) -> Status:
        entry = store.entry(ident)
        assert entry is not None
        return entry.status

    first = worker("first", judge=hanging)
    first.start()
    until(lambda: status() is Status.SCORING)
    until(lambda: any((tmp_path / "first").glob("scorer-worker-*/unpacked.csv")))
    first.stop()
    assert status() is Status.QUEUED  # handed back, unjudged: no lease to wait for
    assert store.saved(ident) is None
    assert list((tmp_path / "first").iterdir()) == []  # the job's copy and process's folder

    second = worker("second")
    second.start()
    until(lambda: status() is Status.SCORED)
    expected = score(SAMPLE, SOLUTION)
    entry = store.entry(ident)
    assert entry is not None and entry.public_score == expected.public
    kept = store.saved(ident)
    assert kept is not None and kept.scores is not None
    assert (kept.scores["public"], kept.scores["private"]) == (expected.public, expected.private)
    assert kept.fingerprint == second.judging.fingerprint

    # the same bytes under the same name: the verdict is reused, not judged again
    again = upload(store, folder, team, "two")
    until(lambda: status(again) is Status.SCORED)
    assert store.saved(again) == kept

    # the boards, published for every web process: the public ones only, until the reveal
    until(lambda: store.versions().get("public") == store.last_change()[0])
    public = json.loads(store.published("public")[1])  # type: ignore[index]
    assert [row["score"] for row in public["public"]["rows"]] == [expected.public]
    assert "private" not in public and store.published("final") is None
    store.reveal()
    second.nudge()
    until(lambda: store.versions().get("final") == store.last_change()[0])
    final = json.loads(store.published("final")[1])  # type: ignore[index]
    assert [row["score"] for row in final["private"]["rows"]] == [expected.private]
    second.stop()
    assert list((tmp_path / "second").iterdir()) == []
