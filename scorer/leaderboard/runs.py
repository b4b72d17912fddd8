"""What a run writes: its record, the verdict cache, and the boards when it finishes.

A verdict is keyed by what decides it: the submission (team, path), its content (sha256) and
the fingerprint (solution, scorer version, options). `finish` is the only writer of the
`board` table, in one transaction: a run under way, interrupted or stopped never changes
what `scorer leaderboard show` prints."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.competition import Split
from scorer.errors import Failure
from scorer.leaderboard.manifest import Submission
from scorer.leaderboard.schema import Status
from scorer.leaderboard.store import Fingerprint, Store, now, stamp


@dataclass(frozen=True)
class Cached:
    """A verdict the cache holds for a submission's content under a fingerprint."""

    id: int
    status: Status
    public: float | None
    error: dict[str, Any] | None


def start(store: Store, fingerprint: Fingerprint, total: int) -> int:
    """Record a run's start (its fingerprint and the size of its log); its id."""
    with store.transaction():
        store.db.execute(
            "INSERT OR IGNORE INTO fingerprints (solution_hash, scorer_version, config) "
            "VALUES (?, ?, ?)",
            (fingerprint.solution_hash, fingerprint.scorer_version, fingerprint.config),
        )
        (ident,) = store.db.execute(
            "SELECT id FROM fingerprints WHERE solution_hash = ? AND scorer_version = ? "
            "AND config = ?",
            (fingerprint.solution_hash, fingerprint.scorer_version, fingerprint.config),
        ).fetchone()
        run = store.db.execute(
            "INSERT INTO runs (fingerprint, started_at, total) VALUES (?, ?, ?)",
            (ident, now(), total),
        ).lastrowid
    return int(run or 0)


def finish(
    store: Store, run: int, entries: Sequence[tuple[Submission, int]], counts: dict[str, int]
) -> int:
    """Publish a run: `board` becomes its submissions, each with its verdict id, and the
    verdicts no board or newer run needs are dropped. Returns how many submissions of the
    previous boards the log no longer lists."""
    keys = {(entry.team, entry.key) for entry, _ in entries}
    with store.transaction():
        old = store.db.execute("SELECT team, path FROM board").fetchall()
        removed = sum(1 for key in old if tuple(key) not in keys)
        store.db.execute("DELETE FROM board")
        store.db.executemany(
            "INSERT INTO board VALUES (?, ?, ?, ?, ?)",
            [
                (e.team, e.key, stamp(e.submitted_at), int(e.selected), verdict)
                for e, verdict in entries
            ],
        )
        store.db.execute(
            "UPDATE runs SET finished_at = ?, outcome = 'finished', counts = ? WHERE id = ?",
            (now(), json.dumps({**counts, "removed": removed}), run),
        )
        _collect(store, run)
    return removed


def stop(store: Store, run: int) -> None:
    """Record a run that stopped on purpose and drop every verdict it wrote: the database
    holds what it held before the run (and the run, as stopped)."""
    with store.transaction():
        store.db.execute(
            "DELETE FROM verdicts WHERE run = ? AND id NOT IN (SELECT verdict FROM board)",
            (run,),
        )
        store.db.execute(
            "UPDATE runs SET finished_at = ?, outcome = 'stopped' WHERE id = ?", (now(), run)
        )
        _collect(store, run)


def _collect(store: Store, run: int) -> None:
    """Drop the verdicts and solutions that neither the boards nor a newer unfinished
    run can use (inside a transaction)."""
    newer = "SELECT fingerprint FROM runs WHERE outcome IS NULL AND id > ?"
    store.db.execute(
        "DELETE FROM verdicts WHERE id NOT IN (SELECT verdict FROM board) "
        f"AND fingerprint NOT IN ({newer})",
        (run,),
    )
    store.db.execute(
        "DELETE FROM solutions WHERE hash NOT IN (SELECT f.solution_hash FROM fingerprints f "
        f"WHERE f.id IN (SELECT fingerprint FROM verdicts) OR f.id IN ({newer}))",
        (run,),
    )


def cached(
    store: Store,
    team: str,
    key: str,
    content_hash: str | None,
    fingerprint: Fingerprint,
    *,
    failed: bool = True,
) -> Cached | None:
    """The verdict the cache holds for this content under this fingerprint, if any. A failed
    one only when the file itself took its worker down (`KEPT_FAILURES`: out of memory, out
    of time, killed), so that the same bytes do not take a worker down on every run, and not
    with `failed` off (`--retry-failed`); a failure of the scorer or of the system (a bug, a
    permission) is tried again on the next run. Never one of a file that could not be read."""
    if not content_hash:
        return None
    statuses = (Status.SCORED, Status.REJECTED, Status.FAILED)[: 3 if failed else 2]
    marks = ", ".join("?" * len(statuses))
    row = store.db.execute(
        "SELECT v.id, status, public, error FROM verdicts v "
        "JOIN fingerprints f ON f.id = v.fingerprint "
        "WHERE team = ? AND path = ? AND content_hash = ? AND solution_hash = ? "
        f"AND scorer_version = ? AND config = ? AND status IN ({marks}) "
        "ORDER BY v.id DESC LIMIT 1",
        (
            team,
            key,
            content_hash,
            fingerprint.solution_hash,
            fingerprint.scorer_version,
            fingerprint.config,
            *map(str, statuses),
        ),
    ).fetchone()
    if row is None:
        return None
    ident, status, public, error = row
    found = json.loads(error) if error else None
    if status == Status.FAILED and (found or {}).get("code") not in KEPT_FAILURES:
        return None
    return Cached(ident, Status(status), public, found)


#: The failures a failed verdict is kept for: those a file brings on its worker.
KEPT_FAILURES = frozenset(
    str(f) for f in (Failure.OUT_OF_MEMORY, Failure.TIMED_OUT, Failure.WORKER_DIED)
)


def note_judged(store: Store, run: int) -> None:
    """Count one more submission judged by a run (for a stale board's note)."""
    with store.transaction():
        store.db.execute("UPDATE runs SET judged = judged + 1 WHERE id = ?", (run,))


def save(
    store: Store,
    run: int,
    entry: Submission,
    *,
    status: Status,
    content_hash: str | None,
    scores: dict[str, Any] | None,
    error: dict[str, Any] | None,
    per_user: dict[Split, np.ndarray] | None,
    seconds: float,
) -> int:
    """Write one verdict and its per-user scores (by split) together, under the run's
    fingerprint; its id."""
    if status not in (Status.SCORED, Status.REJECTED, Status.FAILED):
        raise ValueError(f"status {status!r}; expected scored, rejected or failed")
    splits = scores or {}
    with store.transaction():
        (fingerprint,) = store.db.execute(
            "SELECT fingerprint FROM runs WHERE id = ?", (run,)
        ).fetchone()
        (ident,) = store.db.execute(
            """INSERT INTO verdicts (team, path, content_hash, fingerprint, run, status,
            overall, public, private, metrics, error, scored_at, seconds)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (team, path, content_hash, fingerprint) DO UPDATE SET
                run = excluded.run, status = excluded.status, overall = excluded.overall,
                public = excluded.public, private = excluded.private,
                metrics = excluded.metrics, error = excluded.error,
                scored_at = excluded.scored_at, seconds = excluded.seconds
            RETURNING id""",
            (
                entry.team,
                entry.key,
                content_hash or "",
                fingerprint,
                run,
                str(status),
                splits.get("overall"),
                splits.get("public"),
                splits.get("private"),
                json.dumps(scores) if scores is not None else None,
                json.dumps(error) if error is not None else None,
                now(),
                seconds,
            ),
        ).fetchone()
        store.db.execute("DELETE FROM per_user WHERE verdict = ?", (ident,))
        store.db.executemany(
            "INSERT INTO per_user VALUES (?, ?, ?)",
            [
                (ident, str(split), np.ascontiguousarray(values, dtype="<f8").tobytes())
                for split, values in (per_user or {}).items()
            ],
        )
        store.db.execute("UPDATE runs SET judged = judged + 1 WHERE id = ?", (run,))
    return int(ident)


def has_solution(store: Store, digest: str) -> bool:
    found = store.db.execute("SELECT 1 FROM solutions WHERE hash = ?", (digest,)).fetchone()
    return found is not None


def add_solution(store: Store, digest: str, user_ids: np.ndarray, stages: np.ndarray) -> None:
    with store.transaction():
        store.db.execute(
            "INSERT OR REPLACE INTO solutions VALUES (?, ?, ?, ?, ?)",
            (
                digest,
                int(user_ids.size),
                np.ascontiguousarray(user_ids, dtype="<i8").tobytes(),
                np.ascontiguousarray(stages, dtype="i1").tobytes(),
                now(),
            ),
        )


@dataclass(frozen=True)
class Saved:
    """One stored verdict whole, as another database takes it over (a server's workers
    hand theirs to its web processes): what `save` was given, under its fingerprint."""

    fingerprint: Fingerprint
    status: Status
    content_hash: str
    scores: dict[str, Any] | None
    error: dict[str, Any] | None
    seconds: float
    #: Each split's per-user scores, as `save` stores them (float64, little-endian).
    per_user: dict[Split, bytes]

    def arrays(self) -> dict[Split, np.ndarray]:
        return {split: np.frombuffer(blob, dtype="<f8") for split, blob in self.per_user.items()}


def saved(store: Store, team: str, key: str) -> Saved | None:
    """The latest verdict stored for a submission, whole."""
    row = store.db.execute(
        "SELECT v.id, solution_hash, scorer_version, config, status, content_hash, metrics, "
        "error, seconds FROM verdicts v JOIN fingerprints f ON f.id = v.fingerprint "
        "WHERE team = ? AND path = ? ORDER BY v.id DESC LIMIT 1",
        (team, key),
    ).fetchone()
    if row is None:
        return None
    ident, solution, version, config, status, content, scores, error, seconds = row
    blobs = store.db.execute("SELECT split, ndcg FROM per_user WHERE verdict = ?", (ident,))
    return Saved(
        fingerprint=Fingerprint(solution, version, config),
        status=Status(status),
        content_hash=content,
        scores=json.loads(scores) if scores else None,
        error=json.loads(error) if error else None,
        seconds=seconds or 0.0,
        per_user={Split(split): bytes(blob) for split, blob in blobs},
    )
