"""The server's pages: the competition (rules, limits, the public board, the forms), an
upload's verdict, and a team's own page. Server-rendered HTML, no script; every name and
message a participant can make is escaped, and each page has a JSON twin under `/api/v1`."""

from __future__ import annotations

import asyncio
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from scorer.errors import Report
from scorer.leaderboard.literal import shown
from scorer.leaderboard.names import escaped
from scorer.leaderboard.page import document
from scorer.leaderboard.schema import Phase
from scorer.serve import session
from scorer.serve.front import ZIP, Download, description_html, format_items, shown_time
from scorer.serve.intake import ident, small_body, take
from scorer.serve.notes import MAX_DESCRIPTION_CHARS
from scorer.serve.reveal import commitment_html
from scorer.serve.server import ServeError, Server
from scorer.serve.store import FINAL, Entry, PickError, Team, utc
from scorer.serve.uploads import UploadError

#: How long a submission's page waits for its verdict before it shows the upload as queued.
WAIT = 60.0

#: The session cookie's Max-Age, in seconds.
LIFETIME_SECONDS = int(session.LIFETIME.total_seconds())

_STYLE = """
form { display: grid; gap: .5rem; max-width: 32rem; margin: .5rem 0 1rem; }
input, button { font: inherit; padding: .35rem; max-width: 100%; }
.rules li { margin: .15rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
form.inline { display: inline; }
td.text { overflow-wrap: anywhere; min-width: 8rem; max-width: 20rem; }
#about, .links, #format li { overflow-wrap: anywhere; }
#about pre, #about table { display: block; max-width: 100%; overflow-x: auto; }
#about img { max-width: 100%; }
.verdict { border: 1px solid #d0d7de; padding: .6rem .8rem; overflow-wrap: anywhere; }
.verdict.scored { background: #dafbe1; } .verdict.rejected, .verdict.failed { background: #ffebe9; }
"""


def rules(server: Server) -> list[str]:
    """The rules a team needs before it uploads, times in UTC."""
    s, c = server.settings, server.competition
    daily = "no daily limit" if s.daily_limit is None else f"{s.daily_limit} scored a UTC day"
    items = [
        f"Score: mean {c.label(c.metric)} over users; the public board ranks by the public "
        "users, the final one by the private users, hidden until the reveal.",
        f"Uploads: {daily}; the day resets at 00:00 UTC. A rejected upload counts toward "
        f"the limit of {s.rejected_limit or 'unlimited'} rejected uploads instead; one that "
        "fails on the server counts toward nothing.",
        f"Picks: each team selects up to {s.picks} scored submissions for the final board; "
        "with none selected, its best public ones count.",
    ]
    if s.total_limit is not None:
        items.append(f"At most {s.total_limit} uploads a team in all.")
    if s.freeze is not None:
        items.append(f"The public board freezes at {shown_time(s.freeze)}.")
    if s.end is not None:
        items.append(f"Uploads end at {shown_time(s.end)}.")
    return [f"<li>{escape(item)}</li>" for item in items]


#: The page's links to what a participant needs before the first upload.
LINKS = (
    '<p class="links"><a href="/download/participants.zip">Participants\' download</a> '
    "(the validator with its wheels, the targets, the sample, the competition file) &middot; "
    '<a href="/api/v1/targets">Target users</a> &middot; '
    '<a href="/api/v1/sample">Sample submission</a> &middot; '
    '<a href="/api/v1/competition">Rules as JSON</a></p>'
)


def upload_forms(server: Server, now: datetime) -> list[str]:
    """The upload form, or, after the end or the reveal, the words that uploads are closed."""
    if server.ended(now):
        end = server.settings.end
        when = f"at {shown_time(end)}" if end is not None else "with the reveal"
        return [
            '<section id="upload"><h2>Uploads are closed</h2>',
            f"<p>The competition ended {escape(when)}: uploads and picks are closed.</p></section>",
        ]
    return [
        '<section id="upload"><h2>Your team</h2><p>Upload, describe and pick your '
        'submissions on <a href="/team">your team\'s page</a> (log in with your token).</p>'
        "</section>",
    ]


def competition_page(server: Server) -> str:
    phase = server.phase()
    try:
        shown = server.boards(phase)  # after the reveal: both boards
    except ServeError:  # revealed a moment ago: the public ones meanwhile
        phase, shown = Phase.PUBLIC, server.boards(Phase.PUBLIC)
    now = utc()
    frozen = server.frozen(now)
    heading = server.settings.title
    state = (
        "Final: the private board is revealed."
        if server.phase() is Phase.FINAL
        else ("Public phase: the private board is hidden until the reveal.")
    )
    if frozen is not None:
        state += (
            f" The public board is frozen at {shown_time(frozen)}: later uploads are not on it."
        )
    about = server.store.description()
    body = [
        f"<header><h1>{escape(heading)}</h1>",
        f'<p class="meta"><strong>{escape(state)}</strong> Page generated at '
        f"{escape(shown_time(now))}.</p>{LINKS}</header>",
        *([f'<section id="about">{description_html(about)}</section>'] if about else []),
        '<section id="rules"><h2>Rules</h2><ul class="rules">',
        *rules(server),
        "</ul></section>",
        '<section id="format"><h2>Format</h2><ul class="rules">',
        *format_items(server.competition, server.max_upload),
        "</ul></section>",
        *upload_forms(server, now),
        shown.html,
        *commitment_html(server.store),
    ]
    return document(f"{heading} ({phase} phase)", body, _STYLE)


def verdict_html(entry: Entry) -> str:
    """One submission's verdict as its team reads it."""
    status = str(entry.status)
    lines = [f"<p><strong>Submission {entry.id}: {escape(status)}</strong>"]
    if entry.public_score is not None:
        lines.append(f" (public score {entry.public_score:.6f})")
    lines.append(f" &middot; submitted {escape(shown_time(entry.submitted_at))}</p>")
    if entry.status not in FINAL:
        lines.append("<p>It is waiting for a worker: show your submissions for its verdict.</p>")
    if entry.report:
        text = "\n".join(escaped(line) for line in report_text(entry.report).splitlines())
        lines.append(f"<pre>{escape(text)}</pre>")
    return f'<div class="verdict {escape(status)}" role="status">{"".join(lines)}</div>'


def report_text(report: dict[str, Any]) -> str:
    """A stored report in the words of `scorer validate`: the file's problems, or the
    failure's message."""
    if report.get("problems"):
        return Report.from_dict(report).render()
    return str(report.get("message", ""))


def team_page(server: Server, team: Team, notice: str = "") -> str:
    """A team's own page: its quota, the upload form (with a description), and each of its
    submissions (the name it was sent as, its description, status, public score and saved
    report) in the picks form. Every word a team wrote is escaped."""
    entries, quota = server.entries_of(team)
    left = "no daily limit" if quota.remaining_today is None else f"{quota.remaining_today} left"
    slot = "none" if quota.next_slot is None else shown_time(quota.next_slot)
    rows = [_row(entry) for entry in reversed(entries)]
    if server.ended(utc()):
        upload = ["<p><strong>Uploads are closed: the competition ended.</strong></p>"]
    else:
        upload = [
            '<form method="post" action="/upload" enctype="multipart/form-data">',
            '<label>File <input type="file" name="file" required></label>',
            f"<label>Description (optional, at most {MAX_DESCRIPTION_CHARS} characters) "
            f'<input type="text" name="description" maxlength="{MAX_DESCRIPTION_CHARS}">'
            '</label><button type="submit">Upload</button></form>',
        ]
    body = [
        f"<header><h1>{escape(server.settings.title)}</h1>",
        f'<p class="meta">Team <bdi>{escape(shown(team.name))}</bdi>: today {escape(left)}; '
        f'next slot {escape(slot)}. <a href="/">Back to the board</a></p>',
        '<form method="post" action="/logout" class="inline">'
        '<button type="submit">Log out</button></form></header>',
        notice,
        '<section id="upload"><h2>Upload a submission</h2>',
        *upload,
        "</section>",
        '<section id="submissions"><h2>Your submissions</h2>',
        '<form method="post" action="/team/picks"><div class="board"><table><thead><tr>'
        "<th>Pick</th><th>Id</th><th>File</th><th>Description</th><th>Submitted</th>"
        '<th>Status</th><th class="right">Public score</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>",
        f'<button type="submit">Select the checked ones (at most {server.settings.picks})'
        "</button></form></section>",
    ]
    return document(f"{server.settings.title}: your team", body, _STYLE)


def _row(entry: Entry) -> str:
    """A submission's row on its team's page; a report, when it has one, under its status."""
    box = (
        f'<input type="checkbox" name="ids" value="{entry.id}"'
        f"{' checked' if entry.selected else ''}>"
        if entry.status == "scored"
        else ""
    )
    score = "" if entry.public_score is None else f"{entry.public_score:.6f}"
    status = escape(str(entry.status))
    if entry.report:
        text = "\n".join(escaped(line) for line in report_text(entry.report).splitlines())
        status = f"<details><summary>{status}</summary><pre>{escape(text)}</pre></details>"
    return (
        f'<tr><td>{box}</td><td><a href="/team/submissions/{entry.id}">{entry.id}</a></td>'
        f'<td class="text">{escape(entry.filename)}</td>'
        f'<td class="text">{escape(entry.description)}</td>'
        f"<td>{escape(shown_time(entry.submitted_at))}</td>"
        f'<td>{status}</td><td class="right">{score}</td></tr>'
    )


def login_page(server: Server, message: str = "", *, organiser: bool = False) -> str:
    """The login form: a team's (`/login`), or the organiser's (`/admin/login`, the admin
    token), both posted to `/login`."""
    said = f'<p class="verdict rejected" role="alert">{escape(message)}</p>' if message else ""
    what, label = (
        ("The organiser's page", "Admin token") if organiser else ("Your team's page", "Team token")
    )
    body = [
        f"<header><h1>{escape(server.settings.title)}</h1>",
        '<p class="meta"><a href="/">Back to the board</a></p></header>',
        said,
        f"<h2>{escape(what)}</h2>",
        '<form method="post" action="/login">',
        '<input type="hidden" name="page" value="admin">' if organiser else "",
        f'<label>{label} <input type="password" name="token" required autocomplete="off">'
        '</label><button type="submit">Log in</button></form>',
    ]
    return document(f"{server.settings.title}: log in", body, _STYLE)


def pages(server: Server) -> list[Route]:
    """The page's routes. Every POST comes from the server's own pages (`same_origin`),
    else 403, and answers with a 303 to a GET page: a reload sends nothing again."""

    async def home(request: Request) -> Response:
        return HTMLResponse(await run_in_threadpool(competition_page, server))

    def refusal(status: int, message: str, back: str = "/") -> Response:
        body = [
            f'<p class="verdict rejected" role="alert">{escape(message)}</p>',
            f'<p><a href="{back}">Back</a></p>',
        ]
        return HTMLResponse(document(server.settings.title, body, _STYLE), status_code=status)

    def forged(request: Request) -> Response | None:
        if session.same_origin(request):
            return None
        return refusal(403, "This form was not sent from this server's own page.")

    async def login_form(request: Request) -> Response:
        return HTMLResponse(login_page(server))

    async def login(request: Request) -> Response:
        if (refused := forged(request)) is not None:
            return refused
        form = parse_qs((await small_body(request)).decode("utf-8", "replace"))
        token, organiser = (form.get("token") or [""])[0], form.get("page") == ["admin"]
        try:
            opened = await run_in_threadpool(session.log_in, server, token, organiser=organiser)
        except ServeError as exc:
            page = login_page(server, exc.message, organiser=organiser)
            return HTMLResponse(page, status_code=exc.status)
        answer = RedirectResponse(opened.page, status_code=303)
        answer.headers["set-cookie"] = session.cookie(request, opened.ident, LIFETIME_SECONDS)
        return answer

    async def logout(request: Request) -> Response:
        if (refused := forged(request)) is not None:
            return refused
        await run_in_threadpool(session.log_out, server, request)
        answer = RedirectResponse("/login", status_code=303)
        answer.headers["set-cookie"] = session.cookie(request, "", 0)
        return answer

    async def mine(request: Request) -> Team | None:
        return await run_in_threadpool(session.team_of, server, request)

    async def team(request: Request) -> Response:
        found = await mine(request)
        if found is None:
            return RedirectResponse("/login", status_code=303)
        return HTMLResponse(await run_in_threadpool(team_page, server, found))

    async def one(request: Request) -> Response:
        found = await mine(request)
        if found is None:
            return RedirectResponse("/login", status_code=303)
        try:
            entry = await _verdict(server, found, ident(request.path_params["id"]))
        except ServeError as exc:
            return refusal(exc.status, exc.message, "/team")
        page = await run_in_threadpool(team_page, server, found, verdict_html(entry))
        return HTMLResponse(page)

    async def upload(request: Request) -> Response:
        if (refused := forged(request)) is not None:
            return refused
        found = await mine(request)
        if found is None:
            return refusal(401, "Log in with your team's token first.", "/login")
        try:
            taken = await take(server, request, found)
        except (UploadError, ServeError) as exc:
            return refusal(exc.status, exc.message, "/team")
        return RedirectResponse(f"/team/submissions/{taken.id}", status_code=303)

    async def picks(request: Request) -> Response:
        if (refused := forged(request)) is not None:
            return refused
        found = await mine(request)
        if found is None:
            return refusal(401, "Log in with your team's token first.", "/login")
        try:
            form = parse_qs((await small_body(request)).decode("utf-8", "replace"))
            ids = [int(i) for i in form.get("ids", []) if i.isascii() and i.isdigit()]
            await run_in_threadpool(server.pick, found, ids)
        except (ServeError, PickError) as exc:
            return refusal(getattr(exc, "status", 400), str(exc), "/team")
        return RedirectResponse("/team", status_code=303)

    download = Download(server)  # reads the server only when asked for the zip

    async def participants(request: Request) -> Response:
        found = await run_in_threadpool(download.ready)
        if found is None:  # being built, in a thread of its own
            raise ServeError(
                503, "building", "the participants' download is being made; try again in a minute"
            )
        return FileResponse(found, media_type="application/zip", filename=ZIP)

    return [
        Route("/", home),
        Route("/login", login_form),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/team", team),
        Route("/team/submissions/{id}", one),
        Route(f"/download/{ZIP}", participants),
        Route("/upload", upload, methods=["POST"]),
        Route("/team/picks", picks, methods=["POST"]),
    ]


async def _verdict(server: Server, team: Team, ident: int) -> Entry:
    """The upload's entry once it has its verdict, or as it stands after `WAIT` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while True:
        entry = await run_in_threadpool(server.entry_of, team, ident)
        if entry.status in FINAL or loop.time() > deadline:
            return entry
        await asyncio.sleep(0.2)
