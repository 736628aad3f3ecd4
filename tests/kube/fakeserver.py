"""A scripted HTTP server on 127.0.0.1:0 for request-layer tests.

Only for wire-level behaviour the emulator is not meant to script (text 503 bodies,
paging tokens, slow answers); API semantics are tested against the emulator.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class FakeServer:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.requests: list[web.Request] = []
        self.bodies: list[Any] = []
        self.url = ""
        # Handlers that must hang await this; it is set before shutdown.
        self.release = asyncio.Event()

    def route(self, method: str, path: str, handler: Handler) -> None:
        self.routes[(method, path)] = handler

    def json(self, method: str, path: str, obj: Any, status: int = 200) -> None:
        async def h(_: web.Request) -> web.StreamResponse:
            return web.json_response(obj, status=status)

        self.route(method, path, h)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        raw = await request.read()
        self.bodies.append(json.loads(raw) if raw else None)
        h = self.routes.get((request.method, request.path))
        if h is None:
            return web.json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": "the server could not find the requested resource",
                    "reason": "NotFound",
                    "code": 404,
                },
                status=404,
            )
        return await h(request)


@asynccontextmanager
async def fake_server() -> AsyncIterator[FakeServer]:
    srv = FakeServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv._dispatch)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
    try:
        yield srv
    finally:
        srv.release.set()
        await runner.cleanup()
