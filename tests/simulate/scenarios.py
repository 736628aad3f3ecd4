"""Small building blocks for test scenarios (plain dicts in the scenario format)."""

from __future__ import annotations

from typing import Any


def deployment(
    name: str = "web", replicas: int = 1, *, cpu: str | None = "500m", ns: str = "default"
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "example/app:1"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container]},
            },
        },
    }


def hpa(
    name: str = "web",
    metrics: list[dict[str, Any]] | None = None,
    *,
    min_replicas: int = 1,
    max_replicas: int = 10,
    kind: str = "Deployment",
    api_version: str = "apps/v1",
    behavior: dict[str, Any] | None = None,
    ns: str = "default",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metrics": metrics if metrics is not None else [cpu_metric(50)],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def cpu_metric(utilization: int) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization},
        },
    }


def external_metric(
    name: str, average: str, selector: dict[str, str] | None = None
) -> dict[str, Any]:
    metric: dict[str, Any] = {"name": name}
    if selector is not None:
        metric["selector"] = {"matchLabels": selector}
    return {
        "type": "External",
        "external": {"metric": metric, "target": {"type": "AverageValue", "averageValue": average}},
    }


def pod(
    name: str,
    app: str = "web",
    *,
    cpu_request: str = "500m",
    ready: bool = True,
    started: str = "2025-12-31T00:00:00Z",
    ns: str = "default",
    deletion: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": {"app": app}}
    if deletion is not None:
        meta["deletionTimestamp"] = deletion
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                {
                    "name": app,
                    "image": "example/app:1",
                    "resources": {"requests": {"cpu": cpu_request}},
                }
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": started,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": started,
                }
            ],
        },
    }


def pod_metrics(
    name: str, cpu: str, *, ns: str = "default", container: str = "web"
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name},
        "containers": [{"name": container, "usage": {"cpu": cpu}}],
    }
