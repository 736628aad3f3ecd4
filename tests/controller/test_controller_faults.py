"""The controller under API faults: a hanging metrics call, write conflicts, and the
informer-driven scheduling (generation wake-ups, stale caches)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from support.proxy import RecordingProxy

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.faults import FaultInjector, FaultRule
from hpactl.model.featuregates import FeatureGates

from .builders import events, hpa, pod_metrics, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Rig:
    def __init__(
        self,
        emu: Emulator,
        app: ControllerApp,
        clock: VirtualClock,
        proxy: RecordingProxy | None = None,
    ) -> None:
        self.emu, self.app, self.clock, self.proxy = emu, app, clock, proxy

    async def settle(self) -> None:
        await self.app.wait_for_rv(self.emu.store.current_resource_version(), timeout=10)

    def replicas(self, name: str, ns: str = "default") -> int:
        obj = self.emu.store.get("apps", "deployments", ns, name)
        assert obj is not None
        return int(obj["spec"]["replicas"])


@pytest.fixture
async def hang() -> AsyncIterator[asyncio.Event]:
    released = asyncio.Event()
    yield released
    released.set()


async def _rig(
    faults: FaultInjector,
    gates: dict[str, bool] | None = None,
    call_timeout: float = 10.0,
    proxy: RecordingProxy | None = None,
) -> tuple[Emulator, ControllerApp, VirtualClock]:
    clock = VirtualClock(T0)
    emu = Emulator(now=clock.now, bookmark_interval=0.05, faults=faults)
    await emu.start()
    master = emu.url
    if proxy is not None:
        proxy.upstream = emu.url
        await proxy.start()
        master = proxy.url
    config = ControllerConfig(client=ClientConnectionConfig(master=master))
    if gates:
        config = replace(config, feature_gates=FeatureGates.from_map(gates))
    app = ControllerApp(config, clock=clock, env={}, call_timeout=call_timeout)
    await app.__aenter__()
    return emu, app, clock


@pytest.fixture
async def rig_factory() -> AsyncIterator[Any]:
    made: list[tuple[Emulator, ControllerApp, RecordingProxy | None]] = []

    async def make(faults: FaultInjector, *, proxied: bool = False, **kw: Any) -> Rig:
        proxy = RecordingProxy("") if proxied else None
        emu, app, clock = await _rig(faults, proxy=proxy, **kw)
        made.append((emu, app, proxy))
        return Rig(emu, app, clock, proxy)

    yield make
    for emu, app, proxy in made:
        await app.close()
        if proxy is not None:
            await proxy.stop()
        await emu.stop()


async def test_a_hanging_metrics_call_does_not_delay_other_hpas(
    rig_factory: Any, hang: asyncio.Event
) -> None:
    async def stuck(_seconds: float) -> None:
        await hang.wait()

    faults = FaultInjector(sleep=stuck)
    faults.add(FaultRule.slow(1.0, path="/apis/metrics.k8s.io/v1beta1/namespaces/slow/*"))
    rig: Rig = await rig_factory(faults, call_timeout=1.0)
    rig.emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "slow"}})
    fast = workload(rig.emu, "web", 2, T0)
    slow = workload(rig.emu, "web", 2, T0, ns="slow")
    rig.emu.metrics.set_pod_metrics(
        pod_metrics(fast, "200m", T0) + pod_metrics(slow, "200m", T0, ns="slow")
    )
    rig.emu.store.create(hpa("web", "web", max_replicas=4))
    rig.emu.store.create(hpa("web", "web", max_replicas=4, ns="slow"))
    await rig.settle()
    ctl = rig.app.controller
    slow_task = asyncio.create_task(ctl.sync_one("slow/web"))
    fast_task = asyncio.create_task(ctl.sync_one("default/web"))
    done, _ = await asyncio.wait({slow_task, fast_task}, return_when=asyncio.FIRST_COMPLETED)
    assert done == {fast_task}
    fast_rec = fast_task.result()
    assert fast_rec is not None and fast_rec.rescaled
    assert rig.replicas("web") == 4
    # The stuck call is abandoned at its timeout; the sync ends with a metrics error.
    rec = await slow_task
    assert rec is not None and not rec.rescaled
    assert "context deadline exceeded" in rec.errors[0]
    assert rig.replicas("web", "slow") == 2


async def test_scale_update_is_retried_on_conflict(rig_factory: Any) -> None:
    faults = FaultInjector()
    rule = faults.add(
        FaultRule.error(
            409,
            path="/apis/apps/v1/namespaces/default/deployments/web/scale",
            verbs=frozenset({"PUT"}),
            count=1,
        )
    )
    rig: Rig = await rig_factory(faults)
    names = workload(rig.emu, "web", 2, T0)
    rig.emu.metrics.set_pod_metrics(pod_metrics(names, "200m", T0))
    rig.emu.store.create(hpa("web", "web", max_replicas=4))
    await rig.settle()
    (rec,) = await rig.app.controller.sync_all()
    assert faults.hits(rule) == 1
    assert rec.rescaled and rig.replicas("web") == 4
    assert not events(rig.emu, reason="FailedRescale")


async def test_failed_status_write_is_reported_as_an_event(rig_factory: Any) -> None:
    faults = FaultInjector()
    faults.add(
        FaultRule.error(
            500,
            path="/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web/status",
            verbs=frozenset({"PUT"}),
            message="etcd is sad",
        )
    )
    rig: Rig = await rig_factory(faults)
    names = workload(rig.emu, "web", 2, T0)
    rig.emu.metrics.set_pod_metrics(pod_metrics(names, "50m", T0))
    rig.emu.store.create(hpa("web", "web"))
    await rig.settle()
    (rec,) = await rig.app.controller.sync_all()
    assert not rec.status_written
    assert rec.errors[-1] == "failed to update status for web: etcd is sad"
    (ev,) = events(rig.emu, reason="FailedUpdateStatus")
    assert (ev["type"], ev["message"]) == ("Warning", "etcd is sad")


async def test_spec_change_wakes_the_hpa_only_under_hpa_generation(rig_factory: Any) -> None:
    for gate, expect_wake in ((True, True), (False, False)):
        rig: Rig = await rig_factory(FaultInjector(), gates={"HPAGeneration": gate})
        names = workload(rig.emu, "web", 2, T0)
        rig.emu.metrics.set_pod_metrics(pod_metrics(names, "50m", T0))
        rig.emu.store.create(hpa("web", "web"))
        await rig.settle()
        ctl = rig.app.controller
        synced: list[str] = []

        def seen(r: Any, out: list[str] = synced) -> None:
            out.append(r.key)

        ctl.on_record = seen
        ctl.start_scheduling()
        # First tick: the initial key is spread within one period on the virtual clock.
        # The clock stops once the sync is under way (another period of advances while a
        # slow host syncs would make a second, periodic sync look like a wake below).
        sup = ctl.supervisor
        assert sup is not None
        async with asyncio.timeout(10):
            while not (synced or sup.in_flight or sup.queue_state()[0]):
                rig.clock.advance(1)
                await asyncio.sleep(0.01)
            while not synced:
                await asyncio.sleep(0.01)
        assert synced == ["default/web"]
        # A status-only write never wakes it; a spec change does, with the gate.
        obj = rig.emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert obj is not None
        obj["spec"]["maxReplicas"] = 7
        rig.emu.store.apply(obj)
        await rig.settle()
        # A wake syncs at once (real time, the virtual clock stands still): waited for up
        # to 10 s. Without the gate nothing may come: 1 s is ample for a wrong wake.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (10.0 if expect_wake else 1.0)
        while len(synced) < 2 and loop.time() < deadline:
            await asyncio.sleep(0.01)
        assert (len(synced) > 1) is expect_wake
        await ctl.stop_scheduling()


# ----------------------------------------------------------- writes that cannot be trusted

ONE_POD_PER_MINUTE = {
    "scaleUp": {
        "stabilizationWindowSeconds": 0,
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
    },
    "scaleDown": {
        "stabilizationWindowSeconds": 0,
        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
    },
}


def _limited_hpa() -> dict[str, Any]:
    h = hpa("web", "web", max_replicas=10)
    h["spec"]["behavior"] = ONE_POD_PER_MINUTE
    return h


def _scale_puts(rig: Rig) -> list[int]:
    """spec.replicas of every SuccessfulRescale, oldest first."""
    evs = sorted(events(rig.emu, reason="SuccessfulRescale"), key=lambda e: e["firstTimestamp"])
    return [int(e["message"].split(";")[0].removeprefix("New size: ")) for e in evs]


async def test_a_conflict_from_a_stale_cache_decides_again_instead_of_resending(
    rig_factory: Any,
) -> None:
    """Issue: with the Deployments watch broken and a user scaling to 10, the stale
    decision (5 -> 4) was re-sent after the 409: 10 -> 4 in one write, under a policy
    of one pod per minute. Now the 409 leads to a live read and a new decision."""
    faults = FaultInjector()
    rig: Rig = await rig_factory(faults)
    names = workload(rig.emu, "web", 5, T0)
    rig.emu.metrics.set_pod_metrics(pod_metrics(names, "5m", T0))  # 5% of 100m
    rig.emu.store.create(_limited_hpa())
    await rig.settle()
    # The Deployments watch breaks: the cache keeps spec.replicas 5.
    faults.add(FaultRule.error(500, path="/apis/apps/v1/deployments", verbs=frozenset({"watch"})))
    faults.add(FaultRule.watch_drop(path="/apis/apps/v1/deployments"))
    await asyncio.sleep(0.3)
    dep = rig.emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None
    dep["spec"]["replicas"] = 10  # a user scales up by hand
    rig.emu.store.apply(dep, validate=False)
    cached = rig.app.informers.informer_for_kind("Deployment")
    assert cached is not None
    assert cached.store.get("default/web").spec_replicas == 5  # type: ignore[union-attr]

    (rec,) = await rig.app.controller.sync_all()
    assert rig.replicas("web") == 9  # one pod down from the live 10, not 4
    assert rec.rescaled and rec.current == 10 and rec.desired == 9
    assert _scale_puts(rig) == [9]

    # Later syncs read the target live until the cache catches up: no 409 storm and the
    # policy holds (one pod per minute).
    rig.clock.advance(15)
    (rec,) = await rig.app.controller.sync_all()
    assert rig.replicas("web") == 9 and not rec.rescaled and rec.current == 9
    assert not events(rig.emu, reason="FailedRescale")


async def test_a_scale_write_whose_answer_was_lost_counts_against_the_rate_policy(
    rig_factory: Any,
) -> None:
    """Issue: a scale PUT that outlived the client timeout was applied by the server;
    hpactl recorded no scale event and scaled again 3 s later under a 1-pod-per-60 s
    policy. Now an unknown outcome is re-read and, if it landed, counted."""
    rig: Rig = await rig_factory(FaultInjector(), call_timeout=0.3, proxied=True)
    assert rig.proxy is not None
    # The server applies the PUT at once; its answer reaches hpactl after 1 s, when the
    # 0.3 s request timeout has long passed.
    rig.proxy.hold("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale", seconds=1.0)
    names = workload(rig.emu, "web", 2, T0)
    rig.emu.metrics.set_pod_metrics(pod_metrics(names, "200m", T0))  # 200%: wants more
    rig.emu.store.create(_limited_hpa())
    await rig.settle()

    (rec,) = await rig.app.controller.sync_all()
    assert not rec.rescaled  # the answer never came: reported as upstream reports it
    (failed,) = events(rig.emu, reason="FailedRescale")
    assert failed["message"].startswith("New size: 3; reason: cpu resource utilization")
    assert rig.replicas("web") == 3  # ... but the server did apply it

    rig.clock.advance(3)
    await rig.settle()
    (rec,) = await rig.app.controller.sync_all()
    assert rig.replicas("web") == 3  # the landed write used this minute's one pod
    assert not rec.rescaled and rec.current == 3
    assert rec.explanation is not None
    assert rec.explanation.limited_by == ("scale-up-limit",)
    assert rec.explanation.policy == "scaleUp Pods 1 per 60s"

    rig.clock.advance(60)
    await rig.settle()
    (rec,) = await rig.app.controller.sync_all()
    assert rig.replicas("web") == 4  # a minute later the policy allows the next pod


async def test_a_target_whose_selector_cannot_be_parsed_says_so(rig_factory: Any) -> None:
    faults = FaultInjector()
    rig: Rig = await rig_factory(faults)
    workload(rig.emu, "web", 2, T0)
    dep = rig.emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None
    dep["spec"]["selector"] = {
        "matchExpressions": [{"key": "app", "operator": "Sometimes", "values": ["web"]}]
    }
    rig.emu.store.apply(dep, validate=False)
    rig.emu.store.create(hpa("web", "web"))
    await rig.settle()
    (rec,) = await rig.app.controller.sync_all()
    assert rec.current is None and rec.explanation is not None
    assert rec.explanation.path == "failed-get-scale"
    (ev,) = events(rig.emu, reason="FailedGetScale")
    assert ev["message"].startswith('deployments.apps "web" cannot be scaled: ')
    assert "Sometimes" in ev["message"]
    assert "not found" not in ev["message"]
