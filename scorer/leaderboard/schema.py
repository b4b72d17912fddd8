"""The database's tables: the SQL that makes them, its version, and the codes stored in them."""

from __future__ import annotations

from enum import StrEnum

from scorer.competition import Split, Stage

#: Bumped when the tables change; a database of another version is refused, not misread.
SCHEMA_VERSION = "1"

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
    """A submission's state in the database (stored as its value)."""

    PENDING = "pending"  # in the log, no verdict yet (new, or its run was interrupted)
    SCORED = "scored"
    REJECTED = "rejected"  # the participant's file breaks the contract; the report is kept
    FAILED = "failed"  # unreadable to the system, or the scorer broke on it; tried every run


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS solutions (
    hash TEXT PRIMARY KEY,
    users INTEGER NOT NULL,
    user_ids BLOB NOT NULL,      -- int64, ascending
    stages BLOB NOT NULL,        -- int8 a user, see STAGE_CODES
    added_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    team TEXT NOT NULL,
    path TEXT NOT NULL,
    submitted_at TEXT NOT NULL,  -- ISO 8601, UTC, microseconds: sorts as text
    selected INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'scored', 'rejected', 'failed')),
    content_hash TEXT,           -- sha256 of the file's bytes
    solution_hash TEXT,          -- sha256 of the solution file's bytes
    scorer_version TEXT,
    config TEXT,                 -- JSON of every option that changes a score or a verdict
    overall REAL,
    public REAL,
    private REAL,
    metrics TEXT,                -- JSON: every split's metrics (ScoreResult.to_dict())
    error TEXT,                  -- JSON: the rejection report, or what failed
    scored_at TEXT,
    checked_at TEXT,
    seconds REAL,
    UNIQUE (team, path)
);
CREATE TABLE IF NOT EXISTS per_user (
    submission_id INTEGER NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
    split TEXT NOT NULL CHECK (split IN ('public', 'private')),
    ndcg BLOB NOT NULL,          -- float64 a user of the split (user_ids order), NaN if unscored
    PRIMARY KEY (submission_id, split)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    finished_at TEXT,            -- NULL: the run was interrupted
    solution_hash TEXT NOT NULL,
    scorer_version TEXT NOT NULL,
    config TEXT NOT NULL,
    counts TEXT
);
"""
