"""The server's ASGI app: the JSON API under `/api/v1` and the page (`pages`). A thin layer: it
reads a request, asks the store or the boards, and answers; scoring is the loop's (`jobs`).

Every answer before the reveal is built from public figures only: the boards of the public
phase read no private score, and no route reads one before `POST /admin/reveal`."""

from __future__ import annotations

import sys
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scorer.errors import ScorerError
from scorer.leaderboard.schema import Phase
from scorer.leaderboard.stale import iso
from scorer.serve import site
from scorer.serve.front import error_page
from scorer.serve.intake import ident, json_body, take
from scorer.serve.reveal import NotRevealed, revealed, solution_dict
from scorer.serve.server import ServeError, Server, closed_for
from scorer.serve.session import bearer
from scorer.serve.sqlcore import StoreUnavailable
from scorer.serve.store import Entry, PickError, Quota, utc
from scorer.serve.uploads import UploadError

#: The folder of the server's own (its scratch, with PostgreSQL) where the revealed files go.
REVEALED = "revealed"


def error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    """The one error shape of every route: the `error` object of the CLI's `--json`."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = {"status": "error", "error": {"code": code, "message": message, **extra}, **extra}
    return JSONResponse(body, status_code=status, headers=headers)


def quota_dict(quota: Quota) -> dict[str, Any]:
    """What a team may still upload; `closed`, when a lock holds it, says so in words."""
    closed = closed_for(quota)
    return {
        "remaining_today": quota.remaining_today,
        "next_slot": None if quota.next_slot is None else iso(quota.next_slot),
        **({} if closed is None else {"closed": closed}),
    }


def entry_dict(entry: Entry) -> dict[str, Any]:
    """A submission as its team sees it: no private figure, ever."""
    data: dict[str, Any] = {
        "id": entry.id,
        "status": str(entry.status),
        "submitted_at": iso(entry.submitted_at),
        "sha256": entry.sha256,
        "size": entry.size,
        "selected": entry.selected,
        "filename": entry.filename,
        "description": entry.description,
    }
    if entry.public_score is not None:
        data["public_score"] = entry.public_score
    if entry.report is not None:
        data["report"] = entry.report
    return data


def api(server: Server) -> list[Route]:
    """The routes of `/api/v1`."""

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        return await run_in_threadpool(function, *args)

    async def competition(request: Request) -> Response:
        return JSONResponse(await call(server.competition_dict))

    async def targets(request: Request) -> Response:
        return Response(server.targets_bytes(), media_type="text/csv; charset=utf-8")

    async def sample(request: Request) -> Response:
        path = await call(site.sample_file, server.folder, server.competition)
        return FileResponse(path, media_type="text/csv; charset=utf-8", filename=site.SAMPLE)

    async def upload(request: Request) -> Response:
        team = await call(server.team, bearer(request))  # before a byte of the body is read
        taken = await take(server, request, team)
        answer = {"id": taken.id, "status": "queued", **quota_dict(taken.quota)}
        return JSONResponse(answer, 202)

    async def submissions(request: Request) -> Response:
        team = await call(server.team, bearer(request))
        entries, quota = await call(server.entries_of, team)
        return JSONResponse({"submissions": [entry_dict(e) for e in entries], **quota_dict(quota)})

    async def one(request: Request) -> Response:
        team = await call(server.team, bearer(request))
        entry = await call(server.entry_of, team, ident(request.path_params["id"]))
        quota = await call(server.store.quota, team.id, utc())
        return JSONResponse({**entry_dict(entry), **quota_dict(quota)})

    async def picks(request: Request) -> Response:
        team = await call(server.team, bearer(request))
        body = await json_body(request)
        ids = body.get("ids") if isinstance(body, dict) else None
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            return error(400, "bad_picks", 'expected a JSON body {"ids": [submission ids]}')
        chosen = await call(server.pick, team, ids)
        return JSONResponse({"ids": chosen, "picks": server.settings.picks})

    async def leaderboard(request: Request) -> Response:
        phase = request.query_params.get("phase", "public")
        if phase not in ("public", "final"):
            return error(400, "bad_phase", "phase: expected public or final")
        shown = await call(server.boards, Phase(phase))
        return Response(shown.json, media_type="application/json")

    async def solution(request: Request) -> Response:
        """The solution and the salt of its commitment, once revealed (`serve.reveal`)."""
        return JSONResponse(await call(solution_dict, server.store, server.folder / REVEALED))

    async def solution_csv(request: Request) -> Response:
        path, _ = await call(revealed, server.store, server.folder / REVEALED)
        return FileResponse(path, media_type="text/csv; charset=utf-8", filename=site.SOLUTION)

    async def add_team(request: Request) -> Response:
        await call(server.admin, bearer(request))
        body = await json_body(request)
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str):
            return error(400, "bad_team", 'expected a JSON body {"name": "the team\'s name"}')
        token = await call(server.add_team, name)
        return JSONResponse({"team": name, "token": token}, 201)

    async def reveal(request: Request) -> Response:
        await call(server.admin, bearer(request))
        return JSONResponse({"revealed_at": await call(server.reveal)})

    async def settings(request: Request) -> Response:
        """The settings in force (GET), or changed (PATCH: a JSON object of the settings to
        change, by the names of `scorer serve settings`, with `team` and `force` as there)."""
        await call(server.admin, bearer(request))
        if request.method == "GET":
            return JSONResponse(await call(server.settings_dict))
        asked = await json_body(request)
        if not isinstance(asked, dict):
            raise ServeError(400, "bad_request", "expected a JSON object of settings")
        team, force = asked.pop("team", None), asked.pop("force", False)
        if not (team is None or isinstance(team, str)) or not isinstance(force, bool):
            raise ServeError(400, "bad_request", "team is a name, force true or false")
        return JSONResponse(await call(server.change_settings, asked, team, force))

    async def all_submissions(request: Request) -> Response:
        await call(server.admin, bearer(request))
        entries = await call(server.store.entries)
        rows = [{"team": e.team, **entry_dict(e)} for e in entries]
        return JSONResponse({"submissions": rows})

    async def audit(request: Request) -> Response:
        await call(server.admin, bearer(request))
        found = {"audit": await call(server.store.audit)}
        return JSONResponse({**found, "refusals": await call(server.store.refusals)})

    async def status(request: Request) -> Response:
        await call(server.admin, bearer(request))
        return JSONResponse(await call(server.status))

    async def forecast(request: Request) -> Response:
        await call(server.admin, bearer(request))
        return JSONResponse(await call(server.forecast))

    return [
        Route("/competition", competition),
        Route("/targets", targets),
        Route("/sample", sample),
        Route("/submissions", upload, methods=["POST"]),
        Route("/submissions", submissions),
        Route("/submissions/{id}", one),
        Route("/picks", picks, methods=["PUT"]),
        Route("/leaderboard", leaderboard),
        Route("/solution", solution),
        Route("/solution.csv", solution_csv),
        Route("/admin/teams", add_team, methods=["POST"]),
        Route("/admin/reveal", reveal, methods=["POST"]),
        Route("/admin/submissions", all_submissions),
        Route("/admin/audit", audit),
        Route("/admin/status", status),
        Route("/admin/forecast", forecast),
        Route("/admin/settings", settings, methods=["GET", "PATCH"]),
    ]


def answer(request: Request, exc: Exception) -> Response:
    """Every refusal as the one error shape (`refusal`); a browser asking for a page (not
    `/api/`, and `Accept: text/html`) gets it as an HTML page, with the same status."""
    answered = refusal(request, exc)
    if request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", ""):
        return answered
    return error_page(answered)


def refusal(request: Request, exc: Exception) -> Response:
    """Every refusal as the one error shape; anything unforeseen is told to the organiser on
    stderr, and the client gets a bare 500."""
    if isinstance(exc, ServeError):
        answered = error(exc.status, exc.code, exc.message, **exc.extra)
        if exc.status == 503:  # nothing is wrong with the request: the same one, soon
            answered.headers["Retry-After"] = "5"
        return answered
    if isinstance(exc, NotRevealed):
        return error(403, "not_revealed", str(exc))
    if isinstance(exc, UploadError):
        return error(exc.status, exc.code, exc.message)
    if isinstance(exc, PickError):
        return error(403 if exc.code == "competition_ended" else 400, exc.code, str(exc))
    if isinstance(exc, ScorerError):  # the library refused: a team name taken, or refused
        return error(400, str(exc.failure), str(exc))
    if isinstance(exc, ClientDisconnect):  # gone: nobody reads the answer (`wire` counts it)
        return error(400, "disconnected", "the client went away before its request was whole")
    if isinstance(exc, StoreUnavailable):  # PostgreSQL restarting, a full disk: nothing done
        print(f"scorer serve: {exc}", file=sys.stderr)
        answered = error(503, "unavailable", "the server's database is away; try again soon")
        answered.headers["Retry-After"] = "5"
        return answered
    if isinstance(exc, HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error(exc.status_code, code, str(exc.detail))
    traceback.print_exception(exc, file=sys.stderr)
    return error(500, "internal_error", "the server failed; the organiser has the details")


#: Sent with every answer: pages load nothing from elsewhere, run no script, post forms only
#: here, are framed by no other site, and send no address to another site (`same-origin`,
#: not `no-referrer`: under that a browser sends a form's POST with `Origin: null`, and the
#: pages' forms are checked by their origin, `session.same_origin`); nothing is sniffed.
HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


class Guarded:
    """The app with `HEADERS` on every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _smuggled(scope):
            refusal = error(400, "bad_request", "Content-Length and Transfer-Encoding both given")
            await refusal(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, sending)


def _smuggled(scope: Scope) -> bool:
    """A request that gives its body's length twice (Content-Length and chunked): which
    one a proxy in front believed is anyone's guess, so it is refused."""
    names = {name.lower() for name, _ in scope.get("headers", [])}
    return b"content-length" in names and b"transfer-encoding" in names


def build(folder: Path, server: Server | None = None, *, start: bool = True) -> Starlette:
    """The app of a server folder. `start`: run the scoring loop while the app runs (off in
    the tests that drive the app without scoring)."""
    from scorer.serve import admin
    from scorer.serve.pages import pages

    server = server if server is not None else Server(folder)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if start:
            server.start()
        try:
            yield
        finally:
            await run_in_threadpool(server.stop)

    app = Starlette(
        routes=[
            Mount("/api/v1", routes=[*api(server), *admin.api(server)]),
            *pages(server),
            *admin.routes(server),
        ],
        lifespan=lifespan,
        middleware=[Middleware(Guarded)],
        exception_handlers={
            kind: answer
            for kind in (
                HTTPException,
                ServeError,
                UploadError,
                PickError,
                ScorerError,
                ClientDisconnect,
                StoreUnavailable,
                NotRevealed,
                Exception,
            )
        },
    )
    app.state.server = server
    return app
