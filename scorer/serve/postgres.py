"""The PostgreSQL store: one database for many web processes and workers, on any machines.
Every write is one transaction; an upload's and a team's picks hold the team's row (`FOR
UPDATE`), so that two web processes cannot both count four accepted and both insert the
fifth; workers claim jobs with `FOR UPDATE SKIP LOCKED`, never the same one twice.

The database holds everything a machine of the server needs, so that none shares a folder
with another: the settings, the organiser's files and every upload (`files`, in chunks of a
MiB, compressed with lz4: a 1M-user CSV of 368 MB is written at about 230 MB/s and kept in
190 MB, until its verdict puts its kept form in its place: `pgfiles`), and each worker's
verdict whole (`verdicts`), from which every web process builds its boards. It holds the
hidden solution, apart (`hidden`), where the web processes' role may not read it
(`share(web_role=)`): only the organiser's machines may reach the database."""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg.sql import SQL, Identifier

from scorer.leaderboard.names import same_team
from scorer.serve.pgfiles import PostgresFiles
from scorer.serve.pgrules import FUNCTIONS, REPLACED, REVOKED, WEB_GRANTS
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcore import Connection, Cursor, StoreUnavailable
from scorer.serve.store import (
    Limits,
    Received,
    Team,
    picks_refused,
    tables,
    utc,
)

#: The advisory lock held while the schema is made: two processes starting together would
#: otherwise race on `CREATE ... IF NOT EXISTS`.
SCHEMA_LOCK = 0x5C0_2E5

#: The tables, and the triggers that keep the audit log append-only.
SCHEMA = (
    tables("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BYTEA")
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
"""
    + FUNCTIONS
    + REVOKED
)

#: Every table, made together: a database that has them all is not asked to make them again
#: (a web role may not create anything).
TABLES = tuple(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))

T = TypeVar("T")


def begin(db: psycopg.Connection[tuple[object, ...]]) -> psycopg.Connection[tuple[object, ...]]:
    db.execute("BEGIN")
    return db


class PostgresStore(PostgresFiles, SqlStore):
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
            elif not self._keyed(db):  # a store of an older scorer: upgraded, once
                self._upgrade(db)

    @staticmethod
    def _keyed(db: psycopg.Connection[tuple[object, ...]]) -> bool:
        """Whether the teams have their `name_key` (`SqlStore._key_teams`)."""
        found = db.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = 'teams' AND column_name = 'name_key'"
        ).fetchone()
        return found is not None

    def _upgrade(self, db: psycopg.Connection[tuple[object, ...]]) -> None:
        """Bring the tables and functions of an older scorer up to date, in the transaction
        `db` (only their owner may): the teams' keys, the functions made anew, and the roles
        that could run a function whose arguments changed given the new one instead (never
        PUBLIC, 0: the functions are the owner's alone until granted)."""
        try:
            self._key_teams(db)
        except psycopg.errors.InsufficientPrivilege:
            raise ValueError(
                "its tables were made by an older scorer: run a command of the organiser's on "
                "it once (`scorer serve team list DIR`) to bring them up to date"
            ) from None
        moved = []
        for old, new in REPLACED.items():
            granted = db.execute(
                "SELECT DISTINCT a.grantee::regrole::text FROM pg_proc p,"
                " aclexplode(p.proacl) a WHERE p.oid = to_regprocedure(%s)"
                " AND a.privilege_type = 'EXECUTE' AND a.grantee NOT IN (0, p.proowner)",
                (old,),
            ).fetchall()
            moved += [(new, str(role)) for (role,) in granted]
            db.execute(f"DROP FUNCTION IF EXISTS {old}")
        db.execute(FUNCTIONS + REVOKED)
        for function, role in moved:
            db.execute(
                SQL(f"GRANT EXECUTE ON FUNCTION {function} TO {{}}").format(Identifier(role))
            )

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

    def _clocked(self, db: Connection) -> None:
        """A clock other than the real one (the tests'), for the functions of this
        transaction: they take it from the owner's session only (`pgrules.scorer_now`)."""
        if self.clock is not utc:
            self._run(db, "SELECT set_config('scorer.clock', ?, true)", self.clock().isoformat())

    def _admit(
        self, db: Connection, team: int, received: Received
    ) -> tuple[int | None, str | None, datetime]:
        """`SqlStore._admit`, by the database's function (`pgrules.accept_upload`): the
        upload's chunks written under a name of their own, then the function judges the end,
        the reveal and the limits at the database's time and, if it accepts, names them the
        submission's. A refusal rolls the chunks back (`SqlStore.accept_upload`)."""
        incoming = f"incoming/{secrets.token_hex(16)}"
        self._clocked(db)
        if received.source is not None:
            self._keep(db, incoming, received.source)
        ident, refused, at = self._run(
            db,
            "SELECT * FROM accept_upload(?, ?, ?, ?, ?, ?, ?, ?)",
            team,
            received.sha256,
            received.size,
            received.path,
            received.suffix,
            incoming,
            received.filename,
            received.description,
        ).fetchone()
        when = datetime.fromisoformat(at) if at else self.clock()
        return (None if ident is None else int(ident)), refused, when

    def refuse_upload(self, team: int, reason: str) -> None:
        with self._write() as db:
            self._clocked(db)
            self._run(db, "SELECT refuse_upload(?, ?)", team, reason)

    def set_picks(self, team: int, ids: list[int]) -> list[int]:
        """`SqlStore.set_picks`, by the database's function (`pgrules.set_picks`)."""
        chosen = sorted(set(ids))
        with self._write() as db:
            self._clocked(db)
            refused, detail = self._run(
                db, "SELECT * FROM set_picks(?, ?)", team, chosen
            ).fetchone()
        if refused is not None:
            raise picks_refused(str(refused), str(detail or ""))
        return chosen

    def _add_team(self, db: Connection, now: datetime, name: str, token_sha256: str) -> int:
        """`SqlStore._add_team`, by the database's function (`pgrules.add_team`), which a web
        role runs too."""
        self._clocked(db)
        found = self._run(db, "SELECT add_team(?, ?, ?)", name, same_team(name), token_sha256)
        return int(found.fetchone()[0])

    def set_settings(
        self, settings: dict[str, Any], limits: Limits, changed: dict[str, Any]
    ) -> None:
        """`SqlStore.set_settings`, by the database's function (`pgrules.set_settings`)."""
        texts = [json.dumps(v, sort_keys=True) for v in (settings, limits.to_dict(), changed)]
        with self._write() as db:
            self._clocked(db)
            self._run(db, "SELECT set_settings(?, ?, ?)", *texts)

    def reveal(self) -> str:
        with self._write() as db:
            self._clocked(db)
            (when,) = self._run(db, "SELECT reveal()").fetchone()
        return str(when)

    def _function(self, sql: str, *args: Any) -> Any:
        """The first row of a call of the database's functions, in a transaction of its own
        with the tests' clock (a transaction's, `_clocked`)."""
        with self._write() as db:
            self._clocked(db)
            return self._run(db, sql, *args).fetchone()

    def open_session(
        self, team: int, id_sha256: str, token_sha256: str, lifetime: timedelta
    ) -> bool:
        """`Sessions.open_session`, by the database's function (`pgrules.open_session`)."""
        seconds = lifetime.total_seconds()
        sql = "SELECT open_session(?, ?, ?, ?)"
        return bool(self._function(sql, id_sha256, team, token_sha256, seconds)[0])

    def session_team(self, id_sha256: str) -> Team | None:
        row = self._function("SELECT * FROM session_team(?)", id_sha256)
        return None if row is None or row[0] is None else Team(int(row[0]), str(row[1]))

    def close_session(self, id_sha256: str) -> None:
        self._function("SELECT close_session(?)", id_sha256)

    def open_admin_session(self, id_sha256: str, token_sha256: str, lifetime: timedelta) -> bool:
        """`Sessions.open_admin_session`, by the database's function, which checks the hash."""
        seconds = lifetime.total_seconds()
        sql = "SELECT open_admin_session(?, ?, ?)"
        return bool(self._function(sql, id_sha256, token_sha256, seconds)[0])

    def admin_session(self, id_sha256: str) -> bool:
        return bool(self._function("SELECT admin_session(?)", id_sha256)[0])

    def organiser(self) -> bool:
        """Whether this connection's role is the organiser's: one that may read the hidden
        files (the tables' owner, or one given them), not a web process's."""
        found = self._read("SELECT has_table_privilege('hidden', 'SELECT')").fetchone()
        return bool(found and found[0])

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
            self._put(db, "limits", self.limits.to_dict())
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
