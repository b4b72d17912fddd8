"""The server's ASGI app driven in-process (httpx's ASGI transport, no scoring loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from scorer.serve.app import build
from scorer.serve.server import Server


def ask(server: Server, method: str, url: str, **options: Any) -> httpx.Response:
    """One request to `server`'s app, as a client on the wire would send it."""
    app = build(server.folder, server, start=False)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, url, **options)

    return asyncio.run(go())


T = TypeVar("T")


def browse(
    server: Server, steps: Callable[[httpx.AsyncClient], Awaitable[T]], base: str = "http://test"
) -> T:
    """`steps` in one browser-like client of the app: it keeps cookies, and sends the
    server's own `Origin` with every request, as a page of the server's does."""
    app = build(server.folder, server, start=False)

    async def go() -> T:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(
            transport=transport, base_url=base, headers={"Origin": base}
        ) as client:
            return await steps(client)

    return asyncio.run(go())
