"""The serve stores and tokens: limits decided in one transaction, jobs claimed and requeued,
picks, the audit log, the reveal. One suite for every store: SQLite, and PostgreSQL in a
throwaway cluster (skipped, with the reason, where none can be started)."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.postgres_cluster import new_database

from scorer.competition import Split
from scorer.leaderboard.runs import Saved
from scorer.leaderboard.schema import Status as Judged
from scorer.leaderboard.store import Fingerprint
from scorer.serve.pgfiles import CHUNK, Tampered
from scorer.serve.postgres import PostgresStore
from scorer.serve.queue import Rescoring, Solution
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcore import TeamTaken
from scorer.serve.sqlite import SqliteStore
from scorer.serve.store import (
    Counted,
    Decision,
    Job,
    Limits,
    PickError,
    Quota,
    Status,
    upload_name,
)
from scorer.serve.tokens import digest, matches, new_token

NOW = datetime(2026, 12, 4, 17, 0, tzinfo=UTC)

#: A store of a kind, opened on one database (again on each call, as a restart opens it).
Opens = Callable[[Limits], SqlStore]


@pytest.fixture(params=["sqlite", "postgres"])
def opens(request: pytest.FixtureRequest, tmp_path: Path) -> Opens:
    if request.param == "sqlite":
        return lambda limits: SqliteStore(tmp_path / "serve.db", limits)
    url = new_database(request.getfixturevalue("postgres"))
    return lambda limits: limited(PostgresStore(url, limits))


def limited(store: PostgresStore) -> PostgresStore:
    """A PostgreSQL store whose database enforces its limits (as `init` shares them)."""
    store.put_limits()
    return store


def accept(
    store: SqlStore, team: int, now: datetime, sha256: str, size: int, path: str, **options: Any
) -> Decision:
    """An upload whose body is whole at `now` (the store's clock, read in its transaction)."""
    store.clock = lambda: now
    return store.accept_upload(team, sha256, size, path, **options)


def verdict(status: Status, public: float | None = None) -> Saved:
    """A verdict of `status`, scored `public` on the public users."""
    scores = None if public is None else {"public": public, "private": 0.0, "overall": 0.0}
    fingerprint = Fingerprint("s" * 64, "1.0", "{}")
    return Saved(fingerprint, Judged(str(status)), "a" * 64, scores, None, 0.1, {})


def done(
    store: SqlStore,
    job: Job,
    status: Status,
    public: float | None,
    counted: Counted | None,
    whole: Saved | None = None,
) -> bool:
    return store.finish_job(job, whole or verdict(status, public), counted, NOW)


def store_with_team(opens: Opens, limits: Limits) -> tuple[SqlStore, int]:
    store = opens(limits)
    return store, store.add_team("alpha", digest(new_token()))


def test_tokens_are_random_and_stored_as_their_digest() -> None:
    token = new_token()
    assert len(token) == 43  # 32 bytes, base64url without padding
    assert token != new_token()
    assert matches(token, digest(token))
    assert not matches(token + "x", digest(token))


def test_a_token_finds_its_team_and_an_unknown_one_none(opens: Opens) -> None:
    store = opens(Limits())
    token = new_token()
    team = store.add_team("alpha", digest(token))
    found = store.team_of(digest(token))
    assert found is not None and (found.id, found.name) == (team, "alpha")
    assert store.team_of(digest(new_token())) is None
    with pytest.raises(TeamTaken):
        store.add_team("alpha", digest(new_token()))


def test_fifty_concurrent_uploads_against_a_limit_of_five_accept_exactly_five(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=5))
    ids: list[int | None] = []
    lock = threading.Lock()

    def upload(n: int) -> None:
        decision = accept(store, team, NOW, f"{n:064x}", 10, f"u/{n}")
        with lock:
            ids.append(decision.id)

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len([i for i in ids if i is not None]) == 5
    refused = accept(store, team, NOW, "0" * 64, 10, "u/x")
    assert refused.id is None
    assert refused.quota == Quota(0, datetime(2026, 12, 5, tzinfo=UTC), "daily_limit")
    events = [row["event"] for row in store.audit()]
    assert events.count("upload") == 5


def finish(store: SqlStore, status: Status, counted: Counted | None) -> int:
    (job,) = store.claim_jobs(NOW, 10)
    assert done(store, job, status, None, counted)
    return job.id


def test_the_daily_limit_resets_at_utc_midnight_and_a_failure_is_refunded(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=1))
    first = accept(store, team, NOW, "a" * 64, 1, "u/a")
    assert first.id is not None and first.quota.remaining_today == 0
    assert first.quota.next_slot == datetime(2026, 12, 5, tzinfo=UTC)
    assert accept(store, team, NOW, "b" * 64, 1, "u/b").quota.limit == "daily_limit"
    finish(store, Status.FAILED, None)  # the server's failure: refunded
    assert store.quota(team, NOW) == Quota(1, NOW)
    assert accept(store, team, NOW, "c" * 64, 1, "u/c").id is not None
    tomorrow = NOW + timedelta(days=1)
    assert accept(store, team, tomorrow, "d" * 64, 1, "u/d").id is not None


def test_rejected_uploads_count_toward_the_rejected_limit_not_the_day(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=1, rejected=2, total=3))
    accept(store, team, NOW, "a" * 64, 1, "u/a")
    finish(store, Status.REJECTED, Counted.REJECTED)
    assert store.quota(team, NOW) == Quota(1, NOW)  # the day's slot is given back
    accept(store, team, NOW, "b" * 64, 1, "u/b")
    finish(store, Status.FAILED, Counted.REJECTED)  # its own file took the worker down
    locked = Quota(0, None, "rejected_limit")  # closed, not a day's slot: nothing left today
    assert store.quota(team, NOW) == locked and locked.locked
    assert accept(store, team, NOW, "c" * 64, 1, "u/c").id is None


def test_the_total_limit_counts_every_upload_but_the_refunded_ones(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None, rejected=None, total=2))
    for sha in ("a", "b"):
        accept(store, team, NOW, sha * 64, 1, f"u/{sha}")
    assert store.quota(team, NOW) == Quota(0, None, "total_limit")


def test_a_job_left_scoring_is_queued_again_and_finished_once(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits())
    accepted = accept(store, team, NOW, "a" * 64, 1, "u/a")
    assert accepted.id is not None
    assert store.claim_jobs(NOW, 10) != []
    # a server restarted after kill -9 opens the file afresh
    restarted = opens(Limits())
    assert restarted.requeue_stale() == 1
    (job,) = restarted.claim_jobs(NOW, 10)
    assert job.id == accepted.id
    assert restarted.claim_jobs(NOW, 10) == []
    assert done(restarted, job, Status.SCORED, 0.5, Counted.DAILY)
    assert not done(restarted, job, Status.FAILED, None, None)
    entry = restarted.entry(job.id)
    assert entry is not None and (entry.status, entry.public_score) == (Status.SCORED, 0.5)
    assert [row["event"] for row in restarted.audit()].count("verdict") == 1


def test_picks_are_the_team_s_own_scored_submissions_all_or_nothing(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    other = store.add_team("beta", digest(new_token()))
    ids = [accept(store, team, NOW, c * 64, 1, f"u/{c}").id for c in "abc"]
    theirs = accept(store, other, NOW, "d" * 64, 1, "u/d").id
    for job in store.claim_jobs(NOW, 10):
        status = Status.REJECTED if job.id == ids[2] else Status.SCORED
        done(store, job, status, 0.1, Counted.DAILY)
    assert store.set_picks(team, [ids[1], ids[0], ids[0]]) == sorted(ids[:2])
    for wrong, code in [
        ([ids[0], ids[1], theirs], "too_many"),
        ([theirs], "not_yours"),
        ([ids[2]], "not_scored"),
    ]:
        with pytest.raises(PickError) as refused:
            store.set_picks(team, wrong)  # type: ignore[arg-type]
        assert refused.value.code == code
    assert [e.id for e in store.entries(team) if e.selected] == sorted(ids[:2])


def test_the_audit_log_is_append_only(opens: Opens) -> None:
    store, _ = store_with_team(opens, Limits())
    for statement in ("UPDATE audit SET event = 'x'", "DELETE FROM audit"):
        with pytest.raises(Exception, match="append-only"), store._write() as db:
            db.execute(statement)
    assert [row["event"] for row in store.audit()] == ["team_added"]


def test_the_reveal_happens_once(opens: Opens) -> None:
    store, _ = store_with_team(opens, Limits())
    assert store.revealed() is None
    store.clock = lambda: NOW
    first = store.reveal()
    store.clock = lambda: NOW + timedelta(hours=1)
    assert store.reveal() == first
    assert datetime.fromisoformat(first) == NOW
    assert [row["event"] for row in store.audit()].count("reveal") == 1


def test_jobs_are_claimed_oldest_first_as_many_as_asked(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    ids = [accept(store, team, NOW, c * 64, 1, f"u/{c}").id for c in "abc"]
    assert [job.id for job in store.claim_jobs(NOW, 2)] == ids[:2]
    assert [job.id for job in store.claim_jobs(NOW, 2)] == ids[2:]
    assert store.claim_jobs(NOW, 2) == []


def test_a_lease_that_ends_frees_its_job_and_the_old_claim_writes_nothing(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    accept(store, team, NOW, "a" * 64, 1, "u/a")
    (first,) = store.claim_jobs(NOW, 1, lease=timedelta(minutes=1))
    assert store.requeue_stale(NOW + timedelta(seconds=30)) == 0  # still held
    assert store.renew([first], NOW + timedelta(seconds=30), timedelta(minutes=1)) == 1
    assert store.requeue_stale(NOW + timedelta(seconds=61)) == 0  # renewed until 1:30
    assert store.requeue_stale(NOW + timedelta(seconds=91)) == 1  # its worker died
    (second,) = store.claim_jobs(NOW + timedelta(seconds=92), 1)
    assert (second.id, second.claim != first.claim) == (first.id, True)
    assert store.renew([first], NOW, timedelta(minutes=1)) == 0
    assert not done(store, first, Status.SCORED, 0.1, Counted.DAILY)
    assert done(store, second, Status.SCORED, 0.2, Counted.DAILY)
    entry = store.entry(first.id)
    assert entry is not None and entry.public_score == 0.2
    assert [row["event"] for row in store.audit()].count("verdict") == 1


def test_concurrent_claimers_never_take_the_same_job(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    ids = {accept(store, team, NOW, f"{n:064x}", 1, f"u/{n}").id for n in range(60)}
    taken: list[int] = []
    lock = threading.Lock()

    def claimer() -> None:
        while jobs := store.claim_jobs(NOW, 3):
            with lock:
                taken.extend(job.id for job in jobs)

    threads = [threading.Thread(target=claimer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == sorted(ids)  # each exactly once


def test_a_lease_that_ends_is_audited_with_the_jobs_it_frees(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    for n in range(3):
        accept(store, team, NOW, f"{n:064x}", 1, f"u/{n}")
    held = store.claim_jobs(NOW, 2, lease=timedelta(seconds=10))
    assert store.requeue_stale(NOW + timedelta(seconds=11)) == 2
    assert store.audit()[-1] | {"at": None} == {
        "id": store.audit()[-1]["id"],
        "at": None,
        "event": "requeued",
        "ids": [job.id for job in held],
    }
    assert store.requeue_stale(NOW + timedelta(seconds=12)) == 0  # nothing more: no event
    assert [e["event"] for e in store.audit()].count("requeued") == 1


def test_a_stopping_worker_releases_only_the_jobs_its_claim_holds(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    for n in range(3):
        accept(store, team, NOW, f"{n:064x}", 1, f"u/{n}")
    mine = store.claim_jobs(NOW, 2)
    theirs = store.claim_jobs(NOW, 1)
    assert done(store, mine[0], Status.SCORED, 0.5, Counted.DAILY)
    assert store.release(mine) == 1  # the one it judged keeps its verdict
    statuses = {e.id: e.status for e in store.entries()}
    assert statuses == {
        mine[0].id: Status.SCORED,
        mine[1].id: Status.QUEUED,
        theirs[0].id: Status.SCORING,
    }
    # the boards change with a verdict or picks, and only then
    changed, _ = store.last_change()
    accept(store, team, NOW, "f" * 64, 1, "u/f")
    assert store.last_change()[0] == changed > 0
    store.set_picks(team, [mine[0].id])
    assert store.last_change()[0] > changed


@pytest.fixture
def postgresql(postgres: str) -> PostgresStore:
    return limited(PostgresStore(new_database(postgres), Limits(daily=None)))


def test_the_database_keeps_an_upload_in_the_transaction_that_accepts_it(
    postgresql: PostgresStore, tmp_path: Path
) -> None:
    team = postgresql.add_team("alpha", digest(new_token()))
    source = tmp_path / "big.csv"
    source.write_bytes(bytes(range(256)) * (CHUNK * 5 // 2 // 256) + b"tail")  # 2.5 chunks
    decision = accept(postgresql, team, NOW, "a" * 64, 1, "u/a", source=source)
    assert decision.id is not None
    back = tmp_path / "back.csv"
    assert postgresql.fetch(upload_name(decision.id), back)
    assert back.read_bytes() == source.read_bytes()
    assert not postgresql.fetch("submissions/999", tmp_path / "none")
    # a refused upload keeps nothing
    full = limited(PostgresStore(postgresql.url, Limits(daily=1)))
    assert accept(full, team, NOW, "b" * 64, 1, "u/b", source=source).id is None
    assert not full.fetch(upload_name(decision.id + 1), tmp_path / "none")


def test_a_competition_is_shared_once_and_its_files_read_back(
    postgresql: PostgresStore, tmp_path: Path
) -> None:
    rules, secret = tmp_path / "rules.toml", tmp_path / "solution.csv"
    rules.write_text("name = 'x'\n")
    secret.write_text("user_id,edition_id\n1,2\n")
    assert postgresql.settings() is None
    assert postgresql.share({"title": "One"}, {"competition.toml": rules}, {"s.csv": secret})
    assert not postgresql.share({"title": "Two"}, {"competition.toml": tmp_path / "none"})
    assert postgresql.settings() == {"title": "One"}
    assert postgresql.fetch("competition.toml", tmp_path / "back.toml")
    assert (tmp_path / "back.toml").read_text() == "name = 'x'\n"
    # a hidden file is kept apart: read only when asked for as one
    assert not postgresql.fetch("s.csv", tmp_path / "shared.csv")
    assert postgresql.fetch("s.csv", tmp_path / "back.csv", hidden=True)
    assert (tmp_path / "back.csv").read_bytes() == secret.read_bytes()


def test_a_verdict_is_kept_whole_once_under_its_claim(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    accept(store, team, NOW, "a" * 64, 1, "u/a")
    (first,) = store.claim_jobs(NOW, 1, lease=timedelta(seconds=1))
    whole = Saved(
        fingerprint=Fingerprint("s" * 64, "1.0", "{}"),
        status=Judged.SCORED,
        content_hash="a" * 64,
        scores={"public": 0.5, "private": 0.25, "overall": 0.375},
        error=None,
        seconds=0.5,
        per_user={
            Split.PUBLIC: np.array([0.5, np.nan]).tobytes(),
            Split.PRIVATE: np.array([0.25]).tobytes(),
        },
    )
    store.requeue_stale(NOW + timedelta(seconds=2))
    (second,) = store.claim_jobs(NOW + timedelta(seconds=2), 1)
    assert not done(store, first, Status.SCORED, 0.5, Counted.DAILY, whole)
    assert store.saved(first.id) is None  # the dead claim wrote nothing
    assert done(store, second, Status.SCORED, 0.5, Counted.DAILY, whole)
    kept = store.saved(second.id)
    assert kept is not None and kept == whole
    assert np.isnan(kept.arrays()[Split.PUBLIC][1])
    (record,) = store.records()
    assert (record.public, record.private, record.overall) == (0.5, 0.25, 0.375)
    assert store.records(private=False)[0].private is None
    assert store.per_user([second.id], Split.PRIVATE)[second.id].tolist() == [0.25]
    # the same bytes under the same name and fingerprint: the same verdict, whoever sent them
    assert store.reusable("a" * 64, whole.fingerprint, "a") == whole
    assert store.reusable("a" * 64, whole.fingerprint, "b") is None
    assert store.reusable("a" * 64, Fingerprint("t" * 64, "1.0", "{}"), "a") is None


def test_an_upload_is_dated_and_judged_when_its_body_is_whole(opens: Opens) -> None:
    """Its time is read in the transaction that accepts it: a body still arriving at the end
    is refused, kept nowhere and counted nowhere; bodies begun on days 1 and 2 and whole on
    day 3 count on day 3."""
    end = NOW + timedelta(days=3)
    store, team = store_with_team(opens, Limits(daily=3, rejected=None, end=end))
    day3 = NOW + timedelta(days=2)
    decisions = [accept(store, team, day3, f"{n:064x}", 1, f"u/{n}") for n in range(9)]
    assert [d.id is not None for d in decisions] == [True] * 3 + [False] * 6
    assert {d.refused for d in decisions[3:]} == {"daily_limit"}
    assert {e.submitted_at for e in store.entries()} == {day3}
    late = accept(store, team, end, "f" * 64, 1, "u/late")
    assert (late.id, late.refused) == (None, "competition_ended")
    assert len(store.entries()) == 3
    assert [row["event"] for row in store.audit()].count("upload") == 3


def test_the_reveal_closes_uploads_and_picks_with_or_without_an_end(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(daily=None))
    first = accept(store, team, NOW, "a" * 64, 1, "u/a")
    (job,) = store.claim_jobs(NOW, 1)
    assert first.id is not None and done(store, job, Status.SCORED, 0.1, Counted.DAILY)
    assert store.set_picks(team, [first.id]) == [first.id]
    store.reveal()
    refused = accept(store, team, NOW, "b" * 64, 1, "u/b")
    assert (refused.id, refused.refused) == (None, "competition_ended")
    with pytest.raises(PickError) as closed:
        store.set_picks(team, [])
    assert closed.value.code == "competition_ended"
    assert [e.id for e in store.entries(team) if e.selected] == [first.id]


def test_picks_close_at_the_end_judged_in_their_transaction(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits(end=NOW + timedelta(seconds=1)))
    store.clock = lambda: NOW
    assert store.set_picks(team, []) == []
    store.clock = lambda: NOW + timedelta(seconds=1)
    with pytest.raises(PickError) as closed:
        store.set_picks(team, [])
    assert closed.value.code == "competition_ended"


def test_jobs_are_claimed_round_robin_by_team(opens: Opens) -> None:
    """One team's queue never holds back another's: each team's first in line, then each
    one's second, a team's job being judged counted as ahead of its queued ones."""
    store, alpha = store_with_team(opens, Limits(daily=None))
    beta = store.add_team("beta", digest(new_token()))
    a = [accept(store, alpha, NOW, f"a{n:063x}", 1, f"u/a{n}").id for n in range(3)]
    b = [accept(store, beta, NOW, f"b{n:063x}", 1, f"u/b{n}").id for n in range(2)]
    (held,) = store.claim_jobs(NOW, 1)
    assert held.id == a[0]
    # alpha has one being judged: beta's first goes before alpha's second
    assert [job.id for job in store.claim_jobs(NOW, 1)] == [b[0]]
    assert [store.claim_jobs(NOW, 1)[0].id for _ in range(3)] == [a[1], b[1], a[2]]


def test_refusals_are_counted_a_row_a_team_reason_and_minute(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits())
    for second in range(60):
        store.clock = lambda second=second: NOW + timedelta(seconds=second)  # type: ignore[misc]
        store.refuse_upload(team, "daily_limit")
    store.refuse_upload(team, "too_large")
    store.clock = lambda: NOW + timedelta(minutes=1)
    store.refuse_upload(team, "daily_limit")
    minute = NOW.isoformat()
    assert store.refusals() == [
        {"team": "alpha", "reason": "daily_limit", "minute": minute, "count": 60},
        {"team": "alpha", "reason": "too_large", "minute": minute, "count": 1},
        {
            "team": "alpha",
            "reason": "daily_limit",
            "minute": (NOW + timedelta(minutes=1)).isoformat(),
            "count": 1,
        },
    ]
    assert [row["event"] for row in store.audit()] == ["team_added"]  # the log is not flooded


def test_an_upload_whose_bytes_changed_in_the_database_is_not_judged(
    postgresql: PostgresStore, tmp_path: Path
) -> None:
    """A worker judges the bytes an upload was accepted with, or none: a web role broken into
    cannot write them, and a change made all the same is found by their sha256."""
    team = postgresql.add_team("alpha", digest(new_token()))
    source = tmp_path / "a.csv"
    source.write_bytes(b"user_id,edition_id,rank\n")
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    decision = accept(postgresql, team, NOW, sha, 1, "u/x/a.csv", source=source)
    assert decision.id is not None
    found = postgresql.upload_file(decision.id, "u/x/a.csv", sha, tmp_path)
    assert found.read_bytes() == source.read_bytes()
    with postgresql._write() as db:
        db.execute("UPDATE files SET data = 'x'::bytea WHERE name LIKE 'submissions/%'")
    with pytest.raises(Tampered, match="not those it was accepted with"):
        postgresql.upload_file(decision.id, "u/x/a.csv", sha, tmp_path)


def test_an_upload_keeps_the_name_it_was_sent_as_and_its_description(opens: Opens) -> None:
    store, team = store_with_team(opens, Limits())
    sent = accept(
        store,
        team,
        NOW,
        "a" * 64,
        1,
        "u/x/submission.csv",
        filename="my <b>run</b>.csv",
        description="tuned k; same as #3 but 2× the epochs",
    )
    plain = accept(store, team, NOW, "b" * 64, 1, "u/y/b.csv")
    assert sent.id is not None and plain.id is not None
    kept, bare = store.entry(sent.id), store.entry(plain.id)
    assert kept is not None and bare is not None
    assert (kept.filename, kept.description) == (
        "my <b>run</b>.csv",
        "tuned k; same as #3 but 2× the epochs",
    )
    assert (bare.filename, bare.description) == ("", "")
    assert [e.description for e in store.entries(team)] == [kept.description, ""]


def test_a_session_opens_the_team_s_page_until_it_expires_or_its_token_changes(
    opens: Opens,
) -> None:
    store = opens(Limits())
    token = new_token()
    team = store.add_team("alpha", digest(token))
    store.clock = lambda: NOW
    hours = timedelta(hours=12)
    assert store.open_session(team, "s1", digest(token), hours)
    assert not store.open_session(team, "s2", digest(new_token()), hours)  # not its token
    found = store.session_team("s1")
    assert found is not None and (found.id, found.name) == (team, "alpha")
    assert store.session_team("s2") is None and store.session_team("nothing") is None
    store.clock = lambda: NOW + hours  # expired
    assert store.session_team("s1") is None
    assert store.open_session(team, "s3", digest(token), hours)
    store.close_session("s3")  # logged out
    assert store.session_team("s3") is None
    # a token replaced: the sessions opened under the old one end at once
    assert store.open_session(team, "s4", digest(token), hours)
    with store._write() as db:
        store._run(db, "UPDATE teams SET token_sha256 = ? WHERE id = ?", digest("new"), team)
    assert store.session_team("s4") is None
    assert store.open_session(team, "s5", digest("new"), hours)
    assert store.session_team("s5") is not None
    # revoked: ended too, and its token is known as a revoked one
    assert not store.revoked(digest("new"))
    assert store.revoke_team("alpha", NOW)
    assert store.session_team("s5") is None and store.revoked(digest("new"))
    assert not store.open_session(team, "s6", digest("new"), hours)


def test_a_new_solution_sends_every_judged_submission_to_be_judged_again(
    opens: Opens, tmp_path: Path
) -> None:
    """`rescore`: the verdicts on the boards and the jobs being judged go back to the queue in
    one transaction, audited with both sha256; a verdict judged against the old solution is
    not written after it; the limits each submission counted toward do not move."""
    store, team = store_with_team(opens, Limits(daily=None))
    for n in range(4):
        accept(store, team, NOW, f"{n}" * 64, 1, f"u/{n}")
    jobs = store.claim_jobs(NOW, 4)
    assert done(store, jobs[0], Status.SCORED, 0.5, Counted.DAILY)
    assert done(store, jobs[1], Status.REJECTED, None, Counted.REJECTED)
    assert done(store, jobs[2], Status.FAILED, None, None)  # refunded: not on the boards
    held = jobs[3]  # still being judged against the old solution
    assert store.rescoring() is None
    new = Solution("n" * 64, "s" * 64, NOW.isoformat())
    source = tmp_path / "new.csv"
    source.write_bytes(b"user_id,edition_id\n")
    assert store.rescore(new, "solution.csv", source) == 3
    ids = [job.id for job in jobs]
    assert store.solution() == Solution("n" * 64, "s" * 64, NOW.isoformat(), ids[3], total=3)
    status = {e.id: e.status for e in store.entries()}
    assert [status[i] for i in ids] == ["queued", "queued", "failed", "queued"]
    assert store.records() == [] and store.saved(ids[0]) is None
    assert store.rescoring() == Rescoring(store.solution(), 0)  # type: ignore[arg-type]
    (event,) = [e for e in store.audit() if e["event"] == "solution"]
    assert (event["was"], event["now"], event["rescored"]) == ("s" * 64, "n" * 64, 3)
    assert store.last_change()[0] == event["id"]  # the boards are built again
    # the old claim's verdict, and any judged against the old solution, are not written
    assert not done(store, held, Status.SCORED, 0.5, Counted.DAILY)
    again = store.claim_jobs(NOW, 4)
    assert [job.id for job in again] == [ids[0], ids[1], ids[3]]
    old = verdict(Status.SCORED, 0.7)
    assert not store.finish_job(again[0], old, Counted.DAILY, NOW)
    assert store.entry(ids[0]).status == "queued"  # type: ignore[union-attr]
    fixed = dataclasses.replace(old, fingerprint=Fingerprint("n" * 64, "1.0", "{}"))
    assert store.finish_job(again[1], fixed, Counted.DAILY, NOW)  # was rejected: now scored
    assert store.rescoring() == Rescoring(store.solution(), 1)  # type: ignore[arg-type]
    assert store.entry(ids[1]).counted is Counted.REJECTED  # type: ignore[union-attr]
    (record,) = store.records()
    assert (record.id, record.public) == (ids[1], 0.7)
