"""The store's SQL, one text for every database: each method is one transaction, and what a
dialect does its own way (its connections, its write lock, its claim) is a small hook of its
subclass (`sqlite.SqliteStore`, `postgres.PostgresStore`). SQL is written with `?`
placeholders; a dialect that spells them otherwise rewrites them (`_sql`)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from scorer.leaderboard.runs import Saved
from scorer.serve.store import (
    LEASE,
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
    upload_name,
)

_ENTRY = (
    "SELECT s.id, t.name, s.submitted_at, s.sha256, s.size, s.path, s.suffix, s.status,"
    " s.public_score, s.report, p.submission IS NOT NULL, s.counted"
    " FROM submissions s JOIN teams t ON t.id = s.team"
    " LEFT JOIN picks p ON p.submission = s.id"
)

#: No limit to a claim: more jobs than any queue holds.
EVERY = 1 << 62


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the store asks of a database connection (sqlite3's and psycopg's both give it)."""

    def execute(self, sql: Any, parameters: Any = ..., /) -> Any: ...


class TeamTaken(ValueError):
    """A team of that name exists already."""


class NotAllowed(PermissionError):
    """The database role may not do this: a web process's role reading the solution."""


class StoreUnavailable(ConnectionError):
    """The store's database cannot be reached (a server restarting, a network away): nothing
    was done, and the same call may succeed later."""


class SqlStore:
    """The store every part of a server asks (the web app, the scoring loop, the commands):
    each method is one transaction. A subclass gives `_db` (this thread's connection), `_write` (one
    write transaction, holding whatever lock makes the limits race-free), `_lock_team` and
    `_taken` (the driver's unique-key error)."""

    #: Added to the claim's inner SELECT: how this database skips rows another claim holds.
    SKIP_LOCKED = ""
    #: Whether the database holds the uploads and the organiser's files (`keep`, `fetch`), so
    #: that workers on other machines read them from it; else they stay in the server's folder.
    HOLDS_FILES = False

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def _db(self) -> Connection:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _lock_team(self, db: Connection, team: int) -> None:
        """Hold the team's row until the transaction ends (its limits, its picks)."""

    def _taken(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _keep(self, db: Connection, name: str, source: Path) -> None:
        """Store a file's bytes under `name`, in the transaction `db` (`HOLDS_FILES`)."""

    def _save_verdict(self, db: Connection, submission: int, verdict: Saved) -> None:
        """Store a worker's verdict whole, in the transaction that finishes its job."""
        raise NotImplementedError(f"{type(self).__name__} keeps no worker's verdicts")

    def _sql(self, sql: str) -> str:
        return sql

    def _run(self, db: Connection, sql: str, *args: Any) -> Cursor:
        cursor: Cursor = db.execute(self._sql(sql), args)
        return cursor

    def _read(self, sql: str, *args: Any) -> Cursor:
        return self._run(self._db(), sql, *args)

    def _log(self, db: Connection, now: datetime, event: str, detail: dict[str, Any]) -> None:
        self._run(
            db,
            "INSERT INTO audit (at, event, detail) VALUES (?, ?, ?)",
            now.isoformat(),
            event,
            json.dumps(detail, sort_keys=True),
        )

    def log(self, now: datetime, event: str, detail: dict[str, Any]) -> None:
        with self._write() as db:
            self._log(db, now, event, detail)

    def add_team(self, name: str, token_sha256: str, now: datetime) -> int:
        try:
            with self._write() as db:
                row = self._run(
                    db,
                    "INSERT INTO teams (name, token_sha256) VALUES (?, ?) RETURNING id",
                    name,
                    token_sha256,
                ).fetchone()
                self._log(db, now, "team_added", {"team": name})
        except Exception as exc:
            if self._taken(exc):
                raise TeamTaken(name) from None
            raise
        return int(row[0])

    def team_of(self, token_sha256: str) -> Team | None:
        row = self._read(
            "SELECT id, name FROM teams WHERE token_sha256 = ? AND revoked = 0", token_sha256
        ).fetchone()
        return None if row is None else Team(int(row[0]), str(row[1]))

    def revoke_team(self, name: str, now: datetime) -> bool:
        """Revoke a team's token (its submissions stay); whether a team had that name."""
        with self._write() as db:
            changed = self._run(db, "UPDATE teams SET revoked = 1 WHERE name = ?", name).rowcount
            if changed:
                self._log(db, now, "team_revoked", {"team": name})
        return bool(changed)

    def teams(self) -> list[tuple[str, bool]]:
        """Every team, by name, and whether its token is revoked."""
        rows = self._read("SELECT name, revoked FROM teams ORDER BY name").fetchall()
        return [(str(name), bool(revoked)) for name, revoked in rows]

    def _quota(self, run: Callable[..., Cursor], team: int, now: datetime) -> Quota:
        """A team's quota, read by `run` (a statement in a transaction, or a read)."""
        today, rejected, total = run(
            "SELECT count(*) FILTER (WHERE counted = 'daily' AND submitted_at >= ?),"
            " count(*) FILTER (WHERE counted = 'rejected'), count(counted)"
            " FROM submissions WHERE team = ?",
            day_start(now).isoformat(),
            team,
        ).fetchone()
        return Quota.of(self.limits, now, today, rejected, total)

    def quota(self, team: int, now: datetime) -> Quota:
        return self._quota(self._read, team, now)

    def accept_upload(
        self,
        team: int,
        now: datetime,
        sha256: str,
        size: int,
        path: str,
        suffix: str = "",
        source: Path | None = None,
    ) -> Decision:
        """Count and record an upload, unless a limit is reached; a store that `HOLDS_FILES`
        keeps its bytes (`source`) in the same transaction."""
        with self._write() as db:
            self._lock_team(db, team)
            reads = partial(self._run, db)  # in the transaction that accepts
            quota = self._quota(reads, team, now)
            if quota.limit is not None:
                return Decision(None, quota)
            (ident,) = self._run(
                db,
                "INSERT INTO submissions (team, submitted_at, sha256, size, path, suffix,"
                " status, counted) VALUES (?, ?, ?, ?, ?, ?, 'queued', 'daily') RETURNING id",
                team,
                now.isoformat(),
                sha256,
                size,
                path,
                suffix,
            ).fetchone()
            if source is not None:
                self._keep(db, upload_name(int(ident)), source)
            (name,) = self._run(db, "SELECT name FROM teams WHERE id = ?", team).fetchone()
            detail = {"team": name, "id": int(ident), "sha256": sha256, "size": size}
            self._log(db, now, "upload", detail)
            return Decision(int(ident), self._quota(reads, team, now))

    def refuse_upload(self, team: int, now: datetime, detail: dict[str, Any]) -> None:
        self.log(now, "upload_refused", {"team": team, **detail})  # the detail's name wins

    def claim_jobs(
        self, now: datetime, most: int | None = None, lease: timedelta = LEASE
    ) -> list[Job]:
        """The `most` oldest queued submissions (all without it), now `scoring` under one new
        claim until `now + lease`."""
        claim = secrets.token_hex(16)
        with self._write() as db:
            rows = self._run(
                db,
                "UPDATE submissions SET status = 'scoring', claim = ?, lease_until = ?"
                " WHERE id IN (SELECT id FROM submissions WHERE status = 'queued'"
                f" ORDER BY id LIMIT ?{self.SKIP_LOCKED}) RETURNING id, team, path",
                claim,
                (now + lease).isoformat(),
                EVERY if most is None else most,
            ).fetchall()
        return sorted(Job(int(i), int(t), str(p), claim) for i, t, p in rows)

    def renew(self, jobs: list[Job], now: datetime, lease: timedelta = LEASE) -> int:
        """Hold claimed jobs `lease` longer (a long run); how many are still this claim's."""
        with self._write() as db:
            return sum(
                self._run(
                    db,
                    "UPDATE submissions SET lease_until = ? WHERE id = ? AND claim = ?"
                    " AND status = 'scoring'",
                    (now + lease).isoformat(),
                    job.id,
                    job.claim,
                ).rowcount
                for job in jobs
            )

    def finish_job(
        self,
        job: Job,
        status: Status,
        public_score: float | None,
        report: dict[str, Any] | None,
        counted: Counted | None,
        now: datetime,
        saved: Saved | None = None,
    ) -> bool:
        """Write a job's verdict, once, under the claim that holds it: a job no longer
        `scoring`, or claimed since by another worker, keeps its verdict. `saved`: the
        verdict whole (a worker's, for the boards), written in the same transaction."""
        with self._write() as db:
            changed = self._run(
                db,
                "UPDATE submissions SET status = ?, public_score = ?, report = ?, counted = ?,"
                " finished_at = ? WHERE id = ? AND status = 'scoring' AND claim = ?",
                str(status),
                public_score,
                report_text(report),
                None if counted is None else str(counted),
                now.isoformat(),
                job.id,
                job.claim,
            ).rowcount
            if changed and saved is not None:
                self._save_verdict(db, job.id, saved)
            if changed:
                detail = {"id": job.id, "verdict": str(status), "counted": counted}
                self._log(db, now, "verdict", detail)
        return bool(changed)

    def requeue_stale(self, now: datetime | None = None) -> int:
        """Queue again the jobs whose claim ended: every one left `scoring` (a server that
        starts is the only one: a stop, kill -9 included, left them), or with `now`, those
        whose lease is over (a worker that died); how many. The audit log names them."""
        requeue = "UPDATE submissions SET status = 'queued', claim = NULL WHERE status = 'scoring'"
        over, args = ("", ()) if now is None else (" AND lease_until < ?", (now.isoformat(),))
        with self._write() as db:
            rows = self._run(db, f"{requeue}{over} RETURNING id", *args).fetchall()
            ids = sorted(int(i) for (i,) in rows)
            if ids:
                self._log(db, now or datetime.now(UTC), "requeued", {"ids": ids})
        return len(ids)

    def release(self, jobs: list[Job]) -> int:
        """Queue again jobs this claim still holds (a worker that stops); how many."""
        with self._write() as db:
            return sum(
                self._run(
                    db,
                    "UPDATE submissions SET status = 'queued', claim = NULL"
                    " WHERE id = ? AND claim = ? AND status = 'scoring'",
                    job.id,
                    job.claim,
                ).rowcount
                for job in jobs
            )

    def last_change(self) -> int:
        """The audit log's latest verdict or picks: the boards change when it does."""
        row = self._read("SELECT max(id) FROM audit WHERE event IN ('verdict', 'picks')").fetchone()
        return int(row[0] or 0)

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
        row = self._read(f"{_ENTRY} WHERE s.id = ?", id).fetchone()
        return None if row is None else self._entry(row)

    def entries(self, team: int | None = None) -> list[Entry]:
        """Every submission (of one team), oldest first."""
        if team is None:
            rows = self._read(f"{_ENTRY} ORDER BY s.id").fetchall()
        else:
            rows = self._read(f"{_ENTRY} WHERE s.team = ? ORDER BY s.id", team).fetchall()
        return [self._entry(row) for row in rows]

    def set_picks(self, team: int, ids: list[int], most: int, now: datetime) -> list[int]:
        """Make `ids` the team's picks, all or nothing: each must be its own scored one."""
        chosen = sorted(set(ids))
        if len(chosen) > most:
            raise PickError("too_many", f"{len(chosen)} picks; at most {most} are allowed")
        with self._write() as db:
            self._lock_team(db, team)
            for ident in chosen:
                row = self._run(
                    db, "SELECT status FROM submissions WHERE id = ? AND team = ?", ident, team
                ).fetchone()
                if row is None:
                    raise PickError("not_yours", f"no submission {ident} of your team")
                if row[0] != Status.SCORED:
                    raise PickError("not_scored", f"submission {ident} is {row[0]}, not scored")
            self._run(db, "DELETE FROM picks WHERE team = ?", team)
            for ident in chosen:
                self._run(db, "INSERT INTO picks VALUES (?, ?)", team, ident)
            self._log(db, now, "picks", {"team": team, "ids": chosen})
        return chosen

    def reveal(self, now: datetime) -> str:
        """Reveal the final board, once; when it was revealed."""
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO state VALUES ('revealed_at', ?) ON CONFLICT DO NOTHING",
                now.isoformat(),
            )
            (when,) = self._run(db, "SELECT value FROM state WHERE key = 'revealed_at'").fetchone()
            if when == now.isoformat():
                self._log(db, now, "reveal", {})
        return str(when)

    def revealed(self) -> str | None:
        row = self._read("SELECT value FROM state WHERE key = 'revealed_at'").fetchone()
        return None if row is None else str(row[0])

    def audit(self) -> list[dict[str, Any]]:
        rows = self._read("SELECT id, at, event, detail FROM audit ORDER BY id").fetchall()
        return [
            {"id": i, "at": at, "event": event, **json.loads(detail)}
            for i, at, event, detail in rows
        ]
