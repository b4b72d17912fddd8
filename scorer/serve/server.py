"""What a running server knows and decides, for the web layer to call: who a token is, whether
an upload may come in, a team's own submissions, the boards it may see. No HTTP here: each
refusal is a `ServeError` with the status and code the routes answer with."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scorer.leaderboard.batch import Isolation
from scorer.leaderboard.page import boards_html
from scorer.leaderboard.render import render
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.stale import iso
from scorer.leaderboard.worker import DEFAULT_BUDGET, DEFAULT_TIMEOUT, Judge, judge
from scorer.serve import site, teams
from scorer.serve.boards import FORECAST, LADDER, empty, forecast_of, shown_to_teams
from scorer.serve.log import logged
from scorer.serve.reveal import commitment_dict
from scorer.serve.settings import (
    FRESH,
    Schedule,
    Stage,
    as_dict,
    change,
    current,
    shown_time,
    stage_of,
)
from scorer.serve.site import Settings
from scorer.serve.store import Entry, Quota, Team, utc
from scorer.serve.tokens import digest, matches
from scorer.serve.uploads import Upload, discard, receive
from scorer.serve.worker import Worker

#: The largest upload taken by default: a submission of 1M users is about 0.3 GB of CSV.
DEFAULT_MAX_UPLOAD = 1 << 30


class ServeError(Exception):
    """A request the server refuses: HTTP `status`, the error's `code`, what to tell."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


#: The limits that close a team's uploads until the organiser lifts them, in words.
LOCK_WORDS = {
    "rejected_limit": "the limit of rejected uploads",
    "total_limit": "the limit of uploads in all",
}


def closed_for(quota: Quota) -> str | None:
    """What a team a lock holds is told in every reply (None: no lock holds it): its uploads
    are closed, not until midnight, and only the organiser can open them again."""
    if not quota.locked:
        return None
    return (
        f"uploads are closed for your team: it reached {LOCK_WORDS[str(quota.limit)]}; "
        "contact the organiser to have them opened again"
    )


def limit_reached(quota: Quota) -> ServeError:
    words = closed_for(quota) or "the daily limit of uploads is reached; it resets at 00:00 UTC"
    slot = None if quota.next_slot is None else iso(quota.next_slot)
    return ServeError(
        429,
        "limit_reached",
        words,
        limit=quota.limit,
        remaining_today=quota.remaining_today,
        next_slot=slot,
    )


def not_started(start: datetime | None) -> ServeError:
    when = "" if start is None else f" at {shown_time(start)}"
    return ServeError(403, "not_started", f"uploads open{when}; the competition has not started")


def closed(end: str | None) -> ServeError:
    words = (
        f"the competition ended at {shown_time(end)}"
        if end
        else "the competition ended: it is revealed"
    )
    return ServeError(403, "competition_ended", f"{words}; uploads and picks are closed")


@dataclass(frozen=True)
class Shown:
    """Boards as published: the JSON of `/api/v1/leaderboard` and the page's HTML."""

    json: str
    html: str


class Server:
    """A server folder at work: its settings, store, worker (when it judges) and boards."""

    def __init__(
        self,
        folder: Path,
        *,
        workers: int = 1,
        budget: int = DEFAULT_BUDGET,
        timeout: float = DEFAULT_TIMEOUT,
        max_upload: int = DEFAULT_MAX_UPLOAD,
        judge: Judge = judge,
        scratch: Path | None = None,
    ) -> None:
        """`workers`: uploads judged at once here (0: none, workers elsewhere judge them);
        `scratch`: this process's private folder (a folder of the server's without it)."""
        self.folder = folder
        self.base = site.settings_of(folder)
        self.store = site.store_of(folder)
        self._settings, self._read_at = current(self.store, self.base), time.monotonic()
        self._stopping = threading.Event()
        self.uploads = site.UPLOADS
        self.max_upload = max_upload
        self.competition = site.rules_of(folder)
        self.worker: Worker | None = None
        if workers:
            home = scratch if scratch is not None else folder / "worker"
            home.mkdir(mode=0o700, exist_ok=True)
            isolation = Isolation(workers=workers, budget=budget, timeout=timeout, judge=judge)
            self.worker = Worker(
                self.store,
                home,
                folder / site.SOLUTION,
                self.competition,
                isolation,
                schedule=Schedule(self.store, self.base, self.nudge),
            )

    @property
    def settings(self) -> Settings:
        """The settings in force, read again from the store at most every `FRESH` seconds:
        a change the organiser makes is in force here that much later (in the store's
        transactions, at once)."""
        if time.monotonic() - self._read_at > FRESH:
            self._settings, self._read_at = current(self.store, self.base), time.monotonic()
        return self._settings

    def settings_dict(self) -> dict[str, Any]:
        return as_dict(self.settings, self.stage(utc()))

    def change_settings(
        self, asked: dict[str, Any], team: str | None, force: bool
    ) -> dict[str, Any]:
        """Change the settings (`settings.change`), in force here at once."""
        made = change(self.store, self.base, asked, team=team, force=force)
        self._read_at = -FRESH  # read again at the next look
        self.nudge()  # a freeze moved: the boards built again
        return as_dict(made.settings, self.stage(utc()), made.changed, made.notes)

    def stage(self, now: datetime) -> Stage:
        return stage_of(self.settings, now, self.phase() is Phase.FINAL)

    @staticmethod
    def moment(text: str | None) -> datetime | None:
        return None if text is None else datetime.fromisoformat(text)

    def start(self) -> None:
        self.sweep()
        if self.worker is not None:
            self.worker.start()
        elif not self.store.HOLDS_FILES:  # SQLite, its worker apart: the schedule is ours
            schedule = Schedule(self.store, self.base, self.nudge)
            args = (self._stopping,)
            threading.Thread(target=schedule.run, args=args, daemon=True).start()

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
        self._stopping.set()
        if self.worker is not None:
            self.worker.stop()

    def nudge(self) -> None:
        if self.worker is not None:
            self.worker.nudge()

    # who asks

    def team(self, token: str | None) -> Team:
        found = None if not token else self.store.team_of(digest(token.strip()))
        if found is None:
            raise ServeError(
                401, "unauthorized", "a team's token is needed (Authorization: Bearer)"
            )
        return found

    def admin(self, token: str | None) -> None:
        if token is None or not matches(token.strip(), self.settings.admin_sha256):
            raise ServeError(401, "unauthorized", "the admin token is needed")

    # uploads

    def ended(self, now: datetime) -> bool:
        return self.settings.limits.closed(now) or self.phase() is Phase.FINAL

    def may_upload(self, team: Team, now: datetime) -> Quota:
        """The team's quota, if it may upload now: a first look, before the body is read.
        The upload is judged again, and counted, in the transaction that accepts it."""
        if self.ended(now):
            self.refused(team, "competition_ended")
            raise closed(self.settings.end)
        start = self.settings.limits.start
        if start is not None and now < start:
            self.refused(team, "not_started")
            raise not_started(start)
        quota = self.store.quota(team.id, now)
        if quota.limit is not None:
            self.refused(team, quota.limit)
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

    def refused(self, team: Team, why: str) -> None:
        self.store.refuse_upload(team.id, why)

    def accept(self, team: Team, upload: Upload, description: str = "") -> tuple[int, Quota]:
        """Record an upload whose body is whole and on disk, dated now, with the name it was
        sent as and its `description` (checked: `notes.description`): the end, the reveal
        and the limits are judged in the transaction that accepts it, and an upload they
        refuse is removed, kept nowhere and counted nowhere. A store that holds the files
        takes its bytes in the same transaction, and the folder keeps no copy."""
        held = self.store.HOLDS_FILES
        try:
            decision = self.store.accept_upload(
                team.id,
                upload.sha256,
                upload.size,
                upload.path,
                upload.suffix,
                source=self.folder / upload.path if held else None,
                filename=upload.filename,
                description=description,
            )
        finally:
            if held:
                discard(self.folder, upload)
        if decision.id is None:
            discard(self.folder, upload)
            self.refused(team, decision.refused or "limit")
            if decision.refused == "competition_ended":
                raise closed(self.settings.end)
            if decision.refused == "not_started":
                raise not_started(self.settings.limits.start)
            raise limit_reached(decision.quota)
        logged(team.name, decision.id, f"uploaded, {upload.size:,} bytes", utc())
        self.nudge()
        return decision.id, decision.quota

    # a team's own

    def entries_of(self, team: Team) -> tuple[list[Entry], Quota]:
        return self.as_shown(self.store.entries(team.id)), self.store.quota(team.id, utc())

    def entry_of(self, team: Team, ident: int) -> Entry:
        entry = self.store.entry(ident)
        if entry is None or entry.team != team.name:  # another team's is not found either
            raise ServeError(404, "not_found", f"no submission {ident} of your team")
        return self.as_shown([entry])[0]

    def as_shown(self, entries: list[Entry]) -> list[Entry]:
        """A team's submissions as it sees them: until the reveal, as `[board]` shows them."""
        if self.phase() is Phase.FINAL:
            return entries
        return shown_to_teams(self.store, self.competition.board, entries)

    def pick(self, team: Team, ids: list[int]) -> list[int]:
        chosen = self.store.set_picks(team.id, ids)
        self.nudge()  # the final board's picks
        return chosen

    # the boards

    def phase(self) -> Phase:
        return Phase.FINAL if self.store.revealed() is not None else Phase.PUBLIC

    def frozen(self, now: datetime) -> datetime | None:
        """The freeze, once passed and until the reveal: the public board shows what was
        submitted before it."""
        freeze = self.moment(self.settings.freeze)
        if freeze is None or self.phase() is Phase.FINAL:
            return None
        return freeze if now >= freeze else None

    def boards(self, phase: Phase) -> Shown:
        """The boards a phase shows, as the worker published them; the final ones only
        after the reveal."""
        if phase is Phase.FINAL and self.phase() is not Phase.FINAL:
            raise ServeError(403, "not_revealed", "the final leaderboard is not revealed yet")
        found = self.store.published(str(phase))
        if found is None and phase is Phase.FINAL:  # revealed a moment ago: being built
            raise ServeError(
                503, "building", "the final boards are being built; ask again in a few seconds"
            )
        if found is None:  # no board published yet: none has a verdict, or no worker started
            blank = empty(self.store, self.competition, phase)
            return Shown(render(blank, "json"), "\n".join(boards_html(blank)))
        return Shown(found[1], found[2])

    def forecast(self) -> dict[str, Any]:
        found = forecast_of(self.store, self.phase())
        if found is None:
            raise ServeError(503, "building", "the forecast is being built; ask again in a minute")
        return found

    def reveal(self) -> str:
        revealed = self.store.reveal()
        self.nudge()
        return revealed

    def add_team(self, name: str) -> str:
        try:
            return teams.add_team(self.folder, name)
        except teams.NameTaken as exc:
            raise ServeError(
                409, "team_taken", str(exc), team=exc.existing, revoked=exc.revoked
            ) from None

    def status(self) -> dict[str, Any]:
        """What the organiser watches: the queue, the latest change of the boards and the
        version of each board published (the boards are whole when they agree)."""
        change, at = self.store.last_change()
        phase = self.phase()
        boards: dict[str, int | None] = dict(self.store.versions())
        forecast = boards.pop(FORECAST, None)  # published apart, and less often
        boards.pop(LADDER, None)  # the public boards' companion, until the reveal
        if phase is Phase.FINAL:  # revealed, the final boards not yet built: not whole
            boards.setdefault(str(Phase.FINAL), None)
        return {
            **self.store.queue(),
            "last_change": change,
            "last_change_at": None if at is None else iso(at),
            "boards": boards,
            "forecast": forecast,
            "phase": str(phase),
        }

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
            "start": settings.start,
            "freeze": settings.freeze,
            "end": settings.end,
            "reveal_at": settings.reveal_at,
            "phase": str(self.phase()),
            **self.stage(utc()).to_dict(),
            "spec": rules.to_dict(),  # what `scorer submit` validates with
            **commitment_dict(self.store),
        }

    def targets_bytes(self) -> bytes:
        return (self.folder / site.TARGETS).read_bytes()
