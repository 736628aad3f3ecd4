"""Builders for decision-core tests: raw HPAs, pods, metric samples, sync inputs."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hpactl.core.decide import CoreConfig, ScaleView, SyncInputs
from hpactl.core.history import History
from hpactl.core.metrics_eval import MetricInput
from hpactl.model.hpa import HPA, hpa_from_raw
from hpactl.model.metrics import ExternalMetricValues, ObjectMetricValue, PodMetric
from hpactl.model.pod import PodView, pod_view_from_raw
from hpactl.model.selectors import Selector

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NS = "ns"
KEY = "ns/web"
LONG_AGO = "2025-12-31T00:00:00Z"


def cpu(target: int = 50) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": target},
        },
    }


def memory_avg(target: str) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": target}},
    }


def external(
    name: str = "queue",
    value: str | None = "100",
    average: str | None = None,
    selector: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    target: dict[str, Any] = {"type": "Value" if average is None else "AverageValue"}
    if value is not None and average is None:
        target["value"] = value
    if average is not None:
        target["averageValue"] = average
    metric: dict[str, Any] = {"name": name}
    if selector is not None:
        metric["selector"] = selector
    return {"type": "External", "external": {"metric": metric, "target": target}}


def obj(name: str = "rps", value: str = "10", kind: str = "Ingress") -> dict[str, Any]:
    return {
        "type": "Object",
        "object": {
            "describedObject": {"kind": kind, "name": "main", "apiVersion": "networking.k8s.io/v1"},
            "metric": {"name": name},
            "target": {"type": "Value", "value": value},
        },
    }


def pods_metric(name: str = "qps", average: str = "10") -> dict[str, Any]:
    return {
        "type": "Pods",
        "pods": {
            "metric": {"name": name},
            "target": {"type": "AverageValue", "averageValue": average},
        },
    }


def raw_hpa(
    metrics: Sequence[Mapping[str, Any]] | None = None,
    *,
    min_replicas: int | None = 1,
    max_replicas: int = 10,
    behavior: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    generation: int = 1,
    name: str = "web",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "maxReplicas": max_replicas,
        "metrics": list(metrics) if metrics is not None else [cpu()],
    }
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    if behavior is not None:
        spec["behavior"] = copy.deepcopy(dict(behavior))
    out: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "namespace": NS,
            "name": name,
            "uid": "u-1",
            "generation": generation,
            "resourceVersion": "7",
        },
        "spec": spec,
    }
    if status is not None:
        out["status"] = copy.deepcopy(dict(status))
    return out


def hpa(*args: Any, **kwargs: Any) -> HPA:
    return hpa_from_raw(raw_hpa(*args, **kwargs))


def bare_hpa(annotations: Mapping[str, str] | None = None) -> HPA:
    """ns/web: a Deployment, maxReplicas 5, no metrics, and only ``annotations``; for
    the annotation parsers."""
    meta: dict[str, object] = {"name": "web", "namespace": NS}
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return hpa_from_raw(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": meta,
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 5,
            },
        }
    )


def pod(
    name: str,
    *,
    cpu_request: str = "1",
    labels: Mapping[str, str] | None = None,
    phase: str = "Running",
    ready: str = "True",
) -> PodView:
    return pod_view_from_raw(
        {
            "metadata": {"namespace": NS, "name": name, "labels": dict(labels or {"app": "web"})},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu_request}}}]
            },
            "status": {
                "phase": phase,
                "startTime": LONG_AGO,
                "conditions": [
                    {"type": "Ready", "status": ready, "lastTransitionTime": "2025-12-31T00:01:00Z"}
                ],
            },
        }
    )


def pods(n: int, **kwargs: Any) -> tuple[PodView, ...]:
    return tuple(pod(f"web-{i}", **kwargs) for i in range(n))


def samples(
    ps: Sequence[PodView], values: Sequence[int] | int, now: datetime = NOW
) -> dict[str, PodMetric]:
    vals = [values] * len(ps) if isinstance(values, int) else list(values)
    return {
        p.name: PodMetric(now - timedelta(seconds=15), timedelta(seconds=30), v)
        for p, v in zip(ps, vals, strict=True)
    }


def ext_value(*milli: int, now: datetime = NOW) -> ExternalMetricValues:
    return ExternalMetricValues(tuple(milli), now)


def obj_value(milli: int, now: datetime = NOW) -> ObjectMetricValue:
    return ObjectMetricValue(milli, now)


def inputs(
    h: HPA,
    current: int | None,
    metrics: Sequence[MetricInput] = (),
    ps: Sequence[PodView] = (),
    *,
    history: History | None = None,
    now: datetime = NOW,
    config: CoreConfig | None = None,
    selector: str = "app=web",
    status_replicas: int | None = None,
    hpa_selectors: Mapping[str, Selector] | None = None,
    scale_error: str = "",
) -> SyncInputs:
    return SyncInputs(
        hpa=h,
        scale=None
        if current is None
        else ScaleView(current, current if status_replicas is None else status_replicas, selector),
        pods=tuple(ps),
        metrics=tuple(metrics),
        history=history if history is not None else History(),
        config=config or CoreConfig(),
        now=now,
        hpa_selectors=dict(hpa_selectors or {}),
        scale_error=scale_error,
    )


def conds(raw_status: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(type, status, reason, message) of every condition in a raw status."""
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in raw_status.get("conditions", [])
    ]


def cond_map(raw_status: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {t: (s, r, m) for t, s, r, m in conds(raw_status)}
