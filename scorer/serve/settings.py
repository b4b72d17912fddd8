"""A competition's settings after `init`: read as the store holds them, changed by the
organiser (`scorer serve settings`, `PATCH /api/v1/admin/settings`), and its stage in time.

The store holds the settings and the limits they make (`SqlStore.set_settings`), so every
process of a server reads the same ones: a web process reads them again at most every
`FRESH` seconds, and the store judges an upload by the limits in force in the transaction
that accepts it. Each change is an audit event naming each setting, as it was and as it is.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from scorer.errors import UsageError
from scorer.leaderboard.manifest import MAX_SELECTED
from scorer.serve.site import Settings
from scorer.serve.sql import SqlStore
from scorer.serve.sqlcore import NotAllowed, StoreUnavailable
from scorer.serve.store import TEAM_LIMITS, Limits

#: Seconds a web process uses the settings it read before it reads them again.
FRESH = 1.0

#: The times of a competition, in the order they must come.
TIMES = ("start", "freeze", "end", "reveal_at")

#: The limits, each a count (None: no limit).
COUNTS = ("daily_limit", "rejected_limit", "total_limit")

#: The largest limit taken: more than any team uploads.
MOST = 10**9

#: The words that clear a time or a limit.
NONE = frozenset({"none", "never", "unlimited"})

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Stage:
    """Where a competition is in time: `name` (`not_started`, `open`, `frozen`, `ended`,
    `revealed`), and the next change on the schedule (`next`, at `at`; None when no time
    is set for it)."""

    name: str
    next: str | None = None
    at: dt.datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        at = None if self.at is None else self.at.isoformat()
        return {
            "stage": self.name,
            "next_change": None if self.next is None else {"stage": self.next, "at": at},
        }


def stage_of(settings: Settings, now: dt.datetime, revealed: bool) -> Stage:
    """The stage of a competition with these settings at `now`."""
    start, freeze, end, reveal = (_when(getattr(settings, key)) for key in TIMES)
    if revealed:
        return Stage("revealed")
    ahead = [
        (when, name)
        for when, name in (
            (start, "open"),
            (freeze, "frozen"),
            (end, "ended"),
            (reveal, "revealed"),
        )
        if when and when > now
    ]
    ahead.sort(key=lambda pair: pair[0])
    upcoming = ahead[0] if ahead else (None, None)
    if start is not None and now < start:
        name = "not_started"
    elif (end is not None and now >= end) or (reveal is not None and now >= reveal):
        name = "ended"
    elif freeze is not None and now >= freeze:
        name = "frozen"
    else:
        name = "open"
    return Stage(name, upcoming[1], upcoming[0])


def _when(text: str | None) -> dt.datetime | None:
    return None if text is None else dt.datetime.fromisoformat(text)


def moment(value: str, option: str, *, end_of_day: bool) -> tuple[str | None, str | None]:
    """A time as UTC ISO text (None: cleared, by `none`), and a note when it was read
    otherwise than written: a date alone is the end of that day (`end_of_day`: 23:59:59
    UTC) or its start; a time without a zone is UTC."""
    text = value.strip()
    if text.lower() in NONE:
        return None, None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"{option} {value!r}: expected an ISO 8601 time (2027-01-31T18:00Z), a date "
            "(2027-01-31) or 'none'"
        ) from None
    note = None
    if _DATE.fullmatch(text):
        if end_of_day:
            when = when.replace(hour=23, minute=59, second=59)
        what = "the end of that day" if end_of_day else "the start of that day"
        note = f"{option} {text}: a date alone, taken as {what}, {when:%H:%M:%S} UTC"
    elif when.tzinfo is None:
        note = f"{option} {text}: no time zone given, taken as UTC"
    when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat(), note


def count(value: object, option: str) -> int | None:
    """A limit: a whole number from 1 to `MOST`, or None for `none` (no limit; JSON's null)."""
    text = value.strip().lower() if isinstance(value, str) else None
    if value is None or text in NONE:
        return None
    if text is not None and text.isascii() and text.isdigit() and len(text) <= 10:
        found = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        found = value
    else:
        found = 0
    if not 1 <= found <= MOST:
        raise UsageError(
            f"{option} {value!r}: expected a whole number from 1 to {MOST:,}, or 'none'"
        )
    return found


def current(store: SqlStore, base: Settings) -> Settings:
    """The settings in force: those the store holds, over the folder's (`base`: where the
    store is and the admin token's hash, which never change)."""
    held = store.settings()
    if held is None:  # a store made before the settings lived there
        return base
    known = {f.name for f in fields(Settings)} - {"db", "admin_sha256"}
    return replace(base, **{k: v for k, v in held.items() if k in known})


def team_ids(store: SqlStore) -> dict[str, int]:
    return {name: ident for ident, name in store.team_ids()}


def limits_of(settings: Settings, ids: Mapping[str, int]) -> Limits:
    """The limits the store enforces under these settings, a team's own by its id."""
    own = {ids[team]: dict(limits) for team, limits in settings.team_limits.items() if team in ids}
    return replace(settings.limits, teams=own)


@dataclass(frozen=True)
class Change:
    """What a change made: the settings now, each setting changed (as it was, as it is) and
    how a value was read where it was not read as written (`notes`)."""

    settings: Settings
    changed: dict[str, dict[str, Any]]
    notes: list[str]


def change(
    store: SqlStore,
    base: Settings,
    asked: Mapping[str, Any],
    *,
    team: str | None = None,
    force: bool = False,
    now: dt.datetime | None = None,
) -> Change:
    """Apply the settings `asked` (by their names: `end`, `daily_limit`, …; times as text,
    limits as numbers or 'none') to those in force, check the result and write it to the
    store, audited; with `team`, that team's own limits. Nothing is written when a value
    is refused (`UsageError`)."""
    now = now or store.clock()
    before = current(store, base)
    values, notes = parsed(asked, team)
    if team is not None:
        after = _for_team(store, before, team, values)
    else:
        after = replace(before, **values)
        _check(after, before, values, now, force, store)
    changed = {
        key: {"was": getattr(before, key), "now": getattr(after, key)}
        for key in sorted(asdict(after))
        if getattr(before, key) != getattr(after, key)
    }
    if changed:
        stored = {k: v for k, v in asdict(after).items() if k not in ("db",)}
        store.set_settings(stored, limits_of(after, team_ids(store)), changed)
    return Change(after, changed, notes)


def parsed(asked: Mapping[str, Any], team: str | None) -> tuple[dict[str, Any], list[str]]:
    known = {*TIMES, *COUNTS, "picks", "title"}
    unknown = sorted(set(asked) - known)
    if unknown:
        raise UsageError(f"no setting named {', '.join(map(repr, unknown))}")
    if team is not None and set(asked) - set(COUNTS):
        allowed = ", ".join(f"--{k.replace('_', '-')}" for k in COUNTS)
        raise UsageError(f"--team sets a team's own limits only: {allowed}")
    values: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in asked.items():
        option = f"--{key.replace('_', '-')}"
        if key in TIMES:
            if value is not None and not isinstance(value, str):
                raise UsageError(f"{option} {value!r}: expected an ISO 8601 time or 'none'")
            text, note = (
                (None, None) if value is None else moment(value, option, end_of_day=key == "end")
            )
            values[key] = text
            notes += [note] if note else []
        elif key in COUNTS:
            values[key] = count(value, option)
        elif key == "picks":
            picks = count(value, option)
            if picks is None or picks > MAX_SELECTED:
                raise UsageError(f"{option} {value!r}: expected 1 to {MAX_SELECTED}")
            values[key] = picks
        elif not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise UsageError(f"{option}: expected a title of 1 to 200 characters")
        else:
            values[key] = value.strip()
    return values, notes


def _check(
    after: Settings,
    before: Settings,
    values: Mapping[str, Any],
    now: dt.datetime,
    force: bool,
    store: SqlStore,
) -> None:
    """Refuse settings that cannot hold: times out of order, an end or a reveal moved into
    the past without `force`, times changed after the reveal, fewer picks than a team has."""
    if store.revealed() is not None and set(values) & set(TIMES):
        raise UsageError("the competition is revealed: its times can no longer change")
    after.check_order()
    past(after, before, values, now, force)
    if "picks" in values and after.picks < store.most_picks():
        raise UsageError(
            f"--picks {after.picks}: a team has {store.most_picks()} picks already; "
            "it must pick fewer first"
        )


def past(
    after: Settings, before: Settings, values: Mapping[str, Any], now: dt.datetime, force: bool
) -> None:
    """Refuse an end or a reveal set in the past, unless `force`: it would act at once."""
    for key in ("end", "reveal_at"):
        when = _when(getattr(after, key))
        moved = key in values and getattr(after, key) != getattr(before, key)
        if moved and when is not None and when <= now and not force:
            what = "closes uploads" if key == "end" else "reveals the final board"
            raise UsageError(
                f"--{key.replace('_', '-')} {when.isoformat()} is in the past: it "
                f"{what} at once; give --force to do so"
            )


def _for_team(store: SqlStore, before: Settings, team: str, values: dict[str, Any]) -> Settings:
    if team not in team_ids(store):
        raise UsageError(f"--team {team!r}: no team of that name (`scorer serve team list`)")
    own = {**before.team_limits.get(team, {})}
    for key, value in values.items():
        name = key.removesuffix("_limit")
        if value is None:
            own.pop(name, None)
        else:
            own[name] = value
    teams = {k: v for k, v in before.team_limits.items() if k != team}
    return replace(before, team_limits={**teams, **({team: own} if own else {})})


def as_dict(
    settings: Settings,
    stage: Stage,
    changed: Mapping[str, Any] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The settings as `--json` and the API give them: each setting, the stage, what
    changed and how a value was read (`notes`)."""
    values = {key: getattr(settings, key) for key in ("title", *TIMES, *COUNTS, "picks")}
    return {
        "settings": {**values, "team_limits": settings.team_limits},
        **stage.to_dict(),
        "changed": dict(changed or {}),
        "notes": list(notes or []),
    }


def described(settings: Settings, stage: Stage) -> list[tuple[str, str]]:
    """The settings as `scorer serve settings` prints them: (what, value) pairs, times in
    UTC ISO, limits with 'none' for no limit."""

    def shown(value: Any) -> str:
        return "none" if value is None else str(value)

    rows = [("title", settings.title)]
    rows += [(key.replace("_", " "), shown(getattr(settings, key))) for key in TIMES]
    rows += [(key.replace("_", " "), shown(getattr(settings, key))) for key in COUNTS]
    rows.append(("picks", str(settings.picks)))
    for team, own in sorted(settings.team_limits.items()):
        text = ", ".join(f"{k} limit {own[k]}" for k in TEAM_LIMITS if k in own)
        rows.append((f"team {team}", text))
    rows.append(("stage", stage.name.replace("_", " ")))
    if stage.next is not None and stage.at is not None:
        rows.append(("next change", f"{stage.next} at {stage.at.isoformat()}"))
    return rows


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def shown_time(when: dt.datetime | str) -> str:
    """A time as the pages and the server's messages write it: `31 Jan 2027, 23:59 UTC`
    (the API's fields keep ISO 8601, and `described` too, for the organiser to copy)."""
    moment = dt.datetime.fromisoformat(when) if isinstance(when, str) else when
    utc = moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    return f"{utc.day} {_MONTHS[utc.month - 1]} {utc.year}, {utc:%H:%M} UTC"


#: The scheduled times, each with what its coming records (`SqlStore.mark`); the reveal's
#: is the reveal itself.
MARKS = (("start", "started"), ("freeze", "frozen"), ("end", "ended"), ("reveal_at", "revealed"))


class Schedule:
    """Acts on the competition's times with no request or command: at the start, the
    freeze and the end it records, once, that the time came (an audit event, and the boards
    built again), and at `reveal_at` it reveals the final board. It reads the settings every
    `FRESH` seconds, so a time changed while it runs is kept within 2 s. Every process that
    judges runs one; the store makes each act happen once (`mark`, `reveal`)."""

    def __init__(self, store: SqlStore, base: Settings, acted: Callable[[], None]) -> None:
        self.store, self.base, self.acted = store, base, acted

    def due(self, now: dt.datetime) -> list[str]:
        """The marks whose time has come and that the store has not recorded."""
        settings, done = current(self.store, self.base), self.store.marked()
        return [
            mark
            for key, mark in MARKS
            if (when := _when(getattr(settings, key))) is not None
            and when <= now
            and (mark if mark != "revealed" else "revealed_at") not in done
        ]

    def run(self, cancel: threading.Event) -> None:
        while not cancel.is_set():
            try:
                for mark in self.due(self.store.clock()):
                    if mark == "revealed":  # once, by the store (it says so if not this time)
                        acted = self.store.revealed() is None and bool(self.store.reveal())
                    else:
                        acted = self.store.mark(mark)
                    if acted:
                        print(f"scorer serve: {mark}, on schedule", file=sys.stderr, flush=True)
                        self.acted()
            except StoreUnavailable:  # the database away: tried again (the slots say so)
                pass
            except NotAllowed:  # a web role: the workers act on the schedule
                return
            except Exception:  # a full disk, a bug: told, tried again
                traceback.print_exc(file=sys.stderr)
            cancel.wait(FRESH)
