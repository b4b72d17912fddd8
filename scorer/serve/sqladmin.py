"""The store's reads for the organiser's page (`admin`), one SQL text for every database and
only what a web role may read: each team's uploads counted, the uploads of each UTC day, the
latest failures and the audit log's tail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scorer.serve.sqlcore import SqlCore
from scorer.serve.store import day_start


@dataclass(frozen=True)
class TeamCount:
    """A team's uploads: in all, by verdict and waiting (`queued` or `scoring`), and those
    its limits count (`today`, toward the day; `rejected`, toward the rejected limit;
    `counted`, toward the total)."""

    id: int
    name: str
    revoked: bool
    uploads: int
    scored: int
    rejected: int
    failed: int
    waiting: int
    today: int
    counted_rejected: int
    counted: int


@dataclass(frozen=True)
class DayCount:
    """The uploads of one UTC day (`day`: `2027-01-31`), by what became of them."""

    day: str
    uploads: int
    scored: int
    rejected: int
    failed: int
    waiting: int


@dataclass(frozen=True)
class Failed:
    """A failed submission: its team, the name it was sent as, when, and the error kept."""

    id: int
    team: str
    filename: str
    submitted_at: datetime
    code: str
    message: str


@dataclass(frozen=True)
class Event:
    """One event of the audit log: when, what, and its detail as recorded."""

    id: int
    at: datetime
    event: str
    detail: dict[str, Any]


#: Each upload counted by what became of it (the columns of `TeamCount` and `DayCount`).
_BY_STATUS = (
    "count(s.id), count(s.id) FILTER (WHERE s.status = 'scored'),"
    " count(s.id) FILTER (WHERE s.status = 'rejected'),"
    " count(s.id) FILTER (WHERE s.status = 'failed'),"
    " count(s.id) FILTER (WHERE s.status IN ('queued', 'scoring'))"
)


class AdminReads(SqlCore):
    """What the organiser's page reads (`sql.SqlStore` inherits it), each one statement."""

    def team_counts(self, now: datetime) -> list[TeamCount]:
        """Every team, by name, with its uploads counted (the day's: `now`'s UTC day)."""
        rows = self._read(
            f"SELECT t.id, t.name, t.revoked, {_BY_STATUS},"
            " count(s.id) FILTER (WHERE s.counted = 'daily' AND s.submitted_at >= ?),"
            " count(s.id) FILTER (WHERE s.counted = 'rejected'), count(s.counted)"
            " FROM teams t LEFT JOIN submissions s ON s.team = t.id"
            " GROUP BY t.id, t.name, t.revoked ORDER BY t.name, t.id",
            day_start(now).isoformat(),
        ).fetchall()
        return [
            TeamCount(int(row[0]), str(row[1]), bool(row[2]), *(int(n) for n in row[3:]))
            for row in rows
        ]

    def days(self, most: int = 31) -> list[DayCount]:
        """The uploads of the latest `most` UTC days that had any, the latest first (times
        are kept as UTC ISO text: a day is its first ten characters)."""
        rows = self._read(
            f"SELECT substr(s.submitted_at, 1, 10), {_BY_STATUS} FROM submissions s"
            " GROUP BY substr(s.submitted_at, 1, 10) ORDER BY 1 DESC LIMIT ?",
            most,
        ).fetchall()
        return [DayCount(str(row[0]), *(int(n) for n in row[1:])) for row in rows]

    def failures(self, most: int = 20) -> list[Failed]:
        """The latest `most` failed submissions, the latest first, with the error kept."""
        rows = self._read(
            "SELECT s.id, t.name, s.filename, s.submitted_at, v.error FROM submissions s"
            " JOIN teams t ON t.id = s.team LEFT JOIN verdicts v ON v.submission = s.id"
            " WHERE s.status = 'failed' ORDER BY s.id DESC LIMIT ?",
            most,
        ).fetchall()
        found = []
        for ident, team, filename, when, error in rows:
            kept = json.loads(error) if error else {}
            code, message = str(kept.get("code", "")), str(kept.get("message", ""))
            found.append(Failed(int(ident), str(team), str(filename), _time(when), code, message))
        return found

    def audit_tail(self, most: int = 50) -> list[Event]:
        """The audit log's latest `most` events, oldest first."""
        rows = self._read(
            "SELECT id, at, event, detail FROM audit ORDER BY id DESC LIMIT ?", most
        ).fetchall()
        return [
            Event(int(ident), _time(at), str(event), dict(json.loads(detail)))
            for ident, at, event, detail in reversed(rows)
        ]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(str(text))
