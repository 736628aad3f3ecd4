"""autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscaler conversion and API defaulting,
on raw JSON objects, the way kube-apiserver does it.

Sources: ``pkg/apis/autoscaling/v1/conversion.go`` (v1 <-> internal), ``pkg/apis/autoscaling/
annotations.go`` (round-trip annotation names), ``pkg/apis/autoscaling/v1/defaults.go`` and
``pkg/apis/autoscaling/v2/defaults.go``. v2 <-> internal is field for field, so "internal" below
means the v2 shape.

What v1 cannot hold travels in annotations of the v1 object:

* ``autoscaling.alpha.kubernetes.io/metrics`` — every metric except the cpu ``Resource`` metric
  with a Utilization target, as JSON of the *autoscaling/v1* ``MetricSpec`` list (the old
  ``targetAverageValue``/``metricName`` shapes);
* ``.../current-metrics`` — all of ``status.currentMetrics`` as v1 ``MetricStatus`` JSON;
* ``.../conditions`` — ``status.conditions`` as v1 condition JSON;
* ``.../behavior`` — ``spec.behavior`` as JSON of the *internal* Go struct, i.e. with Go field
  names (``{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[...],
  "Tolerance":null},"ScaleDown":...}``), unset pointers written as ``null``.

Reading v1 consumes and removes them (a malformed one is ignored, as upstream does), and
writing v1 first drops any stale ones. ``.../scale-down-tolerance`` and ``.../scale-up-tolerance``
belong to the v2beta2 round trip; they are dropped like the others and, if found on a v1 object,
honoured the way the v2beta2 conversion honours them.

Known, upstream-faithful asymmetries (see ``TestCPUMetricHoistedToEnd_RoundTrip_V2V1``): the
cpu Utilization metric comes back *last* in ``spec.metrics``; a v1 object without any cpu target
and without other metrics gets the 80% cpu metric; a ``Resource`` metric status without
``averageValue`` comes back with ``averageValue: "0"`` (v1 holds it in a non-pointer field).
Quantities are re-encoded as Go re-encodes them (``resource.Quantity.String()``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from hpactl.model.quantity import parse_quantity

__all__ = [
    "BEHAVIOR_ANNOTATION",
    "CONDITIONS_ANNOTATION",
    "CURRENT_METRICS_ANNOTATION",
    "DEFAULT_CPU_UTILIZATION",
    "METRICS_ANNOTATION",
    "ROUND_TRIP_ANNOTATIONS",
    "SCALE_DOWN_TOLERANCE_ANNOTATION",
    "SCALE_UP_TOLERANCE_ANNOTATION",
    "default_hpa_v1",
    "default_hpa_v2",
    "default_scale_down_rules",
    "default_scale_up_rules",
    "go_json",
    "hpa_v1_to_v2",
    "hpa_v2_to_v1",
    "normalize_hpa_v2",
]

METRICS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/behavior"
SCALE_DOWN_TOLERANCE_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
SCALE_UP_TOLERANCE_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
ROUND_TRIP_ANNOTATIONS: Final = (
    METRICS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
    SCALE_DOWN_TOLERANCE_ANNOTATION,
    SCALE_UP_TOLERANCE_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
)
DEFAULT_CPU_UTILIZATION: Final = 80

Obj = dict[str, Any]


# ---- small helpers ---------------------------------------------------------------------------
def go_json(value: Any) -> str:
    """Go ``json.Marshal`` text of an already Go-shaped value (field order = dict order).

    Go escapes ``<``, ``>``, ``&``, U+2028 and U+2029; Python would not.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _q(value: Any) -> str | None:
    """A quantity as Go decodes and re-encodes it; None stays None."""
    if value is None:
        return None
    return str(parse_quantity(value))


def _q0(value: Any) -> str:
    """A non-pointer Go Quantity field: absent means zero, printed "0"."""
    return _q(value) or "0"


def _put(out: Obj, key: str, value: Any) -> None:
    """Set ``key`` unless ``value`` is None (Go's omitempty for pointers)."""
    if value is not None:
        out[key] = value


def _selector(sel: Any) -> Any:
    """A LabelSelector in Go's marshalled shape (empty parts omitted)."""
    if sel is None:
        return None
    out: Obj = {}
    labels = sel.get("matchLabels")
    if labels:
        out["matchLabels"] = {k: labels[k] for k in sorted(labels)}
    exprs = sel.get("matchExpressions")
    if exprs:
        conv = []
        for e in exprs:
            item: Obj = {"key": e.get("key", ""), "operator": e.get("operator", "")}
            if e.get("values"):
                item["values"] = list(e["values"])
            conv.append(item)
        out["matchExpressions"] = conv
    return out


def _xref(ref: Mapping[str, Any] | None) -> Obj:
    ref = ref or {}
    out: Obj = {"kind": ref.get("kind", ""), "name": ref.get("name", "")}
    if ref.get("apiVersion"):
        out["apiVersion"] = ref["apiVersion"]
    return out


def _get_ci(obj: Mapping[str, Any], name: str) -> Any:
    """Go's json.Unmarshal matches field names case-insensitively."""
    if name in obj:
        return obj[name]
    lowered = name.lower()
    for k, v in obj.items():
        if k.lower() == lowered:
            return v
    return None


def _metric_id(name: Any, selector: Any) -> Obj:
    out: Obj = {"name": name or ""}
    _put(out, "selector", _selector(selector))
    return out


def _metric_id_v2(i: Mapping[str, Any] | None) -> Obj:
    i = i or {}
    return _metric_id(i.get("name"), i.get("selector"))


# ---- metric specs ----------------------------------------------------------------------------
def _is_cpu_utilization(m: Mapping[str, Any]) -> bool:
    res = m.get("resource")
    return (
        m.get("type") == "Resource"
        and res is not None
        and res.get("name") == "cpu"
        and (res.get("target") or {}).get("averageUtilization") is not None
    )


def _resource_target_v2_to_v1(r: Mapping[str, Any]) -> Obj:
    target = r.get("target") or {}
    res: Obj = {"name": r.get("name", "")}
    _put(res, "targetAverageUtilization", target.get("averageUtilization"))
    _put(res, "targetAverageValue", _q(target.get("averageValue")))
    return res


def _spec_v2_to_v1(m: Mapping[str, Any]) -> Obj:
    out: Obj = {"type": m.get("type", "")}
    if (o := m.get("object")) is not None:
        target = o.get("target") or {}
        metric = o.get("metric") or {}
        obj: Obj = {
            "target": _xref(o.get("describedObject")),
            "metricName": metric.get("name", ""),
            "targetValue": _q0(target.get("value")),
        }
        _put(obj, "selector", _selector(metric.get("selector")))
        _put(obj, "averageValue", _q(target.get("averageValue")))
        out["object"] = obj
    if (p := m.get("pods")) is not None:
        target = p.get("target") or {}
        metric = p.get("metric") or {}
        pods: Obj = {
            "metricName": metric.get("name", ""),
            "targetAverageValue": _q0(target.get("averageValue")),
        }
        _put(pods, "selector", _selector(metric.get("selector")))
        out["pods"] = pods
    if (r := m.get("resource")) is not None:
        out["resource"] = _resource_target_v2_to_v1(r)
    if (c := m.get("containerResource")) is not None:
        out["containerResource"] = {
            **_resource_target_v2_to_v1(c),
            "container": c.get("container", ""),
        }
    if (e := m.get("external")) is not None:
        target = e.get("target") or {}
        metric = e.get("metric") or {}
        ext: Obj = {"metricName": metric.get("name", "")}
        _put(ext, "metricSelector", _selector(metric.get("selector")))
        _put(ext, "targetValue", _q(target.get("value")))
        _put(ext, "targetAverageValue", _q(target.get("averageValue")))
        out["external"] = ext
    return out


def _resource_target_v1_to_v2(r: Mapping[str, Any]) -> Obj:
    util = r.get("targetAverageUtilization")
    target: Obj = {"type": "AverageValue" if util is None else "Utilization"}
    _put(target, "averageValue", _q(r.get("targetAverageValue")))
    _put(target, "averageUtilization", util)
    return target


def _spec_v1_to_v2(m: Mapping[str, Any]) -> Obj:
    out: Obj = {"type": m.get("type", "")}
    if (o := m.get("object")) is not None:
        avg = _q(o.get("averageValue"))
        target: Obj
        if avg is None:
            target = {"type": "Value", "value": _q0(o.get("targetValue"))}
        else:
            target = {"type": "AverageValue", "averageValue": avg}
        out["object"] = {
            "describedObject": _xref(o.get("target")),
            "target": target,
            "metric": _metric_id(o.get("metricName"), o.get("selector")),
        }
    if (p := m.get("pods")) is not None:
        out["pods"] = {
            "metric": _metric_id(p.get("metricName"), p.get("selector")),
            "target": {"type": "AverageValue", "averageValue": _q0(p.get("targetAverageValue"))},
        }
    if (r := m.get("resource")) is not None:
        out["resource"] = {"name": r.get("name", ""), "target": _resource_target_v1_to_v2(r)}
    if (c := m.get("containerResource")) is not None:
        out["containerResource"] = {
            "name": c.get("name", ""),
            "target": _resource_target_v1_to_v2(c),
            "container": c.get("container", ""),
        }
    if (e := m.get("external")) is not None:
        value = _q(e.get("targetValue"))
        ext_target: Obj = {"type": "AverageValue" if value is None else "Value"}
        _put(ext_target, "value", value)
        _put(ext_target, "averageValue", _q(e.get("targetAverageValue")))
        out["external"] = {
            "metric": _metric_id(e.get("metricName"), e.get("metricSelector")),
            "target": ext_target,
        }
    return out


def _spec_v2_normalized(m: Mapping[str, Any]) -> Obj:
    """A v2 metric spec as Go would re-encode it (quantities, selectors, field order)."""
    out: Obj = {"type": m.get("type", "")}

    def target(t: Mapping[str, Any] | None) -> Obj:
        t = t or {}
        res: Obj = {"type": t.get("type", "")}
        _put(res, "value", _q(t.get("value")))
        _put(res, "averageValue", _q(t.get("averageValue")))
        _put(res, "averageUtilization", t.get("averageUtilization"))
        return res

    if (o := m.get("object")) is not None:
        out["object"] = {
            "describedObject": _xref(o.get("describedObject")),
            "target": target(o.get("target")),
            "metric": _metric_id_v2(o.get("metric")),
        }
    if (p := m.get("pods")) is not None:
        out["pods"] = {"metric": _metric_id_v2(p.get("metric")), "target": target(p.get("target"))}
    if (r := m.get("resource")) is not None:
        out["resource"] = {"name": r.get("name", ""), "target": target(r.get("target"))}
    if (c := m.get("containerResource")) is not None:
        out["containerResource"] = {
            "name": c.get("name", ""),
            "target": target(c.get("target")),
            "container": c.get("container", ""),
        }
    if (e := m.get("external")) is not None:
        out["external"] = {
            "metric": _metric_id_v2(e.get("metric")),
            "target": target(e.get("target")),
        }
    return out


# ---- metric statuses -------------------------------------------------------------------------
def _resource_current_v2_to_v1(r: Mapping[str, Any]) -> Obj:
    cur = r.get("current") or {}
    res: Obj = {"name": r.get("name", "")}
    _put(res, "currentAverageUtilization", cur.get("averageUtilization"))
    res["currentAverageValue"] = _q0(cur.get("averageValue"))
    return res


def _status_v2_to_v1(m: Mapping[str, Any]) -> Obj:
    out: Obj = {"type": m.get("type", "")}
    if (o := m.get("object")) is not None:
        cur = o.get("current") or {}
        metric = o.get("metric") or {}
        obj: Obj = {
            "target": _xref(o.get("describedObject")),
            "metricName": metric.get("name", ""),
            "currentValue": _q0(cur.get("value")),
        }
        _put(obj, "selector", _selector(metric.get("selector")))
        _put(obj, "averageValue", _q(cur.get("averageValue")))
        out["object"] = obj
    if (p := m.get("pods")) is not None:
        cur = p.get("current") or {}
        metric = p.get("metric") or {}
        pods: Obj = {
            "metricName": metric.get("name", ""),
            "currentAverageValue": _q0(cur.get("averageValue")),
        }
        _put(pods, "selector", _selector(metric.get("selector")))
        out["pods"] = pods
    if (r := m.get("resource")) is not None:
        out["resource"] = _resource_current_v2_to_v1(r)
    if (c := m.get("containerResource")) is not None:
        out["containerResource"] = {
            **_resource_current_v2_to_v1(c),
            "container": c.get("container", ""),
        }
    if (e := m.get("external")) is not None:
        cur = e.get("current") or {}
        metric = e.get("metric") or {}
        ext: Obj = {"metricName": metric.get("name", "")}
        _put(ext, "metricSelector", _selector(metric.get("selector")))
        ext["currentValue"] = _q0(cur.get("value"))
        _put(ext, "currentAverageValue", _q(cur.get("averageValue")))
        out["external"] = ext
    return out


def _value_or_average(value: Any, average: Any) -> Obj:
    avg = _q(average)
    return {"averageValue": avg} if avg is not None else {"value": _q0(value)}


def _resource_current_v1_to_v2(r: Mapping[str, Any]) -> Obj:
    cur: Obj = {"averageValue": _q0(r.get("currentAverageValue"))}
    _put(cur, "averageUtilization", r.get("currentAverageUtilization"))
    return cur


def _status_v1_to_v2(m: Mapping[str, Any]) -> Obj:
    out: Obj = {"type": m.get("type", "")}
    if (o := m.get("object")) is not None:
        out["object"] = {
            "metric": _metric_id(o.get("metricName"), o.get("selector")),
            "current": _value_or_average(o.get("currentValue"), o.get("averageValue")),
            "describedObject": _xref(o.get("target")),
        }
    if (p := m.get("pods")) is not None:
        out["pods"] = {
            "metric": _metric_id(p.get("metricName"), p.get("selector")),
            "current": {"averageValue": _q0(p.get("currentAverageValue"))},
        }
    if (r := m.get("resource")) is not None:
        out["resource"] = {"name": r.get("name", ""), "current": _resource_current_v1_to_v2(r)}
    if (c := m.get("containerResource")) is not None:
        out["containerResource"] = {
            "name": c.get("name", ""),
            "current": _resource_current_v1_to_v2(c),
            "container": c.get("container", ""),
        }
    if (e := m.get("external")) is not None:
        out["external"] = {
            "metric": _metric_id(e.get("metricName"), e.get("metricSelector")),
            "current": _value_or_average(e.get("currentValue"), e.get("currentAverageValue")),
        }
    return out


def _status_v2_normalized(m: Mapping[str, Any]) -> Obj:
    out: Obj = {"type": m.get("type", "")}

    def current(c: Mapping[str, Any] | None) -> Obj:
        c = c or {}
        res: Obj = {}
        _put(res, "value", _q(c.get("value")))
        _put(res, "averageValue", _q(c.get("averageValue")))
        _put(res, "averageUtilization", c.get("averageUtilization"))
        return res

    if (o := m.get("object")) is not None:
        out["object"] = {
            "metric": _metric_id_v2(o.get("metric")),
            "current": current(o.get("current")),
            "describedObject": _xref(o.get("describedObject")),
        }
    if (p := m.get("pods")) is not None:
        out["pods"] = {
            "metric": _metric_id_v2(p.get("metric")),
            "current": current(p.get("current")),
        }
    if (r := m.get("resource")) is not None:
        out["resource"] = {"name": r.get("name", ""), "current": current(r.get("current"))}
    if (c := m.get("containerResource")) is not None:
        out["containerResource"] = {
            "name": c.get("name", ""),
            "current": current(c.get("current")),
            "container": c.get("container", ""),
        }
    if (e := m.get("external")) is not None:
        out["external"] = {
            "metric": _metric_id_v2(e.get("metric")),
            "current": current(e.get("current")),
        }
    return out


# ---- conditions ------------------------------------------------------------------------------
def _condition(c: Mapping[str, Any]) -> Obj:
    """An HPA condition in Go's marshalled shape (same fields in v1 and v2)."""
    out: Obj = {"type": c.get("type", ""), "status": c.get("status", "")}
    _put(out, "observedGeneration", c.get("observedGeneration"))
    out["lastTransitionTime"] = c.get("lastTransitionTime")
    if c.get("reason"):
        out["reason"] = c["reason"]
    if c.get("message"):
        out["message"] = c["message"]
    return out


# ---- behavior --------------------------------------------------------------------------------
def _rules_to_internal(r: Mapping[str, Any] | None) -> Obj | None:
    if r is None:
        return None
    policies = r.get("policies")
    return {
        "StabilizationWindowSeconds": r.get("stabilizationWindowSeconds"),
        "SelectPolicy": r.get("selectPolicy"),
        "Policies": None
        if policies is None
        else [
            {
                "Type": p.get("type", ""),
                "Value": p.get("value", 0),
                "PeriodSeconds": p.get("periodSeconds", 0),
            }
            for p in policies
        ],
        "Tolerance": _q(r.get("tolerance")),
    }


def _behavior_to_internal(b: Mapping[str, Any]) -> Obj:
    return {
        "ScaleUp": _rules_to_internal(b.get("scaleUp")),
        "ScaleDown": _rules_to_internal(b.get("scaleDown")),
    }


class _BadAnnotation(Exception):
    """The behavior annotation does not unmarshal into the Go struct."""


def _int32(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
        raise _BadAnnotation
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise _BadAnnotation
    return v


def _rules_from_internal(r: Any) -> Obj | None:
    if r is None:
        return None
    if not isinstance(r, Mapping):
        raise _BadAnnotation
    out: Obj = {}
    window = _get_ci(r, "StabilizationWindowSeconds")
    _put(out, "stabilizationWindowSeconds", None if window is None else _int32(window))
    select = _get_ci(r, "SelectPolicy")
    _put(out, "selectPolicy", None if select is None else _str(select))
    policies = _get_ci(r, "Policies")
    if policies is not None:
        if not isinstance(policies, list) or not all(isinstance(p, Mapping) for p in policies):
            raise _BadAnnotation
        out["policies"] = [
            {
                "type": _str(_get_ci(p, "Type") or ""),
                "value": _int32(_get_ci(p, "Value") or 0),
                "periodSeconds": _int32(_get_ci(p, "PeriodSeconds") or 0),
            }
            for p in policies
        ]
    tolerance = _get_ci(r, "Tolerance")
    if tolerance is not None:
        try:
            out["tolerance"] = _q(tolerance)
        except ValueError:
            raise _BadAnnotation from None
    return out


def _behavior_from_internal(text: str) -> Obj | None:
    """The behavior annotation, or None where upstream keeps no behavior: the JSON does not
    unmarshal into the internal struct, or it is the zero struct."""
    try:
        raw = json.loads(text)
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise _BadAnnotation
        up = _rules_from_internal(_get_ci(raw, "ScaleUp"))
        down = _rules_from_internal(_get_ci(raw, "ScaleDown"))
    except (ValueError, _BadAnnotation):
        return None
    if up is None and down is None:
        return None
    out: Obj = {}
    _put(out, "scaleUp", up)
    _put(out, "scaleDown", down)
    return out


def _rules_normalized(r: Mapping[str, Any] | None) -> Obj | None:
    if r is None:
        return None
    out: Obj = {}
    _put(out, "stabilizationWindowSeconds", r.get("stabilizationWindowSeconds"))
    _put(out, "selectPolicy", r.get("selectPolicy"))
    if r.get("policies") is not None:
        out["policies"] = [
            {
                "type": p.get("type", ""),
                "value": p.get("value", 0),
                "periodSeconds": p.get("periodSeconds", 0),
            }
            for p in r["policies"]
        ]
    _put(out, "tolerance", _q(r.get("tolerance")))
    return out


# ---- whole objects ---------------------------------------------------------------------------
def _drop_round_trip(annotations: Mapping[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (annotations or {}).items() if k not in ROUND_TRIP_ANNOTATIONS}


def _with_metadata(obj: Mapping[str, Any], api_version: str, annotations: dict[str, str]) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        if key in ("spec", "status"):
            continue
        out[key] = copy.deepcopy(value)
    out["apiVersion"] = api_version
    out.setdefault("kind", "HorizontalPodAutoscaler")
    meta: Obj = dict(out.get("metadata") or {})
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


def hpa_v2_to_v1(obj: Mapping[str, Any]) -> Obj:
    """An autoscaling/v2 HPA as the API server serves it at autoscaling/v1."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    status: Mapping[str, Any] = obj.get("status") or {}
    metrics: list[Mapping[str, Any]] = list(spec.get("metrics") or [])
    annotations = _drop_round_trip((obj.get("metadata") or {}).get("annotations"))

    other = [_spec_v2_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if other:
        annotations[METRICS_ANNOTATION] = go_json(other)
    current = list(status.get("currentMetrics") or [])
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = go_json([_status_v2_to_v1(m) for m in current])
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR_ANNOTATION] = go_json(_behavior_to_internal(spec["behavior"]))
    conditions = list(status.get("conditions") or [])
    if conditions:
        annotations[CONDITIONS_ANNOTATION] = go_json([_condition(c) for c in conditions])

    out = _with_metadata(obj, "autoscaling/v1", annotations)
    v1_spec: Obj = {"scaleTargetRef": _xref(spec.get("scaleTargetRef"))}
    _put(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    # The first cpu Utilization metric becomes the v1 target (upstream's round-trip test
    # TestMetricSpec_RoundTrip_V2V1 keeps a cpu AverageValue metric ahead of it).
    for m in metrics:
        if _is_cpu_utilization(m):
            v1_spec["targetCPUUtilizationPercentage"] = m["resource"]["target"][
                "averageUtilization"
            ]
            break
    out["spec"] = v1_spec

    v1_status: Obj = {}
    _put(v1_status, "observedGeneration", status.get("observedGeneration"))
    _put(v1_status, "lastScaleTime", status.get("lastScaleTime"))
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for m in current:
        res = m.get("resource")
        if m.get("type") == "Resource" and res is not None and res.get("name") == "cpu":
            util = (res.get("current") or {}).get("averageUtilization")
            if util is not None:
                v1_status["currentCPUUtilizationPercentage"] = util
    out["status"] = v1_status
    return out


def _load_list(text: str | None) -> list[Any] | None:
    """Upstream ignores an annotation that does not unmarshal."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if value is None:
        return []
    return value if isinstance(value, list) and all(isinstance(x, dict) for x in value) else None


def _convert_list(
    text: str | None, convert: Callable[[Mapping[str, Any]], Obj]
) -> list[Obj] | None:
    """An annotation list converted item by item; ``None`` (ignored, as upstream ignores an
    annotation that does not unmarshal) when any item has the wrong shape or a quantity that
    does not parse."""
    items = _load_list(text)
    if items is None:
        return None
    try:
        return [convert(x) for x in items]
    except (AttributeError, TypeError, ValueError):
        return None


def hpa_v1_to_v2(obj: Mapping[str, Any]) -> Obj:
    """An autoscaling/v1 HPA (annotations included) converted to autoscaling/v2."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    status: Mapping[str, Any] = obj.get("status") or {}
    annotations: Mapping[str, str] = (obj.get("metadata") or {}).get("annotations") or {}

    metrics: list[Obj] = []
    cpu_target = spec.get("targetCPUUtilizationPercentage")
    cpu_metric: Obj | None = None
    if cpu_target is not None:
        cpu_metric = {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": cpu_target},
            },
        }
    other = _convert_list(annotations.get(METRICS_ANNOTATION), _spec_v1_to_v2)
    if other is not None:
        metrics = other
    if cpu_metric is not None:
        metrics.append(cpu_metric)
    if not metrics:
        metrics = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": DEFAULT_CPU_UTILIZATION,
                    },
                },
            }
        ]

    current: list[Obj] = []
    if status.get("currentCPUUtilizationPercentage") is not None:
        current = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]},
                },
            }
        ]
    annotated = _convert_list(annotations.get(CURRENT_METRICS_ANNOTATION), _status_v1_to_v2)
    if annotated is not None:
        current = annotated

    conditions: list[Obj] = []
    annotated_conditions = _convert_list(annotations.get(CONDITIONS_ANNOTATION), _condition)
    if annotated_conditions is not None:
        conditions = annotated_conditions

    behavior: Obj | None = None
    if BEHAVIOR_ANNOTATION in annotations:
        behavior = _behavior_from_internal(annotations[BEHAVIOR_ANNOTATION])
    for key, direction in (
        (SCALE_DOWN_TOLERANCE_ANNOTATION, "scaleDown"),
        (SCALE_UP_TOLERANCE_ANNOTATION, "scaleUp"),
    ):
        if key in annotations:
            tolerance = _q(annotations[key])  # a bad value fails the conversion, as upstream
            behavior = behavior if behavior is not None else {}
            rules: Obj = behavior.setdefault(direction, {})
            rules["tolerance"] = tolerance

    out = _with_metadata(obj, "autoscaling/v2", _drop_round_trip(annotations))
    v2_spec: Obj = {"scaleTargetRef": _xref(spec.get("scaleTargetRef"))}
    _put(v2_spec, "minReplicas", spec.get("minReplicas"))
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    v2_spec["metrics"] = metrics
    _put(v2_spec, "behavior", behavior)
    out["spec"] = v2_spec

    v2_status: Obj = {}
    _put(v2_status, "observedGeneration", status.get("observedGeneration"))
    _put(v2_status, "lastScaleTime", status.get("lastScaleTime"))
    if status.get("currentReplicas"):
        v2_status["currentReplicas"] = status["currentReplicas"]
    v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    if current:
        v2_status["currentMetrics"] = current
    if conditions:
        v2_status["conditions"] = conditions
    out["status"] = v2_status
    return out


def normalize_hpa_v2(obj: Mapping[str, Any]) -> Obj:
    """A v2 HPA as Go would decode and re-encode it: canonical quantities and selectors,
    omitted empty fields, round-trip annotations dropped."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    status: Mapping[str, Any] = obj.get("status") or {}
    out = _with_metadata(
        obj, "autoscaling/v2", _drop_round_trip((obj.get("metadata") or {}).get("annotations"))
    )
    v2_spec: Obj = {"scaleTargetRef": _xref(spec.get("scaleTargetRef"))}
    _put(v2_spec, "minReplicas", spec.get("minReplicas"))
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    if spec.get("metrics"):
        v2_spec["metrics"] = [_spec_v2_normalized(m) for m in spec["metrics"]]
    if spec.get("behavior") is not None:
        b = spec["behavior"]
        behavior: Obj = {}
        _put(behavior, "scaleUp", _rules_normalized(b.get("scaleUp")))
        _put(behavior, "scaleDown", _rules_normalized(b.get("scaleDown")))
        v2_spec["behavior"] = behavior
    out["spec"] = v2_spec
    v2_status: Obj = {}
    _put(v2_status, "observedGeneration", status.get("observedGeneration"))
    _put(v2_status, "lastScaleTime", status.get("lastScaleTime"))
    if status.get("currentReplicas"):
        v2_status["currentReplicas"] = status["currentReplicas"]
    v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    if status.get("currentMetrics"):
        v2_status["currentMetrics"] = [_status_v2_normalized(m) for m in status["currentMetrics"]]
    if status.get("conditions"):
        v2_status["conditions"] = [_condition(c) for c in status["conditions"]]
    out["status"] = v2_status
    return out


# ---- defaulting ------------------------------------------------------------------------------
def default_scale_up_rules() -> Obj:
    """``defaultHPAScaleUpRules`` of pkg/apis/autoscaling/v2/defaults.go."""
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }


def default_scale_down_rules() -> Obj:
    """``defaultHPAScaleDownRules``: no stabilization window (the controller flag applies)."""
    return {
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def _fill_rules(given: Mapping[str, Any] | None, defaults: Obj) -> Obj:
    """``copyHPAScalingRules``: every non-nil given field wins over the default."""
    if given is None:
        return defaults
    out: Obj = {}
    for key in ("stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"):
        value = given.get(key)
        if value is not None:
            out[key] = copy.deepcopy(value)
        elif key in defaults:
            out[key] = defaults[key]
    for key, value in given.items():  # keep fields this code does not know about
        out.setdefault(key, copy.deepcopy(value))
    return out


def default_hpa_v2(obj: Mapping[str, Any]) -> Obj:
    """API defaulting of an autoscaling/v2 HPA (``SetDefaults_HorizontalPodAutoscaler``)."""
    out: Obj = copy.deepcopy(dict(obj))
    spec: Obj = out.setdefault("spec", {})
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": DEFAULT_CPU_UTILIZATION,
                    },
                },
            }
        ]
    behavior = spec.get("behavior")
    if behavior is not None:
        filled: Obj = dict(behavior)
        filled["scaleUp"] = _fill_rules(behavior.get("scaleUp"), default_scale_up_rules())
        filled["scaleDown"] = _fill_rules(behavior.get("scaleDown"), default_scale_down_rules())
        spec["behavior"] = filled
    return out


def default_hpa_v1(obj: Mapping[str, Any]) -> Obj:
    """API defaulting of an autoscaling/v1 HPA: ``minReplicas`` 1 (the 80% cpu default is
    applied by the conversion, which can see the metrics annotation)."""
    out: Obj = copy.deepcopy(dict(obj))
    spec: Obj = out.setdefault("spec", {})
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    return out
