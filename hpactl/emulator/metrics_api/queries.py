"""The reads the metrics APIs answer, from a :class:`MetricsState`: PodMetrics as
metrics-server serves them, custom metric values as custom-metrics-apiserver based
adapters do, external values, and lists of the emulator-only writable kinds.

Selectors arrive parsed (``label_selector``, ``field_selector`` below turn the query
parameters into matchers); answers are plain dicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hpactl.emulator import errors
from hpactl.emulator.errors import ApiError
from hpactl.emulator.metrics_api.groups import (
    CUSTOM_GROUP,
    CUSTOM_VERSION,
    DEFAULT_WINDOW,
    EXTERNAL_GROUP,
    EXTERNAL_VALUE,
    EXTERNAL_VERSION,
    METRIC_VALUE,
    METRICS_GROUP,
    POD_METRICS,
    MetricsKind,
)
from hpactl.emulator.metrics_api.normalize import metric_labels
from hpactl.emulator.metrics_api.plurals import GroupResource, KindCache
from hpactl.emulator.metrics_api.state import MetricsState
from hpactl.emulator.store import tree_copy
from hpactl.model.selectors import Selector, parse_selector
from hpactl.model.times import format_time

__all__ = [
    "FieldFilter",
    "custom_query",
    "external_query",
    "field_selector",
    "label_selector",
    "list_stored",
    "pod_metrics",
    "pod_metrics_list",
]

# (namespace, name) -> whether a fieldSelector accepts the object.
FieldFilter = Callable[[str, str], bool]


def label_selector(text: str) -> Selector | None:
    """A labelSelector / metricLabelSelector parameter; None when empty."""
    if not text:
        return None
    try:
        return parse_selector(text)
    except ValueError as exc:
        raise errors.bad_request(f"unable to parse requirement: {exc}") from exc


def field_selector(text: str) -> FieldFilter:
    """metadata.name / metadata.namespace field selectors (=, ==, !=), as list handlers accept."""
    if not text:
        return lambda ns, name: True
    terms: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            positive = False
        elif "==" in part:
            key, value = part.split("==", 1)
            positive = True
        elif "=" in part:
            key, value = part.split("=", 1)
            positive = True
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key = key.strip()
        if key not in ("metadata.name", "metadata.namespace"):
            raise errors.bad_request(
                f'"{key}" is not a known field selector: only "metadata.name", "metadata.namespace"'
            )
        terms.append((key, positive, value.strip()))

    def accept(ns: str, name: str) -> bool:
        for key, positive, value in terms:
            actual = name if key == "metadata.name" else ns
            if (actual == value) != positive:
                return False
        return True

    return accept


# ----------------------------------------------------------------- metrics.k8s.io


def _render_pod_metrics(
    state: MetricsState,
    item: Mapping[str, Any],
    *,
    with_type: bool,
    now: str = "",
    copy: bool = True,
) -> dict[str, Any] | None:
    """The PodMetrics served for ``item``. ``copy=False`` (a list, serialized right
    away and never modified) shares the stored sub-objects instead of copying them;
    ``now`` is the list's one reading of the clock."""
    meta = item["metadata"]
    ns, name = meta["namespace"], meta["name"]
    if "labels" in meta:
        labels: Mapping[str, str] | None = meta["labels"]
    else:
        # metrics-server serves metrics only for pods it knows, with their labels.
        labels = state.pod_labels(ns, name)
        if labels is None:
            return None
    now = now or format_time(state.now())
    out_meta = {k: tree_copy(v) for k, v in meta.items()} if copy else dict(meta)
    out_meta.setdefault("creationTimestamp", now)
    if labels:
        out_meta["labels"] = dict(labels)
    else:
        out_meta.pop("labels", None)
    body: dict[str, Any] = {}
    if with_type:
        body["kind"] = POD_METRICS.kind
        body["apiVersion"] = POD_METRICS.api_version
    body["metadata"] = out_meta
    body["timestamp"] = item["timestamp"] or now
    body["window"] = item["window"] or DEFAULT_WINDOW
    body["containers"] = tree_copy(item["containers"]) if copy else item["containers"]
    return body


def pod_metrics_list(
    state: MetricsState, namespace: str | None, selector: Selector | None, field_ok: FieldFilter
) -> dict[str, Any]:
    items = []
    now = format_time(state.now())
    for (ns, name), item in state.objects(POD_METRICS).sorted_items(namespace):
        if not field_ok(ns, name):
            continue
        body = _render_pod_metrics(state, item, with_type=False, now=now, copy=False)
        if body is None:
            continue
        if selector is not None and not selector.matches(body["metadata"].get("labels", {})):
            continue
        items.append(body)
    return {
        "kind": "PodMetricsList",
        "apiVersion": POD_METRICS.api_version,
        "metadata": {},
        "items": items,
    }


def pod_metrics(state: MetricsState, namespace: str, name: str) -> dict[str, Any]:
    item = state.objects(POD_METRICS).get((namespace, name))
    body = _render_pod_metrics(state, item, with_type=True) if item is not None else None
    if body is None:
        # metrics-server names the object "namespace/name" in this error.
        raise errors.not_found(METRICS_GROUP, "podmetrics", f"{namespace}/{name}")
    return body


# ----------------------------------------------------------------- custom.metrics.k8s.io


def _render_metric_value(
    state: MetricsState, item: Mapping[str, Any], kinds: KindCache
) -> dict[str, Any]:
    described = dict(item["describedObject"])
    if "apiVersion" not in described:
        default = kinds.default_api_version(described["kind"])
        if default is not None:
            described["apiVersion"] = default
    out: dict[str, Any] = {
        "describedObject": described,
        "metric": tree_copy(item["metric"]),
        "timestamp": item["timestamp"] or format_time(state.now()),
    }
    if "windowSeconds" in item:
        out["windowSeconds"] = item["windowSeconds"]
    out["value"] = item["value"]
    return out


def custom_query(
    state: MetricsState,
    namespace: str | None,
    requested: GroupResource,
    name: str,
    metric: str,
    *,
    selector: Selector | None,
    metric_selector: Selector | None,
) -> dict[str, Any]:
    """One object (name) or every object matching ``selector`` (name "*")."""
    wildcard = name == "*"
    known = False
    items = []
    kinds = state.kind_cache()
    store = state.objects(METRIC_VALUE)
    # A namespaced object's values are stored in its namespace; root-scoped
    # objects' values may be anywhere.
    candidates = (
        (item for _key, item in store.items(namespace)) if namespace is not None else store.values()
    )
    for item in candidates:
        if item["metric"]["name"] != metric:
            continue
        described = item["describedObject"]
        gr = kinds.resource_of(described)
        if not gr.matches_request(requested):
            continue
        obj_ns = described.get("namespace", "")
        if (namespace or "") != obj_ns:
            continue
        known = True
        if not wildcard and described["name"] != name:
            continue
        if metric_selector is not None and not metric_selector.matches(metric_labels(item)):
            continue
        if wildcard:
            labels = state.labels_for(gr, obj_ns, described["name"])
            if labels is None:
                continue  # adapters list the objects first: a missing object has no series
            if selector is not None and not selector.matches(labels):
                continue
        items.append((obj_ns, described["name"], _render_metric_value(state, item, kinds)))
    if not items and not wildcard:
        raise ApiError(
            404,
            "NotFound",
            f"the server could not find the metric {metric} for {requested} {name}",
        )
    if not items and not known:
        raise ApiError(
            404, "NotFound", f"the server could not find the metric {metric} for {requested}"
        )
    items.sort(key=lambda t: (t[0], t[1]))
    return {
        "kind": "MetricValueList",
        "apiVersion": f"{CUSTOM_GROUP}/{CUSTOM_VERSION}",
        "metadata": {},
        "items": [t[2] for t in items],
    }


# ----------------------------------------------------------------- external.metrics.k8s.io


def external_query(
    state: MetricsState, namespace: str, metric: str, selector: Selector | None
) -> dict[str, Any]:
    items = []
    for _key, item in state.objects(EXTERNAL_VALUE).items(namespace):
        if item["metricName"] != metric:
            continue
        if selector is not None and not selector.matches(item["metricLabels"]):
            continue
        out: dict[str, Any] = {
            "metricName": item["metricName"],
            "metricLabels": dict(item["metricLabels"]),
            "timestamp": item["timestamp"] or format_time(state.now()),
        }
        if "window" in item:
            out["window"] = item["window"]
        out["value"] = item["value"]
        items.append(out)
    return {
        "kind": "ExternalMetricValueList",
        "apiVersion": f"{EXTERNAL_GROUP}/{EXTERNAL_VERSION}",
        "metadata": {},
        "items": items,
    }


# ----------------------------------------------------------------- writable kinds


def list_stored(
    state: MetricsState,
    kind: MetricsKind,
    namespace: str | None,
    selector: Selector | None,
    field_ok: FieldFilter,
) -> dict[str, Any]:
    """The list of a writable kind (MetricValue, ExternalMetricValue) as written."""
    items = []
    for (ns, name), item in state.objects(kind).sorted_items(namespace):
        if not field_ok(ns, name):
            continue
        if selector is not None and not selector.matches(item["metadata"].get("labels", {})):
            continue
        body = state.render_stored(kind, item)
        del body["kind"], body["apiVersion"]
        items.append(body)
    return {
        "kind": f"{kind.kind}List",
        "apiVersion": kind.api_version,
        "metadata": {},
        "items": items,
    }
