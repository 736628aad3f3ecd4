"""HorizontalController in-process against the emulator, on a VirtualClock.

The controller is driven the way ``hpactl simulate`` drives it: write objects,
wait until the caches reflect them (``wait_for_rv``), then ``sync_all()`` once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from support.objects import scale_crd

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.model.selectors import parse_selector

from .builders import events, hpa, pod, pod_metrics, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Env:
    emu: Emulator
    app: ControllerApp
    clock: VirtualClock
    spans: InMemorySpanExporter

    async def settle(self) -> None:
        await self.app.wait_for_rv(self.emu.store.current_resource_version(), timeout=10)

    async def step(self, seconds: float = 0.0) -> list[Any]:
        if seconds:
            self.clock.advance(seconds)
        await self.settle()
        return await self.app.controller.sync_all()

    def hpa_obj(self, name: str = "web") -> dict[str, Any]:
        obj = self.emu.store.get("autoscaling", "horizontalpodautoscalers", "default", name)
        assert obj is not None
        return obj

    def replicas(self, name: str = "web") -> int:
        obj = self.emu.store.get("apps", "deployments", "default", name)
        assert obj is not None
        return int(obj["spec"]["replicas"])

    def set_cpu(self, names: list[str], cpu: str) -> None:
        self.emu.metrics.set_pod_metrics(pod_metrics(names, cpu, self.clock.now()))


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = VirtualClock(T0)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        config = ControllerConfig(client=ClientConnectionConfig(master=emu.url))
        async with ControllerApp(
            config, clock=clock, env={}, tracer=provider.get_tracer("test")
        ) as app:
            yield Env(emu, app, clock, exporter)
    provider.shutdown()


async def test_scales_up_then_down_on_cpu_utilization(env: Env) -> None:
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "200m")  # 200% of the 100m request, target 50%
    env.emu.store.create(hpa("web", "web", max_replicas=4))

    (rec,) = await env.step()
    # Legacy path (no spec.behavior): proposal 8, scale-up limit max(2*2, 4) = 4 = max.
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True)
    assert rec.reason == "cpu resource utilization (percentage of request) above target"
    assert env.replicas() == 4
    status = env.hpa_obj()["status"]
    assert status["currentReplicas"] == 2 and status["desiredReplicas"] == 4
    assert "lastScaleTime" in status
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["AbleToScale"]["reason"] == "SucceededRescale"
    assert conds["ScalingActive"]["reason"] == "ValidMetricFound"
    assert conds["ScalingLimited"]["reason"] == "TooManyReplicas"
    (ev,) = events(env.emu, reason="SuccessfulRescale")
    assert ev["message"] == (
        "New size: 4; reason: cpu resource utilization (percentage of request) above target"
    )
    assert ev["source"]["component"] == "horizontal-pod-autoscaler"
    assert ev["involvedObject"]["name"] == "web"

    # The new pods arrive; load drops to 10%.
    for i in (2, 3):
        env.emu.store.create(pod("web", i, env.clock.now()))
    names = [f"web-{i}" for i in range(4)]
    env.set_cpu(names, "10m")
    (rec,) = await env.step(15)
    # Within the 5 min downscale stabilization window the first recommendation (8,
    # clamped to the maximum 4) holds.
    assert (rec.current, rec.desired, rec.rescaled) == (4, 4, False)
    assert "stabilization" in rec.explanation.limited_by
    env.set_cpu(names, "10m")
    (rec,) = await env.step(301)
    assert (rec.current, rec.desired, rec.rescaled) == (4, 1, True)
    assert rec.reason == "All metrics below target"
    assert env.replicas() == 1
    assert env.app.controller.history["default/web"].recommendations


async def test_status_written_only_when_changed(env: Env) -> None:
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "50m")  # exactly at target: nothing to do
    env.emu.store.create(hpa("web", "web"))
    (rec,) = await env.step()
    assert rec.status_written and not rec.rescaled and rec.desired == 2
    rv = env.hpa_obj()["metadata"]["resourceVersion"]
    env.set_cpu(names, "50m")
    (rec,) = await env.step(15)
    assert not rec.status_written
    assert env.hpa_obj()["metadata"]["resourceVersion"] == rv
    # A different load changes currentMetrics, so the status is written again.
    env.set_cpu(names, "52m")
    (rec,) = await env.step(15)
    assert rec.status_written and not rec.rescaled
    assert env.hpa_obj()["metadata"]["resourceVersion"] != rv


async def test_repeated_events_are_aggregated(env: Env) -> None:
    workload(env.emu, "web", 2, T0)
    env.emu.metrics.set_unavailable(["metrics.k8s.io"])
    env.emu.store.create(hpa("web", "web"))
    (rec,) = await env.step()
    assert rec.errors and not rec.rescaled
    await env.step(15)
    failed = events(env.emu, reason="FailedGetResourceMetric")
    assert len(failed) == 1
    assert failed[0]["count"] == 2
    assert failed[0]["type"] == "Warning"
    assert failed[0]["message"].startswith(
        "failed to get cpu utilization: unable to get metrics for resource cpu: "
        "unable to fetch metrics from resource metrics API: "
    )
    computed = events(env.emu, reason="FailedComputeMetricsReplicas")
    assert len(computed) == 1 and computed[0]["count"] == 2
    cond = {c["type"]: c for c in env.hpa_obj()["status"]["conditions"]}["ScalingActive"]
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetResourceMetric")


async def test_missing_target_reports_failed_get_scale(env: Env) -> None:
    env.emu.store.create(hpa("web", "nope"))
    (rec,) = await env.step()
    assert rec.current is None
    (ev,) = events(env.emu, reason="FailedGetScale")
    assert ev["message"] == 'deployments.apps "nope" not found'
    cond = {c["type"]: c for c in env.hpa_obj()["status"]["conditions"]}["AbleToScale"]
    assert cond["reason"] == "FailedGetScale"
    assert cond["message"] == (
        "the HPA controller was unable to get the target's current scale: "
        'deployments.apps "nope" not found'
    )


async def test_namespace_metrics_are_shared_between_hpas(env: Env) -> None:
    a = workload(env.emu, "a", 2, T0)
    b = workload(env.emu, "b", 2, T0)
    env.emu.metrics.set_pod_metrics(
        pod_metrics(a, "200m", T0) + pod_metrics(b, "25m", T0)  # a: 200%, b: 25%
    )
    env.emu.store.create(hpa("a", "a"))
    env.emu.store.create(hpa("b", "b"))
    fetcher = env.app.fetcher
    assert fetcher is not None
    before = fetcher.requests
    recs = {r.key: r for r in await env.step()}
    assert fetcher.requests - before == 1  # one PodMetrics list for the namespace
    assert (recs["default/a"].current, recs["default/a"].desired) == (2, 4)
    # b's proposal 1 is held at 2 by the downscale window seeded with the current count.
    assert recs["default/b"].explanation.metric_proposal == 1
    assert (recs["default/b"].current, recs["default/b"].desired) == (2, 2)
    # The shared answer is exactly each HPA's own: utilization per HPA's pods only.
    status_a = env.hpa_obj("a")["status"]["currentMetrics"][0]["resource"]["current"]
    status_b = env.hpa_obj("b")["status"]["currentMetrics"][0]["resource"]["current"]
    assert status_a["averageUtilization"] == 200
    assert status_b["averageUtilization"] == 25


async def test_selector_store_and_forgetting_a_deleted_hpa(env: Env) -> None:
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "50m")
    env.emu.store.create(hpa("web", "web"))
    await env.settle()
    ctl = env.app.controller
    assert ctl.selectors.snapshot("default")["default/web"].is_nothing
    await env.step()
    assert str(ctl.selectors.snapshot("default")["default/web"]) == str(parse_selector("app=web"))
    assert "default/web" in ctl.history
    env.emu.store.delete("autoscaling", "horizontalpodautoscalers", "default", "web")
    await env.settle()
    assert "default/web" not in ctl.selectors
    assert "default/web" not in ctl.history
    assert "default/web" not in ctl.explanations
    assert await ctl.sync_all() == []


async def test_overlapping_hpas_are_ambiguous(env: Env) -> None:
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "200m")
    env.emu.store.create(hpa("one", "web"))
    env.emu.store.create(hpa("two", "web"))
    # First round, in key order: "one" still sees "two" registered with the
    # match-nothing selector and scales once (as upstream); "two" then sees "one".
    recs = {r.key: r for r in await env.step()}
    assert recs["default/one"].rescaled
    assert "ambiguous-selector" in recs["default/two"].explanation.limited_by
    recs = {r.key: r for r in await env.step(15)}
    for key in ("default/one", "default/two"):
        assert "ambiguous-selector" in recs[key].explanation.limited_by
    (ev,) = events(env.emu, reason="AmbiguousSelector")[:1]
    assert "are controlled by multiple HPAs: [default/one default/two]" in ev["message"]


async def test_sync_span_attributes_and_prometheus(env: Env) -> None:
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "200m")
    created = env.emu.store.create(hpa("web", "web"))
    await env.step()
    spans = {s.name: s for s in env.spans.get_finished_spans()}
    sync = spans["hpa.sync"]
    attrs = dict(sync.attributes or {})
    assert attrs["k8s.namespace.name"] == "default"
    assert attrs["k8s.hpa.name"] == "web"
    assert attrs["k8s.hpa.uid"] == created["metadata"]["uid"]
    assert attrs["k8s.deployment.name"] == "web"
    assert attrs["hpactl.replicas.current"] == 2
    assert attrs["hpactl.replicas.desired"] == 4
    assert attrs["hpactl.metric.0.proposal"] == 8
    assert attrs["hpactl.limited_by"] == "scale-up-limit"
    for child in ("hpa.scale.get", "hpa.metric", "hpa.scale.update", "hpa.status.update"):
        parent = spans[child].parent
        assert parent is not None and sync.context is not None
        assert parent.span_id == sync.context.span_id
    families = {
        f.name: f for f in text_string_to_metric_families(env.app.metrics.render().decode())
    }
    rec = families["horizontal_pod_autoscaler_controller_reconciliations"]
    labels = [
        (s.labels["action"], s.labels["error"], s.value)
        for s in rec.samples
        if s.name.endswith("_total")
    ]
    assert ("scale_up", "none", 1.0) in labels
    mc = families["horizontal_pod_autoscaler_controller_metric_computation"]
    assert any(
        s.labels.get("metric_type") == "Resource" and s.labels["action"] == "scale_up"
        for s in mc.samples
    )
    desired = families["horizontal_pod_autoscaler_controller_desired_replicas"]
    assert [s.value for s in desired.samples if s.labels.get("hpa_name") == "web"] == [4.0]
    assert (
        families["horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers"]
        .samples[0]
        .value
        == 1.0
    )
    api = families["hpactl_api_requests"]
    assert any(s.labels["verb"] == "update" and s.labels["code"] == "200" for s in api.samples)


async def test_core_config_follows_flags_and_gates() -> None:
    from hpactl.controller.app import core_config
    from hpactl.model.featuregates import FeatureGates

    cfg = ControllerConfig()
    cc = core_config(cfg)
    assert cc.tolerance == 0.1 and cc.scale_to_zero
    gates = FeatureGates.from_map({"HPAScaleToZero": False})
    cc = core_config(replace(cfg, feature_gates=gates))
    assert not cc.scale_to_zero


async def test_malformed_hpa_gets_a_warning_and_others_still_sync(env: Env) -> None:
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "200m")
    bad = hpa("bad", "web")
    bad["spec"]["metrics"] = [{"type": "Resource"}]
    env.emu.store.create(bad)
    env.emu.store.create(hpa("web", "web", max_replicas=4))
    recs = {r.key: r for r in await env.step()}
    assert recs["default/bad"].skipped == "invalid"
    assert recs["default/web"].rescaled and env.replicas() == 4
    (ev,) = events(env.emu, reason="InvalidHPA")
    assert ev["type"] == "Warning"
    assert ev["message"] == (
        "invalid HorizontalPodAutoscaler: spec.metrics[0].resource: required for type 'Resource'"
    )
    await env.step(15)  # reported once per distinct problem, not every sync
    assert events(env.emu, reason="InvalidHPA")[0]["count"] == 1


CRD = scale_crd("workers", "Worker", preserve_unknown_fields=False)


async def test_custom_resource_is_scaled_through_its_scale_subresource(env: Env) -> None:
    env.emu.store.create(CRD)
    env.emu.store.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Worker",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"replicas": 2},
            "status": {"replicas": 2, "selector": "app=w"},
        }
    )
    names = [env.emu.store.create(pod("w", i, T0))["metadata"]["name"] for i in range(2)]
    env.set_cpu(names, "200m")
    env.emu.store.create(hpa("w", "w", max_replicas=4, kind="Worker", api_version="example.com/v1"))
    (rec,) = await env.step()
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True), rec.errors
    worker = env.emu.store.get("example.com", "workers", "default", "w")
    assert worker is not None and worker["spec"]["replicas"] == 4


async def test_unknown_kind_reports_no_mapping(env: Env) -> None:
    env.emu.store.create(hpa("x", "x", kind="Gadget", api_version="example.com/v1"))
    (rec,) = await env.step()
    assert rec.current is None
    (ev,) = events(env.emu, reason="FailedGetScale")
    assert ev["message"] == 'no matches for kind "Gadget" in group "example.com"'


async def test_stale_cache_skips_the_sync_until_our_status_write_is_seen(env: Env) -> None:
    """StaleControllerConsistencyHPA (beta, on): a sync right after our own status
    write, before the HPA informer has observed it, is skipped rather than deciding
    on the old status."""
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "50m")
    env.emu.store.create(hpa("web", "web"))
    await env.settle()
    controller = env.app.controller
    assert controller.stale_consistency  # the 1.37 default
    await env.app.informers.hpas().stop()  # freeze the HPA cache before the write

    first = await controller.sync_one("default/web")
    assert first is not None and first.status_written and not first.skipped
    rv = env.hpa_obj()["metadata"]["resourceVersion"]

    skipped = await controller.sync_one("default/web")
    assert skipped is not None and skipped.skipped == "stale-cache"
    assert not skipped.status_written and not skipped.rescaled
    assert "cache is stale" in skipped.errors[0]
    assert env.hpa_obj()["metadata"]["resourceVersion"] == rv

    # Gate off: the sync runs on the stale object and its status write, made with the
    # old resourceVersion, is refused: the conflict the gate exists to avoid.
    controller.stale_consistency = False
    ran = await controller.sync_one("default/web")
    assert ran is not None and not ran.skipped and not ran.status_written
    assert any("the object has been modified" in e for e in ran.errors)
