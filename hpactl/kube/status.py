"""Write an HPA's status (autoscaling/v2 ``/status``), as upstream ``UpdateStatus`` does.

``await update_hpa_status(session, hpa, status, *, timeout=None) -> dict``
    PUT ``/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{name}/status``
    with the stored object (its ``metadata.resourceVersion`` included, so a stale
    write fails) and ``status`` replaced. ``hpa`` is the raw object, or anything with
    ``namespace``, ``name``, ``uid``, ``resource_version`` (the HPA model): then only
    that identity and precondition are sent (the status strategy ignores the rest). Returns the object the server stored (its
    new resourceVersion is what StaleControllerConsistencyHPA waits for). A Conflict is
    raised as ``errors.Conflict``; the controller retries on its next sync, as upstream.

``hpa_status_path(namespace, name) -> str``
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpactl.kube.identity import ObjectIdentity
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import put_json
from hpactl.kube.session import KubeSession

__all__ = ["HPAIdentity", "hpa_status_path", "update_hpa_status"]


def hpa_status_path(namespace: str, name: str) -> str:
    return resource_path(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        namespace=namespace,
        name=name,
        subresource="status",
    )


HPAIdentity = ObjectIdentity


def _as_raw(hpa: Mapping[str, Any] | HPAIdentity) -> Mapping[str, Any]:
    if isinstance(hpa, Mapping):
        return hpa
    meta: dict[str, Any] = {"name": hpa.name, "namespace": hpa.namespace}
    if hpa.uid:
        meta["uid"] = hpa.uid
    if hpa.resource_version:
        meta["resourceVersion"] = hpa.resource_version
    return {"metadata": meta}


async def update_hpa_status(
    session: KubeSession,
    hpa: Mapping[str, Any] | HPAIdentity,
    status: Mapping[str, Any],
    *,
    timeout: float | None = None,
) -> dict[str, Any]:
    raw = _as_raw(hpa)
    meta = raw.get("metadata") or {}
    body = dict(raw)
    body["apiVersion"] = "autoscaling/v2"
    body["kind"] = "HorizontalPodAutoscaler"
    body["status"] = dict(status)
    path = hpa_status_path(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return await put_json(session, path, body, timeout=timeout)
