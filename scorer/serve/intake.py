"""What a request brings in: the one upload handler, behind the API and the page's form, and
the small bodies (a form's fields, a JSON object), read capped, never whole."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from scorer.serve.server import ServeError, Server
from scorer.serve.store import Quota, Team, utc
from scorer.serve.uploads import FIELDS_BYTES, Upload, UploadError, too_large


async def small_body(request: Request, most: int = FIELDS_BYTES) -> bytes:
    """A request's body, when it is at most `most` bytes (a form's fields, a JSON object);
    a larger one is refused as soon as it is, never read whole."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > most:
            raise ServeError(413, "too_large", f"the request's body is over {most:,} bytes")
    return bytes(body)


async def json_body(request: Request) -> Any:
    """A request's small JSON body, or None when it is not JSON."""
    try:
        return json.loads(await small_body(request))
    except ValueError:
        return None


@dataclass(frozen=True)
class Taken:
    """An upload accepted: its team, the token it came with, its id and the team's quota."""

    team: Team
    token: str
    id: int
    quota: Quota


async def take(server: Server, request: Request, token: str | None) -> Taken:
    """The one upload handler, behind the API and the page's form: the team (by `token`,
    or, from a form, by the token field sent before the file), the upload received whole,
    then accepted, or refused and counted among the refusals. Its time is when its body is
    whole and on disk (`Server.accept`)."""
    teams: list[Team] = []
    length = request.headers.get("content-length", "")
    too_large_body = length.isdigit() and int(length) > server.max_upload + FIELDS_BYTES

    def admit(fields: dict[str, str]) -> None:
        """The team, checked before a byte of its file is kept: one that may upload. A body
        whose length is past the cap is refused as soon as its team is known (a form sends
        its token before its file), and counted among that team's refusals."""
        team = server.team(fields.get("token") if token is None else token)
        teams.append(team)
        if too_large_body:
            raise too_large(server.max_upload)
        server.may_upload(team, utc())

    try:
        if token is not None:  # the API: refused before the body is read
            await run_in_threadpool(admit, {})
        content_type = request.headers.get("content-type", "")
        stored: Upload = await server.receive(
            content_type, request.stream(), admit if token is None else None
        )
    except UploadError as exc:
        if teams:  # a refusal of a team's: counted (a body without a team counts nowhere)
            await run_in_threadpool(server.refused, teams[0], exc.code)
        raise
    ident, quota = await run_in_threadpool(server.accept, teams[0], stored)
    given = stored.fields.get("token", "") if token is None else token
    return Taken(teams[0], given.strip(), ident, quota)
