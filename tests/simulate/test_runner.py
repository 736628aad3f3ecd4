"""Scenarios run end to end: the real controller against the emulator, virtual clock."""

from __future__ import annotations

from typing import Any

import pytest
from support.objects import scale_crd

from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import ScenarioError, parse_scenario
from tests.simulate.scenarios import (
    cpu_metric,
    deployment,
    external_metric,
    hpa,
    pod,
    pod_metrics,
)

pytestmark = pytest.mark.timeout(60)


async def run(doc: dict[str, Any]) -> list[StepResult]:
    async with Simulation(parse_scenario(doc)) as sim:
        return await sim.run()


def condition(result: StepResult, key: str, ctype: str) -> dict[str, Any]:
    return next(c for c in result.hpas[key]["conditions"] if c["type"] == ctype)


async def test_objects_status_and_timestamps_kept() -> None:
    dep = deployment("web", 2)
    dep["status"] = {"replicas": 2, "readyReplicas": 1, "observedGeneration": 7}
    dep["metadata"]["creationTimestamp"] = "2025-06-01T00:00:00Z"
    doc = {
        "start": "2026-04-01T10:00:00Z",
        "objects": [
            dep,
            pod("web-a"),
            pod("web-b", deletion="2026-04-01T09:59:50Z"),
            hpa("web", [cpu_metric(50)]),
        ],
        "metrics": {"pods": [pod_metrics("web-a", "400m"), pod_metrics("web-b", "5")]},
        "steps": [{}],
    }
    async with Simulation(parse_scenario(doc)) as sim:
        store = sim.emu.store
        got = store.get("apps", "deployments", "default", "web")
        assert got is not None
        assert got["status"] == {"replicas": 2, "readyReplicas": 1, "observedGeneration": 7}
        assert got["metadata"]["creationTimestamp"] == "2025-06-01T00:00:00Z"
        terminating = store.get("", "pods", "default", "web-b")
        assert terminating is not None
        assert terminating["metadata"]["deletionTimestamp"] == "2026-04-01T09:59:50Z"
        h = store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert h is not None and h["metadata"]["creationTimestamp"] == "2026-04-01T10:00:00Z"
        (r,) = await sim.run()
    assert r.time.isoformat() == "2026-04-01T10:00:00+00:00"
    status = r.hpas["default/web"]
    # The terminating pod (5 cores) is ignored: 400m of 500m is 80%, so 2 replicas,
    # not the 20 that counting it would give.
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 80
    assert status["desiredReplicas"] == 2
    assert r.targets == {"Deployment/default/web": {"replicas": 2}}


async def test_autoscaling_v1_hpa_steps_after_and_repeat() -> None:
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 50,
        },
    }
    doc = {
        "flags": {"horizontal-pod-autoscaler-sync-period": "30s"},
        "objects": [deployment("web", 1), pod("web-a"), v1],
        "metrics": {"pods": [pod_metrics("web-a", "500m")]},
        "steps": [{"after": "10s"}, {"repeat": 2}, {"after": "5m", "repeat": 2}],
    }
    results = await run(doc)
    assert [r.step for r in results] == [0, 1, 2, 3, 4]
    assert [r.to_json()["time"] for r in results] == [
        "2026-01-01T00:00:10Z",
        "2026-01-01T00:00:40Z",
        "2026-01-01T00:01:10Z",
        "2026-01-01T00:06:10Z",
        "2026-01-01T00:11:10Z",
    ]
    first = results[0]
    # Status read back in autoscaling/v2 form.
    assert first.hpas["default/web"]["currentMetrics"][0]["type"] == "Resource"
    assert first.hpas["default/web"]["desiredReplicas"] == 2
    assert first.targets["Deployment/default/web"]["replicas"] == 2
    assert first.events == [
        {
            "object": "HorizontalPodAutoscaler/default/web",
            "type": "Normal",
            "reason": "SuccessfulRescale",
            "message": "New size: 2; reason: cpu resource utilization (percentage of request) "
            "above target",
        }
    ]
    assert all(r.events == [] for r in results[1:])


async def test_metrics_keys_replace_the_whole_answer() -> None:
    doc = {
        "objects": [
            deployment("worker", 2, cpu=None),
            hpa("worker", [external_metric("queue_length", "10", {"queue": "orders"})]),
        ],
        # The workload keeps status.replicas in step: an External AverageValue target
        # divides by it.
        "workload": [{"target": {"kind": "Deployment", "name": "worker"}}],
        "metrics": {
            "external": [
                {
                    "namespace": "default",
                    "metricName": "queue_length",
                    "metricLabels": {"queue": "orders"},
                    "value": "40",
                },
                {
                    "namespace": "default",
                    "metricName": "queue_length",
                    "metricLabels": {"queue": "audit"},
                    "value": "900",
                },
            ]
        },
        "steps": [
            {},
            {"metrics": {"external": []}},
            {
                "metrics": {
                    "external": [
                        {
                            "namespace": "default",
                            "metricName": "queue_length",
                            "metricLabels": {"queue": "orders"},
                            "value": "20",
                        }
                    ],
                    "unavailable": ["external.metrics.k8s.io"],
                }
            },
            {"metrics": {"unavailable": []}},
        ],
    }
    r0, r1, r2, r3 = await run(doc)
    # Only the selected series counts: 40 / 10 per replica = 4 (900 would give 90).
    assert r0.targets["Deployment/default/worker"]["replicas"] == 4
    assert r0.hpas["default/worker"]["currentMetrics"][0]["external"]["current"] == {
        "averageValue": "20"
    }
    for r in (r1, r2):
        active = condition(r, "default/worker", "ScalingActive")
        assert (active["status"], active["reason"]) == ("False", "FailedGetExternalMetric")
        assert any(e["reason"] == "FailedGetExternalMetric" for e in r.events)
        assert r.targets["Deployment/default/worker"]["replicas"] == 4
    assert (
        "unable to get external metric"
        in condition(r1, "default/worker", "ScalingActive")["message"]
    )
    # 503 while unavailable; the later value (20) is served once it is back.
    assert (
        "unable to fetch metrics from external metrics API"
        in condition(r2, "default/worker", "ScalingActive")["message"]
    )
    assert r3.hpas["default/worker"]["currentMetrics"][0]["external"]["current"] == {
        "averageValue": "5"
    }
    assert condition(r3, "default/worker", "ScalingActive")["status"] == "True"


async def test_custom_pods_metric_and_pod_metrics_labels() -> None:
    pods_metric = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "rps"},
            "target": {"type": "AverageValue", "averageValue": "20"},
        },
    }
    doc = {
        "objects": [
            deployment("api", 2),
            pod("api-a", "api"),
            pod("api-b", "api"),
            hpa("api", [pods_metric]),
        ],
        "metrics": {
            "custom": [
                {
                    "describedObject": {"kind": "Pod", "namespace": "default", "name": n},
                    "metric": {"name": "rps"},
                    "value": "30",
                }
                for n in ("api-a", "api-b")
            ]
        },
        "steps": [{}],
    }
    (r,) = await run(doc)
    assert r.hpas["default/api"]["currentMetrics"][0]["pods"]["current"] == {"averageValue": "30"}
    # 2 pods at 30 against 20 each: 3.
    assert r.targets["Deployment/default/api"]["replicas"] == 3


async def test_apply_and_delete_steps() -> None:
    replaced = hpa("web", [cpu_metric(50)], max_replicas=3)
    doc = {
        "objects": [deployment("web", 1), pod("web-a"), hpa("web", [cpu_metric(50)])],
        "metrics": {"pods": [pod_metrics("web-a", "2")]},
        "steps": [
            {},
            {"apply": [replaced]},
            {"delete": [{"kind": "HorizontalPodAutoscaler", "name": "web"}]},
        ],
    }
    r0, r1, r2 = await run(doc)
    assert r0.targets["Deployment/default/web"]["replicas"] == 4
    assert r1.hpas["default/web"]["desiredReplicas"] == 3
    assert r1.targets["Deployment/default/web"]["replicas"] == 3
    assert [e["message"] for e in r1.events] == [
        "New size: 3; reason: Current number of replicas above Spec.MaxReplicas"
    ]
    assert r2.hpas == {} and r2.targets == {} and r2.events == []


async def test_apply_without_status_keeps_the_status_and_with_status_sets_it() -> None:
    """The contract's apply rule: an HPA edited midway keeps its lastScaleTime,
    conditions and metrics; a manifest with a status key replaces the status."""
    edited = hpa("web", [cpu_metric(50)], max_replicas=6)
    ready = pod("web-a")
    ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    doc = {
        "objects": [deployment("web", 1), pod("web-a"), hpa("web", [cpu_metric(50)])],
        "metrics": {"pods": [pod_metrics("web-a", "2")]},
        "steps": [{}, {"after": "1m", "apply": [edited, ready]}],
    }
    async with Simulation(parse_scenario(doc)) as sim:
        r0, r1 = await sim.run()
        stored = sim.emu.store.get("", "pods", "default", "web-a")
    before = r0.hpas["default/web"]
    after = r1.hpas["default/web"]
    assert before["lastScaleTime"] is not None
    assert after["lastScaleTime"] == before["lastScaleTime"]  # kept, not cleared
    # AbleToScale stayed True: its lastTransitionTime is the first step's, which only
    # a kept status can give.
    assert (
        condition(r1, "default/web", "AbleToScale")["lastTransitionTime"]
        == (condition(r0, "default/web", "AbleToScale")["lastTransitionTime"])
    )
    # The Pod's manifest carried a status: it replaced the stored one.
    assert stored is not None
    assert stored["status"]["conditions"] == [{"type": "Ready", "status": "False"}]


async def test_apply_of_a_spec_edit_keeps_the_stabilization_history() -> None:
    """An HPA edited midway is the same HPA: the scale-down stabilization window keeps
    the high recommendation made before the edit (a re-created HPA would start with an
    empty history and scale down at once)."""
    pods = [pod(f"web-{i}") for i in range(4)]
    busy = [pod_metrics(f"web-{i}", "500m") for i in range(4)]  # 100% of 500m: wants 8
    idle = [pod_metrics(f"web-{i}", "25m") for i in range(4)]  # 5%: wants 1
    doc = {
        "objects": [deployment("web", 4), *pods, hpa("web", [cpu_metric(50)], max_replicas=8)],
        "metrics": {"pods": busy},
        "steps": [
            {},
            {"after": "1m", "metrics": {"pods": idle}},
            # A spec edit (maxReplicas), idle load, well inside the 5 min window.
            {"after": "1m", "apply": [hpa("web", [cpu_metric(50)], max_replicas=9)]},
        ],
    }
    r0, r1, r2 = await run(doc)
    assert r0.targets["Deployment/default/web"]["replicas"] == 8
    assert r1.targets["Deployment/default/web"]["replicas"] == 8  # held by the window
    assert r2.hpas["default/web"]["desiredReplicas"] == 8  # still held after the edit
    assert r2.targets["Deployment/default/web"]["replicas"] == 8
    assert r2.hpas["default/web"]["lastScaleTime"] == r0.hpas["default/web"]["lastScaleTime"]


async def test_one_sync_per_hpa_per_step_and_none_between() -> None:
    doc = {
        "objects": [
            deployment("a", 1),
            pod("a-0", "a"),
            hpa("a"),
            deployment("b", 1),
            pod("b-0", "b"),
            hpa("b"),
        ],
        "metrics": {
            "pods": [
                pod_metrics("a-0", "250m", container="a"),
                pod_metrics("b-0", "250m", container="b"),
            ]
        },
        "steps": [{}, {"after": "10m"}, {"repeat": 3}],
    }
    async with Simulation(parse_scenario(doc)) as sim:
        await sim.run()
        total = sum(
            s.value
            for fam in sim.app.metrics.registry.collect()
            for s in fam.samples
            if s.name.endswith("reconciliations_total")
        )
    assert total == 2 * 5


async def test_flags_reach_the_controller() -> None:
    def scenario(window: str) -> dict[str, Any]:
        return {
            "flags": {"horizontal-pod-autoscaler-downscale-stabilization": window},
            "objects": [deployment("web", 4), *(pod(f"web-{i}") for i in range(4)), hpa("web")],
            "metrics": {"pods": [pod_metrics(f"web-{i}", "100m") for i in range(4)]},
            "steps": [{}, {}],
        }

    quick = await run(scenario("0s"))
    held = await run(scenario("5m"))
    # 4 pods at 20% of request against 50%: 2 replicas, at once only without a window.
    assert quick[0].targets["Deployment/default/web"]["replicas"] == 2
    assert held[0].targets["Deployment/default/web"]["replicas"] == 4
    assert held[1].targets["Deployment/default/web"]["replicas"] == 4


async def test_custom_resource_target() -> None:
    crd = scale_crd("workers", "Worker")
    cr = {
        "apiVersion": "example.com/v1",
        "kind": "Worker",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 1},
        "status": {"replicas": 1, "selector": "app=w"},
    }
    doc = {
        "objects": [
            crd,
            cr,
            hpa("w", [external_metric("jobs", "5")], kind="Worker", api_version="example.com/v1"),
        ],
        "metrics": {"external": [{"namespace": "default", "metricName": "jobs", "value": "20"}]},
        "workload": [{"target": {"kind": "Worker", "name": "w"}, "requests": {"cpu": "100m"}}],
        "steps": [{}],
    }
    async with Simulation(parse_scenario(doc)) as sim:
        (r,) = await sim.run()
        assert r.targets == {"Worker/default/w": {"replicas": 4}}
        # The workload model ran the custom resource's pods (labels from its scale
        # selector) and kept status.replicas, which its scale subresource reports.
        pods = sim.emu.store.list("", "pods", "default")
        assert len(pods) == 4
        assert all(p["metadata"]["labels"] == {"app": "w"} for p in pods)
        got = sim.emu.store.get("example.com", "workers", "default", "w")
        assert got is not None
        assert got["status"] == {"replicas": 4, "selector": "app=w"}


async def test_rejected_manifest_names_the_step() -> None:
    bad = hpa("web")
    bad["spec"]["maxReplicas"] = 0
    doc = {"objects": [deployment("web", 1)], "steps": [{}, {"apply": [bad]}]}
    with pytest.raises(ScenarioError) as err:
        await run(doc)
    # The step and key, then the API server's own message.
    message = str(err.value)
    assert message.startswith(
        'steps[1].apply[0]: HorizontalPodAutoscaler.autoscaling "web" is invalid: '
    )
    assert "spec.maxReplicas: Invalid value: 0: must be greater than 0" in message


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {
                "objects": [{"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g"}}],
                "steps": [],
            },
            'objects[0]: no matches for kind "Gadget" in version "v1"',
        ),
        (
            {"steps": [{}, {}, {"delete": [{"kind": "Deployment", "name": "nope"}]}]},
            'steps[2].delete[0]: deployments.apps "nope" not found',
        ),
        (
            {"steps": [{"delete": [{"kind": "Gadget", "name": "g"}]}]},
            'steps[0].delete[0]: no matches for kind "Gadget"',
        ),
        (
            {
                "objects": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "metadata": {"name": "d"},
                        "spec": {},
                    }
                ],
                "steps": [],
            },
            'objects[0]: Deployment.apps "d" is invalid: spec.selector: Required value',
        ),
    ],
)
async def test_runtime_errors(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        await run(doc)
    assert str(err.value) == message


async def test_listed_pod_metrics_win_over_generated_ones() -> None:
    sts = deployment("db", 2)
    sts["kind"] = "StatefulSet"
    doc = {
        "objects": [sts],
        "workload": [
            {
                "target": {"kind": "StatefulSet", "name": "db"},
                "demand": {"cpu": [{"at": "0s", "value": "1"}]},
            }
        ],
        "metrics": {"pods": [pod_metrics("db-0", "7", container="db")]},
        "steps": [{}, {"metrics": {"pods": []}}],
    }
    async with Simulation(parse_scenario(doc)) as sim:

        def usage() -> dict[str, str]:
            return {
                m["metadata"]["name"]: m["containers"][0]["usage"]["cpu"]
                for m in sim.emu.metrics.pod_metrics()
            }

        assert usage() == {"db-0": "7", "db-1": "500m"}
        await sim.run()
        # `pods: []` drops the listed item; the generated ones stay.
        assert usage() == {"db-0": "500m", "db-1": "500m"}


async def test_scale_to_zero_follows_the_feature_gate() -> None:
    target = deployment("w", 1, cpu=None)
    target["status"] = {"replicas": 1}
    zero = hpa("w", [external_metric("q", "10")], min_replicas=0)
    doc: dict[str, Any] = {
        "flags": {"feature-gates": "HPAScaleToZero=false"},
        "objects": [target, zero],
        "metrics": {"external": [{"namespace": "default", "metricName": "q", "value": "0"}]},
        "steps": [{}, {"after": "5m"}],
    }
    # Without the gate the API server refuses minReplicas 0, as upstream's does.
    with pytest.raises(ScenarioError) as err:
        await run(doc)
    assert str(err.value).startswith(
        'objects[1]: HorizontalPodAutoscaler.autoscaling "w" is invalid: '
    )
    assert "spec.minReplicas: Invalid value: 0" in str(err.value)
    del doc["flags"]  # on by default in 1.37
    r0, r1 = await run(doc)
    assert r0.targets["Deployment/default/w"]["replicas"] == 1  # the window holds it
    assert r1.targets["Deployment/default/w"]["replicas"] == 0
    assert r1.events[0]["message"] == "New size: 0; reason: All metrics below target"
