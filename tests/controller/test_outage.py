"""The API server goes away and comes back on the same port: with the same state, empty
(an emptied etcd), or with lower resourceVersions (an etcd restore).

Two levels:

* the informers on a VirtualClock through a full minute of refused connections (the
  backoff sleeps are virtual, the connections real): the log lines each transition
  makes, the retries, the readiness checks, and the caches after the return;
* the controller (`ControllerApp`) through a real outage of 5 s (a minute in CI costs
  a minute; the code paths are the same): syncs during the outage fail without
  writing or crashing; after the return the caches converge to the server and every
  scale write that lands was decided from the server's state.

Every test prints what it measured (`pytest -s`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from hpactl.cache.factory import SharedInformers
from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.store import WatchEvent
from hpactl.kube.health import api_server_check
from hpactl.kube.session import KubeSession

from .builders import hpa, pod_metrics, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WAIT = 10.0  # real seconds: a bound, never a sleep
VIRTUAL_OUTAGE = 60.0  # seconds of refused connections, on the informers' VirtualClock
REAL_OUTAGE = 5.0  # seconds the emulator is down in the controller test (CI budget)
VARIANTS = ["same", "empty", "restored"]
# The informers back off up to 30 s (client-go): the relist after the return comes
# within one backoff delay; after a 5 s outage that is under ~13 s.
RECOVERY_BOUND = 30.0


def _objects(emu: Emulator, group: str, resource: str) -> dict[str, str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in emu.store.list(group, resource)
    }


def _cached(informers: SharedInformers, which: str) -> dict[str, str]:
    inf = informers.hpas() if which == "hpas" else informers.pods()
    return {k: inf.store.resource_version(k) or "" for k, _ in inf.store.items()}


def _come_back(emu: Emulator, variant: str, snap: Any) -> None:
    if variant == "empty":
        emu.reset()
    elif variant == "restored":
        emu.restore(snap)


@pytest.mark.parametrize("variant", VARIANTS)
async def test_a_minute_without_the_api_server_one_line_per_transition_and_caches_converge(
    variant: str,
) -> None:
    clock = VirtualClock()
    async with Emulator(bookmark_interval=0.05) as emu:
        port = emu.port
        for i in range(3):
            emu.store.create(hpa(f"h{i}", "web"))
        names = workload(emu, "web", 2, T0)
        snap = emu.snapshot()
        for i in range(3, 6):  # written after the snapshot: a restore takes them away
            emu.store.create(hpa(f"h{i}", "web"))
        emu.store.delete("", "pods", "default", names[0])
        async with KubeSession(master=emu.url, qps=0) as s:
            informers = SharedInformers(s, clock=clock, watch_read_timeout=WAIT)
            informers.hpa_lister()
            informers.pod_lister()
            ready_api = api_server_check(s)
            informers.start()
            try:
                assert await informers.wait_for_cache_sync(WAIT)
                with capture_logs() as logs:
                    await emu.stop()
                    t0 = clock.monotonic()
                    async with asyncio.timeout(WAIT):
                        while clock.monotonic() - t0 < VIRTUAL_OUTAGE:
                            deadline = clock.next_deadline()
                            if deadline is not None:
                                clock.advance(max(0.0, deadline - clock.monotonic()))
                            await asyncio.sleep(0.01)
                    down_ok, down_why = ready_api()
                    connected, connected_why = informers.connected(grace=30)
                    _come_back(emu, variant, snap)
                    await emu.start()
                    assert emu.port == port
                    back = clock.monotonic()
                    real_back = time.monotonic()
                    async with asyncio.timeout(WAIT):
                        while not (
                            _cached(informers, "hpas")
                            == _objects(emu, "autoscaling", "horizontalpodautoscalers")
                            and _cached(informers, "pods") == _objects(emu, "", "pods")
                            and informers.connected(grace=0)[0]
                        ):
                            deadline = clock.next_deadline()
                            if deadline is not None:
                                clock.advance(max(0.0, deadline - clock.monotonic()))
                            await asyncio.sleep(0.01)
                    recovered_virtual = clock.monotonic() - back
                    recovered_real = time.monotonic() - real_back
                lists = {n: inf.reflector.lists_started for n, inf in informers.informers.items()}
            finally:
                await informers.stop()
        up_ok, _ = ready_api()
    warn = [e for e in logs if e["event"] == "cache.retry" and e["log_level"] == "warning"]
    debug = [e for e in logs if e["event"] == "cache.retry" and e["log_level"] == "debug"]
    recovered = [e for e in logs if e["event"] == "cache.recovered"]
    info_or_worse = [e for e in logs if e["log_level"] in ("info", "warning", "error")]
    print(
        f"\n[outage {variant}] virtual outage {VIRTUAL_OUTAGE:.0f}s: "
        f"retries per informer {len(debug) // 2 + 1}, warnings {len(warn)}, "
        f"recovered lines {len(recovered)}, lines at info+ {len(info_or_worse)} "
        f"({sorted({e['event'] for e in info_or_worse})}); recovered "
        f"{recovered_virtual:.2f}s virtual / {recovered_real:.2f}s real after the return; "
        f"readyz api-server while down: {down_why!r}; informers: {connected_why!r}; lists started {lists}"
    )
    # /readyz: the api-server and informers checks fail while down, pass after.
    assert not down_ok and "no answer from the API server" in down_why
    assert not connected
    assert up_ok and informers.connected(grace=0) == (True, "")
    # One warning per informer when the failures start, one line when they end.
    assert sorted(e["informer"] for e in warn) == sorted({e["informer"] for e in warn})
    assert len(warn) == 2, warn
    assert len(recovered) == 2, recovered
    assert len(debug) >= 2 * 4  # the retries went on (backoff 0.8 s .. 30 s over 60 s)
    # Nothing else at info or above per retry: the lines do not grow with the outage.
    assert len(info_or_worse) <= 2 + 2 + 2 * 3, [e["event"] for e in info_or_worse]
    if variant == "restored":
        assert [e for e in logs if e["event"] == "cache.resource_version_regressed"]


class _ScaleWrites:
    """Every change of a Deployment's spec.replicas the server applied (old, new)."""

    def __init__(self, emu: Emulator) -> None:
        self.seen: list[tuple[int, int]] = []
        emu.store.on_write.append(self)

    def __call__(self, ev: WatchEvent) -> None:
        if ev.key != ("apps", "deployments") or ev.prev is None or ev.type != "MODIFIED":
            return
        old = ev.prev.obj.get("spec", {}).get("replicas")
        new = ev.entry.obj.get("spec", {}).get("replicas")
        if old != new:
            self.seen.append((int(old), int(new)))


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    e = Emulator(bookmark_interval=0.05)
    await e.start()
    yield e
    await e.stop()


@pytest.mark.parametrize("variant", VARIANTS)
async def test_the_controller_through_an_outage_decides_only_from_the_server(
    emu: Emulator, variant: str
) -> None:
    """Before the outage the controller scales web 2 -> 4 (load 4x the target); the
    snapshot is from before that scale. Back `same`: 4 replicas, nothing to do. Back
    `empty`: nothing to sync, nothing written. Back `restored` (2 replicas at lower
    resourceVersions, the load still 4x): the cache says 4 (nothing to do); the server
    says 2, so exactly one 2 -> 4 must land."""
    clock = VirtualClock(T0)
    names = workload(emu, "web", 2, T0)
    emu.metrics.set_pod_metrics(pod_metrics(names, "200m", T0))
    emu.store.create(hpa("web", "web", max_replicas=4))
    snap = emu.snapshot()
    writes = _ScaleWrites(emu)
    config = ControllerConfig(client=ClientConnectionConfig(master=emu.url))
    async with ControllerApp(config, clock=clock, env={}, call_timeout=1.0) as app:
        ctl = app.controller
        await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
        rec = await ctl.sync_one("default/web")
        assert rec is not None and rec.rescaled
        assert writes.seen == [(2, 4)]
        await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
        assert app.session is not None
        ready_api = api_server_check(app.session)

        await emu.stop()
        down = time.monotonic()
        failed_syncs = 0
        while time.monotonic() - down < REAL_OUTAGE:
            clock.advance(15)
            rec = await ctl.sync_one("default/web")  # must not raise
            failed_syncs += 1
            assert rec is None or not rec.rescaled
            await asyncio.sleep(0.5)
        down_ok, down_why = ready_api()
        assert not down_ok, "readyz api-server passes while the server is gone"
        assert writes.seen == [(2, 4)]  # nothing could land; nothing was queued to land later

        _come_back(emu, variant, snap)
        # The restored Deployment at 2 replicas: start counting anew.
        writes.seen.clear()
        await emu.start()
        back = time.monotonic()
        # Sync at once and keep syncing, as the scheduler would, while the caches relist.
        syncs_after = 0
        converged_at: float | None = None
        skipped = 0
        async with asyncio.timeout(RECOVERY_BOUND):
            while True:
                clock.advance(15)
                rec = await ctl.sync_one("default/web")
                syncs_after += 1
                if rec is not None and rec.skipped == "disconnected-cache":
                    skipped += 1
                    assert writes.seen == []
                    await asyncio.sleep(0.1)
                    continue
                cached = _cached(app.informers, "hpas")
                on_server = _objects(emu, "autoscaling", "horizontalpodautoscalers")
                if converged_at is None and cached == on_server:
                    converged_at = time.monotonic() - back
                if (
                    converged_at is not None
                    and ready_api()[0]
                    and (variant != "restored" or writes.seen)
                ):
                    break
                await asyncio.sleep(0.1)
        # A few more syncs: nothing more to do (never a second scale).
        for _ in range(3):
            clock.advance(15)
            await ctl.sync_one("default/web")
        up_ok, _ = ready_api()

    print(
        f"\n[controller outage {variant}] outage {REAL_OUTAGE:.0f}s real, "
        f"{failed_syncs} syncs during it (none wrote); after the return: "
        f"HPA cache matched the server in {converged_at:.2f}s, {syncs_after} syncs "
        f"({skipped} skipped while the caches were not connected), "
        f"scale writes {writes.seen}; readyz while down: {down_why!r}"
    )
    assert up_ok
    if variant == "same":
        assert writes.seen == []
    elif variant == "empty":
        assert writes.seen == []
        assert emu.store.get("apps", "deployments", "default", "web") is None
    else:
        assert writes.seen == [(2, 4)], writes.seen
