"""The results database: SQLite (standard library), every write one transaction.

Verdicts are a cache keyed by what decides them: the submission (team, path), its content
and the fingerprint (solution, scorer version, options). The boards read only the `board`
table: the submissions of the last run that finished, each with its verdict. A run that is
under way, interrupted or stopped adds verdicts to the cache but never changes `board`, so
`show` prints the last finished run's boards until another run finishes (`runs`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from scorer.competition import LOST_ITEMS, Competition, Split
from scorer.errors import FileSystemError, ScorerError, UsageError
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
    """One submission of the shown boards, with its verdict."""

    id: int
    team: str
    path: str
    submitted_at: datetime
    selected: bool
    status: Status
    overall: float | None
    public: float | None
    private: float | None
    error: dict[str, Any] | None
    scored_at: str | None


class PerUser(Protocol):
    """What reads per-user scores of verdicts, by split (`Store`, and a server's store)."""

    def per_user(self, idents: Iterable[int], split: Split) -> dict[int, np.ndarray]: ...


@dataclass(frozen=True)
class Run:
    """One `leaderboard score` run as the database recorded it."""

    id: int
    fingerprint: Fingerprint
    started_at: datetime
    finished_at: datetime | None
    total: int
    judged: int


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


def _connect(path: Path, create: bool) -> sqlite3.Connection:
    """A connection that writes (`create`), or one that only reads: `show` reads a database
    it may not write to (a read-only file or folder, a published copy). A WAL database read
    where its `-shm` file cannot be made is opened immutable: no writer can be at work in a
    folder nobody may write to."""
    if create:
        return sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        db.close()
        db = sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None)
    return db


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
            self.db = _connect(path, create)
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
        if create and "meta" not in tables:
            self.db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
            with self.transaction():
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,)
                )
        # WAL with NORMAL sync: a crash can lose the last commits, never corrupt the file.
        self.db.execute("PRAGMA synchronous=NORMAL")
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

    def published(self) -> Run | None:
        """The last run that finished: the one the boards show."""
        return self._run("outcome = 'finished' ORDER BY finished_at DESC, runs.id DESC")

    def unfinished(self) -> Run | None:
        """The latest run started after the shown boards' run that has not finished (under
        way, or interrupted); a stopped run changed nothing and is not one."""
        shown = self.published()
        after = shown.id if shown is not None else 0
        return self._run(f"outcome IS NULL AND runs.id > {after:d} ORDER BY runs.id DESC")

    def _run(self, where: str) -> Run | None:
        row = self.db.execute(
            "SELECT runs.id, solution_hash, scorer_version, config, started_at, finished_at, "
            "total, judged FROM runs JOIN fingerprints f ON f.id = runs.fingerprint "
            f"WHERE {where} LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        ident, solution, version, config, started, finished, total, judged = row
        return Run(
            id=ident,
            fingerprint=Fingerprint(solution, version, config),
            started_at=datetime.fromisoformat(started),
            finished_at=datetime.fromisoformat(finished) if finished else None,
            total=total,
            judged=judged,
        )

    # -- verdicts ------------------------------------------------------------------------------

    # -- reading the boards --------------------------------------------------------------------

    def competition(self) -> Competition:
        """The competition the shown boards were scored for (lost items before any run)."""
        run = self.published() or self.unfinished()
        spec = json.loads(run.fingerprint.config).get("competition") if run else None
        return LOST_ITEMS if spec is None else Competition.of(spec, where="the database")

    def records(self, *, private: bool = True) -> list[Record]:
        """Every submission of the shown boards. With `private=False` the private and
        overall scores are not even selected (they read as None): what the public phase
        builds on."""
        overall, hidden = ("v.overall", "v.private") if private else ("NULL", "NULL")
        rows = self.db.execute(
            "SELECT v.id, b.team, b.path, b.submitted_at, b.selected, v.status, "
            f"{overall}, v.public, {hidden}, v.error, v.scored_at "
            "FROM board b JOIN verdicts v ON v.id = b.verdict "
            "ORDER BY b.team, b.submitted_at, b.path"
        ).fetchall()
        return [
            Record(
                id=ident,
                team=team,
                path=path,
                submitted_at=datetime.fromisoformat(when),
                selected=bool(selected),
                status=Status(status),
                overall=overall,
                public=public,
                private=private_score,
                error=json.loads(error) if error else None,
                scored_at=scored_at,
            )
            for (
                ident,
                team,
                path,
                when,
                selected,
                status,
                overall,
                public,
                private_score,
                error,
                scored_at,
            ) in rows
        ]

    def per_user(self, idents: Iterable[int], split: Split) -> dict[int, np.ndarray]:
        """The stored per-user scores of some verdicts on one split, aligned with the
        split's users in their solution's order (NaN: a user the scorer left out)."""
        if split not in SPLITS:
            raise ValueError(f"split {split!r}; expected one of {', '.join(SPLITS)}")
        wanted = list(idents)
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.db.execute(
            f"SELECT verdict, ndcg FROM per_user WHERE split = ? AND verdict IN ({marks})",
            [str(split), *wanted],
        ).fetchall()
        return {ident: np.frombuffer(blob, dtype="<f8") for ident, blob in rows}
