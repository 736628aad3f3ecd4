"""Write an HPA's status (autoscaling/v2 ``/status``), as upstream ``UpdateStatus`` does.

``await update_hpa_status(session, hpa, status, *, timeout=None) -> dict``
    PUT ``/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{name}/status``
    with the stored object (its ``metadata.resourceVersion`` included, so a stale
    write fails) and ``status`` replaced. ``hpa`` is the raw object, or anything with
    ``namespace``, ``name``, ``uid``, ``resource_version`` (the HPA model): then only
    that identity and precondition are sent (the status strategy ignores the rest). Returns the object the server stored (its
    new resourceVersion is what StaleControllerConsistencyHPA waits for). A Conflict is
    raised as ``errors.Conflict``; the controller retries on its next sync, as upstream.

    hpactl's own HorizontalPodAutoscalers (``hpa.api_version``
    ``autoscaling.hpactl.dev/v1alpha1``) are written the same way, with the same
    status body, to their own ``/status`` subresource.

``hpa_status_path(namespace, name, api_version="autoscaling/v2") -> str``
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpactl.kube.identity import ObjectIdentity
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import put_json
from hpactl.kube.session import KubeSession

__all__ = ["HPAIdentity", "hpa_status_path", "update_hpa_status"]


def hpa_status_path(namespace: str, name: str, api_version: str = "autoscaling/v2") -> str:
    group, _, version = api_version.rpartition("/")
    return resource_path(
        group,
        version,
        "horizontalpodautoscalers",  # the plural of both resources
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
    if isinstance(hpa, Mapping):
        api_version = str(hpa.get("apiVersion") or "")
    else:
        api_version = str(getattr(hpa, "api_version", "") or "")
    if not api_version or api_version.startswith("autoscaling/"):
        api_version = "autoscaling/v2"  # a v1 object read elsewhere is written as v2
    body = dict(raw)
    body["apiVersion"] = api_version
    body["kind"] = "HorizontalPodAutoscaler"
    body["status"] = dict(status)
    path = hpa_status_path(
        str(meta.get("namespace") or ""), str(meta.get("name") or ""), api_version
    )
    return await put_json(session, path, body, timeout=timeout)
