"""The cached projections are compact: what repeats across objects is shared.

At 10,000 HPAs and 30,000 pods the caches hold ~50,000 projections; the pods of one
workload share their labels, container views and timestamps, and an HPA's spec
strings are interned. Sharing must not change what a reader sees."""

from __future__ import annotations

import gc
import json
from typing import Any

from hpactl.cache.factory import _project_hpa, _project_pod
from hpactl.cache.projections import intern_strings, workload_scale_from_raw
from hpactl.model.pod import ContainerView


def pod(name: str, *, cpu: Any = "250m", labels: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = {
        "metadata": {
            "namespace": "shop",
            "name": name,
            "resourceVersion": "7",
            "labels": labels if labels is not None else {"app": "web", "hash": "5d8f"},
        },
        "spec": {
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}},
                {"name": "side", "resources": {}},
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-01T10:00:00Z",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T10:00:05Z"}
            ],
        },
    }
    # Decoded separately, as the informer does: no string or dict shared to begin with.
    decoded: dict[str, Any] = json.loads(json.dumps(doc))
    return decoded


def test_pods_of_one_workload_share_what_repeats() -> None:
    a, b = _project_pod(pod("web-1")), _project_pod(pod("web-2"))
    assert a.labels == {"app": "web", "hash": "5d8f"}
    assert a.labels is b.labels
    assert a.containers == (
        ContainerView("main", {"cpu": 250, "memory": 1024**3 * 1000}),
        ContainerView("side", {}),
    )
    assert a.containers is b.containers
    assert a.start_time is b.start_time and a.ready_transition is b.ready_transition
    assert a.namespace is b.namespace and a.phase is b.phase
    # Strings only: the collector need not walk the labels or the requests.
    assert not gc.is_tracked(a.labels)
    assert not gc.is_tracked(a.containers[0].requests)


def test_different_values_are_not_shared() -> None:
    a = _project_pod(pod("web-1"))
    c = _project_pod(pod("web-3", cpu="500m", labels={"app": "api", "hash": "5d8f"}))
    assert c.labels == {"app": "api", "hash": "5d8f"} and a.labels == {"app": "web", "hash": "5d8f"}
    assert c.containers[0].requests["cpu"] == 500 and a.containers[0].requests["cpu"] == 250


def test_odd_values_still_project_as_before() -> None:
    # Unhashable label or request values (the API server never stores them) are not
    # shared, and read as they did before: labels as decoded, the odd request ignored.
    odd = _project_pod(pod("web-4", cpu={"x": 1}, labels={"app": ["web"]}))
    labels: Any = odd.labels
    assert labels == {"app": ["web"]}
    assert odd.containers[0].requests == {"memory": 1024**3 * 1000}
    # A request of True is not 1 CPU, even after a pod whose request is 1 was shared.
    assert _project_pod(pod("web-5", cpu=1)).containers[0].requests["cpu"] == 1000
    assert "cpu" not in _project_pod(pod("web-6", cpu=True)).containers[0].requests
    assert _project_pod(pod("web-7", labels={})).labels == {}


def hpa(name: str) -> dict[str, Any]:
    doc = {
        "metadata": {"namespace": "shop", "name": name, "resourceVersion": "3"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ],
        },
    }
    decoded: dict[str, Any] = json.loads(json.dumps(doc))
    return decoded


def test_hpa_spec_strings_are_interned() -> None:
    a, b = _project_hpa(hpa("web")), _project_hpa(hpa("api"))
    assert a.namespace is b.namespace
    ra, rb = a.spec.scale_target_ref, b.spec.scale_target_ref
    assert (ra.kind, ra.api_version, ra.name) == ("Deployment", "apps/v1", "web")
    assert ra.kind is rb.kind and ra.api_version is rb.api_version
    ma, mb = a.spec.metrics[0], b.spec.metrics[0]
    assert ma.type is mb.type
    assert ma.resource is not None and mb.resource is not None
    assert ma.resource.name is mb.resource.name
    assert ma.resource.target.average_utilization == 60


def test_intern_strings_keeps_the_document() -> None:
    doc = json.loads('{"a": ["x", 1, {"b": null, "c": 2.5}], "d": true}')
    assert intern_strings(doc) == doc


def test_workload_namespace_is_interned() -> None:
    d1 = json.loads('{"metadata": {"namespace": "shop", "name": "a"}, "spec": {}}')
    d2 = json.loads('{"metadata": {"namespace": "shop", "name": "b"}, "spec": {}}')
    w1, w2 = workload_scale_from_raw("Deployment", d1), workload_scale_from_raw("Deployment", d2)
    assert w1.namespace is w2.namespace
