"""The serve store and tokens: limits decided in one transaction, jobs claimed and requeued."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scorer.serve.sqlite import SqliteStore
from scorer.serve.store import Limits, Status
from scorer.serve.tokens import digest, matches, new_token

NOW = datetime(2026, 12, 4, 17, 0, tzinfo=UTC)


def store_with_team(tmp_path: Path, limits: Limits) -> tuple[SqliteStore, int]:
    store = SqliteStore(tmp_path / "serve.db", limits)
    return store, store.add_team("alpha", digest(new_token()), NOW)


def test_tokens_are_random_and_stored_as_their_digest() -> None:
    token = new_token()
    assert len(token) == 43  # 32 bytes, base64url without padding
    assert token != new_token()
    assert matches(token, digest(token))
    assert not matches(token + "x", digest(token))


def test_a_token_finds_its_team_and_an_unknown_one_none(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "serve.db", Limits())
    token = new_token()
    team = store.add_team("alpha", digest(token), NOW)
    assert store.team_of(digest(token)) == team
    assert store.team_of(digest(new_token())) is None


def test_fifty_concurrent_uploads_against_a_limit_of_five_accept_exactly_five(
    tmp_path: Path,
) -> None:
    store, team = store_with_team(tmp_path, Limits(daily=5))
    ids: list[int | None] = []
    lock = threading.Lock()

    def upload(n: int) -> None:
        decision = store.accept_upload(team, NOW, f"{n:064x}", 10, f"u/{n}")
        with lock:
            ids.append(decision.id)

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len([i for i in ids if i is not None]) == 5
    refused = store.accept_upload(team, NOW, "0" * 64, 10, "u/x")
    assert (refused.id, refused.limit) == (None, "daily")
    assert refused.next_slot == datetime(2026, 12, 5, tzinfo=UTC)


def test_the_daily_limit_resets_at_utc_midnight_and_a_failure_is_refunded(
    tmp_path: Path,
) -> None:
    store, team = store_with_team(tmp_path, Limits(daily=1))
    first = store.accept_upload(team, NOW, "a" * 64, 1, "u/a")
    assert first.id is not None and first.remaining == 0
    assert store.accept_upload(team, NOW, "b" * 64, 1, "u/b").limit == "daily"
    job = store.claim_job()
    assert job is not None and job.id == first.id
    store.finish_job(job.id, Status.FAILED, None, None)
    assert store.accept_upload(team, NOW, "c" * 64, 1, "u/c").id is not None
    tomorrow = NOW + timedelta(days=1)
    assert store.accept_upload(team, tomorrow, "d" * 64, 1, "u/d").id is not None


def test_rejected_uploads_count_toward_the_rejected_limit(tmp_path: Path) -> None:
    store, team = store_with_team(tmp_path, Limits(daily=None, rejected=1))
    store.accept_upload(team, NOW, "a" * 64, 1, "u/a")
    job = store.claim_job()
    assert job is not None
    store.finish_job(job.id, Status.REJECTED, None, "{}")
    assert store.accept_upload(team, NOW, "b" * 64, 1, "u/b").limit == "rejected"


def test_a_job_left_scoring_is_queued_again_and_finished_once(tmp_path: Path) -> None:
    store, team = store_with_team(tmp_path, Limits())
    accepted = store.accept_upload(team, NOW, "a" * 64, 1, "u/a")
    assert accepted.id is not None
    assert store.claim_job() is not None
    # a server restarted after kill -9 opens the file afresh
    restarted = SqliteStore(tmp_path / "serve.db", Limits())
    assert restarted.requeue_stale() == 1
    job = restarted.claim_job()
    assert job is not None and job.id == accepted.id
    assert restarted.claim_job() is None
    restarted.finish_job(job.id, Status.SCORED, 0.5, "{}")
    restarted.finish_job(job.id, Status.FAILED, None, None)
    assert restarted.status_of(job.id) is Status.SCORED
