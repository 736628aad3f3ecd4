"""hpactl.model.hpa: projection of autoscaling/v2 objects, status JSON, semantic equality."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.model.hpa import (
    HPACondition,
    HPAStatus,
    InvalidHPA,
    MetricStatus,
    MetricValueStatus,
    ResourceMetricStatus,
    ScalingPolicy,
    hpa_from_raw,
    status_equal,
    status_from_raw,
    status_to_raw,
)
from hpactl.model.quantity import Quantity


def base() -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": "web",
            "uid": "u",
            "generation": 4,
            "resourceVersion": "9",
        },
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                },
                {
                    "type": "ContainerResource",
                    "containerResource": {
                        "name": "memory",
                        "container": "app",
                        "target": {"type": "AverageValue", "averageValue": "512Mi"},
                    },
                },
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {
                            "name": "qps",
                            "selector": {"matchLabels": {"b": "2", "a": "1"}},
                        },
                        "target": {"type": "AverageValue", "averageValue": "1500m"},
                    },
                },
                {
                    "type": "Object",
                    "object": {
                        "describedObject": {"kind": "Ingress", "name": "main"},
                        "metric": {"name": "rps"},
                        "target": {"type": "Value", "value": "2k"},
                    },
                },
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": "queue"},
                        "target": {"type": "AverageValue", "averageValue": "30"},
                    },
                },
            ],
        },
    }


def test_projection_of_all_metric_types() -> None:
    h = hpa_from_raw(base())
    assert (h.namespace, h.name, h.uid, h.generation, h.resource_version) == (
        "ns",
        "web",
        "u",
        4,
        "9",
    )
    assert h.key == "ns/web"
    s = h.spec
    assert (s.min_replicas, s.max_replicas, s.behavior) == (2, 10, None)
    m = s.metrics
    assert m[0].resource is not None and m[0].resource.target.average_utilization == 60
    assert m[1].container_resource is not None
    assert m[1].container_resource.target.average_value_milli == 512 * 1024 * 1024 * 1000
    assert m[2].pods is not None and m[2].pods.target.average_value_milli == 1500
    assert m[2].pods.metric.selector is not None
    assert m[2].pods.metric.selector.match_labels == (("a", "1"), ("b", "2"))
    assert m[3].object is not None and m[3].object.target.value_milli == 2_000_000
    assert m[4].external is not None and m[4].external.target.average_value_milli == 30_000


def test_behavior_defaults_are_filled() -> None:
    raw = base()
    raw["spec"]["behavior"] = {
        "scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}
    }
    b = hpa_from_raw(raw).spec.behavior
    assert b is not None
    assert b.scale_up.stabilization_window_seconds == 0
    assert b.scale_up.select_policy == "Max"
    assert b.scale_up.policies == (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))
    assert b.scale_down.stabilization_window_seconds is None
    assert b.scale_down.policies == (ScalingPolicy("Pods", 1, 60),)
    assert b.scale_down.tolerance is None


def test_tolerance_is_a_float() -> None:
    raw = base()
    raw["spec"]["behavior"] = {"scaleUp": {"tolerance": "50m"}}
    b = hpa_from_raw(raw).spec.behavior
    assert b is not None and b.scale_up.tolerance == pytest.approx(0.05)


def test_empty_metrics_default_to_cpu_80() -> None:
    raw = base()
    del raw["spec"]["metrics"]
    m = hpa_from_raw(raw).spec.metrics
    assert len(m) == 1 and m[0].resource is not None
    assert (m[0].resource.name, m[0].resource.target.average_utilization) == ("cpu", 80)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "maxReplicas"), None),
        (("spec", "maxReplicas"), "ten"),
        (("spec", "scaleTargetRef"), None),
        (("spec", "metrics"), "cpu"),
        (("metadata", "name"), None),
        (("spec", "minReplicas"), 1.5),
    ],
)
def test_malformed_objects_raise_invalid_hpa(path: tuple[str, str], value: object) -> None:
    raw = base()
    if value is None:
        del raw[path[0]][path[1]]
    else:
        raw[path[0]][path[1]] = value
    with pytest.raises(InvalidHPA):
        hpa_from_raw(raw)


def test_bad_quantity_and_missing_source_raise_invalid_hpa() -> None:
    raw = base()
    raw["spec"]["metrics"][2]["pods"]["target"]["averageValue"] = "lots"
    with pytest.raises(InvalidHPA, match="averageValue"):
        hpa_from_raw(raw)
    raw = base()
    del raw["spec"]["metrics"][0]["resource"]
    with pytest.raises(InvalidHPA):
        hpa_from_raw(raw)


def test_unknown_metric_type_is_kept() -> None:
    raw = base()
    raw["spec"]["metrics"] = [{"type": "Fancy"}]
    assert hpa_from_raw(raw).spec.metrics[0].type == "Fancy"


STATUS = {
    "observedGeneration": 4,
    "lastScaleTime": "2026-01-01T00:00:00Z",
    "currentReplicas": 3,
    "desiredReplicas": 5,
    "currentMetrics": [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "current": {"averageValue": "900m", "averageUtilization": 90},
            },
        },
        {"type": ""},
        {
            "type": "External",
            "external": {
                "metric": {"name": "q", "selector": {"matchLabels": {"a": "b"}}},
                "current": {"value": "12"},
            },
        },
    ],
    "conditions": [
        {
            "type": "AbleToScale",
            "status": "True",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "SucceededRescale",
            "message": "the HPA controller was able to update the target scale to 5",
        }
    ],
}


def test_status_round_trip_is_exact() -> None:
    assert status_to_raw(status_from_raw(copy.deepcopy(STATUS))) == STATUS


def test_status_omitempty_rules() -> None:
    raw = status_to_raw(HPAStatus())
    assert raw == {"desiredReplicas": 0}
    ms = MetricStatus(
        "Resource",
        resource=ResourceMetricStatus("cpu", MetricValueStatus(average_utilization=0)),
    )
    raw = status_to_raw(HPAStatus(current_metrics=(ms,)))
    assert raw["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 0}}}
    ]


def test_quantities_are_canonical_go_strings() -> None:
    v = MetricValueStatus(
        value=Quantity.from_milli(1500),
        average_value=Quantity.from_milli(2 * 1024**3 * 1000, "BinarySI"),
    )
    assert v.to_raw() == {"value": "1500m", "averageValue": "2Gi"}


def test_semantic_equality_compares_quantities_by_value() -> None:
    a = copy.deepcopy(STATUS)
    b = copy.deepcopy(STATUS)
    b["currentMetrics"][0]["resource"]["current"]["averageValue"] = "0.9"
    assert status_equal(status_from_raw(a), status_from_raw(b))
    b["desiredReplicas"] = 6
    assert not status_equal(status_from_raw(a), status_from_raw(b))


def test_semantic_equality_nil_and_empty_lists() -> None:
    a = status_from_raw({"desiredReplicas": 1, "conditions": []})
    b = status_from_raw({"desiredReplicas": 1})
    assert status_equal(a, b)


def test_condition_time_is_seconds_precision() -> None:
    c = HPACondition(
        "AbleToScale", "True", "r", "m", datetime(2026, 1, 1, 0, 0, 1, 999999, tzinfo=UTC)
    )
    raw = status_to_raw(HPAStatus(conditions=(c,)))
    assert raw["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:01Z"
