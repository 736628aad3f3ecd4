"""The controller's writes and live reads, over ``hpactl.kube.requests``.

Thin adapters the sync uses through small interfaces, so a richer implementation
(``hpactl.kube`` scaling/status/events) can replace them without touching the sync:

* :class:`RestMapper` — (group, kind) → the resources serving it, from discovery,
  cached with a TTL (client-go's deferred discovery REST mapper, no disk cache).
* :class:`ScaleClient` — ``GET``/``PUT .../scale`` of any scalable kind, the update
  retried on conflict (client-go ``retry.RetryOnConflict`` with ``DefaultRetry``).
* :class:`StatusWriter` — ``PUT .../horizontalpodautoscalers/<name>/status``.
* :class:`EventRecorder` — core/v1 Events from ``horizontal-pod-autoscaler``;
  a repeat of an identical event within the correlator window is a PATCH of
  ``count``/``lastTimestamp`` on the existing Event (client-go's EventCorrelator).

Every request carries a timeout (the session's, or the one given here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from hpactl.clock import Clock
from hpactl.core.decide import ScaleView
from hpactl.kube import requests as kreq
from hpactl.kube.errors import ApiError, Conflict, NotFound
from hpactl.kube.paths import resource_path
from hpactl.kube.session import KubeSession
from hpactl.model.hpa import HPA
from hpactl.model.times import format_time


class EventTarget(Protocol):
    """What an Event needs of its involved object (an ``HPA`` qualifies)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...


@dataclass(frozen=True, slots=True)
class InvolvedObject:
    """An HPA known only by key (one that could not be parsed)."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""


__all__ = [
    "EVENT_SOURCE",
    "EventRecorder",
    "EventTarget",
    "InvolvedObject",
    "MappingError",
    "RestMapper",
    "RestMapping",
    "ScaleClient",
    "StatusWriter",
    "parse_group_version",
]

EVENT_SOURCE = "horizontal-pod-autoscaler"


class MappingError(Exception):
    """No resource serves the kind (text as Go's ``meta.NoKindMatchError``)."""


@dataclass(frozen=True, slots=True)
class RestMapping:
    """One REST mapping: where a kind is served."""

    group: str
    version: str
    resource: str
    namespaced: bool = True

    @property
    def group_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


def parse_group_version(api_version: str) -> tuple[str, str]:
    """Go ``schema.ParseGroupVersion``: ``apps/v1`` → (apps, v1); ``v1`` → ("", v1)."""
    if not api_version or api_version == "/":
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected GroupVersion string: {api_version}")


class RestMapper:
    """Discovery-backed (group, kind) → mappings, preferred version first."""

    def __init__(
        self, session: KubeSession, clock: Clock, *, ttl: float = 300.0, timeout: float = 10.0
    ) -> None:
        self._s = session
        self._clock = clock
        self._ttl = ttl
        self._timeout = timeout
        self._groups: dict[str, tuple[float, list[tuple[str, list[dict[str, Any]]]]]] = {}
        self._lock = asyncio.Lock()

    def invalidate(self) -> None:
        self._groups.clear()

    async def _group(self, group: str) -> list[tuple[str, list[dict[str, Any]]]]:
        now = self._clock.monotonic()
        hit = self._groups.get(group)
        if hit is not None and hit[0] > now:
            return hit[1]
        async with self._lock:
            hit = self._groups.get(group)
            if hit is not None and hit[0] > now:
                return hit[1]
            out: list[tuple[str, list[dict[str, Any]]]] = []
            if group == "":
                versions = ["v1"]
            else:
                try:
                    g = await kreq.get_json(self._s, f"/apis/{group}", timeout=self._timeout)
                except NotFound:
                    g = {}
                preferred = (g.get("preferredVersion") or {}).get("version")
                versions = [str(v.get("version")) for v in g.get("versions") or []]
                if preferred in versions:
                    versions.remove(preferred)
                    versions.insert(0, preferred)
            for v in versions:
                path = "/api/v1" if group == "" else f"/apis/{group}/{v}"
                try:
                    rl = await kreq.get_json(self._s, path, timeout=self._timeout)
                except NotFound:
                    continue
                out.append((v, list(rl.get("resources") or [])))
            self._groups[group] = (now + self._ttl, out)
            return out

    async def mappings(self, group: str, kind: str) -> list[RestMapping]:
        """Every resource serving ``group``/``kind``; MappingError when none."""
        found: list[RestMapping] = []
        for version, resources in await self._group(group):
            for r in resources:
                name = str(r.get("name") or "")
                if "/" in name or r.get("kind") != kind:
                    continue
                found.append(RestMapping(group, version, name, bool(r.get("namespaced", True))))
        if not found:
            # A stale discovery cache must not hide a kind installed since.
            self._groups.pop(group, None)
            raise MappingError(f'no matches for kind "{kind}" in group "{group}"')
        return found


def _scale_view(raw: dict[str, Any]) -> ScaleView:
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    return ScaleView(
        spec_replicas=int(spec.get("replicas") or 0),
        status_replicas=int(status.get("replicas") or 0),
        selector=str(status.get("selector") or ""),
    )


class ScaleClient:
    """The scale subresource of any target (``scaleNamespacer`` in upstream)."""

    def __init__(self, session: KubeSession, *, timeout: float = 10.0, retries: int = 5) -> None:
        self._s = session
        self._timeout = timeout
        self._retries = retries

    def _path(self, m: RestMapping, namespace: str, name: str) -> str:
        return resource_path(
            m.group, m.version, m.resource, namespace=namespace, name=name, subresource="scale"
        )

    async def get(
        self, m: RestMapping, namespace: str, name: str
    ) -> tuple[ScaleView, dict[str, Any]]:
        raw = await kreq.get_json(self._s, self._path(m, namespace, name), timeout=self._timeout)
        return _scale_view(raw), raw

    async def get_any(
        self, mappings: Sequence[RestMapping], namespace: str, name: str
    ) -> tuple[ScaleView, RestMapping, dict[str, Any]]:
        """``scaleForResourceMappings``: the first mapping that answers; else the first error."""
        first: Exception | None = None
        for m in mappings:
            try:
                view, raw = await self.get(m, namespace, name)
            except ApiError as exc:
                if first is None:
                    first = exc
                continue
            return view, m, raw
        raise first if first is not None else MappingError("unrecognized resource")

    async def update(
        self,
        m: RestMapping,
        namespace: str,
        name: str,
        replicas: int,
        *,
        current: dict[str, Any] | None = None,
        resource_version: str = "",
    ) -> None:
        """Write ``spec.replicas``; on 409 re-read the scale and try again."""
        scale = current
        if scale is None:
            scale = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": name, "namespace": namespace},
            }
            if resource_version:
                scale["metadata"]["resourceVersion"] = resource_version
        path = self._path(m, namespace, name)
        for attempt in range(self._retries):
            body = dict(scale)
            body["spec"] = {**(scale.get("spec") or {}), "replicas": replicas}
            try:
                await kreq.put_json(self._s, path, body, timeout=self._timeout)
                return
            except Conflict:
                if attempt + 1 >= self._retries:
                    raise
                scale = await kreq.get_json(self._s, path, timeout=self._timeout)


class StatusWriter:
    """``UpdateStatus`` of an autoscaling/v2 HPA (optimistic on resourceVersion)."""

    def __init__(self, session: KubeSession, *, timeout: float = 10.0) -> None:
        self._s = session
        self._timeout = timeout

    async def update(self, hpa: HPA, status_raw: dict[str, Any]) -> str:
        """Write the status; returns the new resourceVersion (Conflict if stale)."""
        path = resource_path(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            namespace=hpa.namespace,
            name=hpa.name,
            subresource="status",
        )
        # The status strategy ignores spec and metadata changes, so a body with the
        # identity, the resourceVersion precondition and the new status is enough.
        meta: dict[str, Any] = {"name": hpa.name, "namespace": hpa.namespace}
        if hpa.resource_version:
            meta["resourceVersion"] = hpa.resource_version
        if hpa.uid:
            meta["uid"] = hpa.uid
        body = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": meta,
            "status": status_raw,
        }
        out = await kreq.put_json(self._s, path, body, timeout=self._timeout)
        return str((out.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(slots=True)
class _Seen:
    name: str
    count: int
    first: datetime
    last: datetime


class EventRecorder:
    """core/v1 Events on HPAs, aggregated like client-go's correlator.

    An identical event (same object, type, reason, message) seen again within
    ``window`` becomes ``count+1`` on the existing Event instead of a new object.
    """

    def __init__(
        self,
        session: KubeSession,
        clock: Clock,
        *,
        component: str = EVENT_SOURCE,
        host: str = "",
        timeout: float = 10.0,
        window: timedelta = timedelta(minutes=10),
        max_entries: int = 4096,
    ) -> None:
        self._s = session
        self._clock = clock
        self._component = component
        self._host = host
        self._timeout = timeout
        self._window = window
        self._max = max_entries
        self._seen: dict[tuple[str, ...], _Seen] = {}
        self._seq = 0

    def _name(self, obj_name: str, now: datetime) -> str:
        # client-go: fmt.Sprintf("%v.%x", ref.Name, t.UnixNano()); the sequence keeps
        # names unique when a virtual clock stands still.
        self._seq += 1
        nanos = int(now.timestamp()) * 1_000_000_000 + now.microsecond * 1000 + self._seq
        return f"{obj_name}.{nanos:x}"

    def forget(self, namespace: str, name: str) -> None:
        for k in [k for k in self._seen if k[0] == namespace and k[1] == name]:
            del self._seen[k]

    async def record(self, hpa: EventTarget, type_: str, reason: str, message: str) -> None:
        now = self._clock.now()
        key = (hpa.namespace, hpa.name, hpa.uid, type_, reason, message)
        seen = self._seen.get(key)
        ns = hpa.namespace
        if seen is not None and now - seen.last <= self._window:
            patch = {
                "count": seen.count + 1,
                "lastTimestamp": format_time(now),
                "message": message,
            }
            try:
                await kreq.patch_json(
                    self._s,
                    resource_path("", "v1", "events", namespace=ns, name=seen.name),
                    patch,
                    patch_type="strategic",
                    timeout=self._timeout,
                )
            except NotFound:
                seen = None  # deleted meanwhile (TTL): create a new one
            else:
                seen.count += 1
                seen.last = now
                return
        name = self._name(hpa.name, now)
        ts = format_time(now)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {
                "kind": "HorizontalPodAutoscaler",
                "namespace": ns,
                "name": hpa.name,
                "uid": hpa.uid,
                "apiVersion": "autoscaling/v2",
                "resourceVersion": hpa.resource_version,
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "count": 1,
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "source": {
                "component": self._component,
                **({"host": self._host} if self._host else {}),
            },
            "reportingComponent": self._component,
            "reportingInstance": self._host,
        }
        await kreq.create_json(
            self._s, resource_path("", "v1", "events", namespace=ns), body, timeout=self._timeout
        )
        if len(self._seen) >= self._max:
            oldest = min(self._seen, key=lambda k: self._seen[k].last)
            del self._seen[oldest]
        self._seen[key] = _Seen(name, 1, now, now)
