"""The store's sessions: a team's page opened with its token, kept as the SHA-256 of a random
id with the team, the token hash it was opened under and its expiry, so that every web process
of a server knows it, and a token replaced or revoked ends it at once; the organiser's page
opened with the admin token, kept the same way until it expires."""

from __future__ import annotations

import hmac
import json
from datetime import timedelta

from scorer.serve.sqlcore import SqlCore
from scorer.serve.store import Team


class Sessions(SqlCore):
    """Open, find and end sessions, each one transaction (`postgres.PostgresStore` does each
    by a function of the database's, `pgrules`, so that its web role never reads the table)."""

    def open_session(
        self, team: int, id_sha256: str, token_sha256: str, lifetime: timedelta
    ) -> bool:
        """Open a session of `team` for `lifetime`, if `token_sha256` is still its token's
        and the team is not revoked; whether it was opened. Expired sessions go meanwhile."""
        now = self.clock()
        with self._write() as db:
            self._run(db, "DELETE FROM sessions WHERE expires_at <= ?", now.isoformat())
            made = self._run(
                db,
                "INSERT INTO sessions SELECT ?, id, token_sha256, ? FROM teams"
                " WHERE id = ? AND token_sha256 = ? AND revoked = 0",
                id_sha256,
                (now + lifetime).isoformat(),
                team,
                token_sha256,
            ).rowcount
        return bool(made)

    def session_team(self, id_sha256: str) -> Team | None:
        """The team of a live session: not expired, its team not revoked, and opened under
        the team's current token."""
        row = self._read(
            "SELECT t.id, t.name FROM sessions s"
            " JOIN teams t ON t.id = s.team AND t.token_sha256 = s.token_sha256"
            " WHERE s.id_sha256 = ? AND s.expires_at > ? AND t.revoked = 0",
            id_sha256,
            self.clock().isoformat(),
        ).fetchone()
        return None if row is None else Team(int(row[0]), str(row[1]))

    def revoked(self, token_sha256: str) -> bool:
        """Whether the token is a revoked team's (a login is told so in its own words)."""
        found = self._read(
            "SELECT 1 FROM teams WHERE token_sha256 = ? AND revoked <> 0", token_sha256
        ).fetchone()
        return found is not None

    def close_session(self, id_sha256: str) -> None:
        """End a session, a team's or the organiser's."""
        with self._write() as db:
            self._run(db, "DELETE FROM sessions WHERE id_sha256 = ?", id_sha256)
            self._run(db, "DELETE FROM admin_sessions WHERE id_sha256 = ?", id_sha256)

    def open_admin_session(self, id_sha256: str, token_sha256: str, lifetime: timedelta) -> bool:
        """Open an organiser's session for `lifetime`, if `token_sha256` is the admin token's
        as the store's settings hold it; whether it was opened (audited). Expired ones go."""
        now = self.clock()
        with self._write() as db:
            row = self._run(db, "SELECT value FROM state WHERE key = 'settings'").fetchone()
            held = "" if row is None else str(json.loads(row[0]).get("admin_sha256") or "")
            if not held or not hmac.compare_digest(held, token_sha256):
                return False
            self._run(db, "DELETE FROM admin_sessions WHERE expires_at <= ?", now.isoformat())
            expires = (now + lifetime).isoformat()
            self._run(db, "INSERT INTO admin_sessions VALUES (?, ?)", id_sha256, expires)
            self._log(db, now, "admin_login", {})
        return True

    def admin_session(self, id_sha256: str) -> bool:
        """Whether an organiser's session is live (not expired)."""
        row = self._read(
            "SELECT 1 FROM admin_sessions WHERE id_sha256 = ? AND expires_at > ?",
            id_sha256,
            self.clock().isoformat(),
        ).fetchone()
        return row is not None
