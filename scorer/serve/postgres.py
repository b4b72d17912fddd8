"""The PostgreSQL store: one database for many web processes and workers, on any machines.
Every write is one transaction; an upload's and a team's picks hold the team's row (`FOR
UPDATE`), so that two web processes cannot both count four accepted and both insert the
fifth; workers claim jobs with `FOR UPDATE SKIP LOCKED`, never the same one twice.

The database holds everything a machine of the server needs, so that none shares a folder
with another: the settings, the organiser's files and every upload (`files`, in chunks of a
MiB, compressed with lz4: a 1M-user CSV of 368 MB is written at about 230 MB/s and kept in
190 MB), and each worker's verdict whole (`verdicts`), from which every web process builds
its boards. It holds the hidden solution, apart (`hidden`), where the web processes' role
may not read it (`share(web_role=)`): only the organiser's machines may reach the database."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar, cast

import psycopg
from psycopg.sql import SQL, Identifier

from scorer.competition import Split
from scorer.leaderboard.runs import Saved
from scorer.leaderboard.schema import Status
from scorer.leaderboard.store import Fingerprint
from scorer.serve.sql import Connection, Cursor, NotAllowed, SqlStore, StoreUnavailable
from scorer.serve.store import Limits, tables

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
CREATE TABLE IF NOT EXISTS files (
    name TEXT NOT NULL, seq INTEGER NOT NULL, data BYTEA COMPRESSION lz4 NOT NULL,
    PRIMARY KEY (name, seq));
CREATE TABLE IF NOT EXISTS hidden (
    name TEXT NOT NULL, seq INTEGER NOT NULL, data BYTEA COMPRESSION lz4 NOT NULL,
    PRIMARY KEY (name, seq));
CREATE TABLE IF NOT EXISTS verdicts (
    submission BIGINT PRIMARY KEY REFERENCES submissions(id),
    solution_hash TEXT NOT NULL, scorer_version TEXT NOT NULL, config TEXT NOT NULL,
    status TEXT NOT NULL, content_hash TEXT NOT NULL, scores TEXT, error TEXT,
    seconds DOUBLE PRECISION NOT NULL, public_ndcg BYTEA, private_ndcg BYTEA);
"""
)

#: Every table, made together: a database that has them all is not asked to make them again
#: (a web role may not create anything).
TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))

#: What a web role (`share(web_role=)`) may do, table by table: serve, accept uploads, count
#: limits and picks, reveal, read the verdicts. Not a line of `hidden`, where the solution is.
WEB_GRANTS = (
    ("SELECT, INSERT, UPDATE", "teams, submissions, state, files"),
    ("SELECT, INSERT, DELETE", "picks"),
    ("SELECT, INSERT", "audit"),
    ("SELECT", "verdicts"),
)

T = TypeVar("T")

#: The size of a file's chunks in the database.
CHUNK = 1 << 20


def begin(db: psycopg.Connection[tuple[object, ...]]) -> psycopg.Connection[tuple[object, ...]]:
    db.execute("BEGIN")
    return db


class PostgresStore(SqlStore):
    """The store in a PostgreSQL database (`url`: `postgresql://…`)."""

    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"
    HOLDS_FILES = True

    def __init__(self, url: str, limits: Limits) -> None:
        super().__init__(limits)
        self.url = url
        self._local = threading.local()
        with self._write() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            made = db.execute(
                "SELECT count(*) FROM pg_tables"
                " WHERE schemaname = current_schema() AND tablename = ANY(%s)",
                (list(TABLES),),
            ).fetchone()
            if made != (len(TABLES),):
                db.execute(SCHEMA)

    def _db(self) -> psycopg.Connection[tuple[object, ...]]:
        db: psycopg.Connection[tuple[object, ...]] | None = getattr(self._local, "db", None)
        if db is None or db.closed:
            db = psycopg.connect(self.url, autocommit=True)  # each write opens its own
            self._local.db = db
        return db

    def _live(self, first: Callable[[psycopg.Connection[tuple[object, ...]]], T]) -> T:
        """`first(connection)`, again on a new connection when this thread's one turns out
        to be closed (the server restarted, or ended it): a connection that is closed before
        its first statement answers has done nothing, so a web process answers on."""
        try:
            db = self._db()
            try:
                return first(db)
            except psycopg.OperationalError:
                if not db.closed:  # an error of a live connection: not ours to retry
                    raise
                return first(self._db())  # `_db` connects anew
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"the database cannot be reached: {exc}") from None

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        db = self._live(begin)  # once BEGIN is answered, an error is not retried
        try:
            yield db
            db.execute("COMMIT")
        except BaseException as exc:
            with suppress(psycopg.Error):  # a connection that died has rolled back
                db.execute("ROLLBACK")
            if isinstance(exc, psycopg.OperationalError) and db.closed:
                raise StoreUnavailable(f"the database went away: {exc}") from None
            raise

    def _read(self, sql: str, *args: Any) -> Cursor:
        return self._live(lambda db: self._run(db, sql, *args))  # a read is safe to repeat

    def _lock_team(self, db: Connection, team: int) -> None:
        self._run(db, "SELECT 1 FROM teams WHERE id = ? FOR UPDATE", team)

    def _taken(self, exc: Exception) -> bool:
        return isinstance(exc, psycopg.errors.UniqueViolation)

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    def _keep(self, db: Connection, name: str, source: Path, table: str = "files") -> None:
        with source.open("rb") as handle:
            for seq, chunk in enumerate(iter(lambda: handle.read(CHUNK), b"")):
                self._run(db, f"INSERT INTO {table} VALUES (?, ?, ?)", name, seq, chunk)

    def fetch(self, name: str, dest: Path, *, hidden: bool = False) -> bool:
        """Write the file kept under `name` to `dest` (among the `hidden` ones: the
        solution); whether there is one. A server-side cursor reads it a few chunks at a
        time, never whole in memory. A role that may not read it: `NotAllowed`."""
        table, found = "hidden" if hidden else "files", False
        query = self._sql(f"SELECT data FROM {table} WHERE name = ? ORDER BY seq")
        try:
            with self._write() as db, db.cursor(name="fetch") as rows, dest.open("wb") as out:
                rows.itersize = 4
                rows.execute(query, (name,))
                for (chunk,) in rows:
                    out.write(cast(bytes, chunk))
                    found = True
        except psycopg.errors.InsufficientPrivilege:
            raise NotAllowed(f"this database role may not read {name}") from None
        return found

    def share(
        self,
        settings: dict[str, Any],
        files: dict[str, Path],
        hidden: dict[str, Path] | None = None,
        *,
        web_role: str | None = None,
    ) -> bool:
        """Record a new competition, its settings and the organiser's files (the `hidden`
        ones apart), and give `web_role` what a web process needs and not the hidden files,
        in one transaction; False when the database holds one already (nothing is written).
        A role the database does not know, or one that could read the hidden files all the
        same: `ValueError`, and nothing is written."""
        with self._write() as db:
            text = json.dumps(settings, sort_keys=True)
            query = "INSERT INTO state VALUES ('settings', ?) ON CONFLICT DO NOTHING"
            if not self._run(db, query, text).rowcount:
                return False
            for name, source in files.items():
                self._keep(db, name, source)
            for name, source in (hidden or {}).items():
                self._keep(db, name, source, "hidden")
            if web_role is not None:
                self._grant(db, web_role)
        return True

    def _grant(self, db: Connection, role: str) -> None:
        """What a web process of `role` needs (`WEB_GRANTS`), and nothing on `hidden`: a role
        that could read it all the same (a superuser, the tables' owner or a member of its
        role) is refused, as is one the database does not know."""
        try:
            reads = db.execute("SELECT has_table_privilege(%s, 'hidden', 'SELECT')", (role,))
        except psycopg.errors.UndefinedObject:
            raise ValueError(f"the database has no role named {role!r}") from None
        if reads.fetchone() == (True,):
            raise ValueError(
                f"the role {role!r} may read the solution (a superuser, or the owner of the "
                "tables, or a member of its role): give the web processes a role of their own"
            )
        for rights, names in WEB_GRANTS:
            db.execute(SQL(f"GRANT {rights} ON {names} TO {{}}").format(Identifier(role)))

    def settings(self) -> dict[str, Any] | None:
        row = self._read("SELECT value FROM state WHERE key = 'settings'").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def _save_verdict(self, db: Connection, submission: int, verdict: Saved) -> None:
        fingerprint, blobs = verdict.fingerprint, verdict.per_user
        self._run(
            db,
            "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            submission,
            fingerprint.solution_hash,
            fingerprint.scorer_version,
            fingerprint.config,
            str(verdict.status),
            verdict.content_hash,
            None if verdict.scores is None else json.dumps(verdict.scores),
            None if verdict.error is None else json.dumps(verdict.error),
            verdict.seconds,
            blobs.get(Split.PUBLIC),
            blobs.get(Split.PRIVATE),
        )

    def judged(self) -> tuple[set[int], Fingerprint | None]:
        """The submissions a worker's verdict is kept for, and the newest one's fingerprint:
        what a web process copies (a cheap read: no per-user scores)."""
        ids = {int(i) for (i,) in self._read("SELECT submission FROM verdicts").fetchall()}
        row = self._read(
            "SELECT solution_hash, scorer_version, config FROM verdicts"
            " ORDER BY submission DESC LIMIT 1"
        ).fetchone()
        return ids, None if row is None else Fingerprint(*row)

    def verdict(self, submission: int) -> Saved | None:
        """A worker's verdict whole, per-user scores included."""
        row = self._read(
            "SELECT solution_hash, scorer_version, config, status, content_hash, scores, error,"
            " seconds, public_ndcg, private_ndcg FROM verdicts WHERE submission = ?",
            submission,
        ).fetchone()
        if row is None:
            return None
        solution, version, config, status, content, scores, error, seconds, public, private = row
        splits = {Split.PUBLIC: public, Split.PRIVATE: private}
        return Saved(
            fingerprint=Fingerprint(solution, version, config),
            status=Status(status),
            content_hash=content,
            scores=None if scores is None else json.loads(scores),
            error=None if error is None else json.loads(error),
            seconds=float(seconds),
            per_user={split: bytes(blob) for split, blob in splits.items() if blob is not None},
        )
