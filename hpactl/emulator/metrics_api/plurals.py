"""Which resource a custom metric value is served under: a describedObject's
(group, kind) mapped to the kind's plural.

Upstream, the HPA controller maps the kind through its RESTMapper and adapters serve
the metric under that resource, so a CRD's declared plural counts. The emulator asks
a :data:`KindResolver` (normally :func:`registry_kinds`, the emulator's own registry
of built-in kinds and installed CRDs) at each request. Kinds it does not know fall
back to a table of common built-in kinds, then to Go's guessed plural.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hpactl.emulator.registry import Registry

__all__ = [
    "ROOT_SCOPED_KINDS",
    "GroupResource",
    "KindCache",
    "KindMapping",
    "KindResolver",
    "guess_plural",
    "registry_kinds",
]

# Kind -> (group, version, plural) for describedObject kinds adapters commonly serve.
_KNOWN_KINDS: dict[str, tuple[str, str, str]] = {
    "Pod": ("", "v1", "pods"),
    "Service": ("", "v1", "services"),
    "Namespace": ("", "v1", "namespaces"),
    "Node": ("", "v1", "nodes"),
    "Endpoints": ("", "v1", "endpoints"),
    "ReplicationController": ("", "v1", "replicationcontrollers"),
    "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims"),
    "PersistentVolume": ("", "v1", "persistentvolumes"),
    "ConfigMap": ("", "v1", "configmaps"),
    "Deployment": ("apps", "v1", "deployments"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "DaemonSet": ("apps", "v1", "daemonsets"),
    "Job": ("batch", "v1", "jobs"),
    "CronJob": ("batch", "v1", "cronjobs"),
    "Ingress": ("networking.k8s.io", "v1", "ingresses"),
    "HorizontalPodAutoscaler": ("autoscaling", "v2", "horizontalpodautoscalers"),
}
ROOT_SCOPED_KINDS = frozenset({"Namespace", "Node", "PersistentVolume"})


def guess_plural(kind: str) -> str:
    """Go meta.UnsafeGuessKindToResource: lowercase and pluralize naively."""
    lower = kind.lower()
    if not lower:
        return lower
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def _group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


@dataclass(frozen=True, slots=True)
class GroupResource:
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @classmethod
    def parse(cls, text: str) -> GroupResource:
        # schema.ParseGroupResource: "deployments.apps" -> (apps, deployments)
        resource, _, group = text.partition(".")
        return cls(group, resource)

    def matches_request(self, requested: GroupResource) -> bool:
        if self.resource != requested.resource:
            return False
        return requested.group in ("", self.group)


@dataclass(frozen=True, slots=True)
class KindMapping:
    """Where a kind is served: its group, preferred version and plural."""

    group: str
    version: str
    plural: str


KindResolver = Callable[[str, str], "KindMapping | None"]
"""(group, kind) -> the kind's mapping, or None for a kind the server does not know."""


def registry_kinds(registry: Registry) -> KindResolver:
    """A KindResolver reading the emulator's registry at each call: built-in kinds and
    the kinds of every CRD installed at that moment, with the plural it declares."""

    def resolve(group: str, kind: str) -> KindMapping | None:
        rt = registry.by_kind(group, kind)
        if rt is None:
            return None
        preferred = registry.preferred_version(group)
        served = registry.get(group, preferred, rt.plural) is not None
        return KindMapping(group, preferred if served else rt.version, rt.plural)

    return resolve


def _fallback_mapping(group: str, kind: str) -> KindMapping:
    """For kinds the resolver does not know: the built-in table's plural (whatever the
    group), else Go's meta.UnsafeGuessKindToResource."""
    known = _KNOWN_KINDS.get(kind)
    if known is not None:
        return KindMapping(group, known[1], known[2])
    return KindMapping(group, "", guess_plural(kind))


def _default_group(kind: str) -> str:
    known = _KNOWN_KINDS.get(kind)
    return known[0] if known else ""


class KindCache:
    """The kind lookups of one request, each (group, kind) resolved once."""

    def __init__(self, resolve: KindResolver | None) -> None:
        self._resolve = resolve
        self._seen: dict[tuple[str, str], KindMapping] = {}

    def mapping(self, group: str, kind: str) -> KindMapping:
        found = self._seen.get((group, kind))
        if found is None:
            resolved = self._resolve(group, kind) if self._resolve is not None else None
            found = resolved or _fallback_mapping(group, kind)
            self._seen[(group, kind)] = found
        return found

    def resource_of(self, described: Mapping[str, Any]) -> GroupResource:
        """The resource a describedObject's values are served under: the group of its
        apiVersion (without one, the built-in kind's group) and that kind's plural."""
        kind = str(described.get("kind", ""))
        api_version = described.get("apiVersion")
        group = _group_of(str(api_version)) if api_version else _default_group(kind)
        return GroupResource(group, self.mapping(group, kind).plural)

    def default_api_version(self, kind: str) -> str | None:
        """What adapters write for a describedObject without apiVersion: they build it
        through custom-metrics-apiserver's helpers.ReferenceFor, Group + "/" + Version
        of the kind's mapping ("/v1" for core kinds)."""
        group = _default_group(kind)
        mapping = self.mapping(group, kind)
        return f"{group}/{mapping.version}" if mapping.version else None
