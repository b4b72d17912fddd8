"""The store's SQL, one text for every database (`sqlcore` its hooks, `queue` its jobs,
`sqlteams` its teams, `sqladmin` the organiser's page's reads, `sqlkept` the uploads'
bytes): the uploads and their limits, the picks, the reveal, the audit log, and the boards'
reads of the verdicts and their publishing."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from scorer.competition import Split
from scorer.leaderboard.schema import SPLITS
from scorer.leaderboard.schema import Status as Judged
from scorer.leaderboard.store import Record
from scorer.serve.queue import Queue
from scorer.serve.sqladmin import AdminReads
from scorer.serve.sqlcommit import Commitments
from scorer.serve.sqlcore import Connection, Cursor
from scorer.serve.sqlkept import KeptUploads
from scorer.serve.sqlsessions import Sessions
from scorer.serve.sqlstate import StateStore
from scorer.serve.sqlteams import TeamStore
from scorer.serve.store import (
    ON_BOARD,
    Counted,
    Decision,
    Entry,
    Limits,
    Quota,
    Received,
    Refused,
    Status,
    day_start,
    picks_refused,
    upload_name,
)

_ENTRY = (
    "SELECT s.id, t.name, s.submitted_at, s.sha256, s.size, s.path, s.suffix, s.status,"
    " v.public, v.error, p.submission IS NOT NULL, s.counted, s.filename, s.description"
    " FROM submissions s JOIN teams t ON t.id = s.team"
    " LEFT JOIN verdicts v ON v.submission = s.id"
    " LEFT JOIN picks p ON p.submission = s.id"
)

#: The events that change the boards.
CHANGES = ("verdict", "picks", "reveal", "settings", "frozen", "solution")


class SqlStore(Queue, TeamStore, Sessions, StateStore, AdminReads, Commitments, KeptUploads):
    """The store every part of a server asks (the web app, the worker, the commands): each
    method is one transaction."""

    def _limits(self, run: Callable[..., Cursor]) -> Limits:
        """The limits in force, read by `run`: those the organiser set last (`set_settings`),
        or, in a store never given any, the ones it was opened with."""
        row = run("SELECT value FROM state WHERE key = 'limits'").fetchone()
        return self.limits if row is None else Limits.from_dict(json.loads(row[0]))

    def limits_now(self) -> Limits:
        return self._limits(self._read)

    def _quota(self, run: Callable[..., Cursor], team: int, now: datetime) -> Quota:
        """A team's quota, read by `run` (a statement in a transaction, or a read)."""
        today, rejected, total = run(
            "SELECT count(*) FILTER (WHERE counted = 'daily' AND submitted_at >= ?),"
            " count(*) FILTER (WHERE counted = 'rejected'), count(counted)"
            " FROM submissions WHERE team = ?",
            day_start(now).isoformat(),
            team,
        ).fetchone()
        return Quota.of(self._limits(run).of_team(team), now, today, rejected, total)

    def quota(self, team: int, now: datetime) -> Quota:
        return self._quota(self._read, team, now)

    def closed(self, run: Callable[..., Cursor], now: datetime) -> bool:
        """Whether uploads and picks are closed at `now`: past the end or the scheduled
        reveal, or revealed."""
        if self._limits(run).closed(now):
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
        filename: str = "",
        description: str = "",
    ) -> Decision:
        """Count and record an upload whose body is whole and on disk, unless the competition
        is closed or a limit is reached; a store that `HOLDS_FILES` keeps its bytes
        (`source`) in the same transaction. Its time is taken in the transaction, with the
        team's row held: the end, the reveal and the limits are judged at that moment, and
        a refusal rolls back whatever the transaction wrote. `filename` and `description`:
        the name it was uploaded as and its team's words for it, kept with it."""
        received = Received(sha256, size, path, suffix, source, filename, description)
        try:
            with self._write() as db:
                ident, refused, now = self._admit(db, team, received)
                if ident is None:
                    raise Refused(refused or "limit", now)
        except Refused as exc:
            return Decision(None, self.quota(team, exc.at), exc.reason)
        return Decision(ident, self.quota(team, now))

    def _admit(
        self, db: Connection, team: int, received: Received
    ) -> tuple[int | None, str | None, datetime]:
        """The upload recorded in the transaction `db` (its id), or why not, and when."""
        self._lock_team(db, team)
        now = self.clock()
        reads = partial(self._run, db)  # in the transaction that accepts
        if self.closed(reads, now):
            return None, "competition_ended", now
        start = self._limits(reads).start
        if start is not None and now < start:
            return None, "not_started", now
        limit = self._quota(reads, team, now).limit
        if limit is not None:
            return None, limit, now
        (ident,) = self._run(
            db,
            "INSERT INTO submissions (team, submitted_at, sha256, size, path, suffix,"
            " status, counted, filename, description)"
            " VALUES (?, ?, ?, ?, ?, ?, 'queued', 'daily', ?, ?) RETURNING id",
            team,
            now.isoformat(),
            received.sha256,
            received.size,
            received.path,
            received.suffix,
            received.filename,
            received.description,
        ).fetchone()
        if received.source is not None:
            self._keep(db, upload_name(int(ident)), received.source)
        (name,) = self._run(db, "SELECT name FROM teams WHERE id = ?", team).fetchone()
        detail = {"team": name, "id": int(ident), "sha256": received.sha256, "size": received.size}
        self._log(db, now, "upload", detail)
        return int(ident), None, now

    def refuse_upload(self, team: int, reason: str) -> None:
        """Count an upload refused: one row a team, reason and minute, however many come."""
        minute = self.clock().replace(second=0, microsecond=0).isoformat()
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

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> Entry:
        (ident, team, when, sha, size, path, suffix, status) = row[:8]
        score, report, selected, counted, filename, description = row[8:]
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
            filename=str(filename),
            description=str(description),
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

    def set_picks(self, team: int, ids: list[int]) -> list[int]:
        """Make `ids` the team's picks, all or nothing: each must be its own scored one,
        and no more than the limit. Picks close at the end, and at the reveal, judged in
        the transaction."""
        chosen = sorted(set(ids))
        with self._write() as db:
            self._lock_team(db, team)
            now = self.clock()
            most = self._limits(partial(self._run, db)).picks
            if self.closed(partial(self._run, db), now):
                raise picks_refused("competition_ended")
            if len(chosen) > most:
                raise picks_refused("too_many", f"{len(chosen)} {most}")
            for ident in chosen:
                row = self._run(
                    db, "SELECT status FROM submissions WHERE id = ? AND team = ?", ident, team
                ).fetchone()
                if row is None:
                    raise picks_refused("not_yours", str(ident))
                if row[0] != Status.SCORED:
                    raise picks_refused("not_scored", f"{ident} {row[0]}")
            self._run(db, "DELETE FROM picks WHERE team = ?", team)
            for ident in chosen:
                self._run(db, "INSERT INTO picks VALUES (?, ?)", team, ident)
            self._log(db, now, "picks", {"team": team, "ids": chosen})
        return chosen

    def audit(self) -> list[dict[str, Any]]:
        rows = self._read("SELECT id, at, event, detail FROM audit ORDER BY id").fetchall()
        return [
            {"id": i, "at": at, "event": event, **json.loads(detail)}
            for i, at, event, detail in rows
        ]
