"""What every store holds and answers (`sql.SqlStore` is the interface, SQLite and PostgreSQL
its two dialects): a submission's life, the limits' rules, jobs, picks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any


def utc() -> datetime:
    """Server time: the only time a submission is ever given."""
    return datetime.now(UTC)


class Status(StrEnum):
    """A submission's life: queued, then scoring by one worker, then one final verdict."""

    QUEUED = "queued"
    SCORING = "scoring"
    SCORED = "scored"
    REJECTED = "rejected"
    FAILED = "failed"


#: The verdicts that end a submission's life.
FINAL = frozenset({Status.SCORED, Status.REJECTED, Status.FAILED})


class Counted(StrEnum):
    """Which limit a submission counts toward. An upload counts toward the day from the
    moment it is accepted until its verdict: scored, it stays there; rejected, or failed
    because of its own file (out of memory or time), it moves to the rejected limit; failed
    because of the server, it counts toward nothing (`None`: refunded)."""

    DAILY = "daily"
    REJECTED = "rejected"


#: The submissions on the boards: judged, and not a failure refunded (the server's, not the
#: team's file's); `serve export` writes exactly these.
ON_BOARD = (
    "s.status IN ('scored', 'rejected', 'failed')"
    " AND NOT (s.status = 'failed' AND s.counted IS NULL)"
)

#: The limits an organiser may set for one team, over the competition's.
TEAM_LIMITS = ("daily", "rejected", "total")


@dataclass(frozen=True)
class Limits:
    """The organiser's limits, which the store enforces in the transaction that accepts an
    upload or picks: the uploads a team may have counted (None: no limit), the picks it may
    make, when uploads open (`start`, None: now) and close (`end`, None: until the reveal;
    `reveal_at`, when the reveal is scheduled, closes them too), and a team's own limits
    over these (`teams`: by team id, a dict of some of `TEAM_LIMITS`)."""

    daily: int | None = 5
    rejected: int | None = 20
    total: int | None = None
    picks: int = 2
    end: datetime | None = None
    start: datetime | None = None
    reveal_at: datetime | None = None
    teams: Mapping[int, Mapping[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As a database keeps them (`postgres`: its functions read them)."""
        times = {"end": self.end, "start": self.start, "reveal_at": self.reveal_at}
        return {
            "daily": self.daily,
            "rejected": self.rejected,
            "total": self.total,
            "picks": self.picks,
            **{key: None if when is None else when.isoformat() for key, when in times.items()},
            "teams": {str(team): dict(own) for team, own in sorted(self.teams.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Limits:
        def when(key: str) -> datetime | None:
            return None if data.get(key) is None else datetime.fromisoformat(data[key])

        return cls(
            daily=data.get("daily"),
            rejected=data.get("rejected"),
            total=data.get("total"),
            picks=int(data.get("picks", 2)),
            end=when("end"),
            start=when("start"),
            reveal_at=when("reveal_at"),
            teams={int(team): dict(own) for team, own in data.get("teams", {}).items()},
        )

    def of_team(self, team: int) -> Limits:
        """The limits `team` is held to: its own where the organiser set them."""
        own = self.teams.get(team, {})
        pick = {key: own.get(key, getattr(self, key)) for key in TEAM_LIMITS}
        return replace(self, daily=pick["daily"], rejected=pick["rejected"], total=pick["total"])

    def closed(self, now: datetime) -> bool:
        """Whether uploads and picks are closed at `now` by the end or the scheduled reveal
        (the reveal itself closes them too: `SqlStore.closed`)."""
        return any(when is not None and now >= when for when in (self.end, self.reveal_at))


#: The limits that close a team's uploads for good, unlike the day's: only the organiser
#: lifts them.
LOCKS = frozenset({"rejected_limit", "total_limit"})


@dataclass(frozen=True)
class Quota:
    """What a team may still upload: `remaining_today` (None: no daily limit), when its next
    slot opens (`next_slot`: now when one is open, None when none ever will), and the limit
    that refuses an upload now (`limit`, None when one is accepted)."""

    remaining_today: int | None
    next_slot: datetime | None
    limit: str | None = None

    @property
    def locked(self) -> bool:
        """Whether the team's uploads are closed until the organiser lifts its limit."""
        return self.limit in LOCKS

    @classmethod
    def of(cls, limits: Limits, now: datetime, today: int, rejected: int, total: int) -> Quota:
        """The quota of a team that has `today` uploads counted toward this UTC day,
        `rejected` toward the rejected limit and `total` in all. A team a lock holds has
        nothing left today either: no slot opens at midnight."""
        left = None if limits.daily is None else max(0, limits.daily - today)
        if limits.rejected is not None and rejected >= limits.rejected:
            return cls(0, None, "rejected_limit")
        if limits.total is not None and total >= limits.total:
            return cls(0, None, "total_limit")
        if left == 0:
            return cls(0, next_day(now), "daily_limit")
        return cls(left, now)


@dataclass(frozen=True)
class Decision:
    """What `accept_upload` decided: the new submission's id and the team's quota after it;
    or, when it was refused, no id and why (`refused`: `competition_ended`, or the limit)."""

    id: int | None
    quota: Quota
    refused: str | None = None


@dataclass(frozen=True)
class Received:
    """An upload whose body is whole and on disk, as the store records it: the sha256 and
    size of its bytes, its path in the server's folder, the suffix it is read by, and its
    file, for a store that keeps the bytes (`source`), the name it was uploaded as and its
    description."""

    sha256: str
    size: int
    path: str
    suffix: str = ""
    source: Path | None = None
    filename: str = ""
    description: str = ""


class Refused(Exception):
    """An upload the store refused (`reason`, at `at`): the transaction is rolled back."""

    def __init__(self, reason: str, at: datetime) -> None:
        super().__init__(reason)
        self.reason, self.at = reason, at


def day_start(now: datetime) -> datetime:
    """The start of `now`'s UTC day: the daily limit counts uploads from here."""
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def next_day(now: datetime) -> datetime:
    """When a team refused by the daily limit may upload again: the next UTC midnight."""
    return day_start(now) + timedelta(days=1)


@dataclass(frozen=True)
class Team:
    id: int
    name: str


@dataclass(frozen=True)
class Rekeyed:
    """A team given a new token (`SqlStore.replace_token`): its name as stored, and whether
    it was revoked until then (the new token lets it back in)."""

    name: str
    was_revoked: bool


@dataclass(frozen=True)
class Entry:
    """One submission as the store holds it. `path`: the file, relative to the server's
    folder; `name`: what the boards and reports call it (`submissions/<id><suffix>`);
    `filename`: the name it was uploaded as, and `description`: its team's words for it,
    both data to show (`notes`)."""

    id: int
    team: str
    submitted_at: datetime
    sha256: str
    size: int
    path: str
    suffix: str
    status: Status
    public_score: float | None
    report: dict[str, Any] | None
    selected: bool
    counted: Counted | None
    filename: str = ""
    description: str = ""

    @property
    def name(self) -> str:
        return f"submissions/{self.id}{self.suffix}"


def report_text(report: dict[str, Any] | None) -> str | None:
    return None if report is None else json.dumps(report, sort_keys=True)


@dataclass(frozen=True, order=True)
class Job:
    """A submission a worker claimed: it is `scoring` until `finish_job` with its `claim`,
    or until its lease ends and another worker claims it (then this claim writes nothing)."""

    id: int
    team: int
    path: str
    claim: str = ""


#: How long a claim holds a job before another worker may take it, unless renewed: past the
#: longest a submission may take (`--timeout`, 600 s by default).
LEASE = timedelta(minutes=15)

#: The lease of `scorer serve worker`, which renews its claim every third of it while it
#: judges: a worker that dies holds its jobs this long at most.
WORKER_LEASE = timedelta(seconds=60)


class PickError(ValueError):
    """Picks the store refused: `code` says why (`not_yours`, `not_scored`, `too_many`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def picks_refused(code: str, detail: str = "") -> PickError:
    """Picks refused, in the same words whichever store refused them: `detail` is what the
    refusal names, in words (`too_many`: the count and the most; `not_yours`: the id;
    `not_scored`: the id and its status)."""
    words = detail.split()
    if code == "too_many":
        return PickError(code, f"{words[0]} picks; at most {words[1]} are allowed")
    if code == "not_yours":
        return PickError(code, f"no submission {words[0]} of your team")
    if code == "not_scored":
        return PickError(code, f"submission {words[0]} is {words[1]}, not scored")
    return PickError("competition_ended", "picks are closed: the competition ended")


#: The public targets' file, in a server's folder and in a database that holds the files.
TARGETS = "targets.csv"


def upload_name(submission: int) -> str:
    """The name a store that `HOLDS_FILES` keeps an upload's bytes under."""
    return f"submissions/{submission}"


def kept_name(submission: int) -> str:
    """The name a store that `HOLDS_FILES` keeps an upload's kept form under (`sqlkept`)."""
    return f"kept/{submission}"


def tables(identity: str, blob: str) -> str:
    """The tables, their ids declared as a dialect numbers rows itself (`identity`), bytes as
    it keeps them (`blob`). Times are ISO 8601 UTC text, the same in every database.

    An upload judged is kept small (`sqlkept`): `kept` names its kept form's reference (the
    sha256 of the public targets it was coded against) and size; an upload with no row
    there is as received.

    A submission's verdict is one row of `verdicts`, written whole (its per-user scores in
    `per_user`) in the transaction that finishes its job: the boards are built from these,
    and published in `boards`, which is all a web process reads of them. `refusals` counts
    the uploads refused, a row a team, reason and minute, so that no flood of refusals can
    grow the audit log.

    A team's `name_key` is its name as one team (`names.same_team`: case, spaces and
    Unicode forms folded), unique, so that the database itself refuses a second spelling of
    a team, however many processes add teams at once. It is written by the store's code
    (PostgreSQL has no Unicode case folding); a store made before it gets it from
    `SqlStore._key_teams`.

    A team's page is opened by a row of `sessions`: the session id's SHA-256 (as tokens are
    kept), its team, the token hash it was opened with (a token replaced or revoked ends it at
    once) and when it expires; the organiser's page by a row of `admin_sessions`, opened with
    the admin token (which never changes), until it expires."""
    return f"""
CREATE TABLE IF NOT EXISTS teams (
    id {identity}, name TEXT NOT NULL UNIQUE,
    token_sha256 TEXT NOT NULL UNIQUE, revoked INTEGER NOT NULL DEFAULT 0,
    name_key TEXT UNIQUE);
CREATE TABLE IF NOT EXISTS submissions (
    id {identity}, team BIGINT NOT NULL REFERENCES teams(id),
    submitted_at TEXT NOT NULL, sha256 TEXT NOT NULL, size BIGINT NOT NULL,
    path TEXT NOT NULL, suffix TEXT NOT NULL, status TEXT NOT NULL,
    counted TEXT, finished_at TEXT, claim TEXT, lease_until TEXT,
    filename TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS submissions_team ON submissions(team, submitted_at);
CREATE INDEX IF NOT EXISTS submissions_status ON submissions(status, id);
CREATE INDEX IF NOT EXISTS submissions_queue ON submissions(status, team, id);
CREATE TABLE IF NOT EXISTS verdicts (
    submission BIGINT PRIMARY KEY REFERENCES submissions(id),
    solution_hash TEXT NOT NULL, scorer_version TEXT NOT NULL, config TEXT NOT NULL,
    status TEXT NOT NULL, content_hash TEXT NOT NULL,
    overall DOUBLE PRECISION, public DOUBLE PRECISION, private DOUBLE PRECISION,
    scores TEXT, error TEXT, seconds DOUBLE PRECISION NOT NULL, judged_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS verdicts_content ON verdicts(content_hash);
CREATE TABLE IF NOT EXISTS kept (
    submission BIGINT PRIMARY KEY REFERENCES submissions(id),
    reference TEXT NOT NULL, size BIGINT NOT NULL, kept_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS per_user (
    submission BIGINT NOT NULL REFERENCES submissions(id), split TEXT NOT NULL,
    scores {blob} NOT NULL, PRIMARY KEY (submission, split));
CREATE TABLE IF NOT EXISTS picks (
    team BIGINT NOT NULL REFERENCES teams(id),
    submission BIGINT NOT NULL REFERENCES submissions(id), PRIMARY KEY (team, submission));
CREATE TABLE IF NOT EXISTS boards (
    name TEXT PRIMARY KEY, version BIGINT NOT NULL, as_of TEXT NOT NULL,
    json TEXT NOT NULL, html TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit (
    id {identity}, at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id_sha256 TEXT PRIMARY KEY, team BIGINT NOT NULL REFERENCES teams(id),
    token_sha256 TEXT NOT NULL, expires_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions(expires_at);
CREATE TABLE IF NOT EXISTS admin_sessions (
    id_sha256 TEXT PRIMARY KEY, expires_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refusals (
    team BIGINT NOT NULL, reason TEXT NOT NULL, minute TEXT NOT NULL,
    count BIGINT NOT NULL, PRIMARY KEY (team, reason, minute));
"""
