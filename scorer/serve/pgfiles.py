"""Where a PostgreSQL store keeps files: in the database, a chunk of a MiB a row (`files`;
the solution and the salt apart, in `hidden`), so that no machine of a server shares a folder
with another. The organiser's files, every upload as received until its verdict, then its
kept form and the reference it names (`sqlkept`), each written in the transaction that names
it and fetched to a machine's own folder when it is read."""

from __future__ import annotations

import hashlib
import os
import secrets
from contextlib import AbstractContextManager
from pathlib import Path
from typing import cast

import psycopg

from scorer.kept import KeptError
from scorer.serve.sqlcommit import revealable
from scorer.serve.sqlcore import Connection, NotAllowed, SqlCore
from scorer.serve.sqlkept import KEPT, REFERENCES
from scorer.serve.store import TARGETS, kept_name, upload_name

#: The size of a file's chunks in the database.
CHUNK = 1 << 20


class Tampered(ValueError):
    """An upload whose bytes in the database are not those it was accepted with."""


class PostgresFiles(SqlCore):
    """The files of a PostgreSQL store (`postgres.PostgresStore` inherits them)."""

    def _write(self) -> AbstractContextManager[psycopg.Connection[tuple[object, ...]]]:
        raise NotImplementedError

    def _keep(self, db: Connection, name: str, source: Path, table: str = "files") -> None:
        """A file's bytes, a chunk a row (one row, empty, for an empty file: kept all the
        same)."""
        with source.open("rb") as handle:
            chunks = iter(lambda: handle.read(CHUNK), b"")
            for seq, chunk in enumerate(chunks) if source.stat().st_size else [(0, b"")]:
                self._run(db, f"INSERT INTO {table} VALUES (?, ?, ?)", name, seq, chunk)

    def _keep_hidden(self, db: Connection, name: str, source: Path) -> None:
        self._run(db, "DELETE FROM hidden WHERE name = ?", name)
        self._keep(db, name, source, "hidden")

    def solution_into(self, path: Path) -> None:
        whole = path.with_name(f".{path.name}.new")
        if self.fetch(path.name, whole, hidden=True) is None:
            whole.unlink()
            raise FileNotFoundError(f"no {path.name} in the database")
        os.replace(whole, path)

    def fetch(self, name: str, dest: Path, *, hidden: bool = False) -> str | None:
        """Write the file kept under `name` to `dest` (among the `hidden` ones: the
        solution); the sha256 of its bytes, None when there is no such file. A server-side
        cursor reads it a few chunks at a time, never whole in memory. A role that may not
        read it: `NotAllowed`."""
        table, found, hashed = "hidden" if hidden else "files", False, hashlib.sha256()
        query = self._sql(f"SELECT data FROM {table} WHERE name = ? ORDER BY seq")
        try:
            handle = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the solution
            with self._write() as db, db.cursor(name="fetch") as rows, open(handle, "wb") as out:
                rows.itersize = 4
                rows.execute(query, (name,))
                for (chunk,) in rows:
                    hashed.update(cast(bytes, chunk))
                    out.write(cast(bytes, chunk))
                    found = True
        except psycopg.errors.InsufficientPrivilege:
            raise NotAllowed(f"this database role may not read {name}") from None
        return hashed.hexdigest() if found else None

    # where an upload's bytes lie (`sqlkept.KeptUploads`): the database, fetched

    def _received_file(self, submission: int, path: str, sha256: str, scratch: Path) -> Path:
        """A copy of an upload's bytes in `scratch`, under the name its team gave it, whose
        bytes are those it was accepted with (`Tampered` if not: a web role wrote them)."""
        dest = scratch / Path(path).name
        found = self.fetch(upload_name(submission), dest)
        if found is None:
            dest.unlink(missing_ok=True)
            raise FileNotFoundError(f"submission {submission}: no file in the database")
        if found != sha256:
            raise Tampered(f"submission {submission}: its bytes are not those it was accepted with")
        return dest

    def _kept_file(self, submission: int, path: str, scratch: Path) -> Path:
        return self._fetched(kept_name(submission), scratch / KEPT)

    def _reference_file(self, sha256: str, scratch: Path) -> Path:
        return self._fetched(f"{REFERENCES}/{sha256}", scratch / f"{REFERENCES}-{sha256}")

    def _targets_file(self, scratch: Path) -> Path:
        return self._fetched(TARGETS, scratch / TARGETS)

    def _fetched(self, name: str, dest: Path) -> Path:
        if self.fetch(name, dest) is None:
            dest.unlink(missing_ok=True)
            raise FileNotFoundError(f"no {name} in the database")
        return dest

    def _put_kept(
        self, submission: int, path: str, blob: bytes, reference: str, at: str, scratch: Path
    ) -> None:
        """In one transaction: the reference copied from the targets once (in the database,
        checked by its sha256), the kept form, its record, and the bytes as received
        removed."""
        named = f"{REFERENCES}/{reference}"
        with self._write() as db:
            there = self._run(db, "SELECT 1 FROM files WHERE name = ? LIMIT 1", named)
            if there.fetchone() is None:
                self._run(
                    db,
                    "INSERT INTO files SELECT ?, seq, data FROM files WHERE name = ?",
                    named,
                    TARGETS,
                )
                (copied,) = self._run(
                    db,
                    "SELECT encode(sha256(coalesce(string_agg(data, ''::bytea ORDER BY seq),"
                    " ''::bytea)), 'hex') FROM files WHERE name = ?",
                    named,
                ).fetchone()
                if copied != reference:
                    raise KeptError(f"the targets are not those of the reference {reference}")
            name = kept_name(submission)
            for seq, start in enumerate(range(0, max(len(blob), 1), CHUNK)):
                chunk = blob[start : start + CHUNK]
                self._run(db, "INSERT INTO files VALUES (?, ?, ?)", name, seq, chunk)
            self._run(
                db, "INSERT INTO kept VALUES (?, ?, ?, ?)", submission, reference, len(blob), at
            )
            self._run(db, "DELETE FROM files WHERE name = ?", upload_name(submission))

    def revealed_file(self, name: str, scratch: Path) -> Path | None:
        """A copy in `scratch` of a file the reveal published to `files` (`pgrules.reveal`),
        made once (a revealed file never changes), whole, then put in place at once."""
        dest, whole = scratch / revealable(name), scratch / f".{name}.{secrets.token_hex(8)}"
        scratch.mkdir(mode=0o700, exist_ok=True)
        if not dest.is_file() and self.fetch(f"revealed/{name}", whole) is not None:
            os.replace(whole, dest)
        whole.unlink(missing_ok=True)
        return dest if dest.is_file() else None
