"""Shadow mode in one process, stepped on a virtual clock: a writing ControllerApp and
a shadow ControllerApp against one emulator, the shadow behind a recording proxy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.proxy import RecordingProxy

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig, HPAControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator

from .builders import events, hpa, pod_metrics, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Pair:
    emu: Emulator
    clock: VirtualClock
    writer: ControllerApp
    shadow: ControllerApp
    proxy: RecordingProxy
    spans: InMemorySpanExporter

    async def settle(self) -> None:
        rv = self.emu.store.current_resource_version()
        await self.writer.wait_for_rv(rv, timeout=10)
        await self.shadow.wait_for_rv(rv, timeout=10)

    def replicas(self) -> int:
        obj = self.emu.store.get("apps", "deployments", "default", "web")
        assert obj is not None
        return int(obj["spec"]["replicas"])


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    clock = VirtualClock(T0)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hpa_cfg = HPAControllerConfig(downscale_stabilization_window=timedelta(0))
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        names = workload(emu, "web", 2, T0)
        # 54 % of the requests against a 50 % target: ratio 1.08.
        emu.metrics.set_pod_metrics(pod_metrics(names, "54m", T0))
        emu.store.create(hpa("web", "web"))
        async with RecordingProxy(emu.url) as proxy:
            base = ControllerConfig(hpa=hpa_cfg)
            writer_cfg = replace(
                base,
                client=ClientConnectionConfig(master=emu.url),
                hpa=replace(hpa_cfg, tolerance=0.05),  # a different rule
            )
            shadow_cfg = replace(base, client=ClientConnectionConfig(master=proxy.url), shadow=True)
            async with (
                ControllerApp(writer_cfg, clock=clock, env={}) as writer,
                ControllerApp(
                    shadow_cfg, clock=clock, env={}, tracer=provider.get_tracer("shadow")
                ) as shadow,
            ):
                assert shadow.session is not None
                shadow.session.write_fence = lambda: False  # as hpactl run --shadow does
                yield Pair(emu, clock, writer, shadow, proxy, exporter)
    provider.shutdown()


async def test_the_shadow_decides_with_the_fence_shut_and_writes_nothing(pair: Pair) -> None:
    await pair.settle()
    (rec,) = await pair.shadow.controller.sync_all()
    assert rec.skipped == ""  # a shut fence does not skip shadow decisions
    assert rec.current == 2 and rec.desired == 2 and rec.explanation is not None
    assert pair.proxy.writes(leases=True) == []
    obj = pair.emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert obj is not None and not obj.get("status", {}).get("conditions")
    assert events(pair.emu) == []
    # Its decision records say so (hpactl explain, /debug/hpa): nothing was written.
    (record,) = pair.shadow.controller.records.get("default/web")
    writes = record.to_dict()["writes"]
    assert writes["shadow"] is True and writes["status"] is False and writes["events"] == []
    assert writes["scale"]["attempted"] is False


async def test_a_writer_decision_the_shadow_does_not_reproduce_is_reported(pair: Pair) -> None:
    await pair.settle()
    shadow = pair.shadow.controller
    await shadow.sync_all()  # from 2 replicas at 54 %: within its tolerance, 2
    pair.clock.advance(1)
    (w,) = await pair.writer.controller.sync_all()  # tolerance 0.05: 3
    assert w.rescaled and pair.replicas() == 3
    await pair.settle()
    pair.clock.advance(1)
    (s,) = await shadow.sync_all()  # the target moved: also decides from 2 again
    assert s.current == 3
    assert shadow.history["default/web"].scale_up_events == ()  # no behavior: none kept
    pair.clock.advance(20)  # past the window (15 s sync period + 1 s)
    await shadow.sync_all()

    m = pair.shadow.metrics
    got = {
        s.labels["field"]: s.value
        for s in next(iter(m.shadow_divergences.collect())).samples
        if s.name.endswith("_total")
    }
    # The writer's first rescale also set ScaledToZero=False (HPAScaleToZero): hpactl,
    # deciding from the writer's starting point (its status before the step, not the
    # writer's new one, whose conditions would carry over), did not rescale.
    assert got == {"desiredReplicas": 1.0, "replicas": 1.0, "AbleToScale": 1.0, "ScaledToZero": 1.0}
    assert m.registry.get_sample_value("hpactl_shadow_hpas_compared") == 1
    assert m.registry.get_sample_value("hpactl_shadow_hpas_agreeing") == 0
    divergence_events = [
        (e.attributes or {})
        for span in pair.spans.get_finished_spans()
        if span.name == "hpa.sync"
        for e in span.events
        if e.name == "hpactl.shadow.divergence"
    ]
    fields = sorted(str(a["hpactl.shadow.field"]) for a in divergence_events)
    assert fields == ["AbleToScale", "ScaledToZero", "desiredReplicas", "replicas"]
    desired = next(a for a in divergence_events if a["hpactl.shadow.field"] == "desiredReplicas")
    assert desired["hpactl.shadow.writer"] == "3"
    assert desired["hpactl.shadow.hpactl"] in ("[2]", "[2, 2]")
    assert pair.proxy.writes(leases=True) == []


# ------------------------------------------------- a writer applying the shadow's rules


def _behavior(scale_up: dict[str, object], scale_down: dict[str, object]) -> dict[str, object]:
    return {"scaleUp": scale_up, "scaleDown": scale_down}


@pytest.fixture
async def twins(request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    """Writer and shadow with the same rules (1 s sync period), on one HPA whose
    behavior the test gives (``@pytest.mark.parametrize("twins", [behavior],
    indirect=True)``); 2 pods at 200 % of a 50 % target."""
    clock = VirtualClock(T0)
    exporter = InMemorySpanExporter()
    hpa_cfg = HPAControllerConfig(sync_period=timedelta(seconds=1))
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        names = workload(emu, "web", 2, T0)
        emu.metrics.set_pod_metrics(pod_metrics(names, "200m", T0))
        obj = hpa("web", "web")
        obj["spec"]["behavior"] = request.param
        emu.store.create(obj)
        async with RecordingProxy(emu.url) as proxy:
            base = ControllerConfig(hpa=hpa_cfg)
            writer_cfg = replace(base, client=ClientConnectionConfig(master=emu.url))
            shadow_cfg = replace(base, client=ClientConnectionConfig(master=proxy.url), shadow=True)
            async with (
                ControllerApp(writer_cfg, clock=clock, env={}) as writer,
                ControllerApp(shadow_cfg, clock=clock, env={}) as shadow,
            ):
                assert shadow.session is not None
                shadow.session.write_fence = lambda: False
                yield Pair(emu, clock, writer, shadow, proxy, exporter)


def _at(pair: Pair, seconds: float) -> None:
    pair.clock.advance((T0 + timedelta(seconds=seconds) - pair.clock.now()).total_seconds())


def _divergences(pair: Pair) -> dict[str, float]:
    fam = next(iter(pair.shadow.metrics.shadow_divergences.collect()))
    return {s.labels["field"]: s.value for s in fam.samples if s.name.endswith("_total")}


RATE_LIMITED = _behavior(
    {
        "stabilizationWindowSeconds": 0,
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 3}],
    },
    {"stabilizationWindowSeconds": 0},
)


@pytest.mark.parametrize("twins", [RATE_LIMITED], indirect=True)
async def test_the_shadow_ends_a_rate_limit_period_when_the_writer_does(twins: Pair) -> None:
    """The writer scales 2 -> 4 at 0.9 s, recorded as lastScaleTime 00:00:00 (whole
    seconds). Its +2 per 3 s period ends at 3.9 s: at 3.5 s both hold 4. Timed at the
    truncated lastScaleTime the shadow's period ended at 3.0 s and it stepped to 6 a
    sync before the writer."""
    pair = twins
    await pair.settle()
    (s,) = await pair.shadow.controller.sync_all()  # the shadow reads the target at 2
    assert s.current == 2
    _at(pair, 0.9)
    (w,) = await pair.writer.controller.sync_all()
    assert w.rescaled and pair.replicas() == 4
    obj = pair.emu.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
    assert obj is not None and obj["status"]["lastScaleTime"] == "2026-01-01T00:00:00Z"
    await pair.settle()
    _at(pair, 1.0)
    (s,) = await pair.shadow.controller.sync_all()  # stores the writer's scale event
    assert (s.current, s.desired) == (4, 4)
    _at(pair, 3.5)
    (s,) = await pair.shadow.controller.sync_all()
    (w,) = await pair.writer.controller.sync_all()
    assert (w.current, w.desired) == (4, 4)
    assert (s.current, s.desired) == (4, 4)  # the same period, the same moment
    await pair.settle()
    _at(pair, 3.95)
    (w,) = await pair.writer.controller.sync_all()
    (s,) = await pair.shadow.controller.sync_all()
    assert (w.desired, s.desired) == (6, 6)
    assert pair.proxy.writes(leases=True) == []


STABILIZED = _behavior(
    {
        "stabilizationWindowSeconds": 0,
        "policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}],
    },
    {
        "stabilizationWindowSeconds": 3,
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}],
    },
)


@pytest.mark.parametrize("twins", [STABILIZED], indirect=True)
async def test_a_scale_down_the_shadow_takes_a_sync_after_the_writer_agrees(twins: Pair) -> None:
    """Both last recommended 8 a moment apart (the writer at 0.5 s, the shadow at 0.6
    s); the load falls. The writer's 3 s window lets go at 3.5 s: it scales 8 -> 1. The
    shadow's next sync comes at 3.59 s, a little early, when its own window still holds
    its 0.6 s recommendation: from the writer's starting point it holds 8. At its next
    sync (4.6 s) it lets go, from that starting point too: the same step, a sync later,
    reproduced. Before, it decided from the writer's starting point only once."""
    pair = twins
    names = [p["metadata"]["name"] for p in pair.emu.store.list("", "pods", "default")]
    await pair.settle()
    (s,) = await pair.shadow.controller.sync_all()  # its warm-up (3 s) starts
    assert s.desired == 8
    _at(pair, 0.5)
    (w,) = await pair.writer.controller.sync_all()  # 200 % of 50 %: up to 8
    assert w.rescaled and pair.replicas() == 8
    await pair.settle()
    _at(pair, 0.6)
    (s,) = await pair.shadow.controller.sync_all()
    assert (s.current, s.desired) == (8, 8)
    pair.emu.metrics.set_pod_metrics(pod_metrics(names, "10m", pair.clock.now()))
    for t in (1.5, 2.5):
        _at(pair, t)
        (w,) = await pair.writer.controller.sync_all()
        await pair.settle()
        _at(pair, t + 0.1)
        (s,) = await pair.shadow.controller.sync_all()
        assert w.desired == s.desired == 8  # stabilized
    _at(pair, 3.5)
    (w,) = await pair.writer.controller.sync_all()
    assert w.rescaled and pair.replicas() == 1
    await pair.settle()
    _at(pair, 3.59)
    (s,) = await pair.shadow.controller.sync_all()
    assert s.current == 1
    for t in (4.6, 5.6, 6.6, 7.6):
        _at(pair, t)
        await pair.writer.controller.sync_all()
        await pair.settle()
        _at(pair, t + 0.1)
        await pair.shadow.controller.sync_all()
    assert _divergences(pair) == {}
    m = pair.shadow.metrics
    assert m.registry.get_sample_value("hpactl_shadow_hpas_compared") == 1
    assert pair.proxy.writes(leases=True) == []
