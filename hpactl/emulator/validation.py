"""API validation the emulator applies on writes (a subset of kube-apiserver's).

HorizontalPodAutoscalers get the whole of `pkg/apis/autoscaling/validation`
(`validateHorizontalPodAutoscalerSpec` with its metric, target and behavior rules);
other kinds get object names and the workload rules a user is likely to hit.
Messages are field.Error texts: `spec.maxReplicas: Invalid value: 0: must be greater
than 0`, aggregated as `Kind.group "name" is invalid: [...]`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from typing import Any

from hpactl.emulator import errors, schema
from hpactl.emulator.registry import ResourceType
from hpactl.model.quantity import parse_quantity
from hpactl.model.selectors import selector_from_label_selector

Obj = dict[str, Any]
Cause = tuple[str, str, str]  # field, reason, message

MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
_METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
_SELECT_POLICIES = ["Disabled", "Max", "Min"]
_POLICY_TYPES = ["Percent", "Pods"]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _show(value: Any) -> str:
    """How field.Error prints a bad value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(value.items()))
        return f"map[string]string{{{inner}}}"
    return str(value)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return (path, "FieldValueInvalid", f"Invalid value: {_show(value)}: {detail}")


def required(path: str, detail: str = "") -> Cause:
    return (path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value")


def forbidden(path: str, detail: str) -> Cause:
    return (path, "FieldValueForbidden", f"Forbidden: {detail}")


def not_supported(path: str, value: Any, supported: list[str]) -> Cause:
    quoted = ", ".join(f'"{s}"' for s in supported)
    return (
        path,
        "FieldValueNotSupported",
        f"Unsupported value: {_show(value)}: supported values: {quoted}",
    )


def _path_segment_errors(name: str) -> list[str]:
    """apimachinery path.IsValidPathSegmentName."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _name_causes(rt: ResourceType, meta: Obj) -> list[Cause]:
    name = meta.get("name")
    if not name:
        if meta.get("generateName"):
            return []
        return [required("metadata.name", "name or generateName is required")]
    name = str(name)
    if rt.group == "rbac.authorization.k8s.io":
        return [invalid("metadata.name", name, m) for m in _path_segment_errors(name)]
    if rt.plural == "namespaces" and not rt.group:
        out = []
        if len(name) > 63:
            out.append(invalid("metadata.name", name, "must be no more than 63 characters"))
        if not _DNS1123_LABEL.match(name):
            out.append(invalid("metadata.name", name, _LABEL_MSG))
        return out
    out = []
    if len(name) > 253:
        out.append(invalid("metadata.name", name, "must be no more than 253 characters"))
    if not _DNS1123_SUBDOMAIN.match(name):
        out.append(invalid("metadata.name", name, _SUBDOMAIN_MSG))
    return out


# ---- HorizontalPodAutoscaler (autoscaling/v2 form) --------------------------------------------


def _positive_quantity(v: Any) -> bool:
    try:
        return parse_quantity(v).milli_value() > 0
    except ValueError:
        try:
            return float(str(v).rstrip("mkMGTPEi")) > 0
        except ValueError:
            return False


def _cross_ref(ref: Any, path: str) -> list[Cause]:
    ref = ref if isinstance(ref, dict) else {}
    out: list[Cause] = []
    for f in ("kind", "name"):
        v = ref.get(f)
        if not v:
            out.append(required(f"{path}.{f}"))
        else:
            out += [invalid(f"{path}.{f}", v, m) for m in _path_segment_errors(str(v))]
    return out


def _metric_identifier(mid: Any, path: str) -> list[Cause]:
    name = (mid or {}).get("name") if isinstance(mid, dict) else None
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    return [invalid(f"{path}.name", name, m) for m in _path_segment_errors(str(name))]


def _metric_target(t: Obj, path: str) -> list[Cause]:
    out: list[Cause] = []
    typ = t.get("type") or ""
    if not typ:
        out.append(required(f"{path}.type", "must specify a metric target type"))
    if typ not in ("Utilization", "Value", "AverageValue"):
        out.append(
            invalid(f"{path}.type", typ, "must be either Utilization, Value, or AverageValue")
        )
    if t.get("value") is not None and not _positive_quantity(t["value"]):
        out.append(invalid(f"{path}.value", t["value"], "must be positive"))
    if t.get("averageValue") is not None and not _positive_quantity(t["averageValue"]):
        out.append(invalid(f"{path}.averageValue", t["averageValue"], "must be positive"))
    au = t.get("averageUtilization")
    if au is not None and isinstance(au, int) and au < 1:
        out.append(invalid(f"{path}.averageUtilization", au, "must be greater than 0"))
    return out


def _source(kind: str, src: Obj, path: str) -> list[Cause]:
    t = src.get("target") if isinstance(src.get("target"), dict) else {}
    assert isinstance(t, dict)
    out: list[Cause] = []
    if kind == "object":
        out += _cross_ref(src.get("describedObject"), f"{path}.describedObject")
        out += _metric_identifier(src.get("metric"), f"{path}.metric")
        out += _metric_target(t, f"{path}.target")
        if t.get("value") is None and t.get("averageValue") is None:
            out.append(
                required(
                    f"{path}.target.averageValue", "must set either a target value or averageValue"
                )
            )
    elif kind == "external":
        out += _metric_identifier(src.get("metric"), f"{path}.metric")
        out += _metric_target(t, f"{path}.target")
        if t.get("value") is None and t.get("averageValue") is None:
            out.append(
                required(
                    f"{path}.target.averageValue",
                    "must set either a target value for metric or a per-pod target",
                )
            )
        if t.get("value") is not None and t.get("averageValue") is not None:
            out.append(
                forbidden(
                    f"{path}.target.value",
                    "may not set both a target value for metric and a per-pod target",
                )
            )
    elif kind == "pods":
        out += _metric_identifier(src.get("metric"), f"{path}.metric")
        out += _metric_target(t, f"{path}.target")
        if t.get("averageValue") is None:
            out.append(
                required(
                    f"{path}.target.averageValue", "must specify a positive target averageValue"
                )
            )
    else:  # resource, containerResource
        if not src.get("name"):
            out.append(required(f"{path}.name", "must specify a resource name"))
        if kind == "containerResource":
            container = src.get("container")
            if not container:
                out.append(required(f"{path}.container", "must specify a container"))
            elif not _DNS1123_LABEL.match(str(container)) or len(str(container)) > 63:
                out.append(invalid(f"{path}.container", container, _LABEL_MSG))
        out += _metric_target(t, f"{path}.target")
        if t.get("averageUtilization") is None and t.get("averageValue") is None:
            out.append(
                required(
                    f"{path}.target.averageUtilization",
                    "must set either a target raw value or a target utilization",
                )
            )
        if t.get("averageUtilization") is not None and t.get("averageValue") is not None:
            out.append(
                forbidden(
                    f"{path}.target.averageValue",
                    "may not set both a target raw value and a target utilization",
                )
            )
    return out


_SOURCE_OF_TYPE = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}


def _metric_spec(spec: Obj, path: str) -> list[Cause]:
    out: list[Cause] = []
    typ = spec.get("type") or ""
    if not typ:
        out.append(required(f"{path}.type", "must specify a metric source type"))
    if typ not in _METRIC_TYPES:
        out.append(not_supported(f"{path}.type", typ, _METRIC_TYPES))
    present: list[str] = []
    for field_name in ("object", "external", "pods", "resource", "containerResource"):
        src = spec.get(field_name)
        if src is not None:
            present.append(field_name)
            if len(present) == 1 and isinstance(src, dict):
                out += _source(field_name, src, f"{path}.{field_name}")
    expected = _SOURCE_OF_TYPE.get(typ)
    if expected is not None:
        if spec.get(expected) is None:
            out.append(
                required(
                    f"{path}.{expected}", "must populate information for the given metric source"
                )
            )
    else:
        out.append(not_supported(f"{path}.type", typ, _METRIC_TYPES))
    if len(present) != 1:
        for p in sorted(set(present) - {expected}):
            out.append(forbidden(f"{path}.{p}", "must populate the given metric source only"))
    return out


def _scaling_rules(rules: Any, path: str) -> list[Cause]:
    if not isinstance(rules, dict):
        return []
    out: list[Cause] = []
    win = rules.get("stabilizationWindowSeconds")
    if isinstance(win, int) and win < 0:
        out.append(
            invalid(
                f"{path}.stabilizationWindowSeconds", win, "must be greater than or equal to zero"
            )
        )
    if isinstance(win, int) and win > MAX_STABILIZATION_WINDOW_SECONDS:
        out.append(
            invalid(
                f"{path}.stabilizationWindowSeconds",
                win,
                f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
            )
        )
    sel = rules.get("selectPolicy")
    if sel is not None and sel not in _SELECT_POLICIES:
        out.append(not_supported(f"{path}.selectPolicy", sel, _SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        out.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, pol in enumerate(policies):
        pp = f"{path}.policies[{i}]"
        pol = pol if isinstance(pol, dict) else {}
        if pol.get("type") not in _POLICY_TYPES:
            out.append(not_supported(f"{pp}.type", pol.get("type") or "", _POLICY_TYPES))
        value = pol.get("value") or 0
        if value <= 0:
            out.append(invalid(f"{pp}.value", value, "must be greater than zero"))
        period = pol.get("periodSeconds") or 0
        if period <= 0:
            out.append(invalid(f"{pp}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            out.append(
                invalid(
                    f"{pp}.periodSeconds",
                    period,
                    f"must be less than or equal to {MAX_PERIOD_SECONDS}",
                )
            )
    return out


def hpa_spec_causes(spec: Obj, min_replicas_lower_bound: int = 1) -> list[Cause]:
    """validateHorizontalPodAutoscalerSpec on an autoscaling/v2 spec (after defaulting)."""
    out: list[Cause] = []
    mn = spec.get("minReplicas")
    mx = spec.get("maxReplicas") or 0
    if mn is not None and mn < min_replicas_lower_bound:
        out.append(
            invalid(
                "spec.minReplicas",
                mn,
                f"must be greater than or equal to {min_replicas_lower_bound}",
            )
        )
    if mx < 1:
        out.append(invalid("spec.maxReplicas", mx, "must be greater than 0"))
    if mn is not None and mx < mn:
        out.append(
            invalid("spec.maxReplicas", mx, "must be greater than or equal to `minReplicas`")
        )
    out += _cross_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    metrics = spec.get("metrics") or []
    has_obj_or_ext = False
    for i, m in enumerate(metrics):
        m = m if isinstance(m, dict) else {}
        out += _metric_spec(m, f"spec.metrics[{i}]")
        has_obj_or_ext = has_obj_or_ext or m.get("type") in ("Object", "External")
    if mn == 0 and not has_obj_or_ext:
        out.append(
            forbidden(
                "spec.metrics",
                "must specify at least one Object or External metric to support scaling to zero replicas",
            )
        )
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        out += _scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
        out += _scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return out


# ---- workloads ----------------------------------------------------------------------------


def _selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    try:
        return bool(selector_from_label_selector(selector).matches(labels))
    except ValueError:
        ml = (selector or {}).get("matchLabels") or {}
        return all(labels.get(k) == v for k, v in ml.items())


def _workload_causes(rt: ResourceType, obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    out: list[Cause] = []
    r = spec.get("replicas")
    if isinstance(r, int) and r < 0:
        out.append(invalid("spec.replicas", r, "must be greater than or equal to 0"))
    sel = spec.get("selector")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if rt.kind == "ReplicationController":
        if isinstance(sel, dict) and sel and not all(labels.get(k) == v for k, v in sel.items()):
            out.append(
                invalid(
                    "spec.template.metadata.labels",
                    labels,
                    "`selector` does not match template `labels`",
                )
            )
        return out
    if not sel:
        out.append(required("spec.selector"))
        return out
    if not (sel.get("matchLabels") or sel.get("matchExpressions")):
        what = "daemonset" if rt.kind == "DaemonSet" else "deployment"
        out.append(invalid("spec.selector", sel, f"empty selector is invalid for {what}"))
    elif not _selector_matches(sel, labels):
        out.append(
            invalid(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    return out


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (int, float)):
        return f"number {v}"
    if isinstance(v, dict):
        return "object"
    return "array" if isinstance(v, list) else "null"


def _check_ints(rt: ResourceType, obj: Obj, fields: list[tuple[str, str, tuple[str, ...]]]) -> None:
    """400 for a non-integer where Go decodes an int32, as the JSON decoder words it."""

    def walk(
        cur: Any, rest: tuple[str, ...], struct: str, go_type: str, path: tuple[str, ...]
    ) -> None:
        if isinstance(cur, list):
            for item in cur:
                walk(item, rest, struct, go_type, path)
            return
        if not rest:
            if cur is not None and (isinstance(cur, bool) or not isinstance(cur, int)):
                raise errors.bad_request(
                    f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f"json: cannot unmarshal {_json_type(cur)} into Go struct field "
                    f"{struct}.{'.'.join(path)} of type {go_type}"
                )
            return
        if isinstance(cur, dict):
            walk(cur.get(rest[0]), rest[1:], struct, go_type, path)

    for struct, go_type, path in fields:
        walk(obj, path, struct, go_type, path)


_HPA_INTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("HorizontalPodAutoscalerSpec", "int32", ("spec", "minReplicas")),
    ("HorizontalPodAutoscalerSpec", "int32", ("spec", "maxReplicas")),
    ("HPAScalingRules", "int32", ("spec", "behavior", "scaleUp", "stabilizationWindowSeconds")),
    ("HPAScalingRules", "int32", ("spec", "behavior", "scaleDown", "stabilizationWindowSeconds")),
    ("HPAScalingPolicy", "int32", ("spec", "behavior", "scaleUp", "policies", "value")),
    ("HPAScalingPolicy", "int32", ("spec", "behavior", "scaleUp", "policies", "periodSeconds")),
    ("HPAScalingPolicy", "int32", ("spec", "behavior", "scaleDown", "policies", "value")),
    ("HPAScalingPolicy", "int32", ("spec", "behavior", "scaleDown", "policies", "periodSeconds")),
    ("MetricTarget", "int32", ("spec", "metrics", "resource", "target", "averageUtilization")),
    (
        "MetricTarget",
        "int32",
        ("spec", "metrics", "containerResource", "target", "averageUtilization"),
    ),
]


#: core.MaxSecretSize: the most a ConfigMap's (or Secret's) values may hold together.
MAX_CONFIGMAP_BYTES = 1024 * 1024
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def _configmap_causes(obj: Obj) -> list[Cause]:
    """``ValidateConfigMap``'s size rule: the values of ``data`` (UTF-8 bytes) and of
    ``binaryData`` (decoded bytes, not base64) together at most 1 MiB; the cause's field
    is the empty path, printed ``[]``. A ``binaryData`` value that is not base64 never
    reaches validation: decoding the request fails (400)."""
    total = 0
    for value in (obj.get("data") or {}).values():
        if isinstance(value, str):
            total += len(value.encode("utf-8"))
    for value in (obj.get("binaryData") or {}).values():
        text = str(value)
        try:
            total += len(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            at = next((i for i, c in enumerate(text) if c not in _BASE64), len(text))
            raise errors.bad_request(
                'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                f"illegal base64 data at input byte {at}"
            ) from None
    if total > MAX_CONFIGMAP_BYTES:
        return [
            (
                "[]",
                "FieldValueTooLong",
                f"Too long: may not be more than {MAX_CONFIGMAP_BYTES} bytes",
            )
        ]
    return []


def validate_stored(rt: ResourceType, obj: Obj) -> None:
    """Validate an object in storage version after defaulting; raises 422 Invalid
    (400 for values of the wrong JSON type)."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        _check_ints(rt, obj, _HPA_INTS)
    elif rt.scale is not None and not rt.custom:
        _check_ints(rt, obj, [(f"{rt.kind}Spec", "int32", ("spec", "replicas"))])
    causes = _name_causes(rt, meta) if not rt.external else []
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        causes += hpa_spec_causes(obj.get("spec") or {})
    elif (
        rt.group == "apps"
        and rt.plural in ("deployments", "replicasets", "statefulsets", "daemonsets")
    ) or (rt.plural == "replicationcontrollers" and not rt.group):
        causes += _workload_causes(rt, obj)
    elif rt.plural == "configmaps" and not rt.group:
        causes += _configmap_causes(obj)
    elif rt.plural == "customresourcedefinitions" and rt.group == "apiextensions.k8s.io":
        causes += schema.crd_rule_causes(obj)
    if causes:
        raise errors.invalid(rt.kind, rt.group, str(meta.get("name") or ""), causes)


def validate_custom(rt: ResourceType, obj: Obj, old: Obj | None = None) -> None:
    """A custom resource (storage version, defaulted) against its CRD's structural
    schema and CEL rules, `old` the stored object on updates (transition rules):
    pruned in place, then 422 Invalid with every error as the API server lists them."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    causes = _name_causes(rt, meta)
    if isinstance(rt.schema, dict):
        schema.prune(obj, rt.schema)
        causes += schema.validate(obj, rt.schema, old)
    if causes:
        raise errors.invalid(rt.kind, rt.group, str(meta.get("name") or ""), causes)


def validate(rt: ResourceType, obj: Obj) -> None:
    """Validate an object of served version `rt` as the API server would on create."""
    from hpactl.emulator.convert import default_object, to_storage

    stored = to_storage(rt, copy.deepcopy(obj))
    storage_rt = rt
    if rt.version != rt.stored_version:
        from dataclasses import replace

        storage_rt = replace(rt, version=rt.stored_version)
    default_object(storage_rt, stored)
    validate_stored(storage_rt, stored)


# ---- unknown fields (fieldValidation) ----------------------------------------------------
#
# Field names of the HPA types, nested: a dict is an object's known fields, a list
# `[schema]` a list of such objects, None a leaf or a free-form map.

_LABEL_SELECTOR: Any = {
    "matchLabels": None,
    "matchExpressions": [{"key": None, "operator": None, "values": None}],
}
_OBJECT_META: Any = {
    "name": None,
    "generateName": None,
    "namespace": None,
    "selfLink": None,
    "uid": None,
    "resourceVersion": None,
    "generation": None,
    "creationTimestamp": None,
    "deletionTimestamp": None,
    "deletionGracePeriodSeconds": None,
    "labels": None,
    "annotations": None,
    "ownerReferences": [
        {
            "apiVersion": None,
            "kind": None,
            "name": None,
            "uid": None,
            "controller": None,
            "blockOwnerDeletion": None,
        }
    ],
    "finalizers": None,
    "managedFields": None,
}
_CROSS_REF: Any = {"apiVersion": None, "kind": None, "name": None}
_IDENTIFIER: Any = {"name": None, "selector": _LABEL_SELECTOR}
_TARGET: Any = {"type": None, "value": None, "averageValue": None, "averageUtilization": None}
_CURRENT: Any = {"value": None, "averageValue": None, "averageUtilization": None}
_RULES: Any = {
    "stabilizationWindowSeconds": None,
    "selectPolicy": None,
    "policies": [{"type": None, "value": None, "periodSeconds": None}],
    "tolerance": None,
}
_CONDITION: Any = {
    "type": None,
    "status": None,
    "lastTransitionTime": None,
    "reason": None,
    "message": None,
}
HPA_V2_SCHEMA: Any = {
    "apiVersion": None,
    "kind": None,
    "metadata": _OBJECT_META,
    "spec": {
        "scaleTargetRef": _CROSS_REF,
        "minReplicas": None,
        "maxReplicas": None,
        "metrics": [
            {
                "type": None,
                "object": {"describedObject": _CROSS_REF, "target": _TARGET, "metric": _IDENTIFIER},
                "pods": {"metric": _IDENTIFIER, "target": _TARGET},
                "resource": {"name": None, "target": _TARGET},
                "containerResource": {"name": None, "target": _TARGET, "container": None},
                "external": {"metric": _IDENTIFIER, "target": _TARGET},
            }
        ],
        "behavior": {"scaleUp": _RULES, "scaleDown": _RULES},
    },
    "status": {
        "observedGeneration": None,
        "lastScaleTime": None,
        "currentReplicas": None,
        "desiredReplicas": None,
        "currentMetrics": [
            {
                "type": None,
                "object": {
                    "metric": _IDENTIFIER,
                    "current": _CURRENT,
                    "describedObject": _CROSS_REF,
                },
                "pods": {"metric": _IDENTIFIER, "current": _CURRENT},
                "resource": {"name": None, "current": _CURRENT},
                "containerResource": {"name": None, "current": _CURRENT, "container": None},
                "external": {"metric": _IDENTIFIER, "current": _CURRENT},
            }
        ],
        "conditions": [_CONDITION],
    },
}
HPA_V1_SCHEMA: Any = {
    "apiVersion": None,
    "kind": None,
    "metadata": _OBJECT_META,
    "spec": {
        "scaleTargetRef": _CROSS_REF,
        "minReplicas": None,
        "maxReplicas": None,
        "targetCPUUtilizationPercentage": None,
    },
    "status": {
        "observedGeneration": None,
        "lastScaleTime": None,
        "currentReplicas": None,
        "desiredReplicas": None,
        "currentCPUUtilizationPercentage": None,
    },
}


def _schema_for(rt: ResourceType) -> Any:
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        return HPA_V2_SCHEMA if rt.version == "v2" else HPA_V1_SCHEMA
    return None


def _prune(obj: Any, schema: Any, path: str, found: list[str]) -> None:
    if isinstance(schema, list) and isinstance(obj, list):
        for i, item in enumerate(obj):
            _prune(item, schema[0], f"{path}[{i}]", found)
        return
    if not isinstance(schema, dict) or not isinstance(obj, dict):
        return
    for key in list(obj):
        sub = f"{path}.{key}" if path else key
        if key not in schema:
            found.append(sub)
            del obj[key]
        else:
            _prune(obj[key], schema[key], sub, found)


def drop_unknown_fields(rt: ResourceType, obj: Obj) -> list[str]:
    """Remove fields the Go type does not have (as decoding does); return their paths.
    Only kinds with a schema here (HorizontalPodAutoscalers) and custom resources
    (their CRD's structural schema) are checked."""
    if rt.custom:
        return schema.prune(obj, rt.schema) if isinstance(rt.schema, dict) else []
    known = _schema_for(rt)
    if known is None:
        return []
    found: list[str] = []
    _prune(obj, known, "", found)
    return found
