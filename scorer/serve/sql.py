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

import numpy as np

from scorer.competition import Split
from scorer.leaderboard.runs import KEPT_FAILURES, Saved
from scorer.leaderboard.schema import SPLITS
from scorer.leaderboard.schema import Status as Judged
from scorer.leaderboard.store import Fingerprint, Record
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
    upload_name,
    utc,
)

_ENTRY = (
    "SELECT s.id, t.name, s.submitted_at, s.sha256, s.size, s.path, s.suffix, s.status,"
    " v.public, v.error, p.submission IS NOT NULL, s.counted"
    " FROM submissions s JOIN teams t ON t.id = s.team"
    " LEFT JOIN verdicts v ON v.submission = s.id"
    " LEFT JOIN picks p ON p.submission = s.id"
)

#: The submissions on the boards: judged, and not a failure refunded (the server's, not the
#: team's file's); `serve export` writes exactly these.
ON_BOARD = (
    "s.status IN ('scored', 'rejected', 'failed')"
    " AND NOT (s.status = 'failed' AND s.counted IS NULL)"
)

#: The events that change the boards.
CHANGES = ("verdict", "picks", "reveal")

#: A verdict's columns, as `_saved` reads them.
_VERDICT = (
    "v.solution_hash, v.scorer_version, v.config, v.status, v.content_hash, v.scores, v.error,"
    " v.seconds"
)

#: The queued jobs in the order they are claimed: round robin by team (each team's first
#: in line, oldest first, then each one's second…), a team's jobs being judged counted as
#: ahead of its queued ones, so that one team's slow files never hold back another's.
_FAIR = (
    "SELECT q.id FROM (SELECT id, row_number() OVER (PARTITION BY team ORDER BY id)"
    " + (SELECT count(*) FROM submissions b WHERE b.team = s.team AND b.status = 'scoring')"
    " AS turn FROM submissions s WHERE status = 'queued') q ORDER BY q.turn, q.id LIMIT ?"
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
        #: The time an upload or a pick is judged at, read in its transaction.
        self.clock: Callable[[], datetime] = utc

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

    def _sql(self, sql: str) -> str:
        return sql

    def upload_file(self, submission: int, path: str, scratch: Path) -> Path:
        """An upload's file for a worker to judge: where the store keeps it, or a copy
        in `scratch` (a folder of the worker's own, removed when the job is done)."""
        raise NotImplementedError

    def recover(self, now: datetime) -> int:
        """Queue again the jobs a worker left unfinished before it stopped (`requeue_stale`);
        how many. A store shared by many workers frees those whose lease ended."""
        return self.requeue_stale(now)

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

    def closed(self, run: Callable[..., Cursor], now: datetime, end: datetime | None) -> bool:
        """Whether uploads and picks are closed at `now`: past the end, or revealed."""
        if end is not None and now >= end:
            return True
        return run("SELECT 1 FROM state WHERE key = 'revealed_at'").fetchone() is not None

    def accept_upload(
        self,
        team: int,
        sha256: str,
        size: int,
        path: str,
        suffix: str = "",
        source: Path | None = None,
        *,
        end: datetime | None = None,
    ) -> Decision:
        """Count and record an upload whose body is whole and on disk, unless the competition
        is closed or a limit is reached; a store that `HOLDS_FILES` keeps its bytes
        (`source`) in the same transaction. Its time is taken in the transaction, with the
        team's row held: the end, the reveal and the limits are judged at that moment."""
        with self._write() as db:
            self._lock_team(db, team)
            now = self.clock()
            reads = partial(self._run, db)  # in the transaction that accepts
            quota = self._quota(reads, team, now)
            if self.closed(reads, now, end):
                return Decision(None, quota, "competition_ended")
            if quota.limit is not None:
                return Decision(None, quota, quota.limit)
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

    def refuse_upload(self, team: int, now: datetime, reason: str) -> None:
        """Count an upload refused: one row a team, reason and minute, however many come."""
        minute = now.replace(second=0, microsecond=0).isoformat()
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO refusals VALUES (?, ?, ?, 1) ON CONFLICT (team, reason, minute)"
                " DO UPDATE SET count = refusals.count + 1",
                team,
                reason,
                minute,
            )

    def refusals(self) -> list[dict[str, Any]]:
        """The uploads refused, counted by team, reason and minute, oldest first."""
        rows = self._read(
            "SELECT t.name, r.reason, r.minute, r.count FROM refusals r"
            " LEFT JOIN teams t ON t.id = r.team ORDER BY r.minute, t.name, r.reason"
        ).fetchall()
        return [
            {"team": team, "reason": reason, "minute": minute, "count": int(count)}
            for team, reason, minute, count in rows
        ]

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
                " WHERE status = 'queued' AND id IN (SELECT id FROM submissions"
                f" WHERE status = 'queued' AND id IN ({_FAIR}){self.SKIP_LOCKED})"
                " RETURNING id, team, path",
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

    def finish_job(self, job: Job, verdict: Saved, counted: Counted | None, now: datetime) -> bool:
        """Write a job's verdict whole, per-user scores included, once, under the claim that
        holds it: a job no longer `scoring`, or claimed since by another worker, keeps its
        verdict (and this one writes nothing)."""
        with self._write() as db:
            changed = self._run(
                db,
                "UPDATE submissions SET status = ?, counted = ?, finished_at = ?"
                " WHERE id = ? AND status = 'scoring' AND claim = ?",
                str(verdict.status),
                None if counted is None else str(counted),
                now.isoformat(),
                job.id,
                job.claim,
            ).rowcount
            if changed:
                self._write_verdict(db, job.id, verdict, now)
                detail = {"id": job.id, "verdict": str(verdict.status), "counted": counted}
                self._log(db, now, "verdict", detail)
        return bool(changed)

    def _write_verdict(
        self, db: Connection, submission: int, verdict: Saved, now: datetime
    ) -> None:
        fingerprint, scores = verdict.fingerprint, verdict.scores or {}
        self._run(
            db,
            "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            submission,
            fingerprint.solution_hash,
            fingerprint.scorer_version,
            fingerprint.config,
            str(verdict.status),
            verdict.content_hash,
            scores.get("overall"),
            scores.get("public"),
            scores.get("private"),
            None if verdict.scores is None else json.dumps(verdict.scores),
            None if verdict.error is None else json.dumps(verdict.error),
            verdict.seconds,
            now.isoformat(),
        )
        for split, blob in verdict.per_user.items():
            self._run(db, "INSERT INTO per_user VALUES (?, ?, ?)", submission, str(split), blob)

    def saved(self, submission: int) -> Saved | None:
        """A submission's verdict whole, per-user scores included."""
        row = self._read(
            f"SELECT {_VERDICT} FROM verdicts v WHERE v.submission = ?", submission
        ).fetchone()
        return None if row is None else self._saved(submission, row)

    def _saved(self, submission: int, row: tuple[Any, ...]) -> Saved:
        solution, version, config, status, content, scores, error, seconds = row
        blobs = self._read(
            "SELECT split, scores FROM per_user WHERE submission = ?", submission
        ).fetchall()
        return Saved(
            fingerprint=Fingerprint(solution, version, config),
            status=Judged(status),
            content_hash=content,
            scores=None if scores is None else json.loads(scores),
            error=None if error is None else json.loads(error),
            seconds=float(seconds),
            per_user={Split(split): bytes(blob) for split, blob in blobs},
        )

    def reusable(self, content_hash: str, fingerprint: Fingerprint, name: str) -> Saved | None:
        """A verdict kept for the same bytes under the same name and fingerprint: whatever
        uploaded them, their verdict is the same. Not a failure of the server's (tried
        again), only one a file brings on its worker (`KEPT_FAILURES`)."""
        rows = self._read(
            f"SELECT v.submission, s.path, {_VERDICT} FROM verdicts v"
            " JOIN submissions s ON s.id = v.submission"
            " WHERE v.content_hash = ? AND v.solution_hash = ? AND v.scorer_version = ?"
            " AND v.config = ? ORDER BY v.submission DESC",
            content_hash,
            fingerprint.solution_hash,
            fingerprint.scorer_version,
            fingerprint.config,
        ).fetchall()
        for submission, path, *verdict in rows:
            error = json.loads(verdict[6]) if verdict[6] else {}
            if verdict[3] == "failed" and error.get("code") not in KEPT_FAILURES:
                continue
            if Path(path).name == name:
                return self._saved(int(submission), tuple(verdict))
        return None

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

    def last_change(self) -> tuple[int, datetime | None]:
        """The audit log's latest verdict, picks or reveal, and when: the boards change
        when it does."""
        marks = ", ".join("?" * len(CHANGES))
        row = self._read(
            "SELECT id, at FROM audit"
            f" WHERE id = (SELECT max(id) FROM audit WHERE event IN ({marks}))",
            *CHANGES,
        ).fetchone()
        return (0, None) if row is None else (int(row[0]), datetime.fromisoformat(row[1]))

    # the boards: built from the verdicts (`serve.boards`), published for every web process

    def records(self, *, private: bool = True) -> list[Record]:
        """Every submission on the boards with its verdict, as the leaderboard's own store
        gives them (`Store.records`); without `private` no private figure is selected."""
        overall, hidden = ("v.overall", "v.private") if private else ("NULL", "NULL")
        rows = self._read(
            "SELECT s.id, t.name, s.suffix, s.submitted_at, p.submission IS NOT NULL, v.status,"
            f" {overall}, v.public, {hidden}, v.error, v.judged_at"
            " FROM submissions s JOIN teams t ON t.id = s.team"
            " JOIN verdicts v ON v.submission = s.id"
            f" LEFT JOIN picks p ON p.submission = s.id WHERE {ON_BOARD}"
            " ORDER BY t.name, s.submitted_at, s.id"
        ).fetchall()
        return [self._record(row) for row in rows]

    @staticmethod
    def _record(row: tuple[Any, ...]) -> Record:
        ident, team, suffix, when, selected, status, overall, public, private, error, at = row
        return Record(
            id=int(ident),
            team=str(team),
            path=f"submissions/{ident}{suffix}",
            submitted_at=datetime.fromisoformat(when),
            selected=bool(selected),
            status=Judged(status),
            overall=overall,
            public=public,
            private=private,
            error=json.loads(error) if error else None,
            scored_at=at,
        )

    def per_user(self, idents: Any, split: Split) -> dict[int, np.ndarray]:
        """The per-user scores of some submissions on one split (`Store.per_user`)."""
        if split not in SPLITS:
            raise ValueError(f"split {split!r}; expected one of {', '.join(SPLITS)}")
        found: dict[int, np.ndarray] = {}
        for ident in idents:
            row = self._read(
                "SELECT scores FROM per_user WHERE submission = ? AND split = ?", ident, str(split)
            ).fetchone()
            if row is not None:
                found[int(ident)] = np.frombuffer(bytes(row[0]), dtype="<f8")
        return found

    def publish(self, name: str, version: int, as_of: str, text: str, html: str) -> None:
        """Publish boards built at `version` of the changes, unless newer ones are."""
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO boards VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET"
                " version = excluded.version, as_of = excluded.as_of, json = excluded.json,"
                " html = excluded.html WHERE boards.version <= excluded.version",
                name,
                version,
                as_of,
                text,
                html,
            )

    def published(self, name: str) -> tuple[int, str, str] | None:
        """The boards published under `name`: their version, JSON and HTML."""
        row = self._read("SELECT version, json, html FROM boards WHERE name = ?", name).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), str(row[2]))

    def versions(self) -> dict[str, int]:
        """Each published board's version."""
        rows = self._read("SELECT name, version FROM boards ORDER BY name").fetchall()
        return {str(name): int(version) for name, version in rows}

    def queue(self) -> dict[str, int]:
        """How many submissions wait for a worker and how many are being judged."""
        rows = self._read(
            "SELECT status, count(*) FROM submissions WHERE status IN ('queued', 'scoring')"
            " GROUP BY status"
        ).fetchall()
        return {"queued": 0, "scoring": 0} | {str(k): int(n) for k, n in rows}

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

    def entries(self, team: int | None = None, *, on_board: bool = False) -> list[Entry]:
        """Every submission (of one team; `on_board`: on the boards only), oldest first."""
        where = [ON_BOARD] if on_board else []
        where += [] if team is None else ["s.team = ?"]
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        args = () if team is None else (team,)
        rows = self._read(f"{_ENTRY}{clause} ORDER BY s.id", *args).fetchall()
        return [self._entry(row) for row in rows]

    def set_picks(
        self, team: int, ids: list[int], most: int, *, end: datetime | None = None
    ) -> list[int]:
        """Make `ids` the team's picks, all or nothing: each must be its own scored one.
        Picks close at the end, and at the reveal, judged in the transaction."""
        chosen = sorted(set(ids))
        if len(chosen) > most:
            raise PickError("too_many", f"{len(chosen)} picks; at most {most} are allowed")
        with self._write() as db:
            self._lock_team(db, team)
            now = self.clock()
            if self.closed(partial(self._run, db), now, end):
                raise PickError("competition_ended", "picks are closed: the competition ended")
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
