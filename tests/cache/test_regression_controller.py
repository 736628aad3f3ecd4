"""The controller after its API server was emptied (an etcd restored to empty): the
caches notice the lower resourceVersions, drop the vanished HPAs, and the controller
stops syncing them (no status or event writes for objects that no longer exist)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from controller.builders import hpa, pod_metrics, workload

from hpactl.cache.factory import HPAS
from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.faults import FaultInjector, FaultRule

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WAIT = 10.0  # real seconds: a bound, never a sleep


async def until(cond: Callable[[], bool], what: str) -> None:
    try:
        async with asyncio.timeout(WAIT):
            while not cond():
                await asyncio.sleep(0.01)  # polling real I/O progress, bounded by WAIT
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def test_controller_stops_syncing_hpas_an_emptied_server_forgot() -> None:
    clock = VirtualClock(T0)
    faults = FaultInjector()
    async with Emulator(now=clock.now, bookmark_interval=0.05, faults=faults) as emu:
        config = ControllerConfig(client=ClientConnectionConfig(master=emu.url))
        async with ControllerApp(config, clock=clock, env={}) as app:
            names = []
            for name in ("web", "api"):
                names += workload(emu, name, 2, T0)
                emu.store.create(hpa(name, name, max_replicas=4))
            emu.metrics.set_pod_metrics(pod_metrics(names, "200m", clock.now()))
            await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
            records = await app.controller.sync_all()
            assert sorted(r.key for r in records) == ["default/api", "default/web"]
            assert all(r.status_written and r.rescaled for r in records)

            # Count every write the controller sends from now on.
            writes = faults.add(
                FaultRule.slow(0.0, verbs=frozenset({"POST", "PUT", "PATCH", "DELETE"}))
            )
            informers = app.informers
            await until(
                lambda: emu.store.watcher_count() == len(informers.informers), "open watches"
            )
            emu.reset()
            hpa_informer = informers.informers[HPAS]
            await until(lambda: len(hpa_informer.store) == 0, "the HPA cache emptied")
            await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
            assert all(i.reflector.regressions == 1 for i in informers.informers.values())

            clock.advance(15)
            assert await app.controller.sync_all() == []
            clock.advance(15)
            assert await app.controller.sync_all() == []
            assert faults.hits(writes) == 0  # no status, scale or event writes
            assert emu.store.list("", "events") == []

            # The controller goes on with what the server has now.
            names = workload(emu, "web", 2, clock.now())
            emu.metrics.set_pod_metrics(pod_metrics(names, "200m", clock.now()))
            emu.store.create(hpa("web", "web", max_replicas=4))
            await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
            (rec,) = await app.controller.sync_all()
            assert rec.key == "default/web" and rec.status_written
            assert faults.hits(writes) > 0
