"""Read-only typed views over informer stores (client-go listers).

Listers never call the API: they answer from the cache, in key order, and return
the frozen projections (never the stores' internals).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hpactl.cache.informer import Informer
from hpactl.cache.projections import WorkloadScale
from hpactl.cache.store import NAMESPACE_INDEX, ProjectionError, object_key

if TYPE_CHECKING:
    from hpactl.model.hpa import HPA
    from hpactl.model.pod import PodView
    from hpactl.model.topology import NodeLabels

__all__ = [
    "HPA_TARGET_INDEX",
    "POD_LABEL_INDEX",
    "HPALister",
    "LabelMatcher",
    "NodeLister",
    "PodLister",
    "WorkloadLister",
    "hpa_target_index",
    "label_index_value",
    "pod_label_index",
    "target_key",
]

HPA_TARGET_INDEX = "target"
POD_LABEL_INDEX = "label"


def target_key(kind: str, namespace: str, name: str) -> str:
    """Index value for a scale target: ``Kind/namespace/name``."""
    return f"{kind}/{namespace}/{name}"


def hpa_target_index(hpa: HPA) -> Iterable[str]:
    """Index function: the HPA's scale target (HPAs target objects in their namespace)."""
    ref = hpa.spec.scale_target_ref
    return (target_key(ref.kind, hpa.namespace, ref.name),)


def label_index_value(namespace: str, key: str, value: str) -> str:
    """Index value for "a pod in `namespace` with label `key`=`value`"."""
    return f"{namespace}/{key}={value}"


def pod_label_index(pod: PodView) -> Iterable[str]:
    """Index function: every label of the pod, qualified by its namespace."""
    ns = pod.namespace
    return tuple(label_index_value(ns, k, v) for k, v in pod.labels.items())


def _pinned_labels(selector: object) -> list[tuple[str, str]]:
    """(key, value) pairs every match must carry: ``k=v``, ``k==v``, ``k in (v)``.

    Read from a `hpactl.model.selectors.Selector`'s requirements; any other matcher
    gives none (the caller then scans the namespace).
    """
    out: list[tuple[str, str]] = []
    requirements: Iterable[Any] = getattr(selector, "requirements", ())
    for req in requirements:
        op = getattr(req, "operator", None)
        values: tuple[str, ...] = tuple(getattr(req, "values", ()))
        if op in ("=", "==", "in") and len(values) == 1:
            out.append((req.key, values[0]))
    return out


class LabelMatcher(Protocol):
    """What `PodLister.list` needs from a selector (``hpactl.model.selectors.Selector``)."""

    def matches(self, labels: Mapping[str, str]) -> bool: ...


class HPALister:
    """HPAs (autoscaling/v2 projections) from the shared HPA informer."""

    __slots__ = ("_informer",)

    def __init__(self, informer: Informer[HPA]) -> None:
        self._informer = informer

    @property
    def informer(self) -> Informer[HPA]:
        return self._informer

    def get(self, namespace: str, name: str) -> HPA | None:
        """The HPA, or None if absent or malformed (see `get_error`)."""
        return self._informer.store.get(object_key(namespace, name))

    def get_error(self, namespace: str, name: str) -> ProjectionError | None:
        """Why a stored HPA could not be read (its `InvalidHPA` message), if it could not."""
        return self._informer.store.get_error(object_key(namespace, name))

    def exists(self, namespace: str, name: str) -> bool:
        """True if the object exists, readable or not."""
        return object_key(namespace, name) in self._informer.store

    def resource_version(self, namespace: str, name: str) -> str | None:
        return self._informer.store.resource_version(object_key(namespace, name))

    def by_target(self, kind: str, namespace: str, name: str) -> list[HPA]:
        """HPAs whose ``scaleTargetRef`` names this object (usually zero or one)."""
        return self._informer.store.by_index(HPA_TARGET_INDEX, target_key(kind, namespace, name))

    def list(self, namespace: str | None = None) -> list[HPA]:
        store = self._informer.store
        if namespace is None:
            return sorted(store.list(), key=lambda h: (h.namespace, h.name))
        return store.by_index(NAMESPACE_INDEX, namespace)

    def keys(self) -> builtins.list[str]:
        """Every HPA key, malformed ones included."""
        return sorted(self._informer.store.keys())

    def informer_for(self, _key: str) -> Informer[HPA]:
        """The informer of ``key`` (one source: always the same; see ``HPASources``)."""
        return self._informer

    def conflicting(self, _hpa: HPA) -> builtins.list[HPA]:
        """Built-in HPAs an hpactl HPA conflicts with: none, with one source."""
        return []

    def crd_targeting(self, _kind: str, _namespace: str, _name: str) -> builtins.list[str]:
        return []


class PodLister:
    """Pods (PodView projections) from the shared pod informer, indexed by namespace."""

    __slots__ = ("_informer",)

    def __init__(self, informer: Informer[PodView]) -> None:
        self._informer = informer

    @property
    def informer(self) -> Informer[PodView]:
        return self._informer

    def get(self, namespace: str, name: str) -> PodView | None:
        return self._informer.store.get(object_key(namespace, name))

    def list(self, namespace: str, selector: LabelMatcher | None = None) -> list[PodView]:
        """Pods of `namespace` (in name order), those matching `selector` if given.

        Go's ``podLister.Pods(ns).List(selector)``. When the selector pins a label to
        one value and the pod informer has the label index, only the pods carrying
        that label are tested instead of the whole namespace.
        """
        store = self._informer.store
        if selector is None:
            return store.by_index(NAMESPACE_INDEX, namespace)
        if getattr(selector, "is_nothing", False):
            return []
        candidates: list[str] | None = None
        if POD_LABEL_INDEX in store.index_names:
            for key, value in _pinned_labels(selector):
                keys = store.index_keys(POD_LABEL_INDEX, label_index_value(namespace, key, value))
                if candidates is None or len(keys) < len(candidates):
                    candidates = keys
                if not candidates:
                    return []
        if candidates is None:
            pods = store.by_index(NAMESPACE_INDEX, namespace)
        else:
            pods = [p for p in map(store.get, candidates) if p is not None]
        return [p for p in pods if selector.matches(p.labels)]


class WorkloadLister:
    """Deployments, ReplicaSets, StatefulSets and ReplicationControllers as their scale."""

    __slots__ = ("_informers",)

    def __init__(self, informers: Mapping[str, Informer[WorkloadScale]]) -> None:
        self._informers = dict(informers)

    def supports(self, kind: str) -> bool:
        """Whether `kind` is served from a cache (otherwise read the scale subresource)."""
        return kind in self._informers

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._informers)

    def informer(self, kind: str) -> Informer[WorkloadScale]:
        return self._informers[kind]

    def get(self, kind: str, namespace: str, name: str) -> WorkloadScale | None:
        """The target's scale, or None if the kind is not cached or the object is absent."""
        inf = self._informers.get(kind)
        if inf is None:
            return None
        return inf.store.get(object_key(namespace, name))

    def get_error(self, kind: str, namespace: str, name: str) -> ProjectionError | None:
        inf = self._informers.get(kind)
        return None if inf is None else inf.store.get_error(object_key(namespace, name))

    def list(self, kind: str, namespace: str) -> list[WorkloadScale]:
        inf = self._informers.get(kind)
        return [] if inf is None else inf.store.by_index(NAMESPACE_INDEX, namespace)


class NodeLister:
    """Nodes, as their name and labels (``NodeLabels``)."""

    __slots__ = ("_informer",)

    def __init__(self, informer: Informer[NodeLabels]) -> None:
        self._informer = informer

    @property
    def informer(self) -> Informer[NodeLabels]:
        return self._informer

    @property
    def synced(self) -> bool:
        return self._informer.has_synced

    def get(self, name: str) -> NodeLabels | None:
        return self._informer.store.get(name)

    def list(self) -> list[NodeLabels]:
        return self._informer.store.list()
