"""What a run of the leaderboard did: each submission's outcome, the counts, each team's tally,
for the organiser and for the public."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scorer.board import BoardRules
from scorer.errors import Code, Failure
from scorer.leaderboard.schema import Status

#: The rejection codes a wrong solution gives nearly every submission: its users are not
#: theirs (another competition's, round's or split's solution).
WRONG_SOLUTION_CODES = frozenset({Code.MISSING_USER, Code.UNKNOWN_USER})


@dataclass(frozen=True)
class Outcome:
    """What happened to one submission in a run. `cached`: its stored verdict was reused."""

    team: str
    path: str
    status: Status
    cached: bool
    public: float | None
    error: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "path": self.path,
            "status": str(self.status),
            "cached": self.cached,
            "public": self.public,
        }

    @property
    def wrong_users(self) -> bool:
        """Rejected for users the solution does not have, or lacks (`WRONG_SOLUTION_CODES`)."""
        if self.status != Status.REJECTED or not self.error:
            return False
        report = self.error.get("report", self.error)  # nested before schema version 1
        return any(p.get("code") in WRONG_SOLUTION_CODES for p in report.get("problems", []))


@dataclass(frozen=True)
class Tally:
    """One team in a run's public summary: its scored submissions and best public score."""

    team: str
    entries: int
    best_public: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"team": self.team, "entries": self.entries, "best_public": self.best_public}


@dataclass(frozen=True)
class BatchResult:
    """Every judged submission's outcome, in log order; `total`: the log's submissions (the
    ones not judged are pending); `removed`: the previous boards' submissions the log no
    longer lists."""

    outcomes: tuple[Outcome, ...]
    removed: int
    total: int
    #: How the competition's boards show scores: the public summary rounds as they do.
    board: BoardRules = field(default_factory=BoardRules)

    @property
    def counts(self) -> dict[str, int]:
        """scored + cached + rejected + failed + pending = total: a reused verdict counts as
        cached when it is a score, as rejected when it is a rejection."""
        statuses = [o.status for o in self.outcomes]
        return {
            "total": self.total,
            "scored": sum(1 for o in self.outcomes if o.status == Status.SCORED and not o.cached),
            "cached": sum(1 for o in self.outcomes if o.status == Status.SCORED and o.cached),
            "rejected": statuses.count(Status.REJECTED),
            "failed": statuses.count(Status.FAILED),
            "pending": self.total - len(self.outcomes),
            "removed": self.removed,
        }

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in (Status.REJECTED, Status.FAILED)]

    @property
    def host_failures(self) -> list[Outcome]:
        """Submissions that failed in this run for the organiser's attention: a scorer bug,
        or the system refusing to read the file (not a cached verdict, and not a worker over
        its memory or time, or killed: those are the submission's doing)."""
        return [
            o
            for o in self.outcomes
            if o.status == Status.FAILED
            and not o.cached
            and (o.error or {}).get("code") in (Failure.INTERNAL_ERROR, Failure.OS_ERROR)
        ]

    def teams(self) -> list[Tally]:
        """Each team of the log, by name: how many of its submissions are scored, and its
        best public score (rounded as the boards show it, `BoardRules.public_digits`)."""
        scores: dict[str, list[float]] = {}
        for outcome in self.outcomes:
            found = scores.setdefault(outcome.team, [])
            if outcome.status == Status.SCORED and outcome.public is not None:
                found.append(outcome.public)
        return [
            Tally(team, len(values), self.board.shown(max(values)) if values else None)
            for team, values in sorted(scores.items(), key=lambda kv: (kv[0].casefold(), kv[0]))
        ]

    def to_dict(self) -> dict[str, Any]:
        """The organiser's record of the run: every submission, every report."""
        return {
            "audience": "organiser",
            **self.counts,
            "submissions": [o.to_dict() for o in self.outcomes],
            "failures": [{**o.to_dict(), "error": o.error} for o in self.failures],
        }

    def public_dict(self) -> dict[str, Any]:
        """What may be published during the competition: the counts, and each team's
        entries and best public score; no file, no report, no other score."""
        return {
            "audience": "public",
            **self.counts,
            "teams": [tally.to_dict() for tally in self.teams()],
        }
