"""The store's core: what every part of its SQL stands on. Each method is one transaction, and
what a dialect does its own way (its connections, its write lock, its claim, where it keeps
the files) is a small hook of its subclass (`sqlite.SqliteStore`, `postgres.PostgresStore`).
SQL is written with `?` placeholders; a dialect that spells them otherwise rewrites them
(`_sql`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scorer.serve.store import Limits, utc

if TYPE_CHECKING:
    from scorer.commitment import Commitment


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the store asks of a database connection (sqlite3's and psycopg's both give it)."""

    def execute(self, sql: Any, parameters: Any = ..., /) -> Any: ...


class TeamTaken(ValueError):
    """`name` is a team already: `existing`, as the store spells it (the same name, or
    another spelling of one team), revoked or not."""

    def __init__(self, name: str, existing: str, revoked: bool = False) -> None:
        super().__init__(name)
        self.name, self.existing, self.revoked = name, existing, revoked


class NotAllowed(PermissionError):
    """The database role may not do this: a web process's role reading the solution."""


class StoreUnavailable(ConnectionError):
    """The store's database cannot be reached (a server restarting, a network away): nothing
    was done, and the same call may succeed later."""


class SqlCore:
    """What the store's SQL runs on. A dialect gives `_db` (this thread's connection),
    `_write` (one write transaction, holding whatever lock makes the limits race-free),
    `_lock_team`, `_taken` (the driver's unique-key error) and where the uploads' bytes lie
    (`sqlkept.KeptUploads`)."""

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

    def _keep_hidden(self, db: Connection, name: str, source: Path) -> None:
        """Keep a hidden file's bytes (the solution, the salt) in the store, in place of the
        ones before, for the workers of other machines (a store that `HOLDS_FILES`)."""

    def _seal(self, db: Connection, made: Commitment, salt: Path) -> None:
        """Record a commitment and keep its salt hidden (`sqlcommit.Commitments`)."""
        raise NotImplementedError

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
