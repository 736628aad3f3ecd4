"""Checking and normalizing PodMetrics, MetricValue and ExternalMetricValue objects,
scripted from Python or written over HTTP: required fields, names generated from the
object and metric, quantities, times and durations in Go's canonical form.

A normalized object is what the state stores: ``metadata`` plus the kind's fields,
``timestamp``/``window`` None where the server fills them in at read time."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from hpactl.emulator import errors
from hpactl.emulator.metrics_api.groups import (
    EXTERNAL_VALUE,
    METRIC_VALUE,
    POD_METRICS,
    MetricsKind,
)
from hpactl.emulator.metrics_api.plurals import ROOT_SCOPED_KINDS
from hpactl.model.quantity import parse_quantity
from hpactl.model.times import format_go_duration, format_time, parse_go_duration, parse_time

__all__ = ["NORMALIZERS", "Normalizer", "as_mapping", "metric_labels"]

# (raw object, namespace of the request or None) -> the stored form.
Normalizer = Callable[[Mapping[str, Any], str | None], dict[str, Any]]

_NAME_SANITIZE = re.compile(r"[^a-z0-9.-]+")


def _required(kind: MetricsKind, name: str, field: str, detail: str) -> errors.ApiError:
    return errors.invalid(kind.kind, kind.group, name, [(field, "FieldValueRequired", detail)])


def _canonical_quantity(value: Any, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise errors.bad_request(f"{field}: quantities must be a string or a number, got {value!r}")
    try:
        return str(parse_quantity(value))
    except ValueError as exc:
        raise errors.bad_request(f"{field}: {exc}") from exc


def _canonical_time(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return format_time(value)
    try:
        return format_time(parse_time(str(value)))
    except ValueError as exc:
        raise errors.bad_request(f"{field}: {exc}") from exc


def _timestamp_and_value(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A metric value's ``timestamp`` (None: the time of the read) and ``value``."""
    return {
        "timestamp": _canonical_time(raw.get("timestamp"), "timestamp"),
        "value": _canonical_quantity(raw.get("value"), "value"),
    }


def _int_field(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise errors.bad_request(f"{field}: expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise errors.bad_request(f"{field}: expected an integer, got {value!r}") from exc


def as_mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise errors.bad_request(f"{field}: expected an object, got {type(value).__name__}")
    return dict(value)


def _string_map(value: Any, field: str) -> dict[str, str]:
    raw = as_mapping(value, field)
    return {str(k): str(v) for k, v in raw.items()}


def metric_labels(item: Mapping[str, Any]) -> dict[str, str]:
    """A MetricValue's own labels: ``metric.selector.matchLabels``."""
    selector = item["metric"].get("selector") or {}
    labels = selector.get("matchLabels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def _meta(
    kind: MetricsKind, raw: Mapping[str, Any], namespace: str | None, default_name: str | None
) -> dict[str, Any]:
    meta = as_mapping(raw.get("metadata"), "metadata")
    name = meta.get("name") or default_name
    if not name:
        raise _required(
            kind, "", "metadata.name", "Required value: name or generateName is required"
        )
    ns = meta.get("namespace") or namespace or raw.get("namespace")
    if not ns:
        raise _required(kind, str(name), "metadata.namespace", "Required value")
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in meta.items()}
    out["name"] = str(name)
    out["namespace"] = str(ns)
    if "labels" in meta:
        out["labels"] = _string_map(meta.get("labels"), "metadata.labels")
    if "annotations" in meta:
        out["annotations"] = _string_map(meta.get("annotations"), "metadata.annotations")
    return out


def _pod_metrics(raw: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
    meta = _meta(POD_METRICS, raw, namespace, None)
    containers_raw = raw.get("containers") or []
    if not isinstance(containers_raw, list):
        raise errors.bad_request("containers: expected a list")
    containers = []
    for i, c in enumerate(containers_raw):
        c = as_mapping(c, f"containers[{i}]")
        usage = as_mapping(c.get("usage"), f"containers[{i}].usage")
        containers.append(
            {
                "name": str(c.get("name", "")),
                "usage": {
                    str(k): _canonical_quantity(v, f"containers[{i}].usage.{k}")
                    for k, v in usage.items()
                },
            }
        )
    window = raw.get("window")
    if window is not None:
        try:
            window = format_go_duration(parse_go_duration(str(window)))
        except ValueError as exc:
            raise errors.bad_request(f"window: {exc}") from exc
    return {
        "metadata": meta,
        "timestamp": _canonical_time(raw.get("timestamp"), "timestamp"),
        "window": window,
        "containers": containers,
    }


def _metric_value(raw: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
    described = as_mapping(raw.get("describedObject"), "describedObject")
    metric = as_mapping(raw.get("metric"), "metric")
    kind = str(described.get("kind") or "")
    obj_name = str(described.get("name") or "")
    metric_name = str(metric.get("name") or "")
    meta_ns = as_mapping(raw.get("metadata"), "metadata").get("namespace") or namespace
    if not kind or not obj_name or not metric_name:
        raise _required(
            METRIC_VALUE,
            str(as_mapping(raw.get("metadata"), "metadata").get("name", "")),
            "describedObject.kind, describedObject.name, metric.name",
            "Required value",
        )
    if kind in ROOT_SCOPED_KINDS:
        obj_ns = ""
        # A Namespace's metric is written in that namespace by default.
        default_ns = obj_name if kind == "Namespace" else (meta_ns or "default")
    else:
        obj_ns = str(described.get("namespace") or meta_ns or "")
        if not obj_ns:
            raise _required(METRIC_VALUE, obj_name, "describedObject.namespace", "Required value")
        if meta_ns and obj_ns != meta_ns:
            raise errors.bad_request(
                f"describedObject.namespace ({obj_ns}) must be the namespace of the "
                f"MetricValue ({meta_ns})"
            )
        default_ns = obj_ns
    labels = "".join(f"-{k}-{v}" for k, v in sorted(metric_labels({"metric": metric}).items()))
    default_name = _NAME_SANITIZE.sub(
        "-", f"{kind}-{obj_name}-{metric_name}{labels}".lower()
    ).strip("-.")
    meta = _meta(METRIC_VALUE, raw, meta_ns or default_ns, default_name)
    out_described: dict[str, Any] = {"kind": kind, "name": obj_name}
    if obj_ns:
        out_described["namespace"] = obj_ns
    if described.get("apiVersion"):
        out_described["apiVersion"] = str(described["apiVersion"])
    out_metric: dict[str, Any] = {"name": metric_name}
    if metric.get("selector") is not None:
        out_metric["selector"] = as_mapping(metric.get("selector"), "metric.selector")
    item: dict[str, Any] = {
        "metadata": meta,
        "describedObject": out_described,
        "metric": out_metric,
        **_timestamp_and_value(raw),
    }
    if raw.get("windowSeconds") is not None:
        item["windowSeconds"] = _int_field(raw.get("windowSeconds"), "windowSeconds")
    return item


def _external_value(raw: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
    metric_name = str(raw.get("metricName") or "")
    if not metric_name:
        raise _required(EXTERNAL_VALUE, "", "metricName", "Required value")
    labels = _string_map(raw.get("metricLabels"), "metricLabels")
    ns = (
        as_mapping(raw.get("metadata"), "metadata").get("namespace")
        or raw.get("namespace")
        or namespace
    )
    label_part = "-".join(f"{k}-{v}" for k, v in sorted(labels.items()))
    default_name = _NAME_SANITIZE.sub("-", f"{metric_name}-{label_part}".lower()).strip("-.")
    meta = _meta(EXTERNAL_VALUE, raw, str(ns) if ns else None, default_name or "metric")
    item: dict[str, Any] = {
        "metadata": meta,
        "metricName": metric_name,
        "metricLabels": labels,
        **_timestamp_and_value(raw),
    }
    window = raw.get("window", raw.get("windowSeconds"))
    if window is not None:
        item["window"] = _int_field(window, "window")
    return item


NORMALIZERS: dict[MetricsKind, Normalizer] = {
    POD_METRICS: _pod_metrics,
    METRIC_VALUE: _metric_value,
    EXTERNAL_VALUE: _external_value,
}
