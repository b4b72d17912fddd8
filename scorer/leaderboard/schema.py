"""The database's tables: the SQL that makes them, its version, and the codes stored in them."""

from __future__ import annotations

from enum import StrEnum

from scorer.competition import Split, Stage

#: Bumped when the tables change; a database of another version is refused, not misread.
#: 2: verdicts kept per fingerprint, and the boards of the last finished run (`board`).
SCHEMA_VERSION = "2"

#: Per-user stages as stored beside a solution's user ids (one byte a user; None: no stage).
STAGE_CODES: dict[Stage | None, int] = {
    Stage.PUBLIC: 0,
    Stage.PRIVATE: 1,
    Stage.IGNORED: 2,
    None: 3,
}

#: The splits whose per-user scores are stored, each apart: the public board never reads
#: a private row.
SPLITS = (Split.PUBLIC, Split.PRIVATE)


class Status(StrEnum):
    """A submission's verdict (stored as its value); `pending`: not judged yet."""

    PENDING = "pending"  # in the log, no verdict in this run (it stopped or was interrupted)
    SCORED = "scored"
    REJECTED = "rejected"  # the participant's file breaks the contract; the report is kept
    FAILED = "failed"  # the scorer broke on it (judged again next run), or its worker ran
    # out of memory or time or died (kept for the same bytes unless `--retry-failed`)


class Phase(StrEnum):
    """`public`: during the competition; no private figure is computed or shown at all.
    `final`: after it; the private board, its intervals and the shake-up are revealed."""

    PUBLIC = "public"
    FINAL = "final"


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS solutions (
    hash TEXT PRIMARY KEY,
    users INTEGER NOT NULL,
    user_ids BLOB NOT NULL,      -- int64, ascending
    stages BLOB NOT NULL,        -- int8 a user, see STAGE_CODES
    added_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fingerprints (
    id INTEGER PRIMARY KEY,
    solution_hash TEXT NOT NULL,  -- sha256 of the solution file's bytes
    scorer_version TEXT NOT NULL,
    config TEXT NOT NULL,         -- JSON of every option that changes a score or a verdict
    UNIQUE (solution_hash, scorer_version, config)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    fingerprint INTEGER NOT NULL REFERENCES fingerprints (id),
    started_at TEXT NOT NULL,
    finished_at TEXT,
    outcome TEXT CHECK (outcome IN ('finished', 'stopped')),  -- NULL: under way or interrupted
    total INTEGER NOT NULL,       -- submissions in the log
    judged INTEGER NOT NULL DEFAULT 0,
    counts TEXT                   -- JSON, when it finished
);
CREATE TABLE IF NOT EXISTS verdicts (
    id INTEGER PRIMARY KEY,
    team TEXT NOT NULL,
    path TEXT NOT NULL,
    content_hash TEXT NOT NULL,   -- sha256 of the file's bytes, or '' if it could not be read
    fingerprint INTEGER NOT NULL REFERENCES fingerprints (id),
    run INTEGER NOT NULL,         -- the run that wrote it
    status TEXT NOT NULL CHECK (status IN ('scored', 'rejected', 'failed')),
    overall REAL,
    public REAL,
    private REAL,
    metrics TEXT,                 -- JSON: every split's metrics (ScoreResult.to_dict())
    error TEXT,                   -- JSON: the rejection report, or what failed
    scored_at TEXT NOT NULL,
    seconds REAL,
    UNIQUE (team, path, content_hash, fingerprint)
);
CREATE TABLE IF NOT EXISTS per_user (
    verdict INTEGER NOT NULL REFERENCES verdicts (id) ON DELETE CASCADE,
    split TEXT NOT NULL CHECK (split IN ('public', 'private')),
    ndcg BLOB NOT NULL,           -- float64 a user of the split (user_ids order), NaN if unscored
    PRIMARY KEY (verdict, split)
);
CREATE TABLE IF NOT EXISTS board (
    team TEXT NOT NULL,
    path TEXT NOT NULL,
    submitted_at TEXT NOT NULL,   -- ISO 8601, UTC, microseconds: sorts as text
    selected INTEGER NOT NULL,
    verdict INTEGER NOT NULL REFERENCES verdicts (id),
    PRIMARY KEY (team, path)
)
"""
