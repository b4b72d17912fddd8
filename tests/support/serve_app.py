"""The server's ASGI app driven in-process (httpx's ASGI transport, no scoring loop)."""

from __future__ import annotations

import asyncio
from typing import Any

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
