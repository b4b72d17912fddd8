"""The store's commitments (`scorer.commitment`), one SQL text for every database: their
history, public from `init` on (`state`, which a web role reads), and the salt of the latest,
kept hidden as the solution is (in the server's folder, or in PostgreSQL's `hidden`), until
the reveal publishes both (`revealed_file`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scorer.commitment import Commitment
from scorer.serve.sqlcore import Connection, SqlCore

#: The hidden files the reveal publishes: the solution and the salt of its commitment.
SOLUTION, SALT = "solution.csv", "salt"
REVEALED = (SOLUTION, SALT)


class Commitments(SqlCore):
    """The commitments' history and what the reveal publishes (`sql.SqlStore` inherits it)."""

    def commitments(self) -> list[Commitment]:
        """Every commitment made, oldest first: the latest is the one in force."""
        row = self._read("SELECT value FROM state WHERE key = 'commitments'").fetchone()
        return [] if row is None else [Commitment.from_dict(c) for c in json.loads(row[0])]

    def add_commitment(self, made: Commitment, salt: Path) -> None:
        """Record a new competition's commitment, its salt kept hidden (`init`)."""
        with self._write() as db:
            self._seal(db, made, salt)

    def _seal(self, db: Connection, made: Commitment, salt: Path) -> None:
        """Add `made` to the history and keep its `salt` hidden, in the transaction `db` (a
        new solution's rescore seals its commitment in the transaction that names it)."""
        row = self._run(db, "SELECT value FROM state WHERE key = 'commitments'").fetchone()
        history: list[dict[str, Any]] = [] if row is None else json.loads(row[0])
        self._run(
            db,
            "INSERT INTO state VALUES ('commitments', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            json.dumps([*history, made.to_dict()], sort_keys=True),
        )
        self._keep_hidden(db, SALT, salt)
        self._log(db, self.clock(), "commitment", {"hash": made.hash, "reason": made.reason})

    def revealed_file(self, name: str, scratch: Path) -> Path | None:
        """One of the files the reveal publishes (`REVEALED`), once revealed: where the store
        keeps it, or a copy in `scratch`; None before the reveal."""
        raise NotImplementedError


def revealable(name: str) -> str:
    """`name`, one of the files the reveal publishes (`REVEALED`)."""
    if name not in REVEALED:
        raise ValueError(f"{name!r}: the reveal publishes only {', '.join(REVEALED)}")
    return name
