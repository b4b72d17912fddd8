"""What a request brings in: the one upload handler, behind the API and the page's form, and
the small bodies (a form's fields, a JSON object), read capped, never whole."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from scorer.serve import notes
from scorer.serve.server import ServeError, Server
from scorer.serve.store import Quota, Team, utc
from scorer.serve.uploads import FIELDS_BYTES, Upload, UploadError, discard, too_large


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


#: The largest id a submission can have (the stores' BIGINT): a larger one names none.
BIGGEST = (1 << 63) - 1


def ident(text: str) -> int:
    """A submission id from a path, or -1 (found nowhere) for anything that is not one:
    ASCII digits only (`²` is a digit to Python), and within the stores' integers."""
    if text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= BIGGEST:
        return int(text)
    return -1


@dataclass(frozen=True)
class Taken:
    """An upload accepted: its team, its id and the team's quota."""

    team: Team
    id: int
    quota: Quota


async def take(server: Server, request: Request, team: Team) -> Taken:
    """The one upload handler, behind the API (the team of its bearer token) and the team
    page's form (the team of its session): the team may upload, checked before the body is
    read; the upload received whole, then accepted, or refused and counted among the
    refusals. Its time is when its body is whole and on disk (`Server.accept`). Its
    `description` field is checked then: one refused is counted nowhere, its file removed."""
    length = request.headers.get("content-length", "")

    def admit() -> None:
        """A body whose length is past the cap is refused before a byte is read, and
        counted among the team's refusals."""
        if length.isdigit() and int(length) > server.max_upload + FIELDS_BYTES:
            raise too_large(server.max_upload)
        server.may_upload(team, utc())

    try:
        await run_in_threadpool(admit)
        content_type = request.headers.get("content-type", "")
        stored: Upload = await server.receive(content_type, request.stream())
    except UploadError as exc:
        await run_in_threadpool(server.refused, team, exc.code)
        raise
    try:
        words = notes.description(stored.fields.get("description", ""))
    except notes.BadDescription as exc:
        discard(server.folder, stored)
        raise UploadError(400, exc.code, str(exc)) from None
    ident, quota = await run_in_threadpool(server.accept, team, stored, words)
    return Taken(team, ident, quota)
