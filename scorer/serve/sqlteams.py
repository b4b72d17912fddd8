"""The store's SQL of the teams, one text for every database: a team a name as the manifest
reads it (`names.same_team`, held by the unique `name_key`), added many in one transaction,
its token replaced, revoked, listed."""

from __future__ import annotations

from datetime import datetime

from scorer.leaderboard.names import same_team
from scorer.serve.sqlcore import Connection, SqlCore, TeamTaken
from scorer.serve.store import Rekeyed, Team


class TeamStore(SqlCore):
    """The teams' part of the store (`sql.SqlStore`): each method is one transaction."""

    def add_team(self, name: str, token_sha256: str) -> int:
        """Add a team (`add_teams`): its id."""
        return self.add_teams([(name, token_sha256)])[0]

    def add_teams(self, teams: list[tuple[str, str]]) -> list[int]:
        """Add teams, each a name and its token's sha256, all or none in one transaction: a
        name that is a team already, or listed twice, as one team (`same_team`, held by the
        table's unique `name_key`), raises `TeamTaken` and adds none. Their ids."""
        now = self.clock()
        try:
            with self._write() as db:
                return [self._add_team(db, now, name, token) for name, token in teams]
        except Exception as exc:
            if self._taken(exc):
                raise self._clash([name for name, _ in teams]) from None
            raise

    def _add_team(self, db: Connection, now: datetime, name: str, token_sha256: str) -> int:
        """One team added and audited in the transaction `db`."""
        (ident,) = self._run(
            db,
            "INSERT INTO teams (name, name_key, token_sha256) VALUES (?, ?, ?) RETURNING id",
            name,
            same_team(name),
            token_sha256,
        ).fetchone()
        self._log(db, now, "team_added", {"team": name})
        return int(ident)

    def _clash(self, names: list[str]) -> TeamTaken:
        """Which of `names` broke a unique key: the first that is a team already, else the
        first listed twice."""
        held = self.team_keys()
        seen: dict[str, str] = {}
        for name in names:
            key = same_team(name)
            if key in held:
                return TeamTaken(name, *held[key])
            if key in seen:
                return TeamTaken(name, seen[key])
            seen[key] = name
        return TeamTaken(names[0], names[0])  # a token's sha256 taken: never by chance

    def _key_teams(self, db: Connection) -> None:
        """The `name_key` of every team of a store made before it, in the transaction `db`
        that adds the column: a team added before the rule as a second spelling of another
        keeps none (and its token), and the first spelling, by id, holds the name."""
        self._run(db, "ALTER TABLE teams ADD COLUMN name_key TEXT")
        self._run(db, "CREATE UNIQUE INDEX IF NOT EXISTS teams_one_name ON teams(name_key)")
        first: dict[str, int] = {}
        for ident, name in self._run(db, "SELECT id, name FROM teams ORDER BY id").fetchall():
            first.setdefault(same_team(str(name)), int(ident))
        for key, ident in first.items():
            self._run(db, "UPDATE teams SET name_key = ? WHERE id = ?", key, ident)

    def replace_token(self, name: str, token_sha256: str, now: datetime) -> Rekeyed | None:
        """Give the team `name` (or another spelling of it) a new token: the old one opens
        nothing from this transaction on, and a revoked team is let back in (a revoked token
        stays revoked: it is replaced). None when there is no such team."""
        with self._write() as db:
            row = self._run(
                db,
                "SELECT id, name, revoked FROM teams WHERE name = ? OR name_key = ?"
                " ORDER BY name = ? DESC, id LIMIT 1",
                name,
                same_team(name),
                name,
            ).fetchone()
            if row is None:
                return None
            self._run(
                db,
                "UPDATE teams SET token_sha256 = ?, revoked = 0 WHERE id = ?",
                token_sha256,
                row[0],
            )
            found = Rekeyed(str(row[1]), bool(row[2]))
            detail = {"team": found.name, "was_revoked": found.was_revoked}
            self._log(db, now, "team_token", detail)
        return found

    def team_of(self, token_sha256: str) -> Team | None:
        row = self._read(
            "SELECT id, name FROM teams WHERE token_sha256 = ? AND revoked = 0", token_sha256
        ).fetchone()
        return None if row is None else Team(int(row[0]), str(row[1]))

    def revoke_team(self, name: str, now: datetime) -> bool:
        """Revoke a team's token (its submissions stay); whether a team had that name."""
        with self._write() as db:
            changed = self._run(db, "UPDATE teams SET revoked = 1 WHERE name = ?", name).rowcount
            if changed:
                self._log(db, now, "team_revoked", {"team": name})
        return bool(changed)

    def team_ids(self) -> list[tuple[int, str]]:
        """Every team's id and name."""
        rows = self._read("SELECT id, name FROM teams ORDER BY id").fetchall()
        return [(int(ident), str(name)) for ident, name in rows]

    def most_picks(self) -> int:
        """The most picks any team has now."""
        row = self._read("SELECT max(n) FROM (SELECT count(*) AS n FROM picks GROUP BY team) c")
        return int(row.fetchone()[0] or 0)

    def teams(self) -> list[tuple[str, bool]]:
        """Every team, by name, and whether its token is revoked."""
        rows = self._read("SELECT name, revoked FROM teams ORDER BY name").fetchall()
        return [(str(name), bool(revoked)) for name, revoked in rows]

    def team_keys(self) -> dict[str, tuple[str, bool]]:
        """Each team's `name_key`, with the name that holds it and whether it is revoked."""
        rows = self._read(
            "SELECT name_key, name, revoked FROM teams WHERE name_key IS NOT NULL"
        ).fetchall()
        return {str(key): (str(name), bool(revoked)) for key, name, revoked in rows}
