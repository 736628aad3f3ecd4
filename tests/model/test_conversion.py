"""autoscaling/v1 <-> v2 conversion and defaulting, from pkg/apis/autoscaling/v1/conversion.go,
v2/defaults.go and the round-trip tests of pkg/apis/autoscaling/v2 (TestMetricSpec_RoundTrip_V2V1,
TestStatuses_RoundTrip_V2V1, TestHorizontalPodAutoscalerBehavior_RoundTrip_V2V1,
TestCPUMetricHoistedToEnd_RoundTrip_V2V1)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpactl.model.conversion import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    METRICS_ANNOTATION,
    SCALE_DOWN_TOLERANCE_ANNOTATION,
    SCALE_UP_TOLERANCE_ANNOTATION,
    default_hpa_v1,
    default_hpa_v2,
    go_json,
    hpa_v1_to_v2,
    hpa_v2_to_v1,
    normalize_hpa_v2,
)

REF = {"kind": "Deployment", "name": "my-deployment", "apiVersion": "apps/v1"}


def base_v2(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "hpa", "namespace": "default"},
        "spec": {"scaleTargetRef": dict(REF), "minReplicas": 1, "maxReplicas": 3, **spec},
        "status": {"desiredReplicas": 0},
    }


def resource(name: str, target: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def container_resource(name: str, target: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "ContainerResource",
        "containerResource": {"name": name, "target": target, "container": "app"},
    }


def util(v: int) -> dict[str, Any]:
    return {"type": "Utilization", "averageUtilization": v}


def avg(q: str) -> dict[str, Any]:
    return {"type": "AverageValue", "averageValue": q}


def value(q: str) -> dict[str, Any]:
    return {"type": "Value", "value": q}


METRICS = {
    "Pods AverageValue": {
        "type": "Pods",
        "pods": {"metric": {"name": "http_requests_per_second"}, "target": avg("1k")},
    },
    "Object AverageValue": {
        "type": "Object",
        "object": {
            "describedObject": dict(REF),
            "target": avg("100"),
            "metric": {"name": "requests-per-second"},
        },
    },
    "Object Value": {
        "type": "Object",
        "object": {
            "describedObject": dict(REF),
            "target": value("200"),
            "metric": {"name": "errors-per-second"},
        },
    },
    "External AverageValue": {
        "type": "External",
        "external": {"metric": {"name": "queue_depth", "selector": {}}, "target": avg("50")},
    },
    "External Value": {
        "type": "External",
        "external": {
            "metric": {"name": "queue_length", "selector": {"matchLabels": {"q": "jobs"}}},
            "target": value("30"),
        },
    },
    "ContainerResource CPU Utilization": container_resource("cpu", util(60)),
    "ContainerResource CPU AverageValue": container_resource("cpu", avg("250m")),
    "ContainerResource Memory Utilization": container_resource("memory", util(70)),
    "ContainerResource Memory AverageValue": container_resource("memory", avg("128Mi")),
    "Resource Memory Utilization": resource("memory", util(80)),
    "Resource Memory AverageValue": resource("memory", avg("256Mi")),
    "Resource CPU AverageValue": resource("cpu", avg("500m")),
    # Last: the cpu Utilization metric comes back at the end of the list.
    "Resource CPU Utilization": resource("cpu", util(75)),
}


def round_trip(v2: dict[str, Any]) -> dict[str, Any]:
    v1 = hpa_v2_to_v1(v2)
    # Through JSON, as the API server's storage and wire do.
    return hpa_v1_to_v2(json.loads(json.dumps(v1)))


@pytest.mark.parametrize("name", list(METRICS))
def test_metric_round_trip(name: str) -> None:
    hpa = base_v2(metrics=[METRICS[name]])
    assert round_trip(hpa) == hpa


def test_all_metrics_in_one_hpa_round_trip() -> None:
    hpa = base_v2(metrics=list(METRICS.values()))
    assert round_trip(hpa) == hpa


def test_cpu_metric_hoisted_to_end() -> None:
    cpu = resource("cpu", util(80))
    ext = METRICS["External Value"]
    back = round_trip(base_v2(metrics=[cpu, ext]))
    assert back["spec"]["metrics"] == [ext, cpu]


@pytest.mark.parametrize("min_replicas", [1, None, 4])
def test_min_max_round_trip(min_replicas: int | None) -> None:
    hpa = base_v2(metrics=[resource("memory", util(75))])
    if min_replicas is None:
        del hpa["spec"]["minReplicas"]
    else:
        hpa["spec"]["minReplicas"] = min_replicas
        hpa["spec"]["maxReplicas"] = max(4, min_replicas)
    assert round_trip(hpa) == hpa


RULES = {
    "single pods policy with stabilization window": {
        "stabilizationWindowSeconds": 300,
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
    },
    "select policy min with multiple policies": {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Min",
        "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 30},
            {"type": "Pods", "value": 4, "periodSeconds": 30},
        ],
    },
    "select policy disabled": {
        "selectPolicy": "Disabled",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60}],
    },
    "tolerance": {"tolerance": "50m"},
}


@pytest.mark.parametrize("name", list(RULES))
def test_behavior_round_trip(name: str) -> None:
    rules = RULES[name]
    for behavior in (
        {"scaleUp": rules},
        {"scaleDown": rules},
        {"scaleUp": rules, "scaleDown": rules},
    ):
        hpa = base_v2(metrics=[resource("memory", util(80))], behavior=copy.deepcopy(behavior))
        assert round_trip(hpa) == hpa


def test_status_round_trip() -> None:
    t = "2025-01-01T00:00:00Z"
    hpa = base_v2(metrics=[resource("cpu", util(50))])
    hpa["status"] = {
        "observedGeneration": 7,
        "lastScaleTime": t,
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentMetrics": [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "http_requests_per_second"},
                    "current": {"averageValue": "123"},
                },
            },
            {
                "type": "External",
                "external": {"metric": {"name": "queue_length"}, "current": {"value": "42"}},
            },
            {
                "type": "Object",
                "object": {
                    "metric": {"name": "requests-per-second"},
                    "current": {"averageValue": "0"},
                    "describedObject": dict(REF),
                },
            },
            {
                "type": "Object",
                "object": {
                    "metric": {"name": "requests-per-minute"},
                    "current": {"value": "0"},
                    "describedObject": dict(REF),
                },
            },
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "memory",
                    "current": {"averageValue": "256Mi"},
                    "container": "app",
                },
            },
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageValue": "250m", "averageUtilization": 41},
                },
            },
        ],
        "conditions": [
            {
                "type": "ScalingActive",
                "status": "True",
                "observedGeneration": 7,
                "lastTransitionTime": t,
                "reason": "ScalingActive",
                "message": "Scaling metrics available",
            },
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": t,
                "reason": "ReadyForNewScale",
                "message": "recommended size matches current size",
            },
        ],
    }
    assert round_trip(hpa) == hpa
    v1 = hpa_v2_to_v1(hpa)
    assert v1["status"] == {
        "observedGeneration": 7,
        "lastScaleTime": t,
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "currentCPUUtilizationPercentage": 41,
    }


def test_v2_to_v1_annotations_exact() -> None:
    hpa = base_v2(
        metrics=[
            resource("cpu", util(60)),
            METRICS["Pods AverageValue"],
            METRICS["Object Value"],
            METRICS["External Value"],
            resource("memory", avg("1.5Gi")),
        ],
        behavior={
            "scaleDown": {
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                "tolerance": "0.05",
            }
        },
    )
    v1 = hpa_v2_to_v1(hpa)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["kind"] == "HorizontalPodAutoscaler"
    assert v1["spec"] == {
        "scaleTargetRef": REF,
        "minReplicas": 1,
        "maxReplicas": 3,
        "targetCPUUtilizationPercentage": 60,
    }
    ann = v1["metadata"]["annotations"]
    assert ann[METRICS_ANNOTATION] == (
        '[{"type":"Pods","pods":{"metricName":"http_requests_per_second","targetAverageValue":"1k"}},'
        '{"type":"Object","object":{"target":{"kind":"Deployment","name":"my-deployment",'
        '"apiVersion":"apps/v1"},"metricName":"errors-per-second","targetValue":"200"}},'
        '{"type":"External","external":{"metricName":"queue_length","metricSelector":'
        '{"matchLabels":{"q":"jobs"}},"targetValue":"30"}},'
        '{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1536Mi"}}]'
    )
    assert ann[BEHAVIOR_ANNOTATION] == (
        '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":null,'
        '"Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}],"Tolerance":"50m"}}'
    )
    assert CURRENT_METRICS_ANNOTATION not in ann
    assert CONDITIONS_ANNOTATION not in ann
    assert set(ann) == {METRICS_ANNOTATION, BEHAVIOR_ANNOTATION}


def test_v2_to_v1_status_annotations_exact() -> None:
    hpa = base_v2()
    hpa["status"] = {
        "currentReplicas": 1,
        "desiredReplicas": 2,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageValue": "100m", "averageUtilization": 10},
                },
            }
        ],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "SucceededRescale"}],
    }
    ann = hpa_v2_to_v1(hpa)["metadata"]["annotations"]
    assert ann[CURRENT_METRICS_ANNOTATION] == (
        '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":10,'
        '"currentAverageValue":"100m"}}]'
    )
    assert ann[CONDITIONS_ANNOTATION] == (
        '[{"type":"AbleToScale","status":"True","lastTransitionTime":null,"reason":"SucceededRescale"}]'
    )


def test_defaulted_behavior_annotation_exact() -> None:
    hpa = default_hpa_v2(base_v2(behavior={}))
    ann = hpa_v2_to_v1(hpa)["metadata"]["annotations"]
    assert ann[BEHAVIOR_ANNOTATION] == (
        '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":'
        '[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],'
        '"Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max",'
        '"Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}'
    )


def test_v2_to_v1_drops_stale_annotations_and_keeps_others() -> None:
    hpa = base_v2(metrics=[resource("cpu", util(50))])
    hpa["metadata"]["annotations"] = {
        METRICS_ANNOTATION: "[]",
        CONDITIONS_ANNOTATION: "garbage",
        SCALE_UP_TOLERANCE_ANNOTATION: "1",
        "team": "web",
    }
    v1 = hpa_v2_to_v1(hpa)
    assert v1["metadata"]["annotations"] == {"team": "web"}
    hpa["metadata"]["annotations"] = {METRICS_ANNOTATION: "[]"}
    assert "annotations" not in hpa_v2_to_v1(hpa)["metadata"]
    # The input is not mutated.
    assert hpa["metadata"]["annotations"] == {METRICS_ANNOTATION: "[]"}


def base_v1(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "hpa", "namespace": "default"},
        "spec": {"scaleTargetRef": dict(REF), "minReplicas": 1, "maxReplicas": 5, **spec},
        "status": {"currentReplicas": 0, "desiredReplicas": 0},
    }


def test_v1_target_cpu_to_v2() -> None:
    v2 = hpa_v1_to_v2(base_v1(targetCPUUtilizationPercentage=50))
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"] == {
        "scaleTargetRef": REF,
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [resource("cpu", util(50))],
    }
    assert v2["status"] == {"desiredReplicas": 0}


def test_v1_without_target_gets_default_cpu_80() -> None:
    v2 = hpa_v1_to_v2(base_v1())
    assert v2["spec"]["metrics"] == [resource("cpu", util(80))]
    # ... and so a v1 read of it shows the 80% target.
    assert hpa_v2_to_v1(v2)["spec"]["targetCPUUtilizationPercentage"] == 80


def test_v1_current_cpu_to_v2_status() -> None:
    hpa = base_v1(targetCPUUtilizationPercentage=50)
    hpa["status"] = {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentCPUUtilizationPercentage": 70,
    }
    v2 = hpa_v1_to_v2(hpa)
    assert v2["status"] == {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70}}}
        ],
    }


def test_v1_annotations_consumed() -> None:
    hpa = base_v1(targetCPUUtilizationPercentage=50)
    hpa["metadata"]["annotations"] = {
        METRICS_ANNOTATION: '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1000m"}}]',
        CURRENT_METRICS_ANNOTATION: '[{"type":"Pods","pods":{"metricName":"qps","currentAverageValue":"2"}}]',
        CONDITIONS_ANNOTATION: '[{"type":"ScalingActive","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"FailedGetPodsMetric","message":"boom"}]',
        BEHAVIOR_ANNOTATION: '{"ScaleUp":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":null,"Tolerance":null},"ScaleDown":null}',
        "keep": "me",
    }
    hpa["status"] = {
        "currentReplicas": 1,
        "desiredReplicas": 1,
        "currentCPUUtilizationPercentage": 10,
    }
    v2 = hpa_v1_to_v2(hpa)
    assert v2["metadata"]["annotations"] == {"keep": "me"}
    assert v2["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": avg("1")}},
        resource("cpu", util(50)),
    ]
    assert v2["spec"]["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max"}
    }
    # The annotation replaces what currentCPUUtilizationPercentage alone would give.
    assert v2["status"]["currentMetrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "2"}}}
    ]
    assert v2["status"]["conditions"] == [
        {
            "type": "ScalingActive",
            "status": "False",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "FailedGetPodsMetric",
            "message": "boom",
        }
    ]


def test_v1_malformed_annotations_are_ignored() -> None:
    hpa = base_v1()
    hpa["metadata"]["annotations"] = {
        METRICS_ANNOTATION: "{not json",
        CURRENT_METRICS_ANNOTATION: '{"type":"Pods"}',
        CONDITIONS_ANNOTATION: "",
        BEHAVIOR_ANNOTATION: "[]",
    }
    v2 = hpa_v1_to_v2(hpa)
    assert v2["spec"]["metrics"] == [resource("cpu", util(80))]
    assert "behavior" not in v2["spec"]
    assert "annotations" not in v2["metadata"]
    assert v2["status"] == {"desiredReplicas": 0}


def test_v1_empty_behavior_annotation_is_no_behavior() -> None:
    hpa = base_v1(targetCPUUtilizationPercentage=50)
    hpa["metadata"]["annotations"] = {BEHAVIOR_ANNOTATION: "{}"}
    assert "behavior" not in hpa_v1_to_v2(hpa)["spec"]


def test_v1_behavior_annotation_field_names_case_insensitive() -> None:
    hpa = base_v1(targetCPUUtilizationPercentage=50)
    hpa["metadata"]["annotations"] = {
        BEHAVIOR_ANNOTATION: '{"scaleDown":{"stabilizationWindowSeconds":30,"policies":[{"type":"Pods","value":2,"periodSeconds":10}]}}'
    }
    assert hpa_v1_to_v2(hpa)["spec"]["behavior"] == {
        "scaleDown": {
            "stabilizationWindowSeconds": 30,
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 10}],
        }
    }


def test_v1_tolerance_annotations() -> None:
    hpa = base_v1(targetCPUUtilizationPercentage=50)
    hpa["metadata"]["annotations"] = {
        SCALE_DOWN_TOLERANCE_ANNOTATION: "0.05",
        SCALE_UP_TOLERANCE_ANNOTATION: "100m",
    }
    v2 = hpa_v1_to_v2(hpa)
    assert v2["spec"]["behavior"] == {
        "scaleDown": {"tolerance": "50m"},
        "scaleUp": {"tolerance": "100m"},
    }
    hpa["metadata"]["annotations"] = {SCALE_UP_TOLERANCE_ANNOTATION: "nope"}
    with pytest.raises(ValueError, match="nope"):
        hpa_v1_to_v2(hpa)


# ---- defaulting ------------------------------------------------------------------------------
def test_default_v2_min_replicas_and_metrics() -> None:
    raw = base_v2()
    del raw["spec"]["minReplicas"]
    out = default_hpa_v2(raw)
    assert out["spec"]["minReplicas"] == 1
    assert out["spec"]["metrics"] == [resource("cpu", util(80))]
    assert "behavior" not in out["spec"]
    assert "minReplicas" not in raw["spec"]  # input untouched
    kept = default_hpa_v2(base_v2(minReplicas=0, metrics=[resource("memory", util(60))]))
    assert kept["spec"]["minReplicas"] == 0
    assert kept["spec"]["metrics"] == [resource("memory", util(60))]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {},
            {
                "scaleUp": {
                    "stabilizationWindowSeconds": 0,
                    "selectPolicy": "Max",
                    "policies": [
                        {"type": "Pods", "value": 4, "periodSeconds": 15},
                        {"type": "Percent", "value": 100, "periodSeconds": 15},
                    ],
                },
                "scaleDown": {
                    "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
                },
            },
        ),
        (
            {
                "scaleUp": {"stabilizationWindowSeconds": 120},
                "scaleDown": {"selectPolicy": "Disabled"},
            },
            {
                "scaleUp": {
                    "stabilizationWindowSeconds": 120,
                    "selectPolicy": "Max",
                    "policies": [
                        {"type": "Pods", "value": 4, "periodSeconds": 15},
                        {"type": "Percent", "value": 100, "periodSeconds": 15},
                    ],
                },
                "scaleDown": {
                    "selectPolicy": "Disabled",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
                },
            },
        ),
        (
            {
                "scaleDown": {
                    "tolerance": "50m",
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                }
            },
            {
                "scaleUp": {
                    "stabilizationWindowSeconds": 0,
                    "selectPolicy": "Max",
                    "policies": [
                        {"type": "Pods", "value": 4, "periodSeconds": 15},
                        {"type": "Percent", "value": 100, "periodSeconds": 15},
                    ],
                },
                "scaleDown": {
                    "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                    "tolerance": "50m",
                },
            },
        ),
        (
            # A non-nil empty policy list is kept (validation rejects it later).
            {"scaleUp": {"policies": []}},
            {
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": []},
                "scaleDown": {
                    "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
                },
            },
        ),
    ],
)
def test_default_v2_behavior(given: dict[str, Any], expected: dict[str, Any]) -> None:
    out = default_hpa_v2(base_v2(behavior=given))
    assert out["spec"]["behavior"] == expected


def test_default_v1() -> None:
    raw = base_v1()
    del raw["spec"]["minReplicas"]
    assert default_hpa_v1(raw)["spec"]["minReplicas"] == 1
    assert "targetCPUUtilizationPercentage" not in default_hpa_v1(raw)["spec"]


def test_go_json_escapes_like_go() -> None:
    assert go_json({"m": "a<b>&c"}) == '{"m":"a\\u003cb\\u003e\\u0026c"}'
    assert go_json(["é"]) == '["é"]'


def test_normalize_hpa_v2() -> None:
    raw = base_v2(metrics=[resource("cpu", {"type": "AverageValue", "averageValue": "1000m"})])
    raw["metadata"]["annotations"] = {METRICS_ANNOTATION: "[]"}
    out = normalize_hpa_v2(raw)
    assert out["spec"]["metrics"] == [resource("cpu", avg("1"))]
    assert "annotations" not in out["metadata"]


# ---- properties --------------------------------------------------------------------------------
_name = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
_quantity = st.builds(
    lambda n, suffix: f"{n}{suffix}",
    st.integers(min_value=1, max_value=999),
    st.sampled_from(["", "m", "k", "Mi", "Gi", "M"]),
)
_selector = st.one_of(
    st.none(),
    st.builds(
        lambda labels: {"matchLabels": labels},
        st.dictionaries(_name, _name, min_size=1, max_size=2),
    ),
)


@st.composite
def _metric(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["Pods", "Object", "External", "Resource", "ContainerResource"]))
    q = draw(_quantity)
    ident: dict[str, Any] = {"name": draw(_name)}
    sel = draw(_selector)
    if sel is not None:
        ident["selector"] = sel
    if kind == "Pods":
        return {"type": "Pods", "pods": {"metric": ident, "target": avg(q)}}
    if kind == "Object":
        target = draw(st.sampled_from([avg(q), value(q)]))
        return {
            "type": "Object",
            "object": {"describedObject": dict(REF), "target": target, "metric": ident},
        }
    if kind == "External":
        return {
            "type": "External",
            "external": {"metric": ident, "target": draw(st.sampled_from([avg(q), value(q)]))},
        }
    res_name = draw(st.sampled_from(["memory", "cpu", "ephemeral-storage"]))
    target = draw(st.sampled_from([avg(q), util(draw(st.integers(1, 200)))]))
    if kind == "Resource":
        if res_name == "cpu" and "averageUtilization" in target:
            res_name = "memory"  # the cpu Utilization metric is placed last separately
        return resource(res_name, target)
    return container_resource(res_name, target)


@st.composite
def _status_metric(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["Pods", "Object", "External", "Resource", "ContainerResource"]))
    q = draw(_quantity)
    ident = {"name": draw(_name)}
    if kind == "Pods":
        return {"type": "Pods", "pods": {"metric": ident, "current": {"averageValue": q}}}
    cur = draw(st.sampled_from([{"averageValue": q}, {"value": q}]))
    if kind == "Object":
        return {
            "type": "Object",
            "object": {"metric": ident, "current": cur, "describedObject": dict(REF)},
        }
    if kind == "External":
        return {"type": "External", "external": {"metric": ident, "current": cur}}
    current: dict[str, Any] = {"averageValue": q}
    if draw(st.booleans()):
        current["averageUtilization"] = draw(st.integers(0, 300))
    if kind == "Resource":
        return {
            "type": "Resource",
            "resource": {"name": draw(st.sampled_from(["cpu", "memory"])), "current": current},
        }
    return {
        "type": "ContainerResource",
        "containerResource": {"name": "cpu", "current": current, "container": draw(_name)},
    }


_rules = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "stabilizationWindowSeconds": st.integers(0, 3600),
            "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
            "policies": st.lists(
                st.builds(
                    lambda t, v, p: {"type": t, "value": v, "periodSeconds": p},
                    st.sampled_from(["Pods", "Percent"]),
                    st.integers(1, 1000),
                    st.integers(1, 1800),
                ),
                min_size=1,
                max_size=3,
            ),
            "tolerance": st.sampled_from(["50m", "100m", "0", "1"]),
        },
    ),
)


@st.composite
def v2_objects(draw: st.DrawFn) -> dict[str, Any]:
    metrics = draw(st.lists(_metric(), max_size=4))
    if draw(st.booleans()):
        metrics.append(resource("cpu", util(draw(st.integers(1, 100)))))
    spec: dict[str, Any] = {"scaleTargetRef": dict(REF), "maxReplicas": draw(st.integers(1, 100))}
    if draw(st.booleans()):
        spec["minReplicas"] = draw(st.integers(0, 10))
    if metrics:
        spec["metrics"] = metrics
    if draw(st.booleans()):
        spec["behavior"] = {"scaleUp": draw(_rules), "scaleDown": draw(_rules)}
    obj: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": draw(_name), "namespace": "default"},
        "spec": spec,
    }
    if draw(st.booleans()):
        obj["metadata"]["annotations"] = {"owner": draw(_name)}
    status: dict[str, Any] = {"desiredReplicas": draw(st.integers(0, 50))}
    if draw(st.booleans()):
        status["currentReplicas"] = draw(st.integers(1, 50))
    current = draw(st.lists(_status_metric(), max_size=3))
    if current:
        status["currentMetrics"] = current
    if draw(st.booleans()):
        status["conditions"] = [
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "ReadyForNewScale",
                "message": draw(st.text(alphabet="abc <>&é", max_size=10)),
            }
        ]
    obj["status"] = status
    # Raw JSON leaves None values out; behaviors are stored defaulted.
    if "behavior" in spec:
        given_behavior = {k: v for k, v in spec["behavior"].items() if v is not None}
        spec["behavior"] = default_hpa_v2({"spec": {"behavior": given_behavior}})["spec"][
            "behavior"
        ]
    return normalize_hpa_v2(obj)


@settings(max_examples=200)
@given(v2_objects())
def test_v2_v1_v2_identity(obj: dict[str, Any]) -> None:
    back = round_trip(obj)
    if "metrics" not in obj["spec"]:
        # An empty metric list is an 80% cpu target in v1 (API defaulting fills it anyway).
        assert back["spec"].pop("metrics") == [resource("cpu", util(80))]
    assert back == obj


@settings(max_examples=200)
@given(v2_objects())
def test_v1_v2_v1_identity(obj: dict[str, Any]) -> None:
    v1 = json.loads(json.dumps(hpa_v2_to_v1(default_hpa_v2(obj))))
    again = hpa_v2_to_v1(hpa_v1_to_v2(v1))
    assert again == v1


@pytest.mark.parametrize(
    "text",
    [
        '{"ScaleUp":"fast"}',
        '{"ScaleUp":{"StabilizationWindowSeconds":"60"}}',
        '{"ScaleDown":{"Policies":{"Type":"Pods"}}}',
        '{"ScaleDown":{"Policies":[{"Type":"Pods","Value":1.5,"PeriodSeconds":15}]}}',
        '{"ScaleDown":{"Tolerance":"lots"}}',
        '{"ScaleUp":null,"ScaleDown":null}',
        "null",
    ],
)
def test_v1_behavior_annotation_that_does_not_unmarshal_is_ignored(text: str) -> None:
    hpa = base_v1(targetCPUUtilizationPercentage=50)
    hpa["metadata"]["annotations"] = {BEHAVIOR_ANNOTATION: text}
    v2 = hpa_v1_to_v2(hpa)
    assert "behavior" not in v2["spec"]
    assert "annotations" not in v2["metadata"]
