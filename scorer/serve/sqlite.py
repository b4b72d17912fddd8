"""The SQLite store: WAL mode, a busy timeout, one connection per thread, every write one
`BEGIN IMMEDIATE` transaction."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from scorer.serve.store import (
    SCHEMA,
    Counted,
    Decision,
    Entry,
    Job,
    Limits,
    PickError,
    Quota,
    Status,
    Team,
    day_start,
    report_text,
)

#: How long a writer waits for another's transaction before SQLite gives up (milliseconds).
BUSY_MS = 30_000

_ENTRY = (
    "SELECT s.id, t.name, s.submitted_at, s.sha256, s.size, s.path, s.suffix, s.status,"
    " s.public_score, s.report, p.submission IS NOT NULL, s.counted"
    " FROM submissions s JOIN teams t ON t.id = s.team"
    " LEFT JOIN picks p ON p.submission = s.id"
)


class SqliteStore:
    """A `Store` in one SQLite file."""

    def __init__(self, path: Path, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self._local = threading.local()
        # executescript runs its own transaction: CREATE ... IF NOT EXISTS is safe to repeat
        self._db().executescript(SCHEMA)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            # isolation_level=None: we open every transaction ourselves, as BEGIN IMMEDIATE
            db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_MS / 1000)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a commit is on disk before the answer
            db.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            self._local.db = db
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock before the first read, so two uploads cannot
        # both count 4 accepted and both insert the fifth
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @staticmethod
    def _log(db: sqlite3.Connection, now: datetime, event: str, detail: dict[str, Any]) -> None:
        db.execute(
            "INSERT INTO audit (at, event, detail) VALUES (?, ?, ?)",
            (now.isoformat(), event, json.dumps(detail, sort_keys=True)),
        )

    def log(self, now: datetime, event: str, detail: dict[str, Any]) -> None:
        with self._write() as db:
            self._log(db, now, event, detail)

    def add_team(self, name: str, token_sha256: str, now: datetime) -> int:
        with self._write() as db:
            row = db.execute(
                "INSERT INTO teams (name, token_sha256) VALUES (?, ?) RETURNING id",
                (name, token_sha256),
            ).fetchone()
            self._log(db, now, "team_added", {"team": name})
        return int(row[0])

    def team_of(self, token_sha256: str) -> Team | None:
        row = (
            self._db()
            .execute(
                "SELECT id, name FROM teams WHERE token_sha256 = ? AND revoked = 0",
                (token_sha256,),
            )
            .fetchone()
        )
        return None if row is None else Team(int(row[0]), str(row[1]))

    def revoke_team(self, name: str, now: datetime) -> bool:
        """Revoke a team's token (its submissions stay); whether a team had that name."""
        with self._write() as db:
            changed = db.execute("UPDATE teams SET revoked = 1 WHERE name = ?", (name,)).rowcount
            if changed:
                self._log(db, now, "team_revoked", {"team": name})
        return bool(changed)

    def teams(self) -> list[tuple[str, bool]]:
        """Every team, by name, and whether its token is revoked."""
        rows = self._db().execute("SELECT name, revoked FROM teams ORDER BY name").fetchall()
        return [(str(name), bool(revoked)) for name, revoked in rows]

    def _quota(self, db: sqlite3.Connection, team: int, now: datetime) -> Quota:
        (today, rejected, total) = db.execute(
            "SELECT coalesce(sum(counted = 'daily' AND submitted_at >= ?), 0),"
            " coalesce(sum(counted = 'rejected'), 0), count(counted)"
            " FROM submissions WHERE team = ?",
            (day_start(now).isoformat(), team),
        ).fetchone()
        return Quota.of(self.limits, now, today, rejected, total)

    def quota(self, team: int, now: datetime) -> Quota:
        return self._quota(self._db(), team, now)

    def accept_upload(
        self, team: int, now: datetime, sha256: str, size: int, path: str, suffix: str = ""
    ) -> Decision:
        with self._write() as db:
            quota = self._quota(db, team, now)  # counted in the transaction that accepts
            if quota.limit is not None:
                return Decision(None, quota)
            row = db.execute(
                "INSERT INTO submissions (team, submitted_at, sha256, size, path, suffix,"
                " status, counted) VALUES (?, ?, ?, ?, ?, ?, 'queued', 'daily') RETURNING id",
                (team, now.isoformat(), sha256, size, path, suffix),
            ).fetchone()
            ident = int(row[0])
            (name,) = db.execute("SELECT name FROM teams WHERE id = ?", (team,)).fetchone()
            self._log(
                db, now, "upload", {"team": name, "id": ident, "sha256": sha256, "size": size}
            )
            return Decision(ident, self._quota(db, team, now))

    def refuse_upload(self, team: int, now: datetime, detail: dict[str, Any]) -> None:
        self.log(now, "upload_refused", {"team": team, **detail})  # the detail's name wins

    def claim_jobs(self, now: datetime, most: int | None = None) -> list[Job]:
        """The `most` oldest queued submissions (all without it), now `scoring` (PostgreSQL
        will use SKIP LOCKED; here the write lock serialises claims)."""
        with self._write() as db:
            rows = db.execute(
                "UPDATE submissions SET status = 'scoring' WHERE id IN (SELECT id FROM"
                " submissions WHERE status = 'queued' ORDER BY id LIMIT ?)"
                " RETURNING id, team, path",
                (-1 if most is None else most,),  # LIMIT -1: no limit
            ).fetchall()
        return sorted(Job(int(i), int(t), str(p)) for i, t, p in rows)

    def finish_job(
        self,
        id: int,
        status: Status,
        public_score: float | None,
        report: dict[str, Any] | None,
        counted: Counted | None,
        now: datetime,
    ) -> bool:
        """Write a job's verdict, once: a job no longer `scoring` keeps its first verdict."""
        with self._write() as db:
            changed = db.execute(
                "UPDATE submissions SET status = ?, public_score = ?, report = ?, counted = ?,"
                " finished_at = ? WHERE id = ? AND status = 'scoring'",
                (
                    str(status),
                    public_score,
                    report_text(report),
                    None if counted is None else str(counted),
                    now.isoformat(),
                    id,
                ),
            ).rowcount
            if changed:
                detail = {"id": id, "verdict": str(status), "counted": counted}
                self._log(db, now, "verdict", detail)
        return bool(changed)

    def requeue_stale(self) -> int:
        """After a restart (kill -9 included): jobs left `scoring` are queued again."""
        with self._write() as db:
            return db.execute(
                "UPDATE submissions SET status = 'queued' WHERE status = 'scoring'"
            ).rowcount

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> Entry:
        ident, team, when, sha, size, path, suffix, status, score, report, selected, counted = row
        return Entry(
            id=int(ident),
            team=str(team),
            submitted_at=datetime.fromisoformat(when),
            sha256=str(sha),
            size=int(size),
            path=str(path),
            suffix=str(suffix),
            status=Status(status),
            public_score=score,
            report=None if report is None else json.loads(report),
            selected=bool(selected),
            counted=None if counted is None else Counted(counted),
        )

    def entry(self, id: int) -> Entry | None:
        row = self._db().execute(f"{_ENTRY} WHERE s.id = ?", (id,)).fetchone()
        return None if row is None else self._entry(row)

    def entries(self, team: int | None = None) -> list[Entry]:
        """Every submission (of one team), oldest first."""
        where, args = ("WHERE s.team = ?", (team,)) if team is not None else ("", ())
        rows = self._db().execute(f"{_ENTRY} {where} ORDER BY s.id", args).fetchall()
        return [self._entry(row) for row in rows]

    def set_picks(self, team: int, ids: list[int], most: int, now: datetime) -> list[int]:
        """Make `ids` the team's picks, all or nothing: each must be its own scored one."""
        chosen = sorted(set(ids))
        if len(chosen) > most:
            raise PickError("too_many", f"{len(chosen)} picks; at most {most} are allowed")
        with self._write() as db:
            for ident in chosen:
                row = db.execute(
                    "SELECT status FROM submissions WHERE id = ? AND team = ?", (ident, team)
                ).fetchone()
                if row is None:
                    raise PickError("not_yours", f"no submission {ident} of your team")
                if row[0] != Status.SCORED:
                    raise PickError("not_scored", f"submission {ident} is {row[0]}, not scored")
            db.execute("DELETE FROM picks WHERE team = ?", (team,))
            db.executemany("INSERT INTO picks VALUES (?, ?)", [(team, i) for i in chosen])
            self._log(db, now, "picks", {"team": team, "ids": chosen})
        return chosen

    def reveal(self, now: datetime) -> str:
        """Reveal the final board, once; when it was revealed."""
        with self._write() as db:
            db.execute(
                "INSERT INTO state VALUES ('revealed_at', ?) ON CONFLICT DO NOTHING",
                (now.isoformat(),),
            )
            (when,) = db.execute("SELECT value FROM state WHERE key = 'revealed_at'").fetchone()
            if when == now.isoformat():
                self._log(db, now, "reveal", {})
        return str(when)

    def revealed(self) -> str | None:
        row = self._db().execute("SELECT value FROM state WHERE key = 'revealed_at'").fetchone()
        return None if row is None else str(row[0])

    def audit(self) -> list[dict[str, Any]]:
        rows = self._db().execute("SELECT id, at, event, detail FROM audit ORDER BY id")
        return [
            {"id": i, "at": at, "event": event, **json.loads(detail)}
            for i, at, event, detail in rows.fetchall()
        ]
