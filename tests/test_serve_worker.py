"""`scorer serve worker`'s loop in this process, on a throwaway PostgreSQL: a worker that
stops hands back the job it holds, unjudged, and the next worker judges it and keeps its
verdict whole, which a web process copies into its boards."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from postgres_cluster import new_database
from slow_judges import sleepy

from scorer.api import score
from scorer.competition import LOST_ITEMS
from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.boards import Phase, build
from scorer.leaderboard.store import Store as Board
from scorer.serve import site
from scorer.serve.mirror import copy
from scorer.serve.remote import Worker
from scorer.serve.store import Status

ROOT = Path(__file__).resolve().parent.parent
SOLUTION, SAMPLE = ROOT / "data" / "solution.csv", ROOT / "data" / "sample_submission.csv"


def until(done: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_stopped_worker_hands_its_job_back_and_the_next_keeps_the_verdict_whole(
    tmp_path: Path, postgres: str
) -> None:
    url, now = new_database(postgres), datetime.now(UTC)
    site.init(tmp_path / "srv", SOLUTION, settings=site.Settings(title="t", db=url))
    store = site.postgres(site.store_of(tmp_path / "srv"))
    team = store.add_team("alpha", "0" * 64, now)
    ident = store.accept_upload(team, now, "a" * 64, 1, "u/x/mine.csv", source=SAMPLE).id
    assert ident is not None

    def worker(name: str, **isolation: object) -> Worker:
        home = tmp_path / name
        site.from_database(url, home, solution=True)
        judging = Isolation(workers=1, **isolation)  # type: ignore[arg-type]
        return Worker(store, home, home / "solution.csv", LOST_ITEMS, judging)

    def status() -> Status:
        entry = store.entry(ident)
        assert entry is not None
        return entry.status

    hanging = worker("first", judge=sleepy)
    hanging.start()
    until(lambda: status() is Status.SCORING)
    time.sleep(1)  # its worker process is judging
    hanging.stop()
    assert status() is Status.QUEUED  # handed back, unjudged: no lease to wait for
    assert store.verdict(ident) is None

    second = worker("second")
    second.start()
    until(lambda: status() is Status.SCORED)
    second.stop()
    expected = score(SAMPLE, SOLUTION)
    entry = store.entry(ident)
    assert entry is not None and entry.public_score == expected.public
    kept = store.verdict(ident)
    assert kept is not None and kept.scores is not None
    assert (kept.scores["public"], kept.scores["private"]) == (expected.public, expected.private)

    with Board(tmp_path / "web.sqlite") as board:  # a web process's copy: the same figures
        copy(store, board, tmp_path / "srv")
        shown = build(board, Phase.FINAL)
    assert [row.score for row in shown.public.rows] == [expected.public]
    assert shown.private is not None
    assert [row.score for row in shown.private.rows] == [expected.private]
