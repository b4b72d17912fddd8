"""The store's state: one row a key, one text for every database (`SqlStore` inherits it):
the settings and the limits they make, the marks of the schedule, the reveal and the
organiser's description."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from scorer.serve.sqlcore import Connection, SqlCore
from scorer.serve.store import Limits


class StateStore(SqlCore):
    """The settings, the schedule's marks, the reveal and the description (`state`)."""

    def put_limits(self) -> None:
        """Make the limits the store was opened with the ones in force."""
        with self._write() as db:
            self._put(db, "limits", self.limits.to_dict())

    def put_settings(self, settings: dict[str, Any]) -> None:
        """A new competition's settings and the limits it was opened with (`init`)."""
        with self._write() as db:
            self._put(db, "settings", settings)
            self._put(db, "limits", self.limits.to_dict())

    def _put(self, db: Connection, key: str, value: dict[str, Any]) -> None:
        self._run(
            db,
            "INSERT INTO state VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            key,
            json.dumps(value, sort_keys=True),
        )

    def settings(self) -> dict[str, Any] | None:
        """The competition's settings, as the organiser set them last (`site.Settings`)."""
        row = self._read("SELECT value FROM state WHERE key = 'settings'").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def set_settings(
        self, settings: dict[str, Any], limits: Limits, changed: dict[str, Any]
    ) -> None:
        """New settings and the limits they make, in force from this transaction on, and the
        change audited (`changed`: each setting changed, as it was and as it is)."""
        with self._write() as db:
            self._put(db, "settings", settings)
            self._put(db, "limits", limits.to_dict())
            self._log(db, self.clock(), "settings", changed)

    def mark(self, stage: str) -> bool:
        """Record, once, that a scheduled time came (`stage`: `started`, `frozen`, `ended`):
        whether this call did (the first of every process that watches the clock)."""
        now = self.clock()
        with self._write() as db:
            made = self._run(
                db, "INSERT INTO state VALUES (?, ?) ON CONFLICT DO NOTHING", stage, now.isoformat()
            ).rowcount
            if made:
                self._log(db, now, stage, {})
        return bool(made)

    def marked(self) -> dict[str, str]:
        """The scheduled times that came, and when (`mark`), and the reveal's."""
        stages = ("started", "frozen", "ended", "revealed_at")
        marks = ", ".join("?" * len(stages))
        rows = self._read(f"SELECT key, value FROM state WHERE key IN ({marks})", *stages)
        return {str(key): str(value) for key, value in rows.fetchall()}

    def reveal(self) -> str:
        """Reveal the final board, once; when it was revealed."""
        now = self.clock()
        with self._write() as db:
            made = self._run(
                db,
                "INSERT INTO state VALUES ('revealed_at', ?) ON CONFLICT DO NOTHING",
                now.isoformat(),
            ).rowcount
            (when,) = self._run(db, "SELECT value FROM state WHERE key = 'revealed_at'").fetchone()
            if made:
                self._log(db, now, "reveal", {})
        return str(when)

    def revealed(self) -> str | None:
        row = self._read("SELECT value FROM state WHERE key = 'revealed_at'").fetchone()
        return None if row is None else str(row[0])

    def description(self) -> str:
        """The organiser's description of the competition (Markdown), "" when none."""
        row = self._read("SELECT value FROM state WHERE key = 'description'").fetchone()
        return "" if row is None else str(row[0])

    def put_description(self, text: str) -> None:
        """Make `text` the description (the organiser's: a web role may only read it);
        audited with its sha256 and size."""
        now = self.clock()
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO state VALUES ('description', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                text,
            )
            data = text.encode()
            detail = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            self._log(db, now, "description", detail)
