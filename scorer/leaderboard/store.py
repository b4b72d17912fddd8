"""The results database: SQLite (standard library), one row a submission, written atomically."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from scorer.competition import LOST_ITEMS, Competition, Split
from scorer.errors import FileSystemError, ScorerError, UsageError
from scorer.leaderboard.manifest import Submission
from scorer.leaderboard.schema import SCHEMA, SCHEMA_VERSION, SPLITS, Status

#: How long a writer waits for another run's transaction before giving up, in seconds.
BUSY_TIMEOUT = 60.0


@dataclass(frozen=True)
class Fingerprint:
    """Everything besides a file's content that decides its score: a change rescores it."""

    solution_hash: str
    scorer_version: str
    config: str


@dataclass(frozen=True)
class Record:
    """One submission as the boards see it. `current`: scored or rejected under the database's
    current fingerprint (a row left over from an older solution or version is not)."""

    id: int
    team: str
    path: str
    submitted_at: datetime
    selected: bool
    status: Status
    current: bool
    overall: float | None
    public: float | None
    private: float | None
    error: dict[str, Any] | None
    scored_at: str | None


@dataclass(frozen=True)
class Cached:
    """What the database knows of a submission before it is checked again."""

    id: int
    status: Status
    content_hash: str | None
    fingerprint: Fingerprint | None
    public: float | None
    error: dict[str, Any] | None


#: SQLite's primary result codes for a file that is not a database at all (SQLITE_CORRUPT,
#: SQLITE_NOTADB); any other error is the system refusing (SQLITE_READONLY, SQLITE_FULL,
#: SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_PERM…), and says why.
_NOT_A_DATABASE = frozenset({11, 26})


def refused(path: Path, exc: sqlite3.Error, doing: str) -> ScorerError:
    """A SQLite error as the organiser should read it: a file that is not a database, or the
    system's refusal to `doing` the database, with the path and SQLite's reason."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _NOT_A_DATABASE:
        return UsageError(f"{path}: not a leaderboard database ({exc})")
    return FileSystemError(f"{path}: cannot {doing} the database: {exc}")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def stamp(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="microseconds")


class Store:
    """A leaderboard database. Every write is one transaction, so a run that is interrupted,
    or two runs at once, leave it consistent (WAL journal: readers never wait for a writer)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        """Open (and with `create`, make) the database at `path`; without `create`, nothing
        is written: `show` reads a database, `score` fills one."""
        if path.is_dir():
            raise UsageError(f"{path}: is a directory; expected a database file")
        if not create and not path.is_file():
            raise UsageError(f"{path}: no such database; run `scorer leaderboard score` first")
        if create and not path.parent.is_dir():
            raise UsageError(f"{path}: the folder {path.parent} does not exist")
        self.path = path
        try:
            self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
        except sqlite3.Error as exc:
            raise refused(path, exc, "open") from None
        try:
            self.db.execute("PRAGMA foreign_keys=ON")
            self._setup_waiting(create)
        except sqlite3.Error as exc:
            self.db.close()
            raise refused(path, exc, "open") from None
        except BaseException:
            self.db.close()
            raise

    def _setup_waiting(self, create: bool) -> None:
        """`_setup`, tried again while another process holds the database: SQLite answers
        'database is locked' at once, without its busy wait, when two processes switch a new
        database to WAL together (waiting could deadlock them)."""
        deadline = time.monotonic() + BUSY_TIMEOUT
        while True:
            try:
                self._setup(create)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _setup(self, create: bool) -> None:
        tables = {
            name for (name,) in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if "meta" not in tables and (tables or not create):
            raise UsageError(f"{self.path}: not a leaderboard database (no 'meta' table)")
        if create:
            self.db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
            # WAL with NORMAL sync: a crash can lose the last commits, never corrupt the file.
            self.db.execute("PRAGMA synchronous=NORMAL")
            with self.transaction():
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,)
                )
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            found = "no schema" if row is None else f"schema {row[0]}"
            raise UsageError(
                f"{self.path}: database {found}, this scorer reads schema {SCHEMA_VERSION}; "
                "score into a new database"
            )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE … COMMIT: takes the write lock up front, rolls back on any error.
        A write SQLite refuses (a read-only file, a full disk) is the system's (`refused`)."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise refused(self.path, exc, "write") from None
        try:
            yield
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise refused(self.path, exc, "write") from None
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    # -- the current fingerprint -------------------------------------------------------------

    def competition(self) -> Competition:
        """The competition the current scores were computed for (lost items in a database
        written before competitions had specs)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
        spec = json.loads(row[0]).get("competition") if row else None
        return LOST_ITEMS if spec is None else Competition.of(spec, where="the database")

    def fingerprint(self) -> Fingerprint | None:
        values = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        if "solution_hash" not in values:
            return None
        return Fingerprint(values["solution_hash"], values["scorer_version"], values["config"])

    # -- a run -------------------------------------------------------------------------------

    def sync(self, entries: Sequence[Submission], fingerprint: Fingerprint) -> tuple[int, int]:
        """Make the database mirror the log: add new submissions, update times and selection,
        drop submissions the log no longer lists; record the run. Returns (run id, removed)."""
        with self.transaction():
            for key, value in (
                ("solution_hash", fingerprint.solution_hash),
                ("scorer_version", fingerprint.scorer_version),
                ("config", fingerprint.config),
            ):
                self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS keep (team TEXT, path TEXT)")
            self.db.execute("DELETE FROM keep")
            self.db.executemany(
                "INSERT INTO keep VALUES (?, ?)", [(e.team, e.key) for e in entries]
            )
            removed = self.db.execute(
                "DELETE FROM submissions WHERE (team, path) NOT IN (SELECT team, path FROM keep)"
            ).rowcount
            self.db.executemany(
                """INSERT INTO submissions (team, path, submitted_at, selected)
                VALUES (?, ?, ?, ?)
                ON CONFLICT (team, path) DO UPDATE SET
                    submitted_at = excluded.submitted_at, selected = excluded.selected""",
                [(e.team, e.key, stamp(e.submitted_at), int(e.selected)) for e in entries],
            )
            run = self.db.execute(
                "INSERT INTO runs (started_at, solution_hash, scorer_version, config) "
                "VALUES (?, ?, ?, ?)",
                (now(), fingerprint.solution_hash, fingerprint.scorer_version, fingerprint.config),
            ).lastrowid
        return int(run or 0), removed

    def finish_run(self, run: int, counts: dict[str, int]) -> None:
        with self.transaction():
            self.db.execute(
                "UPDATE runs SET finished_at = ?, counts = ? WHERE id = ?",
                (now(), json.dumps(counts), run),
            )

    def cached(self, team: str, key: str) -> Cached:
        row = self.db.execute(
            "SELECT id, status, content_hash, solution_hash, scorer_version, config, public, "
            "error FROM submissions WHERE team = ? AND path = ?",
            (team, key),
        ).fetchone()
        if row is None:
            raise UsageError(f"submission {team}/{key} vanished from the database during the run")
        ident, status, content, solution, version, config, public, error = row
        known = Fingerprint(solution, version, config) if solution is not None else None
        stored = json.loads(error) if error else None
        return Cached(ident, Status(status), content, known, public, stored)

    def mark_checked(self, ident: int) -> None:
        with self.transaction():
            self.db.execute("UPDATE submissions SET checked_at = ? WHERE id = ?", (now(), ident))

    def save(
        self,
        ident: int,
        *,
        status: Status,
        content_hash: str | None,
        fingerprint: Fingerprint,
        scores: dict[str, Any] | None,
        error: dict[str, Any] | None,
        per_user: dict[Split, np.ndarray] | None,
        seconds: float,
    ) -> None:
        """Write one submission's verdict and its per-user scores (by split) together."""
        if status not in tuple(Status):
            raise ValueError(f"status {status!r}; expected one of {', '.join(Status)}")
        splits = scores or {}
        stamp_now = now()
        with self.transaction():
            self.db.execute(
                """UPDATE submissions SET status = ?, content_hash = ?, solution_hash = ?,
                scorer_version = ?, config = ?, overall = ?, public = ?, private = ?,
                metrics = ?, error = ?, scored_at = ?, checked_at = ?, seconds = ?
                WHERE id = ?""",
                (
                    str(status),
                    content_hash,
                    fingerprint.solution_hash,
                    fingerprint.scorer_version,
                    fingerprint.config,
                    splits.get("overall"),
                    splits.get("public"),
                    splits.get("private"),
                    json.dumps(scores) if scores is not None else None,
                    json.dumps(error) if error is not None else None,
                    stamp_now,
                    stamp_now,
                    seconds,
                    ident,
                ),
            )
            self.db.execute("DELETE FROM per_user WHERE submission_id = ?", (ident,))
            self.db.executemany(
                "INSERT INTO per_user VALUES (?, ?, ?)",
                [
                    (ident, str(split), np.ascontiguousarray(values, dtype="<f8").tobytes())
                    for split, values in (per_user or {}).items()
                ],
            )

    # -- solutions ---------------------------------------------------------------------------

    def has_solution(self, digest: str) -> bool:
        found = self.db.execute("SELECT 1 FROM solutions WHERE hash = ?", (digest,)).fetchone()
        return found is not None

    def add_solution(self, digest: str, user_ids: np.ndarray, stages: np.ndarray) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO solutions VALUES (?, ?, ?, ?, ?)",
                (
                    digest,
                    int(user_ids.size),
                    np.ascontiguousarray(user_ids, dtype="<i8").tobytes(),
                    np.ascontiguousarray(stages, dtype="i1").tobytes(),
                    now(),
                ),
            )

    def solution(self, digest: str) -> tuple[np.ndarray, np.ndarray]:
        """A solution's user ids (ascending) and their stage codes."""
        row = self.db.execute(
            "SELECT user_ids, stages FROM solutions WHERE hash = ?", (digest,)
        ).fetchone()
        if row is None:
            raise UsageError(f"{self.path}: the solution {digest[:12]}… is not in the database")
        return np.frombuffer(row[0], dtype="<i8"), np.frombuffer(row[1], dtype="i1")

    # -- reading -----------------------------------------------------------------------------

    def records(self, *, private: bool = True) -> list[Record]:
        """Every submission. With `private=False` the private and overall scores are not
        even selected (they read as None): what the public phase builds on."""
        current = self.fingerprint()
        hidden = "" if private else "NULL AS "
        rows = self.db.execute(
            "SELECT id, team, path, submitted_at, selected, status, solution_hash, "
            f"scorer_version, config, {hidden}overall, public, {hidden}private, error, scored_at "
            "FROM submissions ORDER BY team, submitted_at, path"
        ).fetchall()
        records = []
        for row in rows:
            (ident, team, path, when, selected, status, solution, version, config) = row[:9]
            overall, public, private, error, scored_at = row[9:]
            fresh = (
                current is not None
                and status in (Status.SCORED, Status.REJECTED)
                and Fingerprint(solution, version, config) == current
            )
            records.append(
                Record(
                    id=ident,
                    team=team,
                    path=path,
                    submitted_at=datetime.fromisoformat(when),
                    selected=bool(selected),
                    status=Status(status),
                    current=fresh,
                    overall=overall,
                    public=public,
                    private=private,
                    error=json.loads(error) if error else None,
                    scored_at=scored_at,
                )
            )
        return records

    def per_user(self, idents: Iterable[int], split: Split) -> dict[int, np.ndarray]:
        """The stored per-user NDCG of some submissions on one split, aligned with the
        split's users in their solution's order (NaN: a user the scorer left out)."""
        if split not in SPLITS:
            raise ValueError(f"split {split!r}; expected one of {', '.join(SPLITS)}")
        wanted = list(idents)
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.db.execute(
            "SELECT submission_id, ndcg FROM per_user "
            f"WHERE split = ? AND submission_id IN ({marks})",
            [str(split), *wanted],
        ).fetchall()
        return {ident: np.frombuffer(blob, dtype="<f8") for ident, blob in rows}
