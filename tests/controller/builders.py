"""Objects for controller tests: a Deployment with ready pods, PodMetrics, HPAs."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from support.objects import cpu_hpa

from hpactl.model.times import format_time

Obj = dict[str, Any]


def deployment(name: str, replicas: int, ns: str = "default") -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def pod(app: str, i: int, now: datetime, cpu_request: str = "100m", ns: str = "default") -> Obj:
    """A running, ready pod started an hour before ``now`` (past every readiness delay)."""
    started = format_time(now - timedelta(hours=1))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{app}-{i}", "namespace": ns, "labels": {"app": app}},
        "spec": {
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu_request}}}
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": started,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
        },
    }


def pod_metrics(names: Iterable[str], cpu: str, now: datetime, ns: str = "default") -> list[Obj]:
    return [
        {
            "metadata": {"name": n, "namespace": ns},
            "timestamp": format_time(now),
            "window": "30s",
            "containers": [{"name": "c", "usage": {"cpu": cpu}}],
        }
        for n in names
    ]


def hpa(
    name: str,
    target: str,
    *,
    min_replicas: int = 1,
    max_replicas: int = 10,
    utilization: int = 50,
    ns: str = "default",
    kind: str = "Deployment",
    api_version: str = "apps/v1",
) -> Obj:
    return cpu_hpa(
        name,
        namespace=ns,
        target=target,
        kind=kind,
        api_version=api_version,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        utilization=utilization,
    )


def workload(emu: Any, name: str, replicas: int, now: datetime, ns: str = "default") -> list[str]:
    """Create a Deployment and its ``replicas`` pods; returns the pod names."""
    emu.store.create(deployment(name, replicas, ns))
    names = []
    for i in range(replicas):
        p = emu.store.create(pod(name, i, now, ns=ns))
        names.append(p["metadata"]["name"])
    return names


def events(emu: Any, ns: str = "default", reason: str | None = None) -> list[Obj]:
    out = emu.store.list("", "events", ns)
    return [e for e in out if reason is None or e.get("reason") == reason]
