"""The PostgreSQL store: one database for many web processes and workers, on any machines.
Every write is one transaction; an upload's and a team's picks hold the team's row (`FOR
UPDATE`), so that two web processes cannot both count four accepted and both insert the
fifth; workers claim jobs with `FOR UPDATE SKIP LOCKED`, never the same one twice."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from scorer.serve.sql import Connection, SqlStore, tables
from scorer.serve.store import Limits

#: The advisory lock held while the schema is made: two processes starting together would
#: otherwise race on `CREATE ... IF NOT EXISTS`.
SCHEMA_LOCK = 0x5C0_2E5

#: The tables, and the triggers that keep the audit log append-only.
SCHEMA = (
    tables("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY")
    + """
CREATE OR REPLACE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
CREATE OR REPLACE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE OR REPLACE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
"""
)


class PostgresStore(SqlStore):
    """The store in a PostgreSQL database (`url`: `postgresql://…`)."""

    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, limits: Limits) -> None:
        super().__init__(limits)
        self.url = url
        self._local = threading.local()
        with self._write() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            db.execute(SCHEMA)

    def _db(self) -> psycopg.Connection[tuple[object, ...]]:
        db: psycopg.Connection[tuple[object, ...]] | None = getattr(self._local, "db", None)
        if db is None or db.closed:
            db = psycopg.connect(self.url, autocommit=True)  # each write opens its own
            self._local.db = db
        return db

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        db = self._db()
        with db.transaction():
            yield db

    def _lock_team(self, db: Connection, team: int) -> None:
        self._run(db, "SELECT 1 FROM teams WHERE id = ? FOR UPDATE", team)

    def _taken(self, exc: Exception) -> bool:
        return isinstance(exc, psycopg.errors.UniqueViolation)

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")
