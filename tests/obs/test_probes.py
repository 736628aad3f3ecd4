"""/healthz, /livez and /readyz: named checks in the Kubernetes format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest

from hpactl.obs.metrics import ControllerMetrics
from hpactl.obs.server import ObservabilityServer, Readiness


@dataclass
class State:
    synced: bool = True
    leader: str = "leader"
    api: tuple[bool, str] = (True, "")
    watches: tuple[bool, str] = (True, "")
    raise_in_api: bool = False
    calls: list[str] = field(default_factory=list)

    def api_check(self) -> tuple[bool, str]:
        self.calls.append("api-server")
        if self.raise_in_api:
            raise RuntimeError("session closed")
        return self.api


@dataclass
class Probe:
    state: State
    http: aiohttp.ClientSession
    base: str

    async def get(self, path: str) -> tuple[int, str]:
        async with self.http.get(self.base + path) as r:
            return r.status, await r.text()


@pytest.fixture
async def probe() -> AsyncIterator[Probe]:
    state = State()
    readiness = Readiness(
        caches_synced=lambda: state.synced,
        leader_state=lambda: state.leader,
        api_server=state.api_check,
        informers=lambda: state.watches,
    )
    server = ObservabilityServer(ControllerMetrics(), readiness, "0", "127.0.0.1:0")
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            yield Probe(state, http, f"http://127.0.0.1:{server.ports['health']}")
    finally:
        await server.stop()
    assert "metrics" not in server.ports  # "0" turns the metrics server off


async def test_ready_is_ok_and_verbose_lists_every_check(probe: Probe) -> None:
    assert await probe.get("/readyz") == (200, "ok\n")
    code, text = await probe.get("/readyz?verbose")
    assert code == 200
    assert text.splitlines() == [
        "[+]api-server ok",
        "[+]informer-caches ok",
        "[+]informers ok",
        "[+]leader-election ok",
        "readyz check passed",
    ]


async def test_a_failing_check_fails_readyz_and_says_why(probe: Probe) -> None:
    probe.state.api = (False, "no answer from the API server for 12s: connection refused")
    code, text = await probe.get("/readyz")
    assert code == 500
    assert text.splitlines() == [
        "[-]api-server failed: no answer from the API server for 12s: connection refused",
        "[+]informer-caches ok",
        "[+]informers ok",
        "[+]leader-election ok",
        "readyz check failed",
    ]
    # One check alone, and excluding it.
    assert await probe.get("/readyz/api-server") == (
        500,
        "internal server error: no answer from the API server for 12s: connection refused\n",
    )
    assert await probe.get("/readyz/informers") == (200, "ok\n")
    assert (await probe.get("/readyz/nope"))[0] == 404
    code, text = await probe.get("/readyz?exclude=api-server&verbose")
    assert code == 200 and "[+]api-server excluded: ok" in text
    code, text = await probe.get("/readyz?exclude=api-sever")
    assert code == 500
    assert 'warn: some health checks cannot be excluded: no matches for "api-sever"' in text


@pytest.mark.parametrize(
    ("leader", "ready"),
    [
        ("leader", True),
        ("standby", True),
        ("starting", False),
        ("lost", False),
        ("resyncing", False),
        ("something-new", False),
    ],
)
async def test_only_leader_and_standby_are_ready(probe: Probe, leader: str, ready: bool) -> None:
    probe.state.leader = leader
    code, text = await probe.get("/readyz/leader-election")
    assert (code == 200) is ready
    if not ready:
        assert text.startswith(f"internal server error: {leader}: ")


async def test_unsynced_caches_and_disconnected_watches(probe: Probe) -> None:
    probe.state.synced = False
    probe.state.watches = (False, "pods: watch down for 45s")
    code, text = await probe.get("/readyz")
    assert code == 500
    assert "[-]informer-caches failed: not synced" in text
    assert "[-]informers failed: pods: watch down for 45s" in text


async def test_a_check_that_raises_fails_without_breaking_the_probe(probe: Probe) -> None:
    probe.state.raise_in_api = True
    code, text = await probe.get("/readyz")
    assert code == 500 and "[-]api-server failed: RuntimeError: session closed" in text
    # Liveness does not depend on any readiness check.
    probe.state.synced = False
    probe.state.leader = "lost"
    assert await probe.get("/healthz") == (200, "ok\n")
    assert await probe.get("/livez") == (200, "ok\n")
    assert await probe.get("/healthz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")


async def test_checks_run_per_request_not_cached(probe: Probe) -> None:
    await probe.get("/readyz")
    probe.state.api = (False, "down")
    assert (await probe.get("/readyz"))[0] == 500
    probe.state.api = (True, "")
    assert (await probe.get("/readyz"))[0] == 200
    assert probe.state.calls.count("api-server") == 3


async def test_without_the_optional_checks_the_two_original_ones_remain() -> None:
    server = ObservabilityServer(
        ControllerMetrics(), Readiness(lambda: True, lambda: "standby"), "0", "127.0.0.1:0"
    )
    await server.start()
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{server.ports['health']}/readyz?verbose") as r,
        ):
            text = await r.text()
    finally:
        await server.stop()
    assert text.splitlines() == [
        "[+]informer-caches ok",
        "[+]leader-election ok",
        "readyz check passed",
    ]
