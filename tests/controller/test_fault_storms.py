"""Storms of faults, each with the numbers seen (`pytest -s` prints them).

* watches dropped again and again, 410 Gone on lists and watches, no bookmarks, while
  objects change: the caches end identical to a fresh list;
* 409, 429 (Retry-After) and 5xx on scale, status and Event writes, about half of
  them, over many syncs: no scale lost or doubled (every scale that landed has its
  `SuccessfulRescale` Event), status and Events eventually written;
* a metrics API that fails, hangs or leaves pods out: upstream's conditions, no
  scale-down on partial data beyond upstream's rules, every call bounded, and the
  other namespaces' schedule lag with a SyncSupervisor running.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.cache.factory import SharedInformers
from hpactl.cache.reflector import Backoff
from hpactl.clock import RealClock, VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.controller.scheduling import SyncSupervisor
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.faults import FaultInjector, FaultRule
from hpactl.emulator.store import WatchEvent
from hpactl.kube.session import KubeSession

from .builders import events, hpa, pod, pod_metrics, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WAIT = 10.0  # real seconds: a bound, never a sleep


# ------------------------------------------------------------------ watch storms


def _cached(informers: SharedInformers) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, inf in informers.informers.items():
        out[name] = {k: inf.store.resource_version(k) or "" for k, _ in inf.store.items()}
    return out


async def test_watch_drops_and_410_storms_without_bookmarks_end_identical_to_a_fresh_list() -> None:
    faults = FaultInjector(seed=7)
    clock = VirtualClock()
    # bookmark_interval: effectively never (no bookmarks to move resourceVersions on).
    async with Emulator(bookmark_interval=1e6, faults=faults) as emu:
        for i in range(10):
            emu.store.create(hpa(f"h{i}", "web"))
            emu.store.create(pod("web", i, T0))
        async with KubeSession(master=emu.url, qps=0) as s:
            informers = SharedInformers(
                s,
                clock=clock,
                watch_read_timeout=WAIT,
                page_size=3,
                backoff_factory=lambda: Backoff(initial=0.1, cap=1, jitter=0),
            )
            informers.hpa_lister()
            informers.pod_lister()
            informers.start()
            try:
                assert await informers.wait_for_cache_sync(WAIT)
                drop = faults.add(FaultRule.watch_drop(events=1, rate=0.7))
                gone = faults.add(FaultRule.gone(rate=0.4))
                writes = 0
                async with asyncio.timeout(3 * WAIT):
                    for step in range(300):
                        i = step % 10
                        if step % 3 == 0:
                            h = emu.store.get(
                                "autoscaling", "horizontalpodautoscalers", "default", f"h{i}"
                            )
                            if h is None:
                                emu.store.create(hpa(f"h{i}", "web", max_replicas=5 + step))
                            else:
                                emu.store.delete(
                                    "autoscaling", "horizontalpodautoscalers", "default", f"h{i}"
                                )
                        elif step % 3 == 1:
                            p = emu.store.get("", "pods", "default", f"web-{i}")
                            if p is None:
                                emu.store.create(pod("web", i, T0))
                            else:
                                p["metadata"].setdefault("labels", {})["step"] = str(step)
                                emu.store.apply(p)
                        else:
                            emu.store.create(pod("web", 100 + step, T0))
                        writes += 1
                        deadline = clock.next_deadline()
                        if deadline is not None:
                            clock.advance(max(0.0, deadline - clock.monotonic()))
                        await asyncio.sleep(0.005)
                drops, gones = faults.hits(drop), faults.hits(gone)
                faults.clear()
                target = emu.store.current_resource_version()
                # Quiet again: with no bookmarks, a write moves every cache past `target`.
                emu.store.create(hpa("last", "web"))
                emu.store.create(pod("web", 999, T0))
                async with asyncio.timeout(WAIT):
                    while True:
                        deadline = clock.next_deadline()
                        if deadline is not None:
                            clock.advance(max(0.0, deadline - clock.monotonic()))
                        if all(
                            (int(inf.resource_version or 0) > int(target))
                            for inf in informers.informers.values()
                        ):
                            break
                        await asyncio.sleep(0.01)
                lists = {n: i.reflector.lists_started for n, i in informers.informers.items()}
                seen = _cached(informers)
            finally:
                await informers.stop()
            fresh = SharedInformers(s, watch_read_timeout=WAIT)
            fresh.hpa_lister()
            fresh.pod_lister()
            fresh.start()
            try:
                assert await fresh.wait_for_cache_sync(WAIT)
                expected = _cached(fresh)
            finally:
                await fresh.stop()
    print(
        f"\n[watch storm] {writes} writes; {drops} watches dropped after one event, "
        f"{gones} lists/watches answered 410 Gone, no bookmarks; lists per informer {lists}; "
        f"objects { ({k: len(v) for k, v in seen.items()}) }"
    )
    assert drops > 10 and gones > 10
    assert seen == expected


# ------------------------------------------------------------------ write storms


class _Scales:
    """Every spec.replicas change the server applied, by Deployment, with the step."""

    def __init__(self, emu: Emulator) -> None:
        self.step = 0
        self.seen: list[tuple[str, int, int, int]] = []
        emu.store.on_write.append(self)

    def __call__(self, ev: WatchEvent) -> None:
        if ev.key != ("apps", "deployments") or ev.prev is None or ev.type != "MODIFIED":
            return
        old = ev.prev.obj.get("spec", {}).get("replicas")
        new = ev.entry.obj.get("spec", {}).get("replicas")
        if old != new:
            self.seen.append((ev.name, self.step, int(old), int(new)))


@pytest.fixture
async def storm_rig() -> AsyncIterator[tuple[Emulator, ControllerApp, VirtualClock, FaultInjector]]:
    faults = FaultInjector(seed=3)
    clock = VirtualClock(T0)
    emu = Emulator(now=clock.now, bookmark_interval=0.05, faults=faults)
    await emu.start()
    config = ControllerConfig(client=ClientConnectionConfig(master=emu.url))
    app = ControllerApp(config, clock=clock, env={}, call_timeout=2.0)
    await app.__aenter__()
    try:
        yield emu, app, clock, faults
    finally:
        await app.close()
        await emu.stop()


def _downscale_fast(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 0}}
    return obj


async def test_409_429_and_5xx_storms_on_writes_lose_nothing_and_never_scale_twice(
    storm_rig: tuple[Emulator, ControllerApp, VirtualClock, FaultInjector],
) -> None:
    emu, app, clock, faults = storm_rig
    scales = _Scales(emu)
    names = {}
    for h in ("a", "b", "c"):
        names[h] = workload(emu, h, 2, T0)
        emu.store.create(_downscale_fast(hpa(h, h, max_replicas=8)))
    load = ["200m", "200m", "20m", "20m", "100m", "20m"]  # per pod, target 50m
    await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
    scale = "/apis/apps/v1/namespaces/default/deployments/*/scale"
    status = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/*/status"
    evs = "/api/v1/namespaces/default/events*"
    writes = frozenset({"PUT", "POST", "PATCH"})
    # No 409 on Events: on a create it means AlreadyExists (the Event is there), on
    # which client-go's recorder, and hpactl's, stop; injected, it would be a lie.
    rules = [
        faults.add(FaultRule.error(code, path=path, verbs=writes, rate=rate))
        for path in (scale, status, evs)
        for code, rate in ((409, 0.2), (429, 0.15), (500, 0.15), (503, 0.15))
        if not (code == 409 and path == evs)
    ]
    # Latency 0, always: counts every write the storm meets (draws no random number,
    # so the refusals are as without it).
    sent = [
        faults.add(FaultRule.slow(0.0, path=path, verbs=writes)) for path in (scale, status, evs)
    ]
    ctl = app.controller
    started = time.monotonic()
    failed_syncs = 0
    step = 0
    for level in load:
        emu.metrics.set_pod_metrics(
            [m for h in names for m in pod_metrics(names[h], level, clock.now())]
        )
        for _ in range(3):
            step += 1
            scales.step = step
            clock.advance(15)
            for h in names:
                rec = await ctl.sync_one(f"default/{h}")
                assert rec is not None
                failed_syncs += bool(rec.errors)
            await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
    hits = {f"{r.status} {r.path.split('/')[-1] or 'events'}": faults.hits(r) for r in rules}
    writes_sent = sum(faults.hits(r) for r in sent)
    faults.clear()
    storm_seconds = time.monotonic() - started
    storm_rounds = step
    # Quiet again: each HPA syncs until a sync has nothing to do, which writes the
    # status; the recorder drains its queue. The first quiet sync may still have a
    # rescale to make (three refused scale writes in a row at the last load level leave
    # an HPA off its target; which writes are refused depends on how the recorder's
    # Event writes interleave with the syncs'), and its status then says the replicas
    # before that rescale; the next one, with nothing to do, must say the target's.
    for _ in range(2):
        step += 1
        scales.step = step  # a rescale left to make lands in a round of its own
        clock.advance(15)
        quiet = [await ctl.sync_one(f"default/{h}") for h in names]
        await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
        if not any(rec is not None and rec.rescaled for rec in quiet):
            break
    else:
        raise AssertionError("still rescaling a round after the storm ended")
    recorder = app.recorder
    assert recorder is not None
    async with asyncio.timeout(3 * WAIT):
        while True:
            clock.advance(15)  # the recorder's retry sleeps are on the virtual clock
            landed = {h: [s for s in scales.seen if s[0] == h] for h in names}
            rescale_events = {
                h: sum(
                    int(e.get("count") or 1)
                    for e in events(emu, reason="SuccessfulRescale")
                    if e["involvedObject"]["name"] == h
                )
                for h in names
            }
            if all(rescale_events[h] >= len(landed[h]) for h in names):
                break
            if time.monotonic() - storm_seconds - started > 20:
                raise AssertionError(f"SuccessfulRescale missing: {rescale_events} {landed}")
            await asyncio.sleep(0.05)
    failed_rescale = sum(int(e.get("count") or 1) for e in events(emu, reason="FailedRescale"))
    failed_status = sum(int(e.get("count") or 1) for e in events(emu, reason="FailedUpdateStatus"))
    print(
        f"\n[write storm] ~50% of scale/status/Event writes refused for {storm_rounds} sync rounds "
        f"x 3 HPAs ({storm_seconds:.1f}s real, Retry-After sleeps included); faults fired "
        f"{sum(hits.values())} of {writes_sent} writes ({hits}); syncs reporting an error {failed_syncs}; "
        f"scales landed {sum(len(v) for v in landed.values())} "
        f"({ {h: [(o, n) for _, _, o, n in v] for h, v in landed.items()} }); "
        f"SuccessfulRescale events {rescale_events}; FailedRescale events {failed_rescale}; "
        f"FailedUpdateStatus events {failed_status}"
    )
    for h in names:
        # Never a double scale: at most one landed scale per HPA per sync round, and
        # each one followed the one before (no replay of a stale write).
        rounds = [s[1] for s in landed[h]]
        assert len(rounds) == len(set(rounds)), landed[h]
        for before, after in zip(landed[h], landed[h][1:], strict=False):
            assert after[2] == before[3], landed[h]
        # Nothing lost: one SuccessfulRescale per scale that landed, no more.
        assert rescale_events[h] == len(landed[h]), (h, rescale_events, landed)
        # The status caught up with the target once the writes went through.
        obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", h)
        dep = emu.store.get("apps", "deployments", "default", h)
        assert obj is not None and dep is not None
        assert obj["status"]["currentReplicas"] == dep["spec"]["replicas"]
        assert landed[h], f"{h} never scaled: the storm test proves nothing"
    # The rules refuse ~40% of the writes (Retry-After resends included). How many writes
    # there are depends on which were refused (80 to 102 seen, 31 to 41 refused): a
    # quarter is the floor, not a fixed count.
    assert sum(hits.values()) > writes_sent // 4 > 0, (hits, writes_sent)
    # What failed is said as upstream says it.
    assert failed_rescale > 0 or failed_status > 0


# ------------------------------------------------------------------ metrics


async def test_partial_pod_metrics_never_scale_down_beyond_upstreams_rule(
    storm_rig: tuple[Emulator, ControllerApp, VirtualClock, FaultInjector],
) -> None:
    """Load below the target on the pods that report, half the pods missing: upstream
    counts a missing pod as 100% of its request on a scale-down, so 4 pods with 2 at
    10% and 2 missing is (10+10+100+100)/4 = 55% of a 50% target: no scale-down."""
    emu, app, clock, _ = storm_rig
    names = workload(emu, "web", 4, T0)
    emu.store.create(_downscale_fast(hpa("web", "web", max_replicas=8)))
    emu.metrics.set_pod_metrics(pod_metrics(names[:2], "10m", clock.now()))
    await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
    clock.advance(15)
    rec = await app.controller.sync_one("default/web")
    assert rec is not None
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None
    # All four reporting 10%: 4 * 10/50 = 0.8 -> 1 replica.
    emu.metrics.set_pod_metrics(pod_metrics(names, "10m", clock.now()))
    await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
    clock.advance(15)
    full = await app.controller.sync_one("default/web")
    assert full is not None
    after = emu.store.get("apps", "deployments", "default", "web")
    assert after is not None
    print(
        f"\n[partial metrics] 2 of 4 pods report 10%: replicas {dep['spec']['replicas']} "
        f"(desired {rec.desired}); all 4 report 10%: replicas {after['spec']['replicas']}"
    )
    assert dep["spec"]["replicas"] == 4 and not rec.rescaled
    assert after["spec"]["replicas"] == 1 and full.rescaled


async def test_failing_metrics_api_says_so_as_upstream(
    storm_rig: tuple[Emulator, ControllerApp, VirtualClock, FaultInjector],
) -> None:
    emu, app, clock, faults = storm_rig
    names = workload(emu, "web", 2, T0)
    emu.metrics.set_pod_metrics(pod_metrics(names, "10m", clock.now()))
    emu.store.create(_downscale_fast(hpa("web", "web", max_replicas=8)))
    await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
    faults.add(FaultRule.error(503, path="/apis/metrics.k8s.io/*"))
    clock.advance(15)
    rec = await app.controller.sync_one("default/web")
    assert rec is not None and not rec.rescaled
    recorder = app.recorder
    assert recorder is not None
    await recorder.flush()
    obj = emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert obj is not None
    conds = {c["type"]: c for c in obj["status"]["conditions"]}
    reasons = sorted({e["reason"] for e in events(emu)})
    print(
        f"\n[metrics 503] ScalingActive={conds['ScalingActive']['status']} "
        f"({conds['ScalingActive']['reason']}); events {reasons}; replicas stay 2"
    )
    assert conds["ScalingActive"]["status"] == "False"
    assert conds["ScalingActive"]["reason"] == "FailedGetResourceMetric"
    assert "FailedGetResourceMetric" in reasons and "FailedComputeMetricsReplicas" in reasons
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None and dep["spec"]["replicas"] == 2


async def test_a_slow_metrics_namespace_does_not_hold_up_the_others_schedule(
    storm_rig: tuple[Emulator, ControllerApp, VirtualClock, FaultInjector],
) -> None:
    """One namespace's metrics answer after 20 s (upstream's slow metrics-server; in
    CI the controller's call timeout is 2 s, so 20 s is "longer than the timeout").
    With a SyncSupervisor (2 workers) running on the real clock, the others'
    schedule lag stays small and every slow call ends at the timeout."""
    emu, app, _, faults = storm_rig
    faults.add(FaultRule.slow(20.0, path="/apis/metrics.k8s.io/v1beta1/namespaces/slow/*"))
    keys = []
    for ns in ("slow", "n1", "n2", "n3"):
        if ns != "default":
            emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        workload(emu, "web", 2, T0, ns=ns)
        emu.store.create(hpa("web", "web", max_replicas=4, ns=ns))
        keys.append(f"{ns}/web")
    all_metrics = [
        m
        for ns in ("slow", "n1", "n2", "n3")
        for m in pod_metrics([f"web-{i}" for i in range(2)], "50m", T0, ns=ns)
    ]
    emu.metrics.set_pod_metrics(all_metrics)
    await app.wait_for_rv(emu.store.current_resource_version(), timeout=WAIT)
    ctl = app.controller
    durations: dict[str, list[float]] = {k: [] for k in keys}

    async def timed(key: str) -> None:
        t = time.monotonic()
        await ctl.sync_one(key)
        durations[key].append(time.monotonic() - t)

    lags: list[float] = []
    period = 1.0
    sup = SyncSupervisor(RealClock(), period, 2, timed, on_lag=lags.append)
    sup.start(keys)
    await asyncio.sleep(8.0)
    await sup.stop()
    slow = durations["slow/web"]
    others = [d for k in keys if k != "slow/web" for d in durations[k]]
    print(
        f"\n[slow metrics] 'slow' answers after 20s, call timeout {app.call_timeout:g}s, "
        f"period {period:g}s, 2 workers, 8s: slow syncs {len(slow)} "
        f"(longest {max(slow):.2f}s), others {len(others)} syncs (longest "
        f"{max(others):.2f}s); schedule lag max {max(lags):.2f}s, "
        f"p50 {sorted(lags)[len(lags) // 2]:.3f}s over {len(lags)} syncs"
    )
    # Every slow call ended at the controller's timeout, not the server's 20 s.
    assert slow and max(slow) < app.call_timeout + 1.5
    # The others kept their schedule: each synced about once a period. 8 periods hold
    # 7 or 8 starts (the first is spread over the first period); a loaded host's
    # dispatch lag, carried from tick to tick, may cost one more. Held behind the
    # slow syncs (2 s each) they would manage 4 at most, and each would take ~2 s.
    for k in keys:
        if k != "slow/web":
            assert len(durations[k]) >= int(8.0 / period) - 3, durations
    assert max(others) < app.call_timeout / 2
