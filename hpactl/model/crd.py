"""hpactl's own HorizontalPodAutoscaler resource (``autoscaling.hpactl.dev/v1alpha1``).

On managed control planes (GKE, EKS, AKS) the built-in HPA controller cannot be
turned off, so hpactl must not act on ``autoscaling/v2`` HPAs there. This resource
is ``autoscaling/v2``'s HorizontalPodAutoscaler under another group: its ``spec``
and ``status`` are upstream's, plus the opt-in extensions (docs/extensions.md) as
real fields, named and placed as their KEPs place them:

======================================  ===============================================
field                                   annotation carried in autoscaling/v2 (and KEP)
======================================  ===============================================
``spec.behavior.syncPeriodSeconds``     ``hpactl.dev/sync-period-seconds`` (KEP-6003:
                                        ``HorizontalPodAutoscalerBehavior``; the KEP
                                        puts it under ``behavior``, not ``spec``)
``spec.suspend`` (bool)                 ``autoscaling.kubernetes.io/suspend`` (KEP-3428:
                                        the KEP's own mechanism is that annotation; its
                                        alternative is this ``spec.suspend`` field)
``spec.metrics[].<source>.fallback``    ``hpactl.dev/metric-fallback`` (KEP-5679's
``{replicas, failureDuration}``         ``ExternalMetricFallback`` in
                                        ``ExternalMetricSource``; hpactl allows it in
                                        every source: resource, containerResource,
                                        pods, object, external)
``spec.selectionStrategy``              ``hpactl.dev/selection-strategy`` (KEP-5325:
                                        ``LabelSelector`` | ``OwnerReference``)
``<pods|object|external>.metric.``      ``hpactl.dev/metric-sources`` (KEP-6382:
``source.apiGroup``                     ``MetricIdentifier.source``)
======================================  ===============================================

:func:`cr_to_v2` turns a custom resource into the ``autoscaling/v2`` HPA the
controller's pipeline already reads: the extension fields leave the spec and become
their annotations (a field replaces an annotation of the same name), so parsing,
validation messages and conditions are those of the annotations. :func:`v2_to_cr` is
the inverse for ``hpactl convert``: each annotation hpactl parses without complaint
becomes its field; a malformed one stays an annotation (the controller reports it
as for a built-in HPA) and :func:`convert_v2_to_cr` says why. Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hpactl.model.featuregates import parse_go_bool
from hpactl.model.metric_providers import check_api_group
from hpactl.model.times import parse_go_duration

__all__ = [
    "API_VERSION",
    "CATEGORIES",
    "FALLBACK_ANNOTATION",
    "GROUP",
    "KIND",
    "LIST_KIND",
    "METRIC_SOURCES_ANNOTATION",
    "PLURAL",
    "SELECTION_STRATEGY_ANNOTATION",
    "SHORT_NAMES",
    "SINGULAR",
    "SUSPEND_ANNOTATION",
    "SYNC_PERIOD_ANNOTATION",
    "V2_API_VERSION",
    "Converted",
    "convert_cr_to_v2",
    "convert_v2_to_cr",
    "cr_to_v2",
    "crd_manifest",
    "is_cr",
    "v2_to_cr",
]

GROUP = "autoscaling.hpactl.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "HorizontalPodAutoscaler"
LIST_KIND = "HorizontalPodAutoscalerList"
PLURAL = "horizontalpodautoscalers"
SINGULAR = "horizontalpodautoscaler"
SHORT_NAMES: tuple[str, ...] = ("hhpa",)
CATEGORIES: tuple[str, ...] = ("hpactl",)
CRD_NAME = f"{PLURAL}.{GROUP}"
V2_API_VERSION = "autoscaling/v2"

# The annotations the controller reads (hpactl.core.* owns their parsing; the names
# are repeated here because the model layer cannot import core).
SYNC_PERIOD_ANNOTATION = "hpactl.dev/sync-period-seconds"
SUSPEND_ANNOTATION = "autoscaling.kubernetes.io/suspend"
FALLBACK_ANNOTATION = "hpactl.dev/metric-fallback"
SELECTION_STRATEGY_ANNOTATION = "hpactl.dev/selection-strategy"
METRIC_SOURCES_ANNOTATION = "hpactl.dev/metric-sources"

#: ``MetricSpec`` type → its source field.
SOURCE_FIELDS: Mapping[str, str] = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}
#: Sources whose ``metric`` may name an API group (KEP-6382).
ROUTABLE_FIELDS: tuple[str, ...] = ("pods", "object", "external")
SELECTION_STRATEGIES: tuple[str, ...] = ("LabelSelector", "OwnerReference")
MAX_SYNC_PERIOD_SECONDS = 3600
MAX_INT32 = 2**31 - 1
_DIGITS = re.compile(r"[0-9]{1,12}")

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Converted:
    """A converted object and one line per thing the reader should know."""

    obj: Obj
    notes: list[str] = field(default_factory=list)


def is_cr(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is one of hpactl's HorizontalPodAutoscalers."""
    return obj.get("kind") == KIND and obj.get("apiVersion") == API_VERSION


# ------------------------------------------------------------------ CR -> autoscaling/v2


def _metric_source(metric: Any) -> Obj | None:
    """The source object of one ``MetricSpec`` (``metric[<typefield>]``), if a dict."""
    if not isinstance(metric, dict):
        return None
    name = SOURCE_FIELDS.get(str(metric.get("type")))
    src = metric.get(name) if name else None
    return src if isinstance(src, dict) else None


def _metric_name(src: Mapping[str, Any]) -> Any:
    ident = src.get("metric")
    return ident.get("name") if isinstance(ident, Mapping) else None


def convert_cr_to_v2(obj: Mapping[str, Any]) -> Converted:
    """The custom resource as an ``autoscaling/v2`` HPA, with one note per extension
    field carried as an annotation."""
    out: Obj = copy.deepcopy(dict(obj))
    out["apiVersion"] = V2_API_VERSION
    out["kind"] = KIND
    meta = out.get("metadata")
    if not isinstance(meta, dict):
        meta = out["metadata"] = {}
    notes: list[str] = []
    carried: dict[str, str] = {}
    spec = out.get("spec")
    if isinstance(spec, dict):
        if "selectionStrategy" in spec:
            value = spec.pop("selectionStrategy")
            if value is not None:
                carried[SELECTION_STRATEGY_ANNOTATION] = str(value)
                notes.append(_note("spec.selectionStrategy", SELECTION_STRATEGY_ANNOTATION))
        if "suspend" in spec:
            value = spec.pop("suspend")
            if value is not None:
                carried[SUSPEND_ANNOTATION] = (
                    ("true" if value else "false") if isinstance(value, bool) else str(value)
                )
                notes.append(_note("spec.suspend", SUSPEND_ANNOTATION))
        behavior = spec.get("behavior")
        if isinstance(behavior, dict) and "syncPeriodSeconds" in behavior:
            value = behavior.pop("syncPeriodSeconds")
            if value is not None:
                carried[SYNC_PERIOD_ANNOTATION] = str(value)
                notes.append(_note("spec.behavior.syncPeriodSeconds", SYNC_PERIOD_ANNOTATION))
        metrics = spec.get("metrics")
        if isinstance(metrics, list):
            fallbacks: Obj = {}
            groups: dict[str, str] = {}
            for i, metric in enumerate(metrics):
                src = _metric_source(metric)
                if src is None:
                    continue
                if "fallback" in src:
                    fb = src.pop("fallback")
                    if fb is not None:
                        fallbacks[str(i)] = fb
                ident = src.get("metric")
                if isinstance(ident, dict) and "source" in ident:
                    source = ident.pop("source")
                    group = source.get("apiGroup") if isinstance(source, Mapping) else None
                    name = ident.get("name")
                    # Same name, two groups: the CRD's validation refuses it; the first wins.
                    if isinstance(group, str) and isinstance(name, str):
                        groups.setdefault(name, group)
            if fallbacks:
                carried[FALLBACK_ANNOTATION] = json.dumps(fallbacks, separators=(",", ":"))
                notes.append(_note("spec.metrics[].*.fallback", FALLBACK_ANNOTATION))
            if groups:
                carried[METRIC_SOURCES_ANNOTATION] = json.dumps(groups, separators=(",", ":"))
                notes.append(_note("spec.metrics[].*.metric.source", METRIC_SOURCES_ANNOTATION))
    _strip_status_sources(out.get("status"))
    if carried:
        annotations = meta.get("annotations")
        merged = dict(annotations) if isinstance(annotations, Mapping) else {}
        merged.update(carried)
        meta["annotations"] = merged
    return Converted(out, notes)


def _note(path: str, annotation: str) -> str:
    return f"{path} has no autoscaling/v2 field: carried as the annotation {annotation}"


def _strip_status_sources(status: Any) -> None:
    """KEP-6382's ``metric.source`` in ``status.currentMetrics`` has no v2 field either."""
    if not isinstance(status, dict) or not isinstance(status.get("currentMetrics"), list):
        return
    for metric in status["currentMetrics"]:
        src = _metric_source(metric)
        ident = src.get("metric") if src is not None else None
        if isinstance(ident, dict):
            ident.pop("source", None)


def cr_to_v2(obj: Mapping[str, Any]) -> Obj:
    """The custom resource as the ``autoscaling/v2`` HPA the controller reads: the
    extension fields become their annotations; everything else is kept."""
    return convert_cr_to_v2(obj).obj


# ------------------------------------------------------------------ autoscaling/v2 -> CR


def metric_label(metric: Mapping[str, Any]) -> str | None:
    """The label ``hpactl explain`` shows for a raw ``MetricSpec`` (fallback keys)."""
    src = _metric_source(dict(metric))
    if src is None:
        return None
    kind = metric.get("type")
    if kind == "Resource":
        return str(src.get("name"))
    if kind == "ContainerResource":
        return f"{src.get('name')}({src.get('container')})"
    prefix = {"Pods": "pods", "Object": "object", "External": "external"}[str(kind)]
    return f"{prefix}:{_metric_name(src)}"


class _Malformed(ValueError):
    """An annotation hpactl would report as malformed: it stays an annotation."""


def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> Obj:
    out: Obj = {}
    for key, value in pairs:
        if key in out:
            raise _Malformed(f"key {key!r} given twice")
        out[key] = value
    return out


def _fallbacks(raw: str, metrics: list[Any]) -> dict[int, Obj]:
    """Metric index → fallback, or :class:`_Malformed` (the controller's grammar)."""
    try:
        value = json.loads(raw, object_pairs_hook=_pairs_no_duplicates)
    except _Malformed:
        raise
    except ValueError as exc:
        raise _Malformed("is not JSON") from exc
    if not isinstance(value, dict) or not value:
        raise _Malformed("must be a non-empty JSON object")
    labels = [metric_label(m) if isinstance(m, Mapping) else None for m in metrics]
    out: dict[int, Obj] = {}
    for key, entry in value.items():
        if key.isdigit() and int(key) < len(metrics):
            index = int(key)
        else:
            hits = [i for i, label in enumerate(labels) if label == key]
            if len(hits) != 1:
                raise _Malformed(
                    f"key {key!r} names {'no' if not hits else 'more than one'} metric"
                )
            index = hits[0]
        if index in out:
            raise _Malformed(f"two keys name spec.metrics[{index}]")
        if not isinstance(entry, dict) or set(entry) - {"replicas", "failureDuration"}:
            raise _Malformed(f"{key!r}: must be an object with replicas and failureDuration")
        replicas = entry.get("replicas")
        if isinstance(replicas, bool) or not isinstance(replicas, int):
            raise _Malformed(f"{key!r}: replicas must be an integer")
        if not 1 <= replicas <= MAX_INT32:
            raise _Malformed(f"{key!r}: replicas out of range")
        if "failureDuration" in entry:
            duration = entry["failureDuration"]
            if not isinstance(duration, str):
                raise _Malformed(f"{key!r}: failureDuration must be a string")
            try:
                seconds = parse_go_duration(duration).total_seconds()
            except ValueError as exc:
                raise _Malformed(f"{key!r}: failureDuration is not a duration") from exc
            if not 0 < seconds <= 24 * 3600:
                raise _Malformed(f"{key!r}: failureDuration out of range")
        out[index] = dict(entry)
    return out


def _metric_groups(raw: str) -> dict[str, str]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise _Malformed("is not JSON") from exc
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    ):
        raise _Malformed("must be a JSON object from metric name to API group")
    for name, group in value.items():
        why = check_api_group(group)
        if why is not None:
            raise _Malformed(f"metric {name!r}: {why}")
    return dict(value)


def convert_v2_to_cr(obj: Mapping[str, Any]) -> Converted:
    """An ``autoscaling/v2`` HPA as hpactl's resource: each well-formed extension
    annotation becomes its field; a malformed one is kept, with a note saying why."""
    out: Obj = copy.deepcopy(dict(obj))
    out["apiVersion"] = API_VERSION
    out["kind"] = KIND
    notes: list[str] = []
    meta = out.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    spec = out.get("spec")
    if not isinstance(annotations, dict) or not isinstance(spec, dict):
        return Converted(out, notes)
    raw_metrics = spec.get("metrics")
    metrics: list[Any] = raw_metrics if isinstance(raw_metrics, list) else []

    def take(name: str) -> str | None:
        raw = annotations.get(name)
        return raw if isinstance(raw, str) else None

    def kept(name: str, why: str) -> None:
        notes.append(
            f"annotation {name} kept as an annotation: {why} (hpactl reports it as malformed)"
        )

    raw = take(SYNC_PERIOD_ANNOTATION)
    if raw is not None:
        if _DIGITS.fullmatch(raw) and 1 <= int(raw) <= MAX_SYNC_PERIOD_SECONDS:
            behavior = spec.get("behavior")
            if behavior is None:
                notes.append(
                    "spec.behavior is created to hold syncPeriodSeconds: scaleUp and "
                    "scaleDown get the API server's default rules (KEP-6003 places the "
                    "field there; an HPA without behavior uses the controller's flags)"
                )
                behavior = spec["behavior"] = {}
            if isinstance(behavior, dict):
                behavior["syncPeriodSeconds"] = int(raw)
                del annotations[SYNC_PERIOD_ANNOTATION]
        else:
            kept(SYNC_PERIOD_ANNOTATION, "not a whole number of seconds from 1 to 3600")
    raw = take(SUSPEND_ANNOTATION)
    if raw is not None:
        try:
            spec["suspend"] = parse_go_bool(raw)
            del annotations[SUSPEND_ANNOTATION]
        except ValueError:
            kept(SUSPEND_ANNOTATION, "not a boolean")
    raw = take(SELECTION_STRATEGY_ANNOTATION)
    if raw is not None:
        if raw in SELECTION_STRATEGIES:
            spec["selectionStrategy"] = raw
            del annotations[SELECTION_STRATEGY_ANNOTATION]
        else:
            kept(SELECTION_STRATEGY_ANNOTATION, "neither LabelSelector nor OwnerReference")
    raw = take(FALLBACK_ANNOTATION)
    if raw is not None:
        try:
            for index, fallback in _fallbacks(raw, metrics).items():
                src = _metric_source(metrics[index])
                if src is not None:
                    src["fallback"] = fallback
            del annotations[FALLBACK_ANNOTATION]
        except _Malformed as exc:
            kept(FALLBACK_ANNOTATION, str(exc))
    raw = take(METRIC_SOURCES_ANNOTATION)
    if raw is not None:
        try:
            groups = _metric_groups(raw)
            used: set[str] = set()
            for metric in metrics:
                src = _metric_source(metric)
                name = _metric_name(src) if src is not None else None
                if src is None or metric.get("type", "").lower() not in ROUTABLE_FIELDS:
                    continue
                if isinstance(name, str) and name in groups and isinstance(src["metric"], dict):
                    src["metric"]["source"] = {"apiGroup": groups[name]}
                    used.add(name)
            for name in sorted(set(groups) - used):
                notes.append(
                    f"annotation {METRIC_SOURCES_ANNOTATION}: {name!r} names no Pods, Object "
                    "or External metric: dropped (it routed nothing)"
                )
            del annotations[METRIC_SOURCES_ANNOTATION]
        except _Malformed as exc:
            kept(METRIC_SOURCES_ANNOTATION, str(exc))
    if not annotations and isinstance(meta, dict):
        del meta["annotations"]
    return Converted(out, notes)


def v2_to_cr(obj: Mapping[str, Any]) -> Obj:
    """An ``autoscaling/v2`` HPA as hpactl's resource (the inverse of :func:`cr_to_v2`)."""
    return convert_v2_to_cr(obj).obj


def crd_manifest() -> Obj:
    """The CustomResourceDefinition (built from upstream's OpenAPI by
    :mod:`hpactl.model.crd_schema`; manifests/crd/ holds the same object as YAML)."""
    from hpactl.model.crd_schema import build_crd  # imports this module's constants

    return build_crd()
