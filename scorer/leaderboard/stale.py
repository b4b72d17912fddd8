"""Whether shown boards are the latest word: a run started after theirs has not finished."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scorer.leaderboard.store import Run


def iso(when: datetime) -> str:
    """A UTC time as ISO 8601 with a Z, to the second unless it has a fraction."""
    text = when.astimezone(UTC).replace(tzinfo=None).isoformat()
    return f"{text}Z"


@dataclass(frozen=True)
class Stale:
    """The shown boards are not the latest word: a run started after the one they come from
    has not finished (it is under way, or was interrupted). `reasons`: what it changes.
    `rescore`: a server's boards, judged again against a new solution as they are shown."""

    reasons: tuple[str, ...]
    started_at: datetime
    judged: int
    total: int
    rescore: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "reasons": list(self.reasons),
            "started_at": iso(self.started_at),
            "judged": self.judged,
            "total": self.total,
        }


def staleness(shown: Run | None, newer: Run | None) -> Stale | None:
    """Why the shown boards are stale, if a run started after them has not finished."""
    if newer is None:
        return None
    reasons: list[str] = []
    if shown is None:
        reasons.append("the first run")
    else:
        old, new = shown.fingerprint, newer.fingerprint
        if new.solution_hash != old.solution_hash:
            reasons.append("a new solution")
        if new.scorer_version != old.scorer_version:
            reasons.append(f"scorer {new.scorer_version} (was {old.scorer_version})")
        # Compared as values: a database written before the key was compact JSON
        # (`Competition.fingerprint`) differs in its spaces only.
        before, after = json.loads(old.config), json.loads(new.config)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        if changed:
            reasons.append(f"new options ({', '.join(changed)})")
        if not reasons:
            reasons.append("new or changed submissions")
    return Stale(tuple(reasons), newer.started_at, newer.judged, newer.total)
