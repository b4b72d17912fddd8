"""The queue of a store: jobs claimed round robin by team under a lease, renewed, handed
back or queued again when the lease ends, and finished once, with the verdict written whole
in the transaction that finishes the job."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer.competition import Split
from scorer.leaderboard.runs import KEPT_FAILURES, Saved
from scorer.leaderboard.schema import Status as Judged
from scorer.leaderboard.store import Fingerprint
from scorer.serve.sqlcore import Connection, SqlCore
from scorer.serve.store import LEASE, ON_BOARD, Counted, Job

if TYPE_CHECKING:
    from scorer.commitment import Commitment

#: A verdict's columns, as `_saved` reads them.
_VERDICT = (
    "v.solution_hash, v.scorer_version, v.config, v.status, v.content_hash, v.scores, v.error,"
    " v.seconds"
)

#: The next job to claim, round robin by team: the first in line of the team with the fewest
#: jobs being judged, the oldest of those on a tie. Claimed one at a time, each claim counted
#: as judged before the next, this gives each team's first in line, then each one's second…
#: so that one team's slow files never hold back another's. It reads the heads of the teams
#: (`submissions_queue`), never ranks the whole queue.
_NEXT = (
    "SELECT q.id FROM (SELECT team, min(id) AS id FROM submissions WHERE status = 'queued'"
    " GROUP BY team) q LEFT JOIN (SELECT team, count(*) AS held FROM submissions"
    " WHERE status = 'scoring' GROUP BY team) b ON b.team = q.team"
    " ORDER BY coalesce(b.held, 0), q.id LIMIT 1"
)


#: Queue a job again: its claim ended (its verdict, if any, stays until another is written).
_REQUEUE = "UPDATE submissions SET status = 'queued', claim = NULL"


@dataclass(frozen=True)
class Solution:
    """A solution put in place of another (`Queue.rescore`): its sha256 and the one before
    (`was`), when (`since`), the last submission made before it (`upto`) and how many of
    those are to have a verdict against it (`total`: all but the failures refunded)."""

    sha256: str
    was: str
    since: str
    upto: int = 0
    total: int = 0


@dataclass(frozen=True)
class Rescoring:
    """A rescore under way: its solution, and how many of its submissions are judged."""

    solution: Solution
    judged: int


class Queue(SqlCore):
    """The jobs of a store (`SqlStore`): claimed, renewed, released, finished."""

    def recover(self, now: datetime) -> int:
        """Queue again the jobs a worker left unfinished before it stopped (`requeue_stale`);
        how many. A store shared by many workers frees those whose lease ended."""
        return self.requeue_stale(now)

    def claim_jobs(self, now: datetime, most: int = 1, lease: timedelta = LEASE) -> list[Job]:
        """At most `most` queued submissions, in their turn (`_NEXT`), now `scoring` under one
        new claim until `now + lease`."""
        claim = secrets.token_hex(16)
        jobs: list[Job] = []
        with self._write() as db:
            while len(jobs) < most and (
                row := self._run(
                    db,
                    "UPDATE submissions SET status = 'scoring', claim = ?, lease_until = ?"
                    " WHERE status = 'queued' AND id IN (SELECT id FROM submissions"
                    f" WHERE status = 'queued' AND id IN ({_NEXT}){self.SKIP_LOCKED})"
                    " RETURNING id, team, path",
                    claim,
                    (now + lease).isoformat(),
                ).fetchone()
            ):
                jobs.append(Job(int(row[0]), int(row[1]), str(row[2]), claim))
        return sorted(jobs)

    def renew(self, jobs: list[Job], now: datetime, lease: timedelta = LEASE) -> int:
        """Hold claimed jobs `lease` longer (a long run); how many are still this claim's."""
        with self._write() as db:
            return sum(
                self._run(
                    db,
                    "UPDATE submissions SET lease_until = ? WHERE id = ? AND claim = ?"
                    " AND status = 'scoring'",
                    (now + lease).isoformat(),
                    job.id,
                    job.claim,
                ).rowcount
                for job in jobs
            )

    def finish_job(self, job: Job, verdict: Saved, counted: Counted | None, now: datetime) -> bool:
        """Write a job's verdict whole, per-user scores included, once, under the claim that
        holds it: a job no longer `scoring`, or claimed since by another worker, keeps its
        verdict (and this one writes nothing). A verdict judged against another solution than
        the store's (`rescore`: replaced meanwhile) is not written either: its job is queued
        again. A submission judged again keeps the limit it counted toward: an organiser's
        fix neither spends nor refunds a team's uploads."""
        with self._write() as db:
            if not self._current(db, verdict.fingerprint.solution_hash):
                requeue = f"{_REQUEUE} WHERE id = ? AND claim = ? AND status = 'scoring'"
                self._run(db, requeue, job.id, job.claim)
                return False
            changed = self._run(
                db,
                "UPDATE submissions SET status = ?,"
                " counted = CASE WHEN finished_at IS NULL THEN ? ELSE counted END,"
                " finished_at = ? WHERE id = ? AND status = 'scoring' AND claim = ?",
                str(verdict.status),
                None if counted is None else str(counted),
                now.isoformat(),
                job.id,
                job.claim,
            ).rowcount
            if changed:
                self._write_verdict(db, job.id, verdict, now)
                detail = {"id": job.id, "verdict": str(verdict.status), "counted": counted}
                self._log(db, now, "verdict", detail)
        return bool(changed)

    def _current(self, db: Connection, solution_hash: str) -> bool:
        """Whether `solution_hash` is the solution the store judges against (`rescore`); a
        store whose solution was never replaced takes the one it was made with."""
        row = self._run(db, "SELECT value FROM state WHERE key = 'solution'").fetchone()
        return row is None or json.loads(row[0])["sha256"] == solution_hash

    def solution(self) -> Solution | None:
        """The solution the organiser put in place of the first (`rescore`), if any."""
        row = self._read("SELECT value FROM state WHERE key = 'solution'").fetchone()
        return None if row is None else Solution(**json.loads(row[0]))

    def rescore(
        self, new: Solution, name: str, source: Path, sealed: tuple[Commitment, Path] | None = None
    ) -> int:
        """Make `new` the solution every verdict is judged against, in one transaction: its
        file (`source`) kept under `name` by a store that `HOLDS_FILES`, named in the state,
        its commitment and salt recorded (`sealed`), and every submission on the boards or
        being judged queued again, its verdict removed, to be judged against it; how many.
        Audited with both solutions' sha256."""
        with self._write() as db:
            self._keep_hidden(db, name, source)
            if sealed is not None:
                self._seal(db, *sealed)
            ids = [
                int(i)
                for (i,) in self._run(
                    db,
                    "UPDATE submissions AS s SET status = 'queued', claim = NULL"
                    f" WHERE s.status = 'scoring' OR ({ON_BOARD}) RETURNING id",
                ).fetchall()
            ]
            for table in ("per_user", "verdicts"):
                self._run(
                    db,
                    f"DELETE FROM {table} WHERE submission IN"
                    " (SELECT id FROM submissions WHERE status = 'queued')",
                )
            upto, total = self._run(  # every one but the refunded failures is queued now
                db,
                "SELECT coalesce(max(id), 0), count(*) FILTER (WHERE status = 'queued')"
                " FROM submissions",
            ).fetchone()
            moved = replace(new, upto=int(upto), total=int(total))
            self._run(
                db,
                "INSERT INTO state VALUES ('solution', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                json.dumps(asdict(moved), sort_keys=True),
            )
            detail = {"was": new.was, "now": new.sha256, "rescored": len(ids)}
            self._log(db, datetime.fromisoformat(new.since), "solution", detail)
        return len(ids)

    def solution_into(self, path: Path) -> None:
        """Bring the solution the store names to `path`, where a worker reads it: a store
        that `HOLDS_FILES` writes it there whole, then in place at once; in a server's folder
        `scorer serve solution` put it there itself."""

    def rescoring(self) -> Rescoring | None:
        """The rescore under way (`rescore`), until every submission made before the new
        solution has its verdict against it: the solution, and how many have one so far."""
        solution = self.solution()
        if solution is None:
            return None
        (left,) = self._read(
            "SELECT count(*) FROM submissions WHERE status IN ('queued', 'scoring') AND id <= ?",
            solution.upto,
        ).fetchone()
        if not left:
            return None
        return Rescoring(solution, max(0, solution.total - int(left)))

    def _write_verdict(
        self, db: Connection, submission: int, verdict: Saved, now: datetime
    ) -> None:
        fingerprint, scores = verdict.fingerprint, verdict.scores or {}
        self._run(
            db,
            "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            submission,
            fingerprint.solution_hash,
            fingerprint.scorer_version,
            fingerprint.config,
            str(verdict.status),
            verdict.content_hash,
            scores.get("overall"),
            scores.get("public"),
            scores.get("private"),
            None if verdict.scores is None else json.dumps(verdict.scores),
            None if verdict.error is None else json.dumps(verdict.error),
            verdict.seconds,
            now.isoformat(),
        )
        for split, blob in verdict.per_user.items():
            self._run(db, "INSERT INTO per_user VALUES (?, ?, ?)", submission, str(split), blob)

    def saved(self, submission: int) -> Saved | None:
        """A submission's verdict whole, per-user scores included."""
        row = self._read(
            f"SELECT {_VERDICT} FROM verdicts v WHERE v.submission = ?", submission
        ).fetchone()
        return None if row is None else self._saved(submission, row)

    def _saved(self, submission: int, row: tuple[Any, ...]) -> Saved:
        solution, version, config, status, content, scores, error, seconds = row
        blobs = self._read(
            "SELECT split, scores FROM per_user WHERE submission = ?", submission
        ).fetchall()
        return Saved(
            fingerprint=Fingerprint(solution, version, config),
            status=Judged(status),
            content_hash=content,
            scores=None if scores is None else json.loads(scores),
            error=None if error is None else json.loads(error),
            seconds=float(seconds),
            per_user={Split(split): bytes(blob) for split, blob in blobs},
        )

    def reusable(self, content_hash: str, fingerprint: Fingerprint, name: str) -> Saved | None:
        """A verdict kept for the same bytes under the same name and fingerprint: whatever
        uploaded them, their verdict is the same. Not a failure of the server's (tried
        again), only one a file brings on its worker (`KEPT_FAILURES`)."""
        rows = self._read(
            f"SELECT v.submission, s.path, {_VERDICT} FROM verdicts v"
            " JOIN submissions s ON s.id = v.submission"
            " WHERE v.content_hash = ? AND v.solution_hash = ? AND v.scorer_version = ?"
            " AND v.config = ? ORDER BY v.submission DESC",
            content_hash,
            fingerprint.solution_hash,
            fingerprint.scorer_version,
            fingerprint.config,
        ).fetchall()
        for submission, path, *verdict in rows:
            error = json.loads(verdict[6]) if verdict[6] else {}
            if verdict[3] == "failed" and error.get("code") not in KEPT_FAILURES:
                continue
            if Path(path).name == name:
                return self._saved(int(submission), tuple(verdict))
        return None

    def requeue_stale(self, now: datetime | None = None) -> int:
        """Queue again the jobs whose claim ended: every one left `scoring` (a server that
        starts is the only one: a stop, kill -9 included, left them), or with `now`, those
        whose lease is over (a worker that died); how many. The audit log names them."""
        requeue = f"{_REQUEUE} WHERE status = 'scoring'"
        over, args = ("", ()) if now is None else (" AND lease_until < ?", (now.isoformat(),))
        with self._write() as db:
            rows = self._run(db, f"{requeue}{over} RETURNING id", *args).fetchall()
            ids = sorted(int(i) for (i,) in rows)
            if ids:
                self._log(db, now or datetime.now(UTC), "requeued", {"ids": ids})
        return len(ids)

    def release(self, jobs: list[Job]) -> int:
        """Queue again jobs this claim still holds (a worker that stops); how many."""
        with self._write() as db:
            return sum(
                self._run(
                    db,
                    f"{_REQUEUE} WHERE id = ? AND claim = ? AND status = 'scoring'",
                    job.id,
                    job.claim,
                ).rowcount
                for job in jobs
            )

    def queue(self) -> dict[str, int]:
        """How many submissions wait for a worker and how many are being judged."""
        rows = self._read(
            "SELECT status, count(*) FROM submissions WHERE status IN ('queued', 'scoring')"
            " GROUP BY status"
        ).fetchall()
        return {"queued": 0, "scoring": 0} | {str(k): int(n) for k, n in rows}
