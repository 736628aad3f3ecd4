"""``hpactl run --enable-debug-endpoints`` as a real process against the emulator: the
decision records at /debug/hpa/{namespace}/{name}, and no such route without the flag."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from hpactl.emulator.emulator import Emulator

from .builders import hpa, pod_metrics, workload

pytestmark = pytest.mark.timeout(120)


@contextlib.asynccontextmanager
async def hpactl_run(emu: Emulator, *extra: str) -> AsyncIterator[int]:
    """``hpactl run`` on ephemeral ports; yields the metrics port once serving."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hpactl",
        "run",
        f"--master={emu.url}",
        "--leader-elect=false",
        "--horizontal-pod-autoscaler-sync-period=1s",
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=0",
        "--logging-format=json",
        *extra,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stderr is not None
        port = None
        async with asyncio.timeout(30):
            while port is None:
                line = await proc.stderr.readline()
                assert line, "hpactl run exited before serving"
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if entry.get("msg") == "hpactl.serving":
                        port = int(entry["metrics_port"])
        drain = asyncio.create_task(proc.stderr.read())
        yield port
    finally:
        if proc.returncode is None:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)
        with contextlib.suppress(Exception):
            drain.cancel()


async def get(url: str) -> tuple[int, str, Any]:
    async with aiohttp.ClientSession() as http, http.get(url) as r:
        text = await r.text()
        body = None
        with contextlib.suppress(ValueError):
            body = json.loads(text)
        return r.status, text, body


def setup(emu: Emulator) -> None:
    now = datetime.now(UTC)
    names = workload(emu, "web", 2, now)
    emu.metrics.set_pod_metrics(pod_metrics(names, "100m", now))  # at target: tolerance
    emu.store.create(hpa("web", "web", max_replicas=4, utilization=100))


async def test_records_served_when_enabled() -> None:
    async with Emulator() as emu:
        setup(emu)
        async with hpactl_run(emu, "--enable-debug-endpoints", "--decision-records=2") as port:
            base = f"http://127.0.0.1:{port}"
            async with asyncio.timeout(30):
                while True:
                    status, _, body = await get(f"{base}/debug/hpa/default/web")
                    if status == 200 and len(body["records"]) == 2:
                        break
                    await asyncio.sleep(0.2)
            assert body["hpa"] == "default/web"
            newest = body["records"][-1]
            assert newest["explanation"]["limitedBy"] == ["tolerance"]
            assert newest["explanation"]["metrics"][0]["current"] == "100%"
            assert body["records"][0]["time"] <= newest["time"]
            assert (await get(f"{base}/debug/hpa"))[2] == {"hpas": ["default/web"]}
            # component-base's zpages, with the debug endpoints.
            status, statusz, _ = await get(f"{base}/statusz")
            assert status == 200 and statusz.startswith("\nhpactl statusz\nWarning: ")
            assert "\nBinary version: " in statusz and "/flagz" in statusz
            status, flagz, _ = await get(f"{base}/flagz")
            assert status == 200 and "\ndecision-records=2\n" in flagz
            assert "\nenable-debug-endpoints=true\n" in flagz
            status, _, body = await get(f"{base}/debug/hpa/default/other")
            assert status == 404 and body == {
                "hpa": "default/other",
                "error": "no decision records for default/other",
            }
            # A deleted HPA's records go with it.
            emu.store.delete("autoscaling", "horizontalpodautoscalers", "default", "web")
            async with asyncio.timeout(30):
                while (await get(f"{base}/debug/hpa/default/web"))[0] != 404:
                    await asyncio.sleep(0.2)


async def test_no_debug_route_by_default() -> None:
    async with Emulator() as emu:
        setup(emu)
        async with hpactl_run(emu) as port:
            base = f"http://127.0.0.1:{port}"
            # The controller syncs (the HPA gets a status) ...
            async with asyncio.timeout(30):
                while (
                    not (
                        emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
                        or {}
                    )
                    .get("status", {})
                    .get("conditions")
                ):
                    await asyncio.sleep(0.2)
            # ... but the route does not exist: the router's plain 404, no JSON.
            for path in ("/debug/hpa/default/web", "/debug/hpa", "/statusz", "/flagz"):
                status, text, body = await get(base + path)
                assert (status, body) == (404, None) and "Not Found" in text
            assert (await get(base + "/metrics"))[0] == 200
