"""The SQLite store: one file, WAL mode, a busy timeout, one connection per thread; every
write is one `BEGIN IMMEDIATE` transaction, which takes the database's one write lock before
its first read, so two uploads cannot both count four accepted and both insert the fifth."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from scorer.serve.sql import SqlStore
from scorer.serve.sqlcommit import revealable
from scorer.serve.sqlcore import StoreUnavailable
from scorer.serve.store import Limits, tables

#: How long a writer waits for another's transaction before SQLite gives up (milliseconds).
BUSY_MS = 30_000

#: SQLite's result codes for a write the system refuses for now, which may succeed later:
#: busy or locked past the timeout, a full disk (SQLITE_FULL), an I/O error.
_AWAY = frozenset({5, 6, 10, 13})

#: The tables, and the triggers that keep the audit log append-only.
SCHEMA = (
    tables("INTEGER PRIMARY KEY", "BLOB")
    + """
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""
)


class SqliteStore(SqlStore):
    """The store in one SQLite file."""

    def __init__(self, path: Path, limits: Limits) -> None:
        super().__init__(limits)
        self.path = path
        self._local = threading.local()
        # executescript runs its own transaction: CREATE ... IF NOT EXISTS is safe to repeat
        self._db().executescript(SCHEMA)
        if not self._keyed(self._db()):  # a store of an older scorer: upgraded, once
            with self._write() as db:
                if not self._keyed(db):
                    self._key_teams(db)

    @staticmethod
    def _keyed(db: sqlite3.Connection) -> bool:
        """Whether the teams have their `name_key` (`SqlStore._key_teams`)."""
        return any(row[1] == "name_key" for row in db.execute("PRAGMA table_info(teams)"))

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
        db = self._db()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in _AWAY:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise StoreUnavailable(f"the store cannot be written now: {exc}") from None
            raise

    def _taken(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def recover(self, now: datetime) -> int:
        """Every job left `scoring`: a SQLite store has one server, and it is starting."""
        return self.requeue_stale()

    def upload_file(self, submission: int, path: str, sha256: str, scratch: Path) -> Path:
        """An upload's file, where the server's folder keeps it (no copy)."""
        return self.path.parent / path

    def revealed_file(self, name: str, scratch: Path) -> Path | None:
        """A file the reveal publishes, in the server's folder beside the store (no copy);
        None too when the folder has none (a salt, in a folder made before commitments)."""
        kept = self.path.parent / revealable(name)
        return None if self.revealed() is None or not kept.is_file() else kept
