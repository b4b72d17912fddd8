"""The `Store` interface every store implements (SQLite now, PostgreSQL in issue 25)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol


class Status(StrEnum):
    """A submission's life: queued, then scoring by one worker, then one final verdict."""

    QUEUED = "queued"
    SCORING = "scoring"
    SCORED = "scored"
    REJECTED = "rejected"
    FAILED = "failed"


@dataclass(frozen=True)
class Limits:
    """The organiser's limits a team's uploads are counted against (None: no limit)."""

    daily: int | None = 5
    rejected: int | None = 20
    total: int | None = None


@dataclass(frozen=True)
class Decision:
    """What `accept_upload` decided: the new submission's id, or the limit that refused it."""

    id: int | None
    limit: str | None = None
    remaining: int = 0
    next_slot: datetime | None = None


def day_start(now: datetime) -> datetime:
    """The start of `now`'s UTC day: the daily limit counts uploads from here."""
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def next_day(now: datetime) -> datetime:
    """When a team refused by the daily limit may upload again."""
    return day_start(now) + timedelta(days=1)


#: The tables: times as ISO 8601 UTC text, the audit table only ever inserted into. Plain
#: SQL but for the ids: SQLite numbers an `INTEGER PRIMARY KEY` itself, and the PostgreSQL
#: store (issue 25) will declare them `GENERATED ALWAYS AS IDENTITY`.
SCHEMA = """
CREATE TABLE IF NOT EXISTS teams (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
    token_sha256 TEXT NOT NULL UNIQUE, revoked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY, team INTEGER NOT NULL REFERENCES teams(id),
    submitted_at TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
    path TEXT NOT NULL, status TEXT NOT NULL, public_score DOUBLE PRECISION,
    report TEXT, counted_as TEXT);
CREATE INDEX IF NOT EXISTS submissions_team ON submissions(team, submitted_at);
CREATE TABLE IF NOT EXISTS picks (
    team INTEGER NOT NULL REFERENCES teams(id),
    submission INTEGER NOT NULL REFERENCES submissions(id), PRIMARY KEY (team, submission));
CREATE TABLE IF NOT EXISTS admin_actions (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, action TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, event TEXT NOT NULL, detail TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Job:
    """A submission a worker claimed: it is `scoring` until `finish_job`."""

    id: int
    team: int
    path: str


class Store(Protocol):
    """What the web app and the workers ask of a store; each method is one transaction."""

    def add_team(self, name: str, token_sha256: str, now: datetime) -> int: ...

    def team_of(self, token_sha256: str) -> int | None: ...

    def accept_upload(
        self, team: int, now: datetime, sha256: str, size: int, path: str
    ) -> Decision: ...

    def claim_job(self) -> Job | None: ...

    def finish_job(
        self, id: int, status: Status, public_score: float | None, report: str | None
    ) -> None: ...

    def requeue_stale(self) -> int: ...
