"""`MetricsState`: the stored PodMetrics, MetricValues and ExternalMetricValues, the
scripting API tests and ``hpactl simulate`` use, and the writes of the HTTP API."""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from hpactl.emulator import errors
from hpactl.emulator.errors import ApiError
from hpactl.emulator.metrics_api.discovery import resource_list
from hpactl.emulator.metrics_api.groups import (
    EXTERNAL_VALUE,
    METRIC_VALUE,
    METRICS_GROUPS,
    POD_METRICS,
    WRITABLE_KINDS,
    MetricsKind,
)
from hpactl.emulator.metrics_api.normalize import NORMALIZERS, as_mapping
from hpactl.emulator.metrics_api.plurals import GroupResource, KindCache, KindResolver
from hpactl.model.times import format_time

__all__ = ["MetricsState", "Objects"]

Key = tuple[str, str]


class Objects:
    """The objects of one kind, indexed by namespace: lists read one namespace."""

    def __init__(self) -> None:
        self._by_ns: dict[str, dict[str, dict[str, Any]]] = {}

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._by_ns.get(key[0], {}).get(key[1])

    def __contains__(self, key: Key) -> bool:
        return key[1] in self._by_ns.get(key[0], {})

    def __setitem__(self, key: Key, item: dict[str, Any]) -> None:
        self._by_ns.setdefault(key[0], {})[key[1]] = item

    def pop(self, key: Key) -> dict[str, Any] | None:
        names = self._by_ns.get(key[0])
        if names is None:
            return None
        item = names.pop(key[1], None)
        if not names:
            del self._by_ns[key[0]]
        return item

    def items(self, namespace: str | None = None) -> Iterator[tuple[Key, dict[str, Any]]]:
        """In insertion order (namespaces in the order they first appeared)."""
        spaces = [namespace] if namespace is not None else list(self._by_ns)
        for ns in spaces:
            for name, item in self._by_ns.get(ns, {}).items():
                yield (ns, name), item

    def sorted_items(self, namespace: str | None = None) -> list[tuple[Key, dict[str, Any]]]:
        """By namespace, then name (the order list handlers answer in)."""
        spaces = [namespace] if namespace is not None else sorted(self._by_ns)
        out: list[tuple[Key, dict[str, Any]]] = []
        for ns in spaces:
            names = self._by_ns.get(ns, {})
            out.extend(((ns, name), names[name]) for name in sorted(names))
        return out

    def values(self) -> Iterator[dict[str, Any]]:
        for _key, item in self.items():
            yield item


class MetricsState:
    """What the three metrics APIs answer; scripted from Python or written over HTTP.

    ``pod_labels(namespace, name)`` returns the labels of a stored Pod, or None when
    the Pod does not exist; ``now()`` is the emulator's clock. Optional:
    ``object_labels(group, resource, namespace, name)`` gives the labels of any object
    (used by custom-metrics ``{resource}/*`` queries for non-Pod kinds; without it only
    Pods have labels), and ``next_resource_version()`` shares the emulator's sequence
    for objects written over HTTP (otherwise a private counter is used).
    ``kinds(group, kind)`` maps a describedObject's kind to the plural its values are
    served under, asked at each query (so a CRD installed or removed later counts);
    kinds it does not know, or all without it, get the built-in table's plural or
    Go's guess (lowercase, plural by suffix), see :func:`registry_kinds`.
    """

    def __init__(
        self,
        pod_labels: Callable[[str, str], Mapping[str, str] | None],
        now: Callable[[], datetime],
        *,
        object_labels: Callable[[str, str, str, str], Mapping[str, str] | None] | None = None,
        next_resource_version: Callable[[], str] | None = None,
        kinds: KindResolver | None = None,
    ) -> None:
        self.pod_labels = pod_labels
        self.now = now
        self._object_labels = object_labels
        self._kinds = kinds
        counter = itertools.count(1)
        self._next_rv: Callable[[], str] = next_resource_version or (lambda: str(next(counter)))
        self._stores: dict[MetricsKind, Objects] = {k: Objects() for k in WRITABLE_KINDS}
        self._unavailable: frozenset[str] = frozenset()

    # ----------------------------------------------------------------- scripting API

    def set_pod_metrics(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Replace all PodMetrics (metrics.k8s.io/v1beta1 PodMetrics dicts)."""
        self._replace(POD_METRICS, items)

    def put_pod_metrics(self, obj: Mapping[str, Any]) -> None:
        """Create or replace one PodMetrics (a PodMetricsList puts each item)."""
        self._put(POD_METRICS, obj)

    def delete_pod_metrics(self, namespace: str, name: str) -> None:
        self._stores[POD_METRICS].pop((namespace, name))

    def set_custom(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Replace all custom metric values (v1beta2 MetricValue-like dicts)."""
        self._replace(METRIC_VALUE, items)

    def put_custom(self, obj: Mapping[str, Any]) -> None:
        """Create or replace one custom metric value (a MetricValue, with or without
        metadata; a MetricValueList puts each item)."""
        self._put(METRIC_VALUE, obj)

    def delete_custom(self, namespace: str, name: str) -> None:
        self._stores[METRIC_VALUE].pop((namespace, name))

    def set_external(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Replace all external metric values ({namespace, metricName, metricLabels?,
        timestamp?, window?, value})."""
        self._replace(EXTERNAL_VALUE, items)

    def put_external(self, obj: Mapping[str, Any]) -> None:
        """Create or replace one external metric value (an ExternalMetricValueList
        puts each item)."""
        self._put(EXTERNAL_VALUE, obj)

    def delete_external(self, namespace: str, name: str) -> None:
        self._stores[EXTERNAL_VALUE].pop((namespace, name))

    def set_unavailable(self, groups: Iterable[str]) -> None:
        """Make exactly these metrics API groups answer 503 (an empty list restores all)."""
        wanted = frozenset(groups)
        unknown = sorted(wanted - METRICS_GROUPS.keys())
        if unknown:
            raise ValueError(
                f"unknown metrics API group(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(sorted(METRICS_GROUPS))}"
            )
        self._unavailable = wanted

    @property
    def unavailable(self) -> frozenset[str]:
        return self._unavailable

    def pod_metrics(self) -> list[dict[str, Any]]:
        """Stored PodMetrics as given (deep copies), for inspection."""
        return [copy.deepcopy(v) for v in self._stores[POD_METRICS].values()]

    def resource_list(self, group: str) -> dict[str, Any]:
        """The APIResourceList of ``/apis/{group}/{version}``."""
        return resource_list(self, group)

    @staticmethod
    def _normalized(kind: MetricsKind, raw: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return NORMALIZERS[kind](raw, None)
        except ApiError as exc:
            raise ValueError(exc.message) from exc

    def _put(self, kind: MetricsKind, obj: Mapping[str, Any]) -> None:
        items = obj.get("items")
        for raw in items if isinstance(items, list) else [obj]:
            item = self._normalized(kind, raw)
            meta = item["metadata"]
            self._stores[kind][(meta["namespace"], meta["name"])] = item

    def _replace(self, kind: MetricsKind, items: Iterable[Mapping[str, Any]]) -> None:
        store = Objects()
        for raw in items:
            item = self._normalized(kind, raw)
            meta = item["metadata"]
            key = (meta["namespace"], meta["name"])
            named = bool(as_mapping(raw.get("metadata"), "metadata").get("name"))
            if key in store and not named:
                # Generated names can collide (series told apart only by selector
                # expressions): number them. A name given twice: the last one wins.
                for n in itertools.count(2):
                    candidate = (key[0], f"{key[1]}-{n}")
                    if candidate not in store:
                        meta["name"] = candidate[1]
                        key = candidate
                        break
            store[key] = item
        self._stores[kind] = store

    # ----------------------------------------------------------------- for the readers

    def objects(self, kind: MetricsKind) -> Objects:
        """The stored objects of a kind (normalized; do not mutate)."""
        return self._stores[kind]

    def kind_cache(self) -> KindCache:
        """Kind → plural lookups for one request."""
        return KindCache(self._kinds)

    def labels_for(self, gr: GroupResource, namespace: str, name: str) -> Mapping[str, str] | None:
        """The labels of an object, None when it does not exist."""
        if self._object_labels is not None:
            return self._object_labels(gr.group, gr.resource, namespace, name)
        if gr == GroupResource("", "pods"):
            return self.pod_labels(namespace, name)
        return {}

    def render_stored(self, kind: MetricsKind, item: Mapping[str, Any]) -> dict[str, Any]:
        """A stored object as written objects are served: typed, no unset fields."""
        body = {"kind": kind.kind, "apiVersion": kind.api_version}
        body.update(copy.deepcopy(dict(item)))
        for unset in ("timestamp", "window") if kind is POD_METRICS else ("timestamp",):
            if body.get(unset) is None:
                body.pop(unset, None)
        return body

    # ----------------------------------------------------------------- writes over HTTP

    @staticmethod
    def check_body(
        kind: MetricsKind, body: Any, namespace: str, name: str | None
    ) -> Mapping[str, Any]:
        """A written body's type, namespace and name against the request's."""
        if not isinstance(body, Mapping):
            raise errors.bad_request("the body of the request must be a JSON object")
        api_version = body.get("apiVersion")
        if api_version and api_version != kind.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({kind.api_version})"
            )
        body_kind = body.get("kind")
        if body_kind and body_kind != kind.kind:
            raise errors.bad_request(
                f"the kind in the data ({body_kind}) does not match the expected kind ({kind.kind})"
            )
        meta = body.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise errors.bad_request("metadata: expected an object")
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if name is not None and meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                "the name of the object ({}) does not match the name on the URL ({})".format(
                    meta["name"], name
                )
            )
        return body

    def create(
        self, kind: MetricsKind, body: Mapping[str, Any], namespace: str, dry_run: bool
    ) -> dict[str, Any]:
        item = NORMALIZERS[kind](body, namespace)
        meta = item["metadata"]
        key = (namespace, meta["name"])
        if key in self._stores[kind]:
            raise errors.already_exists(kind.group, kind.resource, meta["name"])
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = format_time(self.now())
        if not dry_run:
            meta["resourceVersion"] = self._next_rv()
            self._stores[kind][key] = item
        return self.render_stored(kind, item)

    def update(
        self,
        kind: MetricsKind,
        body: Mapping[str, Any],
        namespace: str,
        name: str,
        dry_run: bool,
        *,
        create: bool,
    ) -> tuple[dict[str, Any], bool]:
        """Replace the object (or create it when ``create``); (served object, created)."""
        old = self._stores[kind].get((namespace, name))
        body = dict(body)
        body["metadata"] = {**dict(body.get("metadata") or {}), "name": name}
        if old is None:
            if not create:
                raise errors.not_found(kind.group, kind.resource, name)
            return self.create(kind, body, namespace, dry_run), True
        old_meta = old["metadata"]
        rv = body["metadata"].get("resourceVersion")
        if rv and old_meta.get("resourceVersion") and rv != old_meta["resourceVersion"]:
            raise errors.conflict(kind.group, kind.resource, name)
        item = NORMALIZERS[kind](body, namespace)
        meta = item["metadata"]
        for kept in ("uid", "creationTimestamp"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
        meta["resourceVersion"] = old_meta.get("resourceVersion", "")
        if not dry_run:
            meta["resourceVersion"] = self._next_rv()
            self._stores[kind][(namespace, name)] = item
        return self.render_stored(kind, item), False

    def delete(self, kind: MetricsKind, namespace: str, name: str, dry_run: bool) -> dict[str, Any]:
        item = self._stores[kind].get((namespace, name))
        if item is None:
            raise errors.not_found(kind.group, kind.resource, name)
        if not dry_run:
            self._stores[kind].pop((namespace, name))
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {
                "name": name,
                "group": kind.group,
                "kind": kind.resource,
                "uid": item["metadata"].get("uid", ""),
            },
        }

    def delete_collection(self, kind: MetricsKind, namespace: str, dry_run: bool) -> None:
        for ns, name in [key for key, _ in self._stores[kind].items(namespace)]:
            self.delete(kind, ns, name, dry_run)
