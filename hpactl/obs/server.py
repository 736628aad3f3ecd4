"""The health and metrics HTTP servers.

As controller-runtime does, metrics (``/metrics``) and probes (``/healthz``,
``/readyz``) listen on separate addresses, so a NetworkPolicy can expose one
without the other; an address of ``0`` turns that server off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from hpactl.obs.metrics import CONTENT_TYPE, ControllerMetrics


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``:8080`` → (``0.0.0.0``, 8080); ``127.0.0.1:0`` → ephemeral; ``0`` → disabled."""
    if address.strip() == "0":
        return None
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must be host:port")
    host = host.strip("[]") or "0.0.0.0"
    try:
        port_no = int(port)
    except ValueError:
        raise ValueError(f"bind address {address!r} has an invalid port") from None
    if not 0 <= port_no <= 65535:
        raise ValueError(f"bind address {address!r} has an invalid port")
    return host, port_no


@dataclass
class Readiness:
    """What ``/readyz`` reports.  Healthy means the process loop answers; ready means
    the caches have synced and leader election has settled (leader or standby)."""

    caches_synced: Callable[[], bool]
    leader_state: Callable[[], str]  # "leader", "standby" or "starting"


class ObservabilityServer:
    def __init__(
        self,
        metrics: ControllerMetrics,
        readiness: Readiness,
        metrics_address: str = ":8080",
        health_address: str = ":8081",
    ) -> None:
        self._metrics = metrics
        self._readiness = readiness
        self._addresses = {
            "metrics": parse_bind_address(metrics_address),
            "health": parse_bind_address(health_address),
        }
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}

    async def _metrics_handler(self, _request: web.Request) -> web.Response:
        body = self._metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _request: web.Request) -> web.Response:
        synced = self._readiness.caches_synced()
        leader = self._readiness.leader_state()
        lines = [
            f"[{'+' if synced else '-'}]informer-caches {'ok' if synced else 'not synced'}",
            f"[{'+' if leader != 'starting' else '-'}]leader-election {leader}",
        ]
        ok = synced and leader != "starting"
        lines.append("readyz check passed" if ok else "readyz check failed")
        return web.Response(text="\n".join(lines) + "\n", status=200 if ok else 500)

    async def start(self) -> None:
        apps: dict[str, web.Application] = {}
        metrics_app = web.Application()
        metrics_app.router.add_get("/metrics", self._metrics_handler)
        health_app = web.Application()
        health_app.router.add_get("/healthz", self._healthz)
        health_app.router.add_get("/readyz", self._readyz)
        apps["metrics"], apps["health"] = metrics_app, health_app
        for name, app in apps.items():
            address = self._addresses[name]
            if address is None:
                continue
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, address[0], address[1])
            await site.start()
            self._runners.append(runner)
            # The bound port (port 0 asks the kernel for one), via the public API.
            bound = runner.addresses
            self.ports[name] = int(bound[0][1]) if bound else address[1]

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
