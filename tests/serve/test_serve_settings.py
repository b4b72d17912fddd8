"""A competition's settings after `init` (`scorer serve settings`, `PATCH
/api/v1/admin/settings`): read as understood, checked, audited, enforced by the store in the
transaction that accepts an upload, a team's own limits, and the schedule acted on with no
request or command."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.postgres_cluster import new_database
from support.serve_live import SOLUTION, Live, scorer

from scorer.errors import UsageError
from scorer.serve import settings, site
from scorer.serve.settings import Schedule, Stage, stage_of
from scorer.serve.sql import SqlStore
from scorer.serve.store import Limits, Quota
from scorer.serve.tokens import digest, new_token

NOW = datetime(2027, 1, 10, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def folder(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A server folder on each store."""
    url = None if request.param == "sqlite" else new_database(request.getfixturevalue("postgres"))
    made = tmp_path / "srv"
    site.init(made, SOLUTION, settings=site.Settings(title="t", daily_limit=2, db=url))
    return made


def store_at(folder: Path, now: datetime) -> SqlStore:
    store = site.store_of(folder)
    store.clock = lambda: now
    return store


def upload(store: SqlStore, team: int, n: int) -> str | None:
    """Why an upload whose body is whole now is refused; None when it is accepted."""
    decision = store.accept_upload(team, f"{n:064x}", 1, f"u/{n}")
    return decision.refused


def test_a_date_alone_as_the_end_is_the_end_of_that_day_and_the_printout_says_so(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "srv"
    made = scorer("serve", "init", folder, "--solution", SOLUTION, "--end", "2099-01-31")
    assert (
        "--end 2099-01-31: a date alone, taken as the end of that day, 23:59:59 UTC" in made.stdout
    )
    assert "  end: 2099-01-31T23:59:59+00:00" in made.stdout
    changed = scorer("serve", "settings", folder, "--end", "2099-02-28", "--json")
    out = json.loads(changed.stdout)
    assert out["settings"]["end"] == "2099-02-28T23:59:59+00:00"
    assert out["changed"] == {
        "end": {"was": "2099-01-31T23:59:59+00:00", "now": "2099-02-28T23:59:59+00:00"}
    }
    assert out["notes"] == [
        "--end 2099-02-28: a date alone, taken as the end of that day, 23:59:59 UTC"
    ]
    audit = site.store_of(folder).audit()
    assert [(e["event"], e["end"]["now"]) for e in audit if e["event"] == "settings"] == [
        ("settings", "2099-02-28T23:59:59+00:00")
    ]


def test_an_end_in_the_past_is_refused_without_force(tmp_path: Path) -> None:
    folder = tmp_path / "srv"
    scorer("serve", "init", folder, "--solution", SOLUTION)
    refused = scorer("serve", "settings", folder, "--end", "2020-01-01T00:00Z", check=False)
    assert refused.returncode == 2
    assert "--end 2020-01-01T00:00:00+00:00 is in the past" in refused.stderr
    assert "--force" in refused.stderr
    assert site.store_of(folder).settings()["end"] is None  # type: ignore[index]
    forced = scorer("serve", "settings", folder, "--end", "2020-01-01T00:00Z", "--force")
    assert "Changed: end" in forced.stdout
    assert "  stage: ended" in forced.stdout


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        (
            {"freeze": "2099-02-01", "end": "2099-01-01"},
            "--freeze 2099-02-01T00:00:00+00:00 is after --end",
        ),
        (
            {"start": "2099-01-01T00:00Z", "end": "2099-01-01T00:00Z"},
            "--start 2099-01-01T00:00:00+00:00 is after --end",
        ),
        ({"daily_limit": "0"}, "--daily-limit '0': expected a whole number from 1"),
        ({"daily_limit": [3]}, "--daily-limit [3]: expected a whole number"),
        ({"total_limit": "9" * 40}, "expected a whole number"),
        ({"picks": "999"}, "--picks '999': expected 1 to"),
        ({"end": "soon"}, "--end 'soon': expected an ISO 8601 time"),
        ({"colour": "red"}, "no setting named 'colour'"),
    ],
)
def test_settings_that_cannot_hold_are_refused_and_nothing_is_written(
    folder: Path, asked: dict[str, object], message: str
) -> None:
    store = site.store_of(folder)
    before = (store.settings(), store.audit())
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("+", r"\+")):
        settings.change(store, site.settings_of(folder), asked)
    assert (store.settings(), store.audit()) == before


def test_a_limit_raised_is_in_force_in_the_next_transaction_on_each_store(folder: Path) -> None:
    store = store_at(folder, NOW)
    team = store.add_team("alpha", digest(new_token()))
    assert [upload(store, team, n) for n in range(3)] == [None, None, "daily_limit"]
    settings.change(store, site.settings_of(folder), {"daily_limit": 3})
    assert upload(store, team, 3) is None
    settings.change(store, site.settings_of(folder), {"daily_limit": "none"})
    assert [upload(store, team, n) for n in range(4, 10)] == [None] * 6


def test_a_team_s_own_limit_lifts_its_lock_and_no_other_team_s(folder: Path) -> None:
    store = store_at(folder, NOW)
    base = site.settings_of(folder)
    settings.change(store, base, {"total_limit": 1, "daily_limit": "none"})
    alpha, beta = (store.add_team(name, digest(new_token())) for name in ("alpha", "beta"))
    assert [upload(store, team, n) for team in (alpha, beta) for n in (1, 2)] == [
        None,
        "total_limit",
        None,
        "total_limit",
    ]
    made = settings.change(store, base, {"total_limit": 3}, team="alpha")
    assert made.settings.team_limits == {"alpha": {"total": 3}}
    assert made.changed["team_limits"] == {"was": {}, "now": {"alpha": {"total": 3}}}
    assert [upload(store, alpha, n) for n in (3, 4, 5)] == [None, None, "total_limit"]
    assert upload(store, beta, 3) == "total_limit"
    # the team's own limit gone again ('none'): the competition's holds it
    settings.change(store, base, {"total_limit": "none"}, team="alpha")
    assert settings.current(store, base).team_limits == {}
    assert store.quota(alpha, NOW).limit == "total_limit"
    with pytest.raises(UsageError, match="--team sets a team's own limits only"):
        settings.change(store, base, {"end": "2099-01-01"}, team="alpha")
    with pytest.raises(UsageError, match="no team of that name"):
        settings.change(store, base, {"daily_limit": 1}, team="gamma")


def test_a_team_s_own_rejected_limit_is_the_one_its_quota_counts() -> None:
    limits = Limits(rejected=2, teams={7: {"rejected": 5}})
    assert Quota.of(limits.of_team(7), NOW, 0, 4, 4).limit is None
    assert Quota.of(limits.of_team(8), NOW, 0, 4, 4).limit == "rejected_limit"


def test_uploads_before_the_start_are_refused_not_started(folder: Path) -> None:
    store = store_at(folder, NOW)
    team = store.add_team("alpha", digest(new_token()))
    start = NOW + timedelta(hours=1)
    settings.change(store, site.settings_of(folder), {"start": start.isoformat()})
    assert upload(store, team, 1) == "not_started"
    store.clock = lambda: start
    assert upload(store, team, 2) is None
    assert store.entries()[0].submitted_at == start


def test_the_stage_and_the_next_change() -> None:
    times = {
        "start": "2027-01-01T00:00:00+00:00",
        "freeze": "2027-01-20T00:00:00+00:00",
        "end": "2027-01-31T23:59:59+00:00",
        "reveal_at": "2027-02-01T12:00:00+00:00",
    }
    base = site.Settings(title="t", **times)
    at = {key: datetime.fromisoformat(value) for key, value in times.items()}

    def stage(now: str, revealed: bool = False) -> Stage:
        return stage_of(base, datetime.fromisoformat(now), revealed)

    assert stage("2026-12-31T00:00Z") == Stage("not_started", "open", at["start"])
    assert stage("2027-01-05T00:00Z") == Stage("open", "frozen", at["freeze"])
    assert stage("2027-01-25T00:00Z") == Stage("frozen", "ended", at["end"])
    assert stage("2027-02-01T00:00Z") == Stage("ended", "revealed", at["reveal_at"])
    assert stage("2027-02-01T00:00Z", revealed=True) == Stage("revealed")
    assert stage_of(site.Settings(title="t"), NOW, False) == Stage("open")


def test_the_schedule_acts_once_on_its_own_and_audits_each_act(folder: Path) -> None:
    store = store_at(folder, NOW)
    base = site.settings_of(folder)
    later = {
        "start": NOW + timedelta(seconds=1),
        "freeze": NOW + timedelta(seconds=2),
        "end": NOW + timedelta(seconds=3),
        "reveal_at": NOW + timedelta(seconds=4),
    }
    settings.change(store, base, {k: v.isoformat() for k, v in later.items()})
    schedule = Schedule(store, base, lambda: None)
    assert schedule.due(NOW) == []
    assert schedule.due(later["end"]) == ["started", "frozen", "ended"]
    store.clock = lambda: later["reveal_at"]
    stop = threading.Event()
    watchers = [  # two processes watch the clock: each act happens once
        threading.Thread(target=Schedule(watching, base, lambda: None).run, args=(stop,))
        for watching in (store_at(folder, later["reveal_at"]) for _ in range(2))
    ]
    for one in watchers:
        one.start()
    try:
        assert waited(lambda: store.revealed() is not None)
        assert waited(lambda: schedule.due(store.clock()) == [])
    finally:
        stop.set()
        for one in watchers:
            one.join()
    events = [e["event"] for e in store.audit()]
    assert [e for e in events if e in ("started", "frozen", "ended", "reveal")] == [
        "started",
        "frozen",
        "ended",
        "reveal",
    ]
    assert not store.mark("ended")


def test_times_cannot_change_after_the_reveal_and_picks_not_below_a_team_s(folder: Path) -> None:
    store = store_at(folder, NOW)
    base = site.settings_of(folder)
    store.reveal()
    with pytest.raises(UsageError, match="revealed: its times can no longer change"):
        settings.change(store, base, {"end": "2099-01-01"})
    settings.change(store, base, {"daily_limit": 9})  # limits may


def test_the_admin_api_reads_and_changes_the_settings_and_a_running_server_applies_them(
    tmp_path: Path,
) -> None:
    live = Live(tmp_path / "srv").start()
    try:
        with live.client("admin") as admin, live.client("alpha") as team, live.client() as anyone:
            assert team.get("/admin/settings").status_code == 401
            assert anyone.patch("/admin/settings", json={"end": "2099-01-01"}).status_code == 401
            bad = admin.patch("/admin/settings", json={"daily_limit": {"x": 1}})
            assert (bad.status_code, bad.json()["error"]["code"]) == (400, "usage_error")
            assert admin.patch("/admin/settings", content=b"[1]").status_code == 400
            changed = admin.patch("/admin/settings", json={"end": "2099-03-01", "daily_limit": 7})
            assert changed.status_code == 200, changed.text
            assert changed.json()["settings"]["end"] == "2099-03-01T23:59:59+00:00"
            assert set(changed.json()["changed"]) == {"end", "daily_limit"}
            about = anyone.get("/competition").json()
            assert (about["end"], about["limits"]["daily"]) == ("2099-03-01T23:59:59+00:00", 7)
            assert about["stage"] == "open"
            assert about["next_change"] == {"stage": "ended", "at": "2099-03-01T23:59:59+00:00"}
        # the command, on the folder of the running server: in force there within 5 s
        scorer("serve", "settings", live.folder, "--daily-limit", "11")
        assert waited(lambda: anyone_sees(live)["limits"]["daily"] == 11)
    finally:
        live.close()


def anyone_sees(live: Live) -> dict[str, Any]:
    return httpx.get(f"{live.url}/api/v1/competition").json()  # type: ignore[no-any-return]


def waited(done: Callable[[], bool], timeout: float = 60) -> bool:
    """Whether `done` came true: looked at again and again, for at most `timeout` seconds (a
    bound on a busy machine, not the promise under test)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_scheduled_reveal_happens_with_no_request_or_command(tmp_path: Path) -> None:
    live = Live(tmp_path / "srv").start()
    try:
        # times already past (forced): the server acts on them with no request or command
        then = "2026-01-01T00:00Z"
        scorer("serve", "settings", live.folder, "--end", then, "--reveal-at", then, "--force")
        assert waited(lambda: anyone_sees(live)["phase"] == "final")
        events = [e["event"] for e in site.store_of(live.folder).audit()]
        assert "ended" in events and "reveal" in events
        answer = live.upload("alpha", SOLUTION)
        assert (answer.status_code, answer.json()["error"]["code"]) == (403, "competition_ended")
    finally:
        live.close()


def test_init_prints_what_it_understood(tmp_path: Path) -> None:
    folder = tmp_path / "srv"
    made = json.loads(
        scorer(
            "serve",
            "init",
            folder,
            "--solution",
            SOLUTION,
            "--start",
            "2099-01-01",
            "--freeze",
            "2099-01-20T12:00",
            "--end",
            "2099-01-31",
            "--reveal-at",
            "2099-02-01T09:00+01:00",
            "--json",
        ).stdout
    )
    assert made["settings"] | {} == made["settings"]
    assert {k: made["settings"][k] for k in ("start", "freeze", "end", "reveal_at")} == {
        "start": "2099-01-01T00:00:00+00:00",
        "freeze": "2099-01-20T12:00:00+00:00",
        "end": "2099-01-31T23:59:59+00:00",
        "reveal_at": "2099-02-01T08:00:00+00:00",
    }
    assert made["stage"] == "not_started"
    assert made["next_change"] == {"stage": "open", "at": "2099-01-01T00:00:00+00:00"}


def test_a_new_description_is_shown_on_the_page_and_audited(tmp_path: Path) -> None:
    folder = tmp_path / "srv"
    scorer("serve", "init", folder, "--solution", SOLUTION)
    about = tmp_path / "about.md"
    about.write_text("# The rules, fixed\n<script>alert(1)</script>\n", encoding="utf-8")
    changed = scorer("serve", "settings", folder, "--description", about)
    assert changed.stdout.endswith("Changed: description\n")
    store = site.store_of(folder)
    assert store.description() == about.read_text(encoding="utf-8")
    assert [e["event"] for e in store.audit()][-1] == "description"
    again = scorer("serve", "settings", folder, "--description", about)
    assert again.stdout.endswith("Nothing changed.\n")
