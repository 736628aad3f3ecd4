"""Discovery of (group, kind) → REST mappings, cached with a TTL, refreshed on a miss.

Mirrors the deferred discovery REST mapper kube-controller-manager gives the HPA
controller: the preferred version of a group comes first, then the other served
versions in discovery order. No disk cache.

``RestMapper(session, *, ttl=300.0, monotonic=time.monotonic, timeout=None)``
``await mapper.mappings(group, kind) -> list[RestMapping]``
    Never empty: an unknown kind raises ``NoKindMatchError`` whose text is apimachinery's
    ``no matches for kind "Foo" in group "example.com"``. A miss (or an expired entry)
    re-reads the group's discovery documents once before failing.
``await mapper.mapping(group, kind) -> RestMapping``   first (preferred) mapping
``mapper.invalidate()``                                drop everything cached

``RestMapping(group, version, kind, resource, namespaced, has_scale)`` with
``.group_resource`` = Go ``GroupResource.String()`` (``deployments.apps``).
``UNRECOGNIZED_RESOURCE`` is upstream's text for an empty mapping list
(``scaleForResourceMappings``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hpactl.kube.errors import ApiError, KubeError
from hpactl.kube.requests import get_json
from hpactl.kube.session import KubeSession

__all__ = [
    "UNRECOGNIZED_RESOURCE",
    "NoKindMatchError",
    "RestMapper",
    "RestMapping",
    "split_api_version",
]

UNRECOGNIZED_RESOURCE = "unrecognized resource"


class NoKindMatchError(KubeError):
    """apimachinery ``meta.NoKindMatchError`` (no versions searched)."""

    def __init__(self, group: str, kind: str) -> None:
        super().__init__(f'no matches for kind "{kind}" in group "{group}"')
        self.group = group
        self.kind = kind


@dataclass(frozen=True, slots=True)
class RestMapping:
    group: str
    version: str
    kind: str
    resource: str
    namespaced: bool
    has_scale: bool

    @property
    def group_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def split_api_version(api_version: str) -> tuple[str, str]:
    """Go ``schema.ParseGroupVersion``: "apps/v1" → ("apps", "v1"), "v1" → ("", "v1").

    Raises ValueError with Go's text for more than one slash.
    """
    if api_version in ("", "/"):
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected GroupVersion string: {api_version}")


@dataclass(slots=True)
class _GroupEntry:
    fetched_at: float
    # kind → mappings, preferred version first
    kinds: dict[str, list[RestMapping]]


def _mappings_from_resource_list(
    group: str, version: str, doc: Mapping[str, Any]
) -> dict[str, RestMapping]:
    resources = doc.get("resources") or []
    names = {str(r.get("name", "")) for r in resources}
    out: dict[str, RestMapping] = {}
    for r in resources:
        name = str(r.get("name", ""))
        if not name or "/" in name:
            continue
        kind = str(r.get("kind", ""))
        if not kind or kind in out:
            continue
        out[kind] = RestMapping(
            group=str(r.get("group") or group),
            version=str(r.get("version") or version),
            kind=kind,
            resource=name,
            namespaced=bool(r.get("namespaced", False)),
            has_scale=f"{name}/scale" in names,
        )
    return out


class RestMapper:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession,
        *,
        ttl: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
        timeout: float | None = None,
    ) -> None:
        self._session = session
        self._ttl = ttl
        self._monotonic = monotonic
        self._timeout = timeout
        self._groups: dict[str, _GroupEntry] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def invalidate(self) -> None:
        self._groups.clear()

    def _fresh(self, group: str) -> _GroupEntry | None:
        entry = self._groups.get(group)
        if entry is None or self._monotonic() - entry.fetched_at > self._ttl:
            return None
        return entry

    async def mappings(self, group: str, kind: str) -> list[RestMapping]:
        entry = self._fresh(group)
        if entry is not None and kind in entry.kinds:
            return list(entry.kinds[kind])
        entry = await self._refresh(group)
        found = entry.kinds.get(kind)
        if not found:
            raise NoKindMatchError(group, kind)
        return list(found)

    async def mapping(self, group: str, kind: str) -> RestMapping:
        return (await self.mappings(group, kind))[0]

    async def _refresh(self, group: str) -> _GroupEntry:
        lock = self._locks.setdefault(group, asyncio.Lock())
        seen = self._groups.get(group)
        async with lock:
            # Someone refreshed while we waited: use theirs.
            entry = self._groups.get(group)
            if entry is not None and entry is not seen:
                return entry
            entry = _GroupEntry(fetched_at=self._monotonic(), kinds=await self._discover(group))
            self._groups[group] = entry
            return entry

    async def _versions(self, group: str) -> list[str]:
        s = self._session
        if group == "":
            doc = await get_json(s, "/api", timeout=self._timeout)
            return [str(v) for v in doc.get("versions") or []]
        doc = await get_json(s, "/apis", timeout=self._timeout)
        for g in doc.get("groups") or []:
            if g.get("name") != group:
                continue
            versions = [str(v.get("version")) for v in g.get("versions") or []]
            preferred = str((g.get("preferredVersion") or {}).get("version") or "")
            if preferred in versions:
                versions.remove(preferred)
                versions.insert(0, preferred)
            return versions
        return []

    async def _discover(self, group: str) -> dict[str, list[RestMapping]]:
        kinds: dict[str, list[RestMapping]] = {}
        for version in await self._versions(group):
            path = f"/api/{version}" if group == "" else f"/apis/{group}/{version}"
            try:
                doc = await get_json(self._session, path, timeout=self._timeout)
            except ApiError:
                # An unavailable version (e.g. an aggregated API down) is skipped,
                # as discovery does with partial failures.
                continue
            for kind, m in _mappings_from_resource_list(group, version, doc).items():
                kinds.setdefault(kind, []).append(m)
        return kinds
