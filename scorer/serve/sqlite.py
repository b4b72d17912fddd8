"""The SQLite store: one file, WAL mode, a busy timeout, one connection per thread; every
write is one `BEGIN IMMEDIATE` transaction, which takes the database's one write lock before
its first read, so two uploads cannot both count four accepted and both insert the fifth."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from scorer.kept import KeptError
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcommit import revealable
from scorer.serve.sqlcore import StoreUnavailable
from scorer.serve.sqlkept import KEPT, PARTIAL, REFERENCES
from scorer.serve.store import TARGETS, Limits, tables
from scorer.write import sync_folder, write_durably

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
        """Every job left `scoring`: a SQLite store has one server, and it is starting.
        What a stop left of keeping uploads small is swept first (`sweep_kept`)."""
        self.sweep_kept()
        return self.requeue_stale()

    def sweep_kept(self) -> int:
        """Remove what a stop while keeping an upload small left (`_put_kept`): a kept form
        half written, or whole but not recorded, and the bytes as received of an upload
        recorded kept; how many files. Only at the start, when nothing is being kept."""
        rows = self._read(
            "SELECT s.path, k.submission IS NOT NULL FROM submissions s"
            " LEFT JOIN kept k ON k.submission = s.id"
        ).fetchall()
        left = 0
        for path, kept in rows:
            received = self.path.parent / path
            for stray in (received if kept else received.parent / KEPT, received.parent / PARTIAL):
                if stray.is_file():
                    stray.unlink()
                    left += 1
        for stray in (self.path.parent / REFERENCES).glob(f"{PARTIAL}*"):
            stray.unlink()
            left += 1
        return left

    # where an upload's bytes lie (`sqlkept.KeptUploads`): the server's folder

    def _received_file(self, submission: int, path: str, sha256: str, scratch: Path) -> Path:
        """An upload as received, linked into `scratch` (copied across file systems): what
        is judged stays whole even if the upload is kept small meanwhile."""
        source, dest = self.path.parent / path, scratch / Path(path).name
        dest.unlink(missing_ok=True)
        try:
            os.link(source, dest)
        except FileNotFoundError:
            raise
        except OSError:
            shutil.copyfile(source, dest)
        return dest

    def _kept_file(self, submission: int, path: str, scratch: Path) -> Path:
        return (self.path.parent / path).parent / KEPT

    def _reference_file(self, sha256: str, scratch: Path) -> Path:
        return self.path.parent / REFERENCES / sha256

    def _targets_file(self, scratch: Path) -> Path:
        return self.path.parent / TARGETS

    def _put_kept(
        self, submission: int, path: str, blob: bytes, reference: str, at: str, scratch: Path
    ) -> None:
        """The reference copied from the targets once; the kept form written beside the
        upload under a name of its own, on disk, put in place, recorded, then the bytes as
        received removed. A stop before the record leaves a kept form nobody names, after
        it the bytes as received: `sweep_kept` removes either at the next start; the upload
        reads whole all along."""
        folder, references = (self.path.parent / path).parent, self.path.parent / REFERENCES
        if not (references / reference).is_file():
            targets = (self.path.parent / TARGETS).read_bytes()
            if hashlib.sha256(targets).hexdigest() != reference:
                raise KeptError(f"the targets are not those of the reference {reference}")
            references.mkdir(mode=0o700, exist_ok=True)
            partial = references / f"{PARTIAL}-{secrets.token_hex(8)}"
            write_durably(targets, partial, references / reference)
        write_durably(blob, folder / PARTIAL, folder / KEPT)
        with self._write() as db:
            self._run(
                db, "INSERT INTO kept VALUES (?, ?, ?, ?)", submission, reference, len(blob), at
            )
        (self.path.parent / path).unlink(missing_ok=True)
        sync_folder(folder)

    def revealed_file(self, name: str, scratch: Path) -> Path | None:
        """A file the reveal publishes, in the server's folder beside the store (no copy);
        None too when the folder has none (a salt, in a folder made before commitments)."""
        kept = self.path.parent / revealable(name)
        return None if self.revealed() is None or not kept.is_file() else kept
