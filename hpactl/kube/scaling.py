"""The scale subresource of any target (autoscaling/v1 Scale JSON).

``await get_scale(session, mapper, namespace, api_version, kind, name, *, timeout=None)
-> ScaleResult``
    upstream ``scaleForResourceMappings``: resolve (group, kind) through discovery,
    GET ``.../{resource}/{name}/scale`` on each mapping in order, return the first
    success; if all fail raise the FIRST error; no mappings → ``KubeError("unrecognized
    resource")``; a bad apiVersion → ``KubeError`` with Go's ParseGroupVersion text.
    ``ScaleResult(scale: ScaleView, mapping: RestMapping)``.

``await update_scale(session, mapping, namespace, name, replicas, *, current=None,
resource_version=None, expected_replicas=None, backoff=DEFAULT_RETRY,
sleep=asyncio.sleep, timeout=None) -> ScaleView``
    PUT ``.../scale`` with ``spec.replicas``; on Conflict re-GET the scale, set the
    replicas again and PUT (client-go ``retry.RetryOnConflict(retry.DefaultRetry, ...)``:
    5 steps, 10 ms, factor 1, jitter 0.1). ``current`` (the scale read at the start
    of the sync) is used for the first attempt, as upstream does; or give just its
    ``resource_version`` (e.g. of the cached workload: the scale subresource shares
    the object's resourceVersion); with neither, the scale is read first. The last Conflict
    is raised when the steps run out.

    ``expected_replicas``: the ``spec.replicas`` the decision was made from. When the
    re-read after a Conflict shows other replicas, the decision rests on stale input
    and is not sent again: ``StaleScale`` is raised with the fresh scale, for the
    caller to decide anew. Only a Conflict over something else (the object's status,
    its labels) is retried with the same replicas.

``await read_scale(session, mapping, namespace, name, *, timeout=None) -> ScaleView``
    GET ``.../scale`` for a known mapping.

``ScaleView(namespace, name, spec_replicas, status_replicas, selector,
resource_version, uid)``: a plain projection.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hpactl.kube.errors import Conflict, KubeError
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import get_json, put_json
from hpactl.kube.restmapper import (
    UNRECOGNIZED_RESOURCE,
    RestMapper,
    RestMapping,
    split_api_version,
)
from hpactl.kube.session import KubeSession

__all__ = [
    "DEFAULT_RETRY",
    "Backoff",
    "ScaleResult",
    "ScaleView",
    "StaleScale",
    "get_scale",
    "read_scale",
    "scale_path",
    "scale_view_from_raw",
    "update_scale",
]


@dataclass(frozen=True, slots=True)
class Backoff:
    """wait.Backoff: ``steps`` attempts, sleeping ``duration`` (times factor, plus jitter) between."""

    steps: int = 5
    duration: float = 0.010
    factor: float = 1.0
    jitter: float = 0.1

    def delays(self) -> list[float]:
        out: list[float] = []
        d = self.duration
        for _ in range(max(0, self.steps - 1)):
            j = d + (random.random() * self.jitter * d if self.jitter > 0 else 0.0)
            out.append(j)
            d *= self.factor
        return out


#: client-go ``retry.DefaultRetry``.
DEFAULT_RETRY = Backoff()


@dataclass(frozen=True, slots=True)
class ScaleView:
    namespace: str
    name: str
    spec_replicas: int
    status_replicas: int
    selector: str
    resource_version: str
    uid: str = ""


class StaleScale(KubeError):
    """The target's replicas changed since the decision was made (see update_scale)."""

    def __init__(self, scale: ScaleView, expected: int) -> None:
        super().__init__(
            f"the scale of {scale.namespace}/{scale.name} changed while deciding: "
            f"spec.replicas is {scale.spec_replicas}, the decision was made from {expected}"
        )
        self.scale = scale
        self.expected = expected


@dataclass(frozen=True, slots=True)
class ScaleResult:
    scale: ScaleView
    mapping: RestMapping


def scale_view_from_raw(raw: Mapping[str, Any]) -> ScaleView:
    meta = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    return ScaleView(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        spec_replicas=int(spec.get("replicas") or 0),
        status_replicas=int(status.get("replicas") or 0),
        selector=str(status.get("selector") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        uid=str(meta.get("uid") or ""),
    )


def scale_path(mapping: RestMapping, namespace: str, name: str) -> str:
    return resource_path(
        mapping.group,
        mapping.version,
        mapping.resource,
        namespace=namespace if mapping.namespaced else None,
        name=name,
        subresource="scale",
    )


async def get_scale(
    session: KubeSession,
    mapper: RestMapper,
    namespace: str,
    api_version: str,
    kind: str,
    name: str,
    *,
    timeout: float | None = None,
) -> ScaleResult:
    try:
        group, _version = split_api_version(api_version)
    except ValueError as exc:
        raise KubeError(str(exc)) from None
    mappings = await mapper.mappings(group, kind)
    if not mappings:
        raise KubeError(UNRECOGNIZED_RESOURCE)
    first: KubeError | None = None
    for m in mappings:
        try:
            raw = await get_json(session, scale_path(m, namespace, name), timeout=timeout)
        except KubeError as exc:
            if first is None:
                first = exc
            continue
        return ScaleResult(scale=scale_view_from_raw(raw), mapping=m)
    assert first is not None
    raise first


async def read_scale(
    session: KubeSession,
    mapping: RestMapping,
    namespace: str,
    name: str,
    *,
    timeout: float | None = None,
) -> ScaleView:
    return scale_view_from_raw(
        await get_json(session, scale_path(mapping, namespace, name), timeout=timeout)
    )


def _scale_body(
    mapping: RestMapping, namespace: str, name: str, rv: str, replicas: int
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if mapping.namespaced:
        meta["namespace"] = namespace
    if rv:
        meta["resourceVersion"] = rv
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas},
    }


async def update_scale(
    session: KubeSession,
    mapping: RestMapping,
    namespace: str,
    name: str,
    replicas: int,
    *,
    current: ScaleView | None = None,
    resource_version: str | None = None,
    expected_replicas: int | None = None,
    backoff: Backoff = DEFAULT_RETRY,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    timeout: float | None = None,
) -> ScaleView:
    path = scale_path(mapping, namespace, name)
    delays = backoff.delays()
    attempt = 0
    rv = current.resource_version if current is not None else resource_version
    while True:
        if rv is None:
            fresh = await read_scale(session, mapping, namespace, name, timeout=timeout)
            if expected_replicas is not None and fresh.spec_replicas != expected_replicas:
                raise StaleScale(fresh, expected_replicas)
            rv = fresh.resource_version
        try:
            raw = await put_json(
                session, path, _scale_body(mapping, namespace, name, rv, replicas), timeout=timeout
            )
            return scale_view_from_raw(raw)
        except Conflict:
            if attempt >= len(delays):
                raise
            await sleep(delays[attempt])
            attempt += 1
            rv = None  # re-GET before the next try
