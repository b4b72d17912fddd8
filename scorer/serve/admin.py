"""The organiser's page, `/admin`, and its JSON twin, `/api/v1/admin/overview`: the phase and
the next change, the teams and their uploads, the uploads of each UTC day, the queue, the
failures and the audit log's tail. Opened by a session of the admin token (`session`), which
a team's token or session never is; server-rendered HTML, no script, every word a team or a
file brought escaped as text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from scorer.leaderboard.literal import shown
from scorer.leaderboard.names import escaped
from scorer.leaderboard.page import document
from scorer.leaderboard.stale import iso
from scorer.serve import session
from scorer.serve.front import shown_time
from scorer.serve.pages import login_page
from scorer.serve.server import LOCK_WORDS, Server
from scorer.serve.settings import Stage
from scorer.serve.sqladmin import DayCount, Event, Failed, TeamCount
from scorer.serve.store import Quota, utc

#: What a team's token or session is told at `/admin`.
NOT_YOURS = (
    "This page is the organiser's: a team's token or session does not open it. "
    "Log in with the admin token."
)

#: Each stage in words.
STAGES = {
    "not_started": "uploads are not open yet",
    "open": "uploads are taken",
    "frozen": "the public board shows the uploads before the freeze",
    "ended": "uploads and picks are closed",
    "revealed": "the final board is public",
}

_STYLE = """
header, .meta, section p { overflow-wrap: anywhere; }
td.text { white-space: normal; overflow-wrap: anywhere; min-width: 8rem; max-width: 24rem; }
form.inline { display: inline; } button { font: inherit; padding: .3rem .6rem; }
.verdict.rejected { border: 1px solid #d0d7de; padding: .6rem .8rem; background: #ffebe9; }
"""


@dataclass(frozen=True)
class Overview:
    """What the organiser's page shows, read once for both its renderers."""

    title: str
    now: datetime
    stage: Stage
    limits: str
    #: Each team's uploads counted, and the quota its limits leave it now.
    teams: list[tuple[TeamCount, Quota]]
    days: list[DayCount]
    queue: dict[str, int]
    failures: list[Failed]
    events: list[Event]


def overview(server: Server, now: datetime) -> Overview:
    """The server as the organiser sees it at `now`."""
    store, settings = server.store, server.settings
    limits = store.limits_now()
    teams = [
        (c, Quota.of(limits.of_team(c.id), now, c.today, c.counted_rejected, c.counted))
        for c in store.team_counts(now)
    ]

    def most(value: int | None) -> str:
        return "none" if value is None else str(value)

    words = (
        f"Limits: {most(settings.daily_limit)} a UTC day, {most(settings.rejected_limit)} "
        f"rejected, {most(settings.total_limit)} in all; {settings.picks} picks a team."
    )
    return Overview(
        settings.title,
        now,
        server.stage(now),
        words,
        teams,
        store.days(),
        store.queue(),
        store.failures(),
        store.audit_tail(),
    )


def today(quota: Quota) -> str:
    """What a team may still upload today, in words."""
    if quota.locked:
        return "0: closed"
    if quota.remaining_today is None:
        return "no daily limit"
    if quota.limit == "daily_limit":
        return "0 until 00:00 UTC"
    return str(quota.remaining_today)


def state(count: TeamCount, quota: Quota) -> str:
    """Whether a team may upload: revoked, closed by a lock (which), or active."""
    if count.revoked:
        return "revoked"
    if quota.locked:
        return f"closed: it reached {LOCK_WORDS[str(quota.limit)]}"
    return "active"


def detail_text(detail: dict[str, Any]) -> str:
    """An audit event's detail as one line of text: `key: value; …` (values other than
    text as JSON), every refused character written visibly."""
    parts = [
        f"{key}: {value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"
        for key, value in sorted(detail.items())
    ]
    return escaped("; ".join(parts))


def day_text(day: str) -> str:
    """A UTC day (`2027-01-31`) as the pages write it: `31 Jan 2027`."""
    return shown_time(datetime.fromisoformat(day)).split(",")[0]


def _table(heads: list[str], rows: list[str], empty: str) -> str:
    """A table in a scroller (`.board`: it scrolls on its own, the page never sideways)."""
    if not rows:
        return f"<p>{escape(empty)}</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return (
        f'<div class="board"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _row(*cells: str) -> str:
    """A row of cells, each escaped HTML already (`_wraps`: a cell that may wrap)."""
    return "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>"


def _wraps(html: str) -> str:
    return f'<td class="text">{html}</td>'


def _name(name: str) -> str:
    return _wraps(f"<bdi>{escape(shown(name))}</bdi>")


def admin_html(found: Overview) -> str:
    """The organiser's page."""
    stage = found.stage
    upcoming = (
        f"{stage.next.replace('_', ' ')} at {shown_time(stage.at)}"
        if stage.next is not None and stage.at is not None
        else "none scheduled"
    )
    teams = [
        _row(
            _name(c.name),
            *(str(n) for n in (c.uploads, c.scored, c.rejected, c.failed, c.waiting)),
            escape(today(q)),
            _wraps(escape(state(c, q))),
        )
        for c, q in found.teams
    ]
    days = [
        _row(escape(day_text(d.day)), *map(str, (d.uploads, d.scored, d.rejected, d.failed)))
        for d in found.days
    ]
    failures = [
        _row(
            str(f.id),
            _name(f.team),
            _wraps(escape(escaped(f.filename))),
            escape(shown_time(f.submitted_at)),
            _wraps(f"{escape(f.code)}: {escape(escaped(f.message))}"),
        )
        for f in found.failures
    ]
    events = [
        _row(escape(shown_time(e.at)), escape(e.event), _wraps(escape(detail_text(e.detail))))
        for e in found.events
    ]
    queued, scoring = found.queue.get("queued", 0), found.queue.get("scoring", 0)
    phase = f"{stage.name.replace('_', ' ')} ({STAGES.get(stage.name, '')})"
    body = [
        f"<header><h1>{escape(found.title)}: the organiser's page</h1>",
        f'<p class="meta" id="phase"><strong>Phase: {escape(phase)}</strong>. '
        f"Next change: {escape(upcoming)}. {escape(found.limits)}</p>",
        f'<p class="meta">Page generated at {escape(shown_time(found.now))}. '
        '<a href="/">The competition\'s page</a></p>',
        '<form method="post" action="/logout" class="inline">'
        '<button type="submit">Log out</button></form></header>',
        f'<section id="teams"><h2>Teams ({len(found.teams)})</h2>',
        _table(
            ["Team", "Uploads", "Scored", "Rejected", "Failed", "Waiting", "Left today", "State"],
            teams,
            "No team yet.",
        ),
        "</section>",
        '<section id="days"><h2>Uploads per day (UTC)</h2>',
        _table(["Day", "Uploads", "Scored", "Rejected", "Failed"], days, "No upload yet."),
        "</section>",
        '<section id="queue"><h2>Queue</h2>',
        f"<p>{queued} queued, {scoring} being scored.</p></section>",
        '<section id="failures"><h2>Failures (the latest)</h2>',
        _table(["Id", "Team", "File", "Submitted", "Error"], failures, "No failure."),
        "</section>",
        f'<section id="audit"><h2>Audit log (the last {len(found.events)} events)</h2>',
        _table(["Time", "Event", "Detail"], events, "No event yet."),
        "</section>",
    ]
    return document(f"{found.title}: the organiser's page", body, _STYLE)


def overview_dict(found: Overview) -> dict[str, Any]:
    """The organiser's page as JSON: the same figures, times in ISO 8601."""
    return {
        "now": iso(found.now),
        **found.stage.to_dict(),
        "teams": [
            {
                "team": c.name,
                "revoked": c.revoked,
                "uploads": c.uploads,
                "scored": c.scored,
                "rejected": c.rejected,
                "failed": c.failed,
                "waiting": c.waiting,
                "remaining_today": q.remaining_today,
                "locked": q.limit if q.locked else None,
            }
            for c, q in found.teams
        ],
        "days": [
            {"day": d.day, "uploads": d.uploads, "scored": d.scored, "rejected": d.rejected}
            | {"failed": d.failed, "waiting": d.waiting}
            for d in found.days
        ],
        **found.queue,
        "failures": [
            {"id": f.id, "team": f.team, "filename": f.filename}
            | {"submitted_at": iso(f.submitted_at), "code": f.code, "message": f.message}
            for f in found.failures
        ],
        "audit": [
            {"id": e.id, "at": iso(e.at), "event": e.event, **e.detail} for e in found.events
        ],
    }


def refused(server: Server, status: int, message: str) -> Response:
    body = [
        f'<p class="verdict rejected" role="alert">{escape(message)}</p>',
        '<p><a href="/admin/login">Log in with the admin token</a> &middot; '
        '<a href="/">The competition\'s page</a></p>',
    ]
    return HTMLResponse(document(server.settings.title, body, _STYLE), status_code=status)


def routes(server: Server) -> list[Route]:
    """The organiser's page and its login form (posted to `/login`, the one login)."""

    async def page(request: Request) -> Response:
        if await run_in_threadpool(session.organiser, server, request):
            found = await run_in_threadpool(overview, server, utc())
            return HTMLResponse(admin_html(found))
        team = await run_in_threadpool(session.team_of, server, request)
        if team is not None or session.bearer(request) is not None:
            return refused(server, 403, NOT_YOURS)
        return RedirectResponse("/admin/login", status_code=303)

    async def login(request: Request) -> Response:
        return HTMLResponse(login_page(server, organiser=True))

    return [Route("/admin", page), Route("/admin/login", login)]


def api(server: Server) -> list[Route]:
    """The page's JSON twin, under `/api/v1`, with the admin token as for every admin route."""

    async def twin(request: Request) -> Response:
        await run_in_threadpool(server.admin, session.bearer(request))
        found = await run_in_threadpool(overview, server, utc())
        return JSONResponse(overview_dict(found))

    return [Route("/admin/overview", twin)]
