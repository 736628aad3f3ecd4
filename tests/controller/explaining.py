"""What the ``hpactl explain`` tests share: the command run in-process, and an open
controller's decision records served at /debug/hpa/... as ``hpactl run`` serves them."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from dataclasses import replace

from hpactl.cli import main
from hpactl.controller.app import ControllerApp
from hpactl.controller.serving import debug_endpoints
from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.server import ObservabilityServer, Readiness


async def explain(*argv: str) -> tuple[int, str, str]:
    """``hpactl explain ...`` in a thread (it runs its own event loop): code, out, err."""

    def call() -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["explain", *argv])
        return code, out.getvalue(), err.getvalue()

    return await asyncio.to_thread(call)


@contextlib.asynccontextmanager
async def debug_server(app: ControllerApp) -> AsyncIterator[ObservabilityServer]:
    """An observability server on a loopback port serving ``app``'s decision records."""
    debug = debug_endpoints(replace(app.config, enable_debug_endpoints=True), app)
    server = ObservabilityServer(
        ControllerMetrics(),
        Readiness(lambda: True, lambda: "leader"),
        "127.0.0.1:0",
        "0",
        debug=debug,
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def server_url(server: ObservabilityServer) -> str:
    return f"http://127.0.0.1:{server.ports['metrics']}"
