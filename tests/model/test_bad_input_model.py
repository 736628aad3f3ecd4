"""Objects a real API server would refuse, planted past it (issue 12, bad input): the
projection refuses them with the API server's words, and the v1 conversion ignores a
malformed round-trip annotation as upstream does, instead of raising."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest

from hpactl.model.conversion import hpa_v1_to_v2
from hpactl.model.hpa import InvalidHPA, hpa_from_raw

Obj = dict[str, Any]


def v2(min_replicas: int | None = 1, max_replicas: int = 10, target: Obj | None = None) -> Obj:
    spec: Obj = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": max_replicas,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": target or {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ],
    }
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    return {"metadata": {"name": "web", "namespace": "default"}, "spec": spec}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            v2(5, 2),
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        ),
        (v2(1, 2**31), "spec.maxReplicas: Invalid value: 2147483648: out of range for int32"),
        (v2(-(2**31) - 1), "spec.minReplicas: Invalid value: -2147483649: out of range for int32"),
        (
            v2(target={"type": "AverageValue", "averageValue": "0"}),
            'spec.metrics[0].resource.target.averageValue: Invalid value: "0": must be positive',
        ),
        (
            v2(target={"type": "Value", "value": "-1"}),
            'spec.metrics[0].resource.target.value: Invalid value: "-1": must be positive',
        ),
        (
            v2(target={"type": "AverageValue", "averageValue": "-0.0001"}),
            'spec.metrics[0].resource.target.averageValue: Invalid value: "-0.0001": must be positive',
        ),
        (
            v2(target={"type": "Utilization", "averageUtilization": 0}),
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
        ),
    ],
)
def test_what_the_api_server_refuses_is_refused(raw: Obj, message: str) -> None:
    with pytest.raises(InvalidHPA) as err:
        hpa_from_raw(raw)
    assert err.value.message == message


@pytest.mark.parametrize(
    ("raw", "milli"),
    [
        (v2(target={"type": "AverageValue", "averageValue": "0.0001"}), 1),  # ceil to 1m
        (v2(target={"type": "AverageValue", "averageValue": "1e30"}), 2**63 - 1),  # as Go
        (v2(target={"type": "AverageValue", "averageValue": "1.5e3"}), 1_500_000),
    ],
)
def test_extreme_but_valid_targets_are_kept(raw: Obj, milli: int) -> None:
    target = hpa_from_raw(raw).spec.metrics[0].resource.target  # type: ignore[union-attr]
    assert target.average_value_milli == milli


def test_bounds_at_the_int32_limit_are_kept() -> None:
    top = 2**31 - 1
    h = hpa_from_raw(v2(top, top))
    assert (h.spec.min_replicas, h.spec.max_replicas) == (top, top)


V1: Obj = {
    "apiVersion": "autoscaling/v1",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 4,
        "targetCPUUtilizationPercentage": 50,
    },
    "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 70},
}

WRONG_SHAPES = [
    "not json",
    "",
    "123",
    '"text"',
    '{"a": 1}',
    "[1, 2]",
    "[null]",
    '[{"type": "Pods", "pods": 1}]',
    '[{"type": "Object", "object": {"target": "x", "metricName": "m", "targetValue": "1"}}]',
    '[{"type": "External", "external": {"metricSelector": "bad", "targetValue": {}}}]',
    '[{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": [1]}}]',
    '[{"type": "Resource", "resource": {"name": "cpu", "currentAverageValue": "lots"}}]',
    '[{"type": "Pods", "pods": {"metricName": "q", "targetAverageValue": "lots"}}]',
    '{"ScaleUp": 1}',
    '{"ScaleUp": {"Policies": [1]}}',
    '{"ScaleUp": {"Policies": [{"Type": "Pods", "Value": "x"}]}}',
]
KEYS = ["metrics", "current-metrics", "conditions", "behavior"]


def with_annotation(key: str, value: str) -> Obj:
    obj = copy.deepcopy(V1)
    obj["metadata"]["annotations"] = {f"autoscaling.alpha.kubernetes.io/{key}": value}
    return obj


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", WRONG_SHAPES)
def test_any_v1_annotation_converts_to_something_the_projection_reads(key: str, value: str) -> None:
    """Never an exception from the conversion (the emulator answered 500 to such a
    create, and failed its reads): the result projects, or is refused as InvalidHPA."""
    out = hpa_v1_to_v2(with_annotation(key, value))
    assert out["apiVersion"] == "autoscaling/v2"
    assert f"autoscaling.alpha.kubernetes.io/{key}" not in out["metadata"].get("annotations", {})
    with contextlib.suppress(InvalidHPA):
        hpa_from_raw(out)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        # Each fails Go's json.Unmarshal into the annotation's type: ignored as a whole.
        (key, value)
        for key, field in (("metrics", "target"), ("current-metrics", "current"))
        for value in (
            "not json",
            '{"a": 1}',
            "[1, 2]",
            '[{"type": "Pods", "pods": 1}]',
            '[{"type": "Object", "object": {"target": "x", "metricName": "m"}}]',
            f'[{{"type": "Pods", "pods": {{"metricName": "q", "{field}AverageValue": "lots"}}}}]',
        )
    ]
    + [("conditions", v) for v in ("not json", '{"a": 1}', "[1, 2]")]
    + [
        ("behavior", v)
        for v in ("not json", "[1]", '{"ScaleUp": 1}', '{"ScaleUp": {"Policies": [1]}}')
    ],
)
def test_a_malformed_v1_annotation_is_ignored(key: str, value: str) -> None:
    assert hpa_v1_to_v2(with_annotation(key, value)) == hpa_v1_to_v2(V1)
