"""Scenario parsing and validation: every key, and the message for every mistake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hpactl.simulate.scenario import (
    DEFAULT_START,
    ScenarioError,
    loads_scenario,
    parse_scenario,
)

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}


def test_defaults() -> None:
    sc = parse_scenario({"steps": [{}, {"repeat": 2}, {"after": "1m"}]}, source="x/flash.yaml")
    assert sc.name == "flash"
    assert sc.description == ""
    assert sc.start == DEFAULT_START == datetime(2026, 1, 1, tzinfo=UTC)
    assert sc.flags == {}
    assert sc.config.hpa.sync_period == timedelta(seconds=15)
    assert sc.objects == () and sc.workload == () and sc.metrics is None
    # First step at 0s, then the sync period, then the explicit `after`.
    assert [(n, t) for n, _, t in sc.timeline()] == [(0, 0.0), (1, 15.0), (2, 30.0), (3, 90.0)]


def test_every_top_level_key() -> None:
    sc = loads_scenario(
        """
name: n
description: d
start: "2026-03-01T12:00:00Z"
flags:
  horizontal-pod-autoscaler-sync-period: 30s
  horizontal-pod-autoscaler-tolerance: 0.2
  feature-gates: {HPAScaleToZero: true}
objects:
  - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 1}}
metrics:
  pods: []
  custom: []
  external: []
  unavailable: [metrics.k8s.io]
workload:
  - target: {kind: Deployment, name: web}
    podReadyAfter: 20s
    requests: {cpu: 0.5}
    demand:
      cpu: [{at: 0s, value: 1}, {at: 5m, value: "6"}]
steps:
  - {}
  - {repeat: 2}
"""
    )
    assert sc.name == "n" and sc.description == "d"
    assert sc.start == datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert sc.config.hpa.tolerance == pytest.approx(0.2)
    assert sc.config.feature_gates.enabled("HPAScaleToZero")
    assert sc.sync_period == 30.0
    assert [t for _, _, t in sc.timeline()] == [0.0, 30.0, 60.0]
    assert sc.metrics is not None and sc.metrics.unavailable == ("metrics.k8s.io",)
    assert sc.metrics.pods == () and sc.metrics.custom == () and sc.metrics.external == ()
    (w,) = sc.workload
    assert (w.kind, w.namespace, w.name) == ("Deployment", "default", "web")
    assert w.pod_ready_after == 20.0
    assert w.requests == {"cpu": "500m"}
    assert [(p.at, p.milli) for p in w.demand["cpu"]] == [(0.0, 1000), (300.0, 6000)]


def test_unquoted_yaml_timestamp_start() -> None:
    sc = loads_scenario("start: 2026-02-01T00:00:00Z\nsteps: []\n")
    assert sc.start == datetime(2026, 2, 1, tzinfo=UTC)


def test_simulation_flags_are_appended() -> None:
    # The client must not be throttled on a virtual clock; leader election is off.
    sc = parse_scenario({"steps": [], "flags": {"kube-api-qps": 5}})
    assert sc.config.client.qps >= 1_000_000
    assert sc.config.leader_election.leader_elect is False
    assert sc.config.metrics_listen is None and sc.config.health_probe_listen is None


def test_steps_keys_parsed() -> None:
    sc = parse_scenario(
        {
            "steps": [
                {
                    "after": 30,
                    "apply": [DEPLOY],
                    "delete": [{"kind": "Pod", "name": "p", "namespace": "ns"}],
                    "metrics": {"external": []},
                    "repeat": 3,
                }
            ]
        }
    )
    (step,) = sc.steps
    assert step.after == 30.0 and step.repeat == 3
    assert step.apply == (DEPLOY,)
    assert [(d.kind, d.namespace, d.name) for d in step.delete] == [("Pod", "ns", "p")]
    assert step.metrics is not None and step.metrics.external == () and step.metrics.pods is None
    assert [t for _, _, t in sc.timeline()] == [30.0, 60.0, 90.0]


BAD: list[tuple[dict[str, Any], str]] = [
    (
        {"steps": [], "foo": 1},
        "foo: unknown key (expected one of: name, description, start, flags, objects, "
        "metrics, workload, nodes, steps)",
    ),
    ({"objects": []}, "steps: required"),
    ({"steps": [{}, {}, {}, {"after": "5x"}]}, 'steps[3].after: invalid duration "5x"'),
    ({"steps": [{"after": "-5s"}]}, 'steps[0].after: invalid duration "-5s": must not be negative'),
    (
        {"steps": [{"wait": 1}]},
        "steps[0].wait: unknown key (expected one of: after, apply, delete, metrics, repeat)",
    ),
    ({"steps": [{"repeat": 0}]}, "steps[0].repeat: expected a whole number >= 1, got 0"),
    ({"steps": [{"repeat": "2"}]}, "steps[0].repeat: expected a whole number >= 1, got '2'"),
    ({"steps": [{"apply": {"kind": "Pod"}}]}, "steps[0].apply: expected a list, got map"),
    ({"steps": [{"apply": [{"kind": "Pod"}]}]}, "steps[0].apply[0].apiVersion: required"),
    (
        {"steps": [{"apply": [{"kind": "Pod", "apiVersion": "v1"}]}]},
        "steps[0].apply[0].metadata.name: required",
    ),
    ({"steps": [{"delete": [{"kind": "Pod"}]}]}, "steps[0].delete[0].name: required"),
    (
        {"steps": [{"delete": [{"kind": "Pod", "name": "p", "uid": "x"}]}]},
        "steps[0].delete[0].uid: unknown key (expected one of: apiVersion, kind, namespace, name)",
    ),
    (
        {"steps": [{"metrics": {"cpu": []}}]},
        "steps[0].metrics.cpu: unknown key (expected one of: pods, custom, external, unavailable)",
    ),
    (
        {"steps": [], "metrics": {"unavailable": ["foo"]}},
        'metrics.unavailable[0]: unknown API group "foo" (expected one of: metrics.k8s.io, '
        "custom.metrics.k8s.io, external.metrics.k8s.io)",
    ),
    ({"steps": [], "metrics": {"pods": {}}}, "metrics.pods: expected a list, got map"),
    (
        {"steps": [], "metrics": {"custom": [{"metric": {"name": "x"}, "value": "1"}]}},
        'metrics.custom[0]: MetricValue.custom.metrics.k8s.io "" is invalid: '
        "describedObject.kind, describedObject.name, metric.name: Required value",
    ),
    (
        {"steps": [], "metrics": {"external": [{"metricName": "q", "value": "1"}]}},
        'metrics.external[0]: ExternalMetricValue.external.metrics.k8s.io "q" is invalid: '
        "metadata.namespace: Required value",
    ),
    ({"steps": [], "flags": {"nope": 1}}, "flags.nope: unknown flag"),
    (
        {"steps": [], "flags": {"horizontal-pod-autoscaler-tolerance": "abc"}},
        'flags.horizontal-pod-autoscaler-tolerance: invalid value "abc": strconv.ParseFloat: '
        'parsing "abc": invalid syntax',
    ),
    (
        {"steps": [], "flags": {"horizontal-pod-autoscaler-sync-period": "0s"}},
        "flags.horizontal-pod-autoscaler-sync-period: must be greater than 0, got 0s",
    ),
    (
        {"steps": [], "flags": {"feature-gates": {"NoSuchGate": True}}},
        "flags.feature-gates: unrecognized feature gate: NoSuchGate",
    ),
    (
        {"steps": [], "flags": {"kubeconfig": "/x"}},
        "flags.kubeconfig: not allowed in a scenario (the simulator sets it)",
    ),
    ({"steps": [], "flags": {"--v": 2}}, "flags.--v: spell flags without the leading --"),
    ({"steps": [], "flags": ["v"]}, "flags: expected a map, got list"),
    (
        {"steps": [], "start": "yesterday"},
        'start: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse '
        '"yesterday" as "2006-01-02T15:04:05Z07:00"',
    ),
    (
        {"steps": [], "objects": [{"apiVersion": "v1", "metadata": {"name": "x"}}]},
        "objects[0].kind: required",
    ),
    ({"steps": [], "objects": ["Pod"]}, "objects[0]: expected a map, got string"),
    ({"steps": [], "workload": [{}]}, "workload[0].target: required"),
    ({"steps": [], "workload": [{"target": {"name": "w"}}]}, "workload[0].target.kind: required"),
    (
        {"steps": [], "workload": [{"target": {"kind": "Deployment", "name": "w"}, "x": 1}]},
        "workload[0].x: unknown key (expected one of: target, podReadyAfter, requests, demand)",
    ),
    (
        {
            "steps": [],
            "workload": [{"target": {"kind": "Deployment", "name": "w"}, "podReadyAfter": "soon"}],
        },
        'workload[0].podReadyAfter: invalid duration "soon"',
    ),
    (
        {
            "steps": [],
            "workload": [
                {"target": {"kind": "Deployment", "name": "w"}, "requests": {"cpu": True}}
            ],
        },
        "workload[0].requests.cpu: expected a quantity, got boolean",
    ),
    (
        {
            "steps": [],
            "workload": [
                {
                    "target": {"kind": "Deployment", "name": "w"},
                    "demand": {"cpu": [{"at": "1m", "value": "1"}, {"at": "0s", "value": "2"}]},
                }
            ],
        },
        "workload[0].demand.cpu[1].at: points must be in time order",
    ),
    (
        {
            "steps": [],
            "workload": [
                {"target": {"kind": "Deployment", "name": "w"}, "demand": {"cpu": [{"at": "0s"}]}}
            ],
        },
        "workload[0].demand.cpu[0].value: required",
    ),
    (
        {
            "steps": [],
            "workload": [
                {"target": {"kind": "Deployment", "name": "w"}},
                {"target": {"kind": "Deployment", "name": "w", "namespace": "default"}},
            ],
        },
        "workload[1].target: Deployment/default/w is listed twice",
    ),
]


@pytest.mark.parametrize(("doc", "message"), BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_error_messages(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    assert str(err.value) == message


def test_quantity_error_names_the_point() -> None:
    doc = {
        "steps": [],
        "workload": [
            {
                "target": {"kind": "Deployment", "name": "w"},
                "demand": {"cpu": [{"at": "0s", "value": "lots"}]},
            }
        ],
    }
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    assert str(err.value).startswith("workload[0].demand.cpu[0].value: ")
    assert "lots" in str(err.value)


def test_pod_metrics_error_names_the_item() -> None:
    item = {
        "metadata": {"namespace": "default", "name": "p"},
        "containers": [{"name": "c", "usage": {"cpu": "abc"}}],
    }
    with pytest.raises(ScenarioError) as err:
        parse_scenario({"steps": [{}, {"metrics": {"pods": [item]}}]})
    assert str(err.value).startswith("steps[1].metrics.pods[0]: containers[0].usage.cpu: ")


def test_invalid_yaml_names_the_line() -> None:
    with pytest.raises(ScenarioError) as err:
        loads_scenario("steps:\n  - {after: 1s\n")
    assert str(err.value).startswith("line ")
    assert "invalid YAML" in str(err.value)


def test_missing_file() -> None:
    from hpactl.simulate.scenario import load_scenario

    with pytest.raises(ScenarioError) as err:
        load_scenario("/nonexistent/scenario.yaml")
    assert str(err.value) == "/nonexistent/scenario.yaml: No such file or directory"


def test_unquoted_timestamps_in_manifests_become_text() -> None:
    sc = loads_scenario(
        """
objects:
  - apiVersion: v1
    kind: Pod
    metadata: {name: p, deletionTimestamp: 2026-01-01T00:00:00Z}
    status: {startTime: 2025-12-31T23:00:00.5Z}
steps: []
"""
    )
    (pod,) = sc.objects
    assert pod["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    assert pod["status"]["startTime"] == "2025-12-31T23:00:00.500000Z"
