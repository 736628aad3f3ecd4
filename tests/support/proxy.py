"""A recording reverse proxy on loopback, in front of the emulator.

It sees what one client (one ``hpactl run`` process, one ``ControllerApp``) sends,
so a test can say who wrote what, as the adversarial runs did with a logging proxy.
It can also hold back a response after the server has answered: the write has
landed, the client has not heard of it (a slow network, a timed-out request).

    async with RecordingProxy(emu.url) as proxy:
        ...  # point the client at proxy.url
        proxy.hold("PUT", "/apis/apps/v1/*/scale", seconds=2.0, count=1)
        proxy.writes()  # [Seen(method, path, status, at), ...] outside leader election
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ssl as ssl_
import time
from dataclasses import dataclass
from types import TracebackType

import aiohttp
from aiohttp import web

__all__ = ["RecordingProxy", "Seen"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "upgrade",
        "host",
    }
)
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class Seen:
    method: str
    path: str
    query: str
    status: int
    at: float  # time.monotonic() when the request arrived

    @property
    def is_write(self) -> bool:
        return self.method not in _READ_METHODS

    @property
    def is_lease(self) -> bool:
        return "/coordination.k8s.io/" in self.path


@dataclass
class _Hold:
    method: str
    path: str
    seconds: float
    count: int


class RecordingProxy:
    def __init__(self, upstream: str, *, ssl: ssl_.SSLContext | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self._ssl = ssl  # to reach an https upstream (the emulator's CA)
        self.seen: list[Seen] = []
        self._streams: dict[int, web.Request] = {}  # open watch streams, by id
        self._holds: list[_Hold] = []
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None
        self.url = ""

    async def __aenter__(self) -> RecordingProxy:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def hold(self, method: str, path: str, *, seconds: float, count: int = 1) -> None:
        """Delay the next ``count`` responses to ``method path`` (a glob) by ``seconds``,
        after the server has answered them."""
        self._holds.append(_Hold(method, path, seconds, count))

    def cut_streams(self) -> int:
        """Cut every open watch stream mid-way (its TCP connection closed), as a load
        balancer dropping idle connections does; new connections are still accepted."""
        cut = 0
        for request in list(self._streams.values()):
            if request.transport is not None:
                request.transport.abort()
                cut += 1
        return cut

    def writes(self, *, since: float = 0.0, leases: bool = False) -> list[Seen]:
        return [s for s in self.seen if s.is_write and s.at >= since and (leases or not s.is_lease)]

    def _held_for(self, method: str, path: str) -> float:
        for h in self._holds:
            if h.count > 0 and h.method == method and fnmatch.fnmatchcase(path, h.path):
                h.count -= 1
                return h.seconds
        return 0.0

    async def start(self) -> None:
        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=False,
            connector=aiohttp.TCPConnector(ssl=self._ssl) if self._ssl is not None else None,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        # Open watch streams are cut at once on stop (the default waits 60 s for them).
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._client is not None
        arrived = time.monotonic()
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        url = self.upstream + request.rel_url.raw_path_qs
        async with self._client.request(
            request.method, url, data=body or None, headers=headers, allow_redirects=False
        ) as upstream:
            self.seen.append(
                Seen(request.method, request.path, request.query_string, upstream.status, arrived)
            )
            out_headers = {
                k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP
            }
            if request.query.get("watch") in ("1", "true"):
                return await self._stream(request, upstream, out_headers)
            data = await upstream.read()
            delay = self._held_for(request.method, request.path)
            if delay:
                await asyncio.sleep(delay)  # the server answered; the client waits
            return web.Response(body=data, status=upstream.status, headers=out_headers)

    async def _stream(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        resp = web.StreamResponse(status=upstream.status, headers=headers)
        await resp.prepare(request)
        self._streams[id(request)] = request
        try:
            with contextlib.suppress(ConnectionError, aiohttp.ClientError):
                async for chunk in upstream.content.iter_any():
                    await resp.write(chunk)
        finally:
            self._streams.pop(id(request), None)
        return resp
