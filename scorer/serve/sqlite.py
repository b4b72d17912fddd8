"""The SQLite store: WAL mode, a busy timeout, one connection per thread."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from scorer.serve.store import SCHEMA, Decision, Job, Limits, Status, day_start, next_day

#: How long a writer waits for another's transaction before SQLite gives up (milliseconds).
BUSY_MS = 30_000


class SqliteStore:
    """A `Store` in one SQLite file; every method is one transaction."""

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

    def add_team(self, name: str, token_sha256: str, now: datetime) -> int:
        with self._write() as db:
            row = db.execute(
                "INSERT INTO teams (name, token_sha256) VALUES (?, ?) RETURNING id",
                (name, token_sha256),
            ).fetchone()
            db.execute(
                "INSERT INTO audit (at, event, detail) VALUES (?, 'team_added', ?)",
                (now.isoformat(), name),
            )
        return int(row[0])

    def team_of(self, token_sha256: str) -> int | None:
        row = (
            self._db()
            .execute("SELECT id FROM teams WHERE token_sha256 = ? AND revoked = 0", (token_sha256,))
            .fetchone()
        )
        return None if row is None else int(row[0])

    def accept_upload(
        self, team: int, now: datetime, sha256: str, size: int, path: str
    ) -> Decision:
        limits = self.limits
        with self._write() as db:
            # pending uploads count toward the day until they fail: a server failure is refunded
            (today,) = db.execute(
                "SELECT count(*) FROM submissions WHERE team = ? AND submitted_at >= ?"
                " AND status IN ('queued', 'scoring', 'scored')",
                (team, day_start(now).isoformat()),
            ).fetchone()
            (rejected,) = db.execute(
                "SELECT count(*) FROM submissions WHERE team = ? AND status = 'rejected'",
                (team,),
            ).fetchone()
            (total,) = db.execute(
                "SELECT count(*) FROM submissions WHERE team = ? AND status != 'failed'",
                (team,),
            ).fetchone()
            if limits.daily is not None and today >= limits.daily:
                return Decision(None, "daily", 0, next_day(now))
            if limits.rejected is not None and rejected >= limits.rejected:
                return Decision(None, "rejected", 0)
            if limits.total is not None and total >= limits.total:
                return Decision(None, "total", 0)
            row = db.execute(
                "INSERT INTO submissions (team, submitted_at, sha256, size, path, status)"
                " VALUES (?, ?, ?, ?, ?, 'queued') RETURNING id",
                (team, now.isoformat(), sha256, size, path),
            ).fetchone()
            db.execute(
                "INSERT INTO audit (at, event, detail) VALUES (?, 'upload', ?)",
                (now.isoformat(), f"{team} {row[0]} {sha256}"),
            )
        left = None if limits.daily is None else limits.daily - today - 1
        return Decision(int(row[0]), None, -1 if left is None else left)

    def claim_job(self) -> Job | None:
        # PostgreSQL will use FOR UPDATE SKIP LOCKED; SQLite's write lock serialises claims
        with self._write() as db:
            row = db.execute(
                "SELECT id, team, path FROM submissions WHERE status = 'queued' ORDER BY id LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE submissions SET status = 'scoring' WHERE id = ?", (row[0],))
        return Job(int(row[0]), int(row[1]), str(row[2]))

    def finish_job(
        self, id: int, status: Status, public_score: float | None, report: str | None
    ) -> None:
        with self._write() as db:
            # only a job still `scoring` gets a verdict: a second finish counts nothing twice
            db.execute(
                "UPDATE submissions SET status = ?, public_score = ?, report = ?"
                " WHERE id = ? AND status = 'scoring'",
                (str(status), public_score, report, id),
            )

    def requeue_stale(self) -> int:
        """After a restart (kill -9 included): jobs left `scoring` are queued again."""
        with self._write() as db:
            return db.execute(
                "UPDATE submissions SET status = 'queued' WHERE status = 'scoring'"
            ).rowcount

    def status_of(self, id: int) -> Status:
        row = self._db().execute("SELECT status FROM submissions WHERE id = ?", (id,)).fetchone()
        return Status(row[0])

    def revoke_team(self, name: str, now: datetime) -> bool:
        """Revoke a team's token (its submissions stay); whether a team had that name."""
        with self._write() as db:
            changed = db.execute("UPDATE teams SET revoked = 1 WHERE name = ?", (name,)).rowcount
            if changed:
                db.execute(
                    "INSERT INTO audit (at, event, detail) VALUES (?, 'team_revoked', ?)",
                    (now.isoformat(), name),
                )
        return bool(changed)

    def teams(self) -> list[tuple[str, bool]]:
        """Every team, by name, and whether its token is revoked."""
        rows = self._db().execute("SELECT name, revoked FROM teams ORDER BY name").fetchall()
        return [(str(name), bool(revoked)) for name, revoked in rows]
