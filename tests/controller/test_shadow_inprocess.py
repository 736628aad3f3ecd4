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
    assert got == {"desiredReplicas": 1.0, "replicas": 1.0, "AbleToScale": 1.0}
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
    assert fields == ["AbleToScale", "desiredReplicas", "replicas"]
    desired = next(a for a in divergence_events if a["hpactl.shadow.field"] == "desiredReplicas")
    assert desired["hpactl.shadow.writer"] == "3"
    assert desired["hpactl.shadow.hpactl"] in ("[2]", "[2, 2]")
    assert pair.proxy.writes(leases=True) == []
