"""A commitment to a hidden solution: published before the first upload, checked after the
reveal (`scorer verify`). H is the SHA-256 of a canonical text (`canonical`) naming the
solution file's bytes, its split, the scorer that scores it and a random salt, which keeps H
from telling anything of a small solution that could otherwise be guessed and hashed."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import polars as pl

from scorer.competition import LOST_ITEMS, STAGE, Competition
from scorer.contract import read_solution

#: The first line of the canonical text: a later format gets another.
FORMAT = "scorer commitment v1"

#: Why a commitment was made: the first one at `init`, another for each fixed solution.
AT_INIT, NEW_SOLUTION = "the competition's solution", "a new solution"


@dataclass(frozen=True)
class SplitCounts:
    """How many target users a solution holds of each stage; a solution without a split
    column counts every user public (all of them are scored on the public board)."""

    public: int
    private: int
    ignored: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SplitCounts:
        return cls(int(data["public"]), int(data["private"]), int(data["ignored"]))


def split_of(solution: Path, competition: Competition = LOST_ITEMS) -> SplitCounts:
    """The split of a solution file, read and checked as `init` reads it."""
    return counts_of(read_solution(solution, competition=competition).users)


def counts_of(users: pl.DataFrame) -> SplitCounts:
    """The split of a solution's users (`Solution.users`, one row a target user)."""
    stages = users.get_column(STAGE).fill_null("public").value_counts()
    count = dict(zip(stages[STAGE].to_list(), stages["count"].to_list(), strict=True))
    return SplitCounts(*(int(count.get(s, 0)) for s in ("public", "private", "ignored")))


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def new_salt() -> str:
    """A fresh salt: 32 random bytes as hex."""
    return secrets.token_hex(32)


def canonical(solution_sha256: str, split: SplitCounts, version: str, salt: str) -> str:
    """The text whose SHA-256 is the commitment: five lines, each ending in LF, UTF-8."""
    return (
        f"{FORMAT}\n"
        f"solution sha256 {solution_sha256}\n"
        f"split {split.public} public, {split.private} private, {split.ignored} ignored users\n"
        f"scorer {version}\n"
        f"salt {salt}\n"
    )


def commitment_of(solution_sha256: str, split: SplitCounts, version: str, salt: str) -> str:
    """The commitment H: the hex SHA-256 of the canonical text."""
    text = canonical(solution_sha256, split, version, salt)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Commitment:
    """A commitment as it is published: H, the scorer version and the split it names, when
    it was made (UTC ISO 8601) and why (`AT_INIT`, `NEW_SOLUTION`); never the salt, nor the
    solution's sha256 (both revealed with the solution)."""

    hash: str
    scorer_version: str
    split: SplitCounts
    committed_at: str
    reason: str = AT_INIT

    def to_dict(self) -> dict[str, Any]:
        """As the API and the export write it: the split as its counts by stage."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Commitment:
        return cls(
            str(data["hash"]),
            str(data["scorer_version"]),
            SplitCounts.from_dict(data["split"]),
            str(data["committed_at"]),
            str(data.get("reason", AT_INIT)),
        )


def commit(
    solution_sha256: str,
    split: SplitCounts,
    salt: str,
    version: str,
    at: str,
    reason: str = AT_INIT,
) -> Commitment:
    """The commitment to a solution (its bytes' sha256) of that `split` with `salt`, made at
    `at` by scorer `version`, for `reason`."""
    made = commitment_of(solution_sha256, split, version, salt)
    return Commitment(made, version, split, at, reason)
