"""Pure parts of the emulator: patches, field selectors, printers, protobuf decoding."""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.emulator import errors
from hpactl.emulator.filters import parse_field_selector
from hpactl.emulator.patch import json_patch, merge_patch, strategic_merge_patch
from hpactl.emulator.protobuf import decode
from hpactl.emulator.registry import builtin_registry
from hpactl.emulator.tables import format_hpa_metrics, human_duration

REG = builtin_registry()


# ---- strategic merge patch ---------------------------------------------------------------


def test_smp_set_element_order_and_retain_keys() -> None:
    doc = {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}}
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "3"}],
        }
    }
    out = strategic_merge_patch(doc, patch)
    assert out["spec"]["containers"] == [{"name": "b", "image": "2"}, {"name": "a", "image": "3"}]
    strategy = {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}
    out = strategic_merge_patch(
        strategy, {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}
    )
    assert out == {"strategy": {"type": "Recreate"}}
    assert doc["spec"]["containers"][0]["image"] == "1"  # input untouched


def test_smp_primitive_lists_and_directives() -> None:
    doc = {"metadata": {"finalizers": ["a", "b"]}, "spec": {"args": ["x", "y"]}}
    out = strategic_merge_patch(doc, {"metadata": {"finalizers": ["c"]}, "spec": {"args": ["z"]}})
    assert out["metadata"]["finalizers"] == ["a", "b", "c"]  # patchStrategy merge
    assert out["spec"]["args"] == ["z"]  # no strategy: replaced
    out = strategic_merge_patch(doc, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]
    out = strategic_merge_patch(doc, {"spec": {"$patch": "replace", "other": 1}})
    assert out["spec"] == {"other": 1}
    out = strategic_merge_patch(doc, {"spec": None})
    assert "spec" not in out
    conds = {
        "status": {
            "conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}]
        }
    }
    out = strategic_merge_patch(
        conds,
        {
            "status": {
                "conditions": [{"type": "B", "status": "True"}, {"type": "C", "status": "True"}]
            }
        },
    )
    assert out["status"]["conditions"] == [
        {"type": "A", "status": "True"},
        {"type": "B", "status": "True"},
        {"type": "C", "status": "True"},
    ]
    ports = {"ports": [{"containerPort": 80, "name": "http"}]}
    out = strategic_merge_patch(ports, {"ports": [{"containerPort": 80, "protocol": "TCP"}]})
    assert out["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]


def test_merge_patch_rfc7386_examples() -> None:
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": ["b"]}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch([1, 2], {"a": "b", "c": None}) == {"a": "b"}


def test_json_patch_operations() -> None:
    doc: dict[str, Any] = {"a": {"b": [1, 2]}, "c~/d": 1}
    out = json_patch(
        doc,
        [
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "add", "path": "/a/b/0", "value": 0},
            {"op": "remove", "path": "/c~0~1d"},
            {"op": "copy", "from": "/a/b", "path": "/x"},
            {"op": "move", "from": "/x", "path": "/y"},
            {"op": "replace", "path": "/a/b/1", "value": 10},
            {"op": "test", "path": "/y/3", "value": 3},
        ],
    )
    assert out == {"a": {"b": [0, 10, 2, 3]}, "y": [0, 1, 2, 3]}
    for bad in (
        [{"op": "remove", "path": "/nope"}],
        [{"op": "replace", "path": "/a/b/9", "value": 1}],
        [{"op": "test", "path": "/a", "value": 1}],
        [{"op": "add", "path": "a", "value": 1}],
    ):
        with pytest.raises(errors.ApiError) as ei:
            json_patch(doc, bad)
        assert ei.value.code == 422
    with pytest.raises(errors.ApiError) as ei:
        json_patch(doc, [{"op": "frobnicate", "path": "/a"}])
    assert ei.value.code == 400


# ---- field selectors ------------------------------------------------------------------------


def test_field_selector_parsing_and_escapes() -> None:
    events = REG.get("", "v1", "events")
    assert events is not None
    sel = parse_field_selector(r"involvedObject.name=a\,b,type!=Warning", events)
    assert sel is not None
    assert sel.matches({"involvedObject": {"name": "a,b"}, "type": "Normal"})
    assert not sel.matches({"involvedObject": {"name": "a,b"}, "type": "Warning"})
    assert parse_field_selector("", events) is None
    pods = REG.get("", "v1", "pods")
    assert pods is not None
    sel = parse_field_selector("status.phase==Running,spec.nodeName=", pods)
    assert sel is not None and sel.matches({"status": {"phase": "Running"}, "spec": {}})
    with pytest.raises(errors.ApiError) as ei:
        parse_field_selector("involvedObject.name=x", pods)
    assert ei.value.message == "field label not supported: involvedObject.name"


# ---- printers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        (-2, "<invalid>"),
        (-1, "0s"),
        (1, "1s"),
        (70, "70s"),
        (190, "3m10s"),
        (180, "3m"),
        (70 * 60, "70m"),
        (3 * 3600 + 60, "3h1m"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d1h"),
        ((8 * 24 + 2) * 3600, "8d"),
        (367 * 24 * 3600, "367d"),
        ((365 * 2 * 24 + 25) * 3600, "2y1d"),
        ((365 * 8 * 24 + 2) * 3600, "8y"),
    ],
)
def test_human_duration(seconds: int, want: str) -> None:
    assert human_duration(seconds) == want


def test_hpa_targets_column() -> None:
    cpu = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
    mem = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
    }
    pods = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "qps"},
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    obj = {
        "type": "Object",
        "object": {"metric": {"name": "rps"}, "target": {"type": "Value", "value": "2k"}},
    }
    ext = {
        "type": "External",
        "external": {
            "metric": {"name": "q"},
            "target": {"type": "AverageValue", "averageValue": "30"},
        },
    }
    assert format_hpa_metrics([], []) == "<none>"
    assert format_hpa_metrics([cpu], []) == "cpu: <unknown>/80%"
    cur = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "current": {"averageUtilization": 55, "averageValue": "110m"},
            },
        }
    ]
    assert format_hpa_metrics([cpu], cur) == "cpu: 55%/80%"
    assert format_hpa_metrics([mem, pods], []) == "memory: <unknown>/1Gi, <unknown>/10"
    assert format_hpa_metrics([obj, ext, cpu], []) == "<unknown>/2k, <unknown>/30 (avg) + 1 more..."


# ---- protobuf ---------------------------------------------------------------------------------


def _field(num: int, payload: bytes) -> bytes:
    return bytes([num << 3 | 2, len(payload)]) + payload


def _varint_field(num: int, value: int) -> bytes:
    return bytes([num << 3 | 0, value])


def test_protobuf_hpa_v1_body() -> None:
    meta = _field(1, b"web")
    ref = _field(1, b"Deployment") + _field(2, b"web") + _field(3, b"apps/v1")
    spec = _field(1, ref) + _varint_field(2, 2) + _varint_field(3, 6) + _varint_field(4, 70)
    raw = _field(1, meta) + _field(2, spec)
    type_meta = _field(1, b"autoscaling/v1") + _field(2, b"HorizontalPodAutoscaler")
    body = b"k8s\x00" + _field(1, type_meta) + _field(2, raw)
    assert decode(body) == {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 2,
            "maxReplicas": 6,
            "targetCPUUtilizationPercentage": 70,
        },
    }
    with pytest.raises(errors.ApiError) as ei:
        decode(b"k8s\x00" + _field(1, type_meta) + _field(2, _field(1, meta) + _varint_field(9, 1)))
    assert ei.value.code == 415
    with pytest.raises(errors.ApiError):
        decode(b"nope")


# ---- validation ---------------------------------------------------------------------------------


def _hpa(spec: dict[str, Any], name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": spec,
    }


REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"scaleTargetRef": REF, "maxReplicas": 0},
            'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.maxReplicas: Invalid value: 0: '
            "must be greater than 0, spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`]",
            id="max-zero-with-defaulted-min",
        ),
        pytest.param(
            {"scaleTargetRef": REF, "minReplicas": 0, "maxReplicas": 3},
            'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.minReplicas: Invalid value: 0: must be greater '
            "than or equal to 1, spec.metrics: Forbidden: must specify at least one Object or External metric to "
            "support scaling to zero replicas]",
            id="scale-to-zero-gate-off",
        ),
        pytest.param(
            {"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}, "maxReplicas": 3},
            """HorizontalPodAutoscaler.autoscaling "web" is invalid: spec.scaleTargetRef.name: Invalid value: "a/b": may not contain '/'""",
            id="ref-name-path-segment",
        ),
        pytest.param(
            {
                "scaleTargetRef": REF,
                "maxReplicas": 3,
                "metrics": [{"type": "Pods", "resource": {"name": "cpu"}}],
            },
            'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.metrics[0].resource.target.type: Required value: '
            'must specify a metric target type, spec.metrics[0].resource.target.type: Invalid value: "": must be either '
            "Utilization, Value, or AverageValue, spec.metrics[0].resource.target.averageUtilization: Required value: must set "
            "either a target raw value or a target utilization, spec.metrics[0].pods: Required value: must populate "
            "information for the given metric source]",
            id="metric-source-mismatch",
        ),
        pytest.param(
            {
                "scaleTargetRef": REF,
                "maxReplicas": 3,
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": 4000,
                        "selectPolicy": "Sometimes",
                        "policies": [{"type": "Pods", "value": 0, "periodSeconds": 2000}],
                    }
                },
            },
            'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.behavior.scaleDown.stabilizationWindowSeconds: '
            "Invalid value: 4000: must be less than or equal to 3600, spec.behavior.scaleDown.selectPolicy: Unsupported "
            'value: "Sometimes": supported values: "Disabled", "Max", "Min", spec.behavior.scaleDown.policies[0].value: '
            "Invalid value: 0: must be greater than zero, spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: "
            "2000: must be less than or equal to 1800]",
            id="behavior-rules",
        ),
    ],
)
def test_hpa_validation_messages(spec: dict[str, Any], message: str) -> None:
    from hpactl.emulator.validation import validate

    rt = REG.get("autoscaling", "v2", "horizontalpodautoscalers")
    assert rt is not None
    with pytest.raises(errors.ApiError) as ei:
        validate(rt, _hpa(spec))
    assert ei.value.code == 422 and ei.value.reason == "Invalid"
    assert ei.value.message == message


def test_names_and_workload_selectors_are_validated() -> None:
    from hpactl.emulator.validation import validate

    deploy = REG.get("apps", "v1", "deployments")
    ns = REG.get("", "v1", "namespaces")
    role = REG.get("rbac.authorization.k8s.io", "v1", "clusterroles")
    assert deploy is not None and ns is not None and role is not None
    with pytest.raises(errors.ApiError) as ei:
        validate(ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})
    assert ei.value.message.startswith(
        'Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label'
    )
    validate(
        role,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:hpa"},
        },
    )
    d = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "other"}}, "spec": {"containers": []}},
        },
    }
    with pytest.raises(errors.ApiError) as ei:
        validate(deploy, d)
    assert ei.value.message == (
        'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"other"}: `selector` does not match template `labels`'
    )
