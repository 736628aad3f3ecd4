"""KEP-6003 end to end: the leader's schedule follows each HPA's annotation.

The real controller (informers, SyncSupervisor, syncs against the emulator) on a
virtual clock, moved a second at a time.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.model.featuregates import FeatureGates

from .builders import hpa, pod_metrics, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANNOTATION = "hpactl.dev/sync-period-seconds"


async def _app(emu: Emulator, clock: VirtualClock, gate: bool) -> ControllerApp:
    config = ControllerConfig(client=ClientConnectionConfig(master=emu.url))
    config = replace(
        config, feature_gates=FeatureGates.from_map({"HPAConfigurableSyncPeriod": gate})
    )
    app = ControllerApp(config, clock=clock, env={})
    await app.__aenter__()
    return app


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Emulator, VirtualClock]]:
    clock = VirtualClock(T0)
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        names: list[str] = []
        for name, period in (("fast", "5"), ("slow", "60")):
            names += workload(emu, name, 2, T0)
            obj = hpa(name, name)
            obj["metadata"]["annotations"] = {ANNOTATION: period}
            emu.store.create(obj)
        emu.metrics.set_pod_metrics(pod_metrics(names, "50m", T0))
        yield emu, clock


async def run(app: ControllerApp, clock: VirtualClock, seconds: int) -> None:
    """Move a second at a time, each once every sync it started has ended (so a
    busy machine slows the test down, never changes what it sees)."""
    for _ in range(seconds):
        clock.advance(1)
        await asyncio.sleep(0.005)
        sup = app.controller.supervisor
        assert sup is not None
        for _ in range(1000):
            if sup.in_flight == 0:
                break
            await asyncio.sleep(0.005)


def syncs(log: list[tuple[float, str]], key: str, after: float = 0.0) -> list[float]:
    return [t for t, k in log if k == key and t >= after]


async def _start(app: ControllerApp, clock: VirtualClock) -> list[tuple[float, str]]:
    """Start scheduling; the log gets (virtual time, key) as each sync starts."""
    log: list[tuple[float, str]] = []
    ctl = app.controller
    sync_one = ctl.sync_one

    async def recorded(key: str) -> Any:
        log.append((clock.monotonic(), key))
        return await sync_one(key)

    ctl.sync_one = recorded  # type: ignore[method-assign]
    for _ in range(200):  # the informer's first list
        if len(ctl.hpas.keys()) == 2:
            break
        await asyncio.sleep(0.01)
    ctl.start_scheduling()
    return log


async def test_each_hpa_is_synced_at_its_own_period_and_follows_a_change(
    cluster: tuple[Emulator, VirtualClock],
) -> None:
    emu, clock = cluster
    app = await _app(emu, clock, gate=True)
    try:
        log = await _start(app, clock)
        await run(app, clock, 120)
        fast = syncs(log, "default/fast")
        slow = syncs(log, "default/slow")
        assert 22 <= len(fast) <= 25, fast
        assert len(slow) == 2, slow
        assert {round(b - a) for a, b in itertools.pairwise(fast)} == {5}
        # Edit the slow HPA's annotation: it is picked up without waiting out 60 s.
        obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "slow")
        assert obj is not None
        obj["metadata"]["annotations"] = {ANNOTATION: "10"}
        emu.store.apply(obj)
        changed_at = clock.monotonic()
        await run(app, clock, 60)
        after = syncs(log, "default/slow", changed_at)
        assert 5 <= len(after) <= 7, after
        assert {round(b - a) for a, b in itertools.pairwise(after)} == {10}
    finally:
        await app.controller.stop_scheduling()
        await app.close()


async def test_gate_off_every_hpa_at_the_flag_period(
    cluster: tuple[Emulator, VirtualClock],
) -> None:
    emu, clock = cluster
    app = await _app(emu, clock, gate=False)
    try:
        log = await _start(app, clock)
        await run(app, clock, 120)
        for key in ("default/fast", "default/slow"):
            times = syncs(log, key)
            assert len(times) == 8, times
            assert {round(b - a) for a, b in itertools.pairwise(times)} == {15}
    finally:
        await app.controller.stop_scheduling()
        await app.close()
