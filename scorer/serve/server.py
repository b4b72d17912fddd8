"""What a running server knows and decides, for the web layer to call: who a token is, whether
an upload may come in, a team's own submissions, the boards it may see. No HTTP here: each
refusal is a `ServeError` with the status and code the routes answer with."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.boards import Boards, Phase, iso
from scorer.leaderboard.store import Store as Board
from scorer.leaderboard.worker import DEFAULT_BUDGET, DEFAULT_TIMEOUT, Judge, judge
from scorer.serve import site
from scorer.serve.jobs import BOARD, Scoring
from scorer.serve.shown import Shown
from scorer.serve.store import Entry, Quota, Team
from scorer.serve.tokens import digest, matches
from scorer.serve.uploads import Upload, discard, receive

if TYPE_CHECKING:  # PostgreSQL's parts, imported only by a server that uses it
    from scorer.serve.mirror import Mirror
    from scorer.serve.remote import Worker

#: The largest upload taken by default: a submission of 1M users is about 0.3 GB of CSV.
DEFAULT_MAX_UPLOAD = 1 << 30


def utc() -> datetime:
    """Server time: the only time a submission is ever given."""
    return datetime.now(UTC)


class ServeError(Exception):
    """A request the server refuses: HTTP `status`, the error's `code`, what to tell."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def limit_reached(quota: Quota) -> ServeError:
    words = {
        "daily_limit": "the daily limit of uploads is reached; it resets at 00:00 UTC",
        "rejected_limit": "the limit of rejected uploads is reached",
        "total_limit": "the limit of uploads in all is reached",
    }
    slot = None if quota.next_slot is None else iso(quota.next_slot)
    return ServeError(
        429,
        "limit_reached",
        str(words.get(quota.limit or "", quota.limit)),
        limit=quota.limit,
        remaining_today=quota.remaining_today,
        next_slot=slot,
    )


class Server:
    """A server folder at work: its settings, store, scoring loop and the boards shown."""

    def __init__(
        self,
        folder: Path,
        *,
        workers: int = 1,
        budget: int = DEFAULT_BUDGET,
        timeout: float = DEFAULT_TIMEOUT,
        max_upload: int = DEFAULT_MAX_UPLOAD,
        judge: Judge = judge,
    ) -> None:
        self.folder = folder
        self.settings = site.settings_of(folder)
        self.store = site.store_of(folder)
        self.uploads = site.UPLOADS
        self.max_upload = max_upload
        self.competition = site.rules_of(folder)
        Board(folder / BOARD).close()  # the boards' database exists before any request
        isolation = Isolation(workers=workers, budget=budget, timeout=timeout, judge=judge)
        self.scoring: Scoring | Mirror
        self.worker: Worker | None = None
        if self.store.HOLDS_FILES:  # PostgreSQL: workers anywhere, this one among them or not
            from scorer.serve.mirror import Mirror
            from scorer.serve.remote import Worker

            store = site.postgres(self.store)
            self.scoring = Mirror(folder, store, published=self._warm)
            if workers:
                home = folder / "worker"
                home.mkdir(mode=0o700, exist_ok=True)
                solution = folder / site.SOLUTION
                self.worker = Worker(store, home, solution, self.competition, isolation)
        else:
            self.scoring = Scoring(
                folder,
                self.store,
                self.competition,
                isolation,
                folder / site.SOLUTION,
                published=self._warm,
            )
        self.shown = Shown(folder / BOARD)

    def start(self) -> None:
        self.sweep()
        self.scoring.start()
        if self.worker is not None:
            self.worker.start()

    def sweep(self) -> int:
        """Remove what uploads cut short left (a stop mid-upload, kill -9 included): a folder
        no submission names was never accepted, never answered 2xx. Only at start, when no
        upload is under way; how many were removed."""
        named = {Path(e.path).parent.name for e in self.store.entries()}
        left = [p for p in (self.folder / self.uploads).iterdir() if p.name not in named]
        for folder in left:
            shutil.rmtree(folder, ignore_errors=True)
        return len(left)

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        self.scoring.stop()

    # who asks

    def team(self, token: str | None) -> Team:
        found = None if token is None else self.store.team_of(digest(token))
        if found is None:
            raise ServeError(
                401, "unauthorized", "a team's token is needed (Authorization: Bearer)"
            )
        return found

    def admin(self, token: str | None) -> None:
        if token is None or not matches(token, self.settings.admin_sha256):
            raise ServeError(401, "unauthorized", "the admin token is needed")

    # uploads

    def ended(self, now: datetime) -> bool:
        end = self.settings.end
        return end is not None and now >= datetime.fromisoformat(end)

    def may_upload(self, team: Team, now: datetime) -> Quota:
        """The team's quota, if it may upload now (a first look: the upload is counted in
        the transaction that accepts it)."""
        if self.ended(now):
            self.refused(team, now, "competition_ended")
            raise ServeError(
                403, "competition_ended", f"the competition ended at {self.settings.end}"
            )
        quota = self.store.quota(team.id, now)
        if quota.limit is not None:
            self.refused(team, now, quota.limit)
            raise limit_reached(quota)
        return quota

    async def receive(
        self,
        content_type: str,
        body: AsyncIterator[bytes],
        admit: Callable[[dict[str, str]], object] | None = None,
    ) -> Upload:
        """An upload's body streamed into the folder's uploads, under the server's cap
        (`uploads.receive`)."""
        return await receive(content_type, body, self.folder, self.uploads, self.max_upload, admit)

    def refused(self, team: Team, now: datetime, why: str) -> None:
        self.store.refuse_upload(team.id, now, {"team": team.name, "why": why})

    def accept(self, team: Team, now: datetime, upload: Upload) -> tuple[int, Quota]:
        """Record an upload that is on disk; a limit reached meanwhile refuses it (and its
        file, never accepted, is removed). A store that holds the files takes its bytes in
        the same transaction, and the folder keeps no copy."""
        held = self.store.HOLDS_FILES
        try:
            decision = self.store.accept_upload(
                team.id,
                now,
                upload.sha256,
                upload.size,
                upload.path,
                upload.suffix,
                source=self.folder / upload.path if held else None,
            )
        finally:
            if held:
                discard(self.folder, upload)
        if decision.id is None:
            discard(self.folder, upload)
            self.refused(team, now, decision.quota.limit or "limit")
            raise limit_reached(decision.quota)
        self.scoring.nudge()
        return decision.id, decision.quota

    # a team's own

    def entries_of(self, team: Team) -> tuple[list[Entry], Quota]:
        return self.store.entries(team.id), self.store.quota(team.id, utc())

    def entry_of(self, team: Team, ident: int) -> Entry:
        entry = self.store.entry(ident)
        if entry is None or entry.team != team.name:  # another team's is not found either
            raise ServeError(404, "not_found", f"no submission {ident} of your team")
        return entry

    def pick(self, team: Team, ids: list[int]) -> list[int]:
        now = utc()
        if self.ended(now):
            raise ServeError(403, "competition_ended", "picks are closed: the competition ended")
        chosen = self.store.set_picks(team.id, ids, self.settings.picks, now)
        self.scoring.nudge(rerun=True)  # the final board's picks are a run's
        return chosen

    # the boards

    def phase(self) -> Phase:
        return Phase.FINAL if self.store.revealed() is not None else Phase.PUBLIC

    def frozen(self, now: datetime) -> datetime | None:
        """The freeze, once passed and until the reveal: the public board shows what was
        submitted before it."""
        freeze = self.settings.freeze
        if freeze is None or self.phase() is Phase.FINAL:
            return None
        moment = datetime.fromisoformat(freeze)
        return moment if now >= moment else None

    def boards(self, phase: Phase) -> Boards:
        """The boards a phase shows; the final ones only after the reveal."""
        if phase is Phase.FINAL and self.phase() is not Phase.FINAL:
            raise ServeError(403, "not_revealed", "the final leaderboard is not revealed yet")
        return self.shown.get((phase, self.frozen(utc()) if phase is Phase.PUBLIC else None))

    def _warm(self) -> None:
        """After each run: the public boards are built, in a thread of their own, before
        anyone asks for them (the scoring goes on meanwhile)."""
        self.shown.refresh((Phase.PUBLIC, self.frozen(utc())))

    def reveal(self) -> str:
        return self.store.reveal(utc())

    def add_team(self, name: str) -> str:
        return site.add_team(self.folder, name, utc())

    def competition_dict(self) -> dict[str, Any]:
        rules, settings = self.competition, self.settings
        return {
            "name": rules.name,
            "title": settings.title,
            "metric": rules.label(rules.metric),
            "k": rules.k,
            "limits": {
                "daily": settings.daily_limit,
                "rejected": settings.rejected_limit,
                "total": settings.total_limit,
                "daily_reset": "00:00 UTC",
                "max_upload_bytes": self.max_upload,
            },
            "picks": settings.picks,
            "freeze": settings.freeze,
            "end": settings.end,
            "phase": str(self.phase()),
            "spec": rules.to_dict(),  # what `scorer submit` validates with
        }

    def targets_bytes(self) -> bytes:
        return (self.folder / site.TARGETS).read_bytes()
