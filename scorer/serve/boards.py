"""A server's boards: built from the verdicts its store holds, by the same code as `scorer
leaderboard show` (`leaderboard.boards.build`, over `Verdicts`), and published in the store,
where every web process reads them as they were built.

Only a process that judges builds them (it holds the solution's role): a web process reads
the published JSON and HTML, never a per-user score, so that before the reveal nothing it
can read tells a user's split. Before the reveal only the public boards are built; a freeze
set, they hold the submissions made before it (before the freeze that is every one)."""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from scorer.board import BoardRules, Ladder
from scorer.competition import Competition, Split
from scorer.leaderboard.boards import Boards, build
from scorer.leaderboard.page import boards_html
from scorer.leaderboard.render import render
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.stale import Stale, iso
from scorer.leaderboard.store import Fingerprint, Record, Run
from scorer.serve.export import manifest_sha256, with_manifest
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcore import StoreUnavailable
from scorer.serve.store import Entry

#: How often a publisher looks for a change when nobody wakes it (seconds).
IDLE = 1.0

#: The name the organiser's forecast is published under, beside the boards' (`publish`).
FORECAST = "forecast"

#: The name each scored submission's public score as the Ladder shows it is published under:
#: what a team reads of its own submissions before the reveal (`Server.as_shown`).
LADDER = "ladder"

#: The fewest seconds between two forecasts before the reveal (`Publisher._forecast_due`).
FORECAST_EVERY = 60.0

#: The longest a publisher rests after a build, in seconds. It rests four times as long as
#: the build took (at most this): boards of a million users take seconds to build, and built
#: at every verdict they took most of a core (bench/SERVE.md); small ones are built at once.
EVERY = 5.0


class Verdicts:
    """A server's store as the boards read a leaderboard's (`leaderboard.boards.Source`):
    the submissions on the boards, each with its verdict, as of the store's `change`."""

    def __init__(
        self,
        store: SqlStore,
        competition: Competition,
        fingerprint: Fingerprint,
        change: tuple[int, datetime | None],
    ) -> None:
        self.store, self.rules, self.fingerprint = store, competition, fingerprint
        self.change = change

    def published(self) -> Run | None:
        ident, at = self.change
        if at is None:
            return None
        return Run(ident, self.fingerprint, at, at, 0, 0)

    def unfinished(self) -> Run | None:
        return None  # a verdict is on the boards as soon as they are built again

    def records(self, *, private: bool = True) -> list[Record]:
        return self.store.records(private=private)

    def per_user(self, idents: Iterable[int], split: Split) -> dict[int, np.ndarray]:
        return self.store.per_user(list(idents), split)

    def competition(self) -> Competition:
        return self.rules


class Nothing(Verdicts):
    """No verdict yet: the boards a web process shows before the first are published."""

    def records(self, *, private: bool = True) -> list[Record]:
        return []


#: The fingerprint of boards built where the solution is not at hand (its hash unknown):
#: only a stale board's note reads a fingerprint, and a server's boards are never stale.
UNKNOWN = Fingerprint("", "", "{}")


def empty(store: SqlStore, competition: Competition, phase: Phase) -> Boards:
    """The boards of a competition without a verdict."""
    return build(Nothing(store, competition, UNKNOWN, (0, None)), phase)


def current(store: SqlStore, competition: Competition, phase: Phase) -> Boards:
    """The boards of the store's verdicts now, as a worker publishes them next (`scorer
    serve show`: the organiser's, who may read the final ones before the reveal)."""
    source = Verdicts(store, competition, UNKNOWN, store.last_change())
    return built(source, phase)


def built(source: Verdicts, phase: Phase, *, forecast: bool = False) -> Boards:
    """The boards of a phase (with the forecast, `build`'s), saying so while a new
    solution's rescore is under way."""
    revealed = source.store.revealed() is not None
    before = _frozen(source.store, phase)
    boards = build(source, phase, before=before, revealed=revealed, forecast=forecast)
    under_way = source.store.rescoring()
    if under_way is None:
        return boards
    since = datetime.fromisoformat(under_way.solution.since)
    total = under_way.solution.total
    stale = Stale(("a new solution",), since, under_way.judged, total, rescore=True)
    return replace(boards, stale=stale)


def _frozen(store: SqlStore, phase: Phase) -> datetime | None:
    """Where the public boards stop: at the freeze the organiser set last, until the
    reveal."""
    if phase is not Phase.PUBLIC or store.revealed() is not None:
        return None
    freeze = (store.settings() or {}).get("freeze")
    return None if freeze is None else datetime.fromisoformat(freeze)


def forecast_of(store: SqlStore, phase: Phase) -> dict[str, Any] | None:
    """The forecast of the private board, for the organiser: before the reveal the one
    published last (`Publisher`, at most every FORECAST_EVERY seconds); after it, the final
    boards', beside the ranks got. None while none is published."""
    if phase is Phase.FINAL:
        final = store.published(str(Phase.FINAL))
        if final is None:
            return None
        data = json.loads(final[1])
        return {"phase": str(phase), "as_of": data["as_of"], **data.get("forecast", {})}
    found = store.published(FORECAST)
    return None if found is None else {"phase": str(phase), **json.loads(found[1])}


def shown_to_teams(store: SqlStore, rules: BoardRules, entries: list[Entry]) -> list[Entry]:
    """Submissions' public scores as `[board]` shows them before the reveal: under the Ladder
    as the publisher last published them (None until it has), rounded to `public_digits`."""
    if rules.default:
        return entries
    if rules.ladder is Ladder.PARAMETER_FREE:
        found = store.published(LADDER)
        climbed = {} if found is None else json.loads(found[1])
        entries = [replace(e, public_score=climbed.get(str(e.id))) for e in entries]
    return [replace(e, public_score=rules.shown(e.public_score)) for e in entries]


class Publisher:
    """Builds and publishes the boards whenever a verdict, the picks or the reveal changed
    them, in a thread of its own: `start`, `nudge`, `stop` (or `run` until `cancel`)."""

    def __init__(
        self,
        store: SqlStore,
        competition: Competition,
        fingerprint: Fingerprint,
        cancel: threading.Event,
    ) -> None:
        self.store, self.competition, self.fingerprint = store, competition, fingerprint
        self.cancel = cancel
        self._wake = threading.Event()
        self._forecast_at: float | None = None  # when the last forecast was published

    def nudge(self) -> None:
        self._wake.set()

    def run(self) -> None:
        seen = -1
        while not self.cancel.is_set():
            self._wake.clear()
            try:
                change = self.store.last_change()
                if change[0] != seen or not self.store.versions():
                    started = time.monotonic()
                    self.publish(change)
                    seen = change[0]
                    self.cancel.wait(min(EVERY, 4 * (time.monotonic() - started)))
            except StoreUnavailable as exc:  # the database away: tried again
                print(f"scorer serve: cannot reach the database ({exc})", file=sys.stderr)
            except Exception:  # a full disk, a bug: told, tried again
                traceback.print_exc(file=sys.stderr)
            self._wake.wait(IDLE)

    def publish(self, change: tuple[int, datetime | None]) -> None:
        """Build the boards of the store as of `change` and publish them: the public ones
        (frozen, before the reveal, at the freeze), and after the reveal the final ones."""
        source = Verdicts(self.store, self.competition, self.fingerprint, change)
        revealed = self.store.revealed() is not None
        as_of = "" if change[1] is None else iso(change[1])
        due = not revealed and self._forecast_due(change[0])
        for phase in (Phase.PUBLIC, Phase.FINAL) if revealed else (Phase.PUBLIC,):
            # the final boards with the forecast beside the ranks got; before the reveal,
            # the organiser's forecast rides on the public boards' build, published apart
            boards = built(source, phase, forecast=phase is Phase.FINAL or due)
            if due and boards.forecast is not None:
                text = json.dumps({"as_of": as_of or None, **boards.forecast.to_dict()})
                self.store.publish(FORECAST, change[0], as_of, text, "")
                self._forecast_at = time.monotonic()
            if phase is Phase.PUBLIC:
                boards = replace(boards, forecast=None)
                shown = {str(i): score for i, score in (boards.climbed or {}).items()}
                self.store.publish(LADDER, change[0], as_of, json.dumps(shown), "")
            html, text = "\n".join(boards_html(boards)), render(boards, "json")
            if phase is Phase.FINAL:  # the manifest a checker rescores (`scorer verify`)
                text = with_manifest(text, manifest_sha256(self.store))
            self.store.publish(str(phase), change[0], as_of, text, html)

    def _forecast_due(self, version: int) -> bool:
        """Whether to forecast the private board again: the boards changed since the last
        forecast, and FORECAST_EVERY seconds passed (it costs more than the boards)."""
        found = self.store.published(FORECAST)
        if found is not None and found[0] == version:
            return False
        last = self._forecast_at
        return last is None or time.monotonic() - last >= FORECAST_EVERY
