"""The three metrics APIs an HPA controller reads, served by the emulator.

- ``metrics.k8s.io/v1beta1`` shaped as metrics-server answers it (PodMetrics,
  PodMetricsList, an always-empty NodeMetricsList);
- ``custom.metrics.k8s.io/v1beta2`` shaped as custom-metrics-apiserver based
  adapters answer it (object metrics, ``namespaces/{ns}/metrics/{metric}`` for the
  Namespace kind, ``{resource}/*/{metric}`` with a label selector);
- ``external.metrics.k8s.io/v1beta1`` (``namespaces/{ns}/{metric}``).

Values are scripted from Python (:class:`MetricsState`) or, unlike a real cluster,
written over HTTP: PodMetrics objects on the metrics-server paths, and two
emulator-only kinds, ``MetricValue`` (``custom.metrics.k8s.io/v1beta2``, resource
``metricvalues``) and ``ExternalMetricValue`` (``external.metrics.k8s.io/v1beta1``,
resource ``externalmetricvalues``), so ``kubectl apply -f`` works for all three.

A group made unavailable answers every request below ``/apis/{group}/{version}``
with 503 and the plain-text body ``service unavailable``, which is what
kube-aggregator's proxy handler writes for an APIService whose Available condition
is False (client-go turns it into "the server is currently unable to handle the
request"). The group document ``/apis/{group}`` and the group's entry in ``/apis``
stay, as they do in a real cluster.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from aiohttp import web

from hpactl.emulator import errors
from hpactl.emulator.errors import ApiError
from hpactl.emulator.registry import Registry
from hpactl.model.quantity import parse_quantity
from hpactl.model.selectors import Selector, parse_selector
from hpactl.model.times import format_go_duration, format_time, parse_go_duration, parse_time

__all__ = [
    "CUSTOM_GROUP",
    "CUSTOM_VERSION",
    "EXTERNAL_GROUP",
    "EXTERNAL_VERSION",
    "METRICS_GROUP",
    "METRICS_GROUPS",
    "METRICS_VERSION",
    "KindMapping",
    "KindResolver",
    "MetricsState",
    "metrics_api_group_discovery",
    "metrics_api_openapi_v3",
    "metrics_api_resource_lists",
    "register_metrics_routes",
    "registry_kinds",
]

METRICS_GROUP = "metrics.k8s.io"
METRICS_VERSION = "v1beta1"
CUSTOM_GROUP = "custom.metrics.k8s.io"
CUSTOM_VERSION = "v1beta2"
EXTERNAL_GROUP = "external.metrics.k8s.io"
EXTERNAL_VERSION = "v1beta1"
METRICS_GROUPS: dict[str, str] = {
    METRICS_GROUP: METRICS_VERSION,
    CUSTOM_GROUP: CUSTOM_VERSION,
    EXTERNAL_GROUP: EXTERNAL_VERSION,
}

DEFAULT_WINDOW = "30s"
_WRITE_VERBS = ["create", "delete", "get", "list", "patch", "update"]

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
_ROOT_SCOPED_KINDS = frozenset({"Namespace", "Node", "PersistentVolume"})

_NAME_SANITIZE = re.compile(r"[^a-z0-9.-]+")


def _not_found(group: str, resource: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        404,
        "NotFound",
        f'{qualified} "{name}" not found',
        {"name": name, "group": group, "kind": resource},
    )


def _invalid(group: str, kind: str, name: str, field: str, detail: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{kind}.{group} "{name}" is invalid: {field}: {detail}',
        {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [{"reason": "FieldValueRequired", "message": detail, "field": field}],
        },
    )


# --------------------------------------------------------------------------- helpers


def _guess_plural(kind: str) -> str:
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
class _GroupResource:
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @classmethod
    def parse(cls, text: str) -> _GroupResource:
        # schema.ParseGroupResource: "deployments.apps" -> (apps, deployments)
        resource, _, group = text.partition(".")
        return cls(group, resource)

    def matches_request(self, requested: _GroupResource) -> bool:
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
    return KindMapping(group, "", _guess_plural(kind))


def _default_group(kind: str) -> str:
    known = _KNOWN_KINDS.get(kind)
    return known[0] if known else ""


class _KindCache:
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

    def resource_of(self, described: Mapping[str, Any]) -> _GroupResource:
        """The resource a describedObject's values are served under: the group of its
        apiVersion (without one, the built-in kind's group) and that kind's plural."""
        kind = str(described.get("kind", ""))
        api_version = described.get("apiVersion")
        group = _group_of(str(api_version)) if api_version else _default_group(kind)
        return _GroupResource(group, self.mapping(group, kind).plural)

    def default_api_version(self, kind: str) -> str | None:
        """What adapters write for a describedObject without apiVersion: they build it
        through custom-metrics-apiserver's helpers.ReferenceFor, Group + "/" + Version
        of the kind's mapping ("/v1" for core kinds)."""
        group = _default_group(kind)
        mapping = self.mapping(group, kind)
        return f"{group}/{mapping.version}" if mapping.version else None


def _canonical_quantity(value: Any, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise errors.bad_request(f"{field}: quantities must be a string or a number, got {value!r}")
    try:
        return str(parse_quantity(value))
    except ValueError as exc:
        raise errors.bad_request(f"{field}: {exc}") from exc


def _canonical_time(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return format_time(value)
    try:
        return format_time(parse_time(str(value)))
    except ValueError as exc:
        raise errors.bad_request(f"{field}: {exc}") from exc


def _as_mapping(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise errors.bad_request(f"{field}: expected an object, got {type(value).__name__}")
    return dict(value)


def _string_map(value: Any, field: str) -> dict[str, str]:
    raw = _as_mapping(value, field)
    return {str(k): str(v) for k, v in raw.items()}


def _selector_param(request: web.Request, name: str) -> Selector | None:
    text = request.query.get(name, "")
    if not text:
        return None
    try:
        return parse_selector(text)
    except ValueError as exc:
        raise errors.bad_request(f"unable to parse requirement: {exc}") from exc


def _field_selector_filter(request: web.Request) -> Callable[[str, str], bool]:
    """metadata.name / metadata.namespace field selectors (=, ==, !=), as list handlers accept."""
    text = request.query.get("fieldSelector", "")
    if not text:
        return lambda ns, name: True
    terms: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            positive = False
        elif "==" in part:
            key, value = part.split("==", 1)
            positive = True
        elif "=" in part:
            key, value = part.split("=", 1)
            positive = True
        else:
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key = key.strip()
        if key not in ("metadata.name", "metadata.namespace"):
            raise errors.bad_request(
                f'"{key}" is not a known field selector: only "metadata.name", "metadata.namespace"'
            )
        terms.append((key, positive, value.strip()))

    def accept(ns: str, name: str) -> bool:
        for key, positive, value in terms:
            actual = name if key == "metadata.name" else ns
            if (actual == value) != positive:
                return False
        return True

    return accept


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
    )


def _error_response(err: ApiError) -> web.Response:
    return _json(err.status(), err.code)


def _unavailable_response() -> web.Response:
    # http.Error(w, "service unavailable", 503) in kube-aggregator's proxy handler.
    resp = web.Response(
        text="service unavailable\n", status=503, content_type="text/plain", charset="utf-8"
    )
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp


# --------------------------------------------------------------------------- patches


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


def _strategic_as_merge(target: Any, patch: Any) -> Any:
    """Strategic merge patch reduced to a merge patch: directives are honoured where
    they change the meaning of a map ($patch: delete/replace) and dropped otherwise;
    lists are replaced (none of the types served here has a patch merge key)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    stripped = {k: v for k, v in patch.items() if not k.startswith("$")}
    if directive == "replace":
        return {k: _strategic_as_merge(None, v) for k, v in stripped.items() if v is not None}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in stripped.items():
        if value is None:
            result.pop(key, None)
            continue
        merged = _strategic_as_merge(result.get(key), value)
        if merged is None:
            result.pop(key, None)
        else:
            result[key] = merged
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise errors.bad_request(f'json patch path "{path}" must start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(ops, list):
        raise errors.bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)

    def parent(tokens: list[str], path: str) -> tuple[Any, str]:
        node = doc
        for tok in tokens[:-1]:
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                raise ApiError(422, "Invalid", f'doc is missing path: "{path}"')
        return node, tokens[-1]

    def get(path: str) -> Any:
        node = doc
        for tok in _pointer(path):
            if isinstance(node, dict) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
            else:
                raise ApiError(422, "Invalid", f'doc is missing path: "{path}"')
        return copy.deepcopy(node)

    def remove(path: str) -> Any:
        tokens = _pointer(path)
        if not tokens:
            raise errors.bad_request("cannot remove the whole document")
        node, last = parent(tokens, path)
        if isinstance(node, dict) and last in node:
            return node.pop(last)
        if isinstance(node, list) and last.isdigit() and int(last) < len(node):
            return node.pop(int(last))
        raise ApiError(422, "Invalid", f'doc is missing path: "{path}"')

    def add(path: str, value: Any, replace: bool) -> None:
        nonlocal doc
        tokens = _pointer(path)
        if not tokens:
            doc = value
            return
        node, last = parent(tokens, path)
        if isinstance(node, dict):
            if replace and last not in node:
                raise ApiError(422, "Invalid", f'doc is missing key: "{path}"')
            node[last] = value
        elif isinstance(node, list):
            if last == "-" and not replace:
                node.append(value)
            elif last.isdigit() and int(last) <= len(node) - (1 if replace else 0):
                if replace:
                    node[int(last)] = value
                else:
                    node.insert(int(last), value)
            else:
                raise ApiError(422, "Invalid", f'doc is missing path: "{path}"')
        else:
            raise ApiError(422, "Invalid", f'doc is missing path: "{path}"')

    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise errors.bad_request("json patch operations need 'op' and 'path'")
        kind, path = op["op"], str(op["path"])
        if kind == "add":
            add(path, copy.deepcopy(op.get("value")), replace=False)
        elif kind == "replace":
            add(path, copy.deepcopy(op.get("value")), replace=True)
        elif kind == "remove":
            remove(path)
        elif kind == "move":
            add(path, remove(str(op.get("from", ""))), replace=False)
        elif kind == "copy":
            add(path, get(str(op.get("from", ""))), replace=False)
        elif kind == "test":
            if get(path) != op.get("value"):
                raise ApiError(422, "Invalid", f"testing value {path} failed")
        else:
            raise errors.bad_request(f'unexpected json patch operation "{kind}"')
    return doc


# --------------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class _Kind:
    """One writable kind: where it lives and how its body is validated."""

    group: str
    version: str
    kind: str
    resource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def qualified(self) -> str:
        return f"{self.resource}.{self.group}"


_POD_METRICS = _Kind(METRICS_GROUP, METRICS_VERSION, "PodMetrics", "pods")
_METRIC_VALUE = _Kind(CUSTOM_GROUP, CUSTOM_VERSION, "MetricValue", "metricvalues")
_EXTERNAL_VALUE = _Kind(
    EXTERNAL_GROUP, EXTERNAL_VERSION, "ExternalMetricValue", "externalmetricvalues"
)

_Key = tuple[str, str]


class _Objects:
    """The objects of one kind, indexed by namespace: lists read one namespace."""

    def __init__(self) -> None:
        self._by_ns: dict[str, dict[str, dict[str, Any]]] = {}

    def get(self, key: _Key) -> dict[str, Any] | None:
        return self._by_ns.get(key[0], {}).get(key[1])

    def __contains__(self, key: _Key) -> bool:
        return key[1] in self._by_ns.get(key[0], {})

    def __setitem__(self, key: _Key, item: dict[str, Any]) -> None:
        self._by_ns.setdefault(key[0], {})[key[1]] = item

    def pop(self, key: _Key) -> dict[str, Any] | None:
        names = self._by_ns.get(key[0])
        if names is None:
            return None
        item = names.pop(key[1], None)
        if not names:
            del self._by_ns[key[0]]
        return item

    def items(self, namespace: str | None = None) -> Iterator[tuple[_Key, dict[str, Any]]]:
        """In insertion order (namespaces in the order they first appeared)."""
        spaces = [namespace] if namespace is not None else list(self._by_ns)
        for ns in spaces:
            for name, item in self._by_ns.get(ns, {}).items():
                yield (ns, name), item

    def sorted_items(self, namespace: str | None = None) -> list[tuple[_Key, dict[str, Any]]]:
        """By namespace, then name (the order list handlers answer in)."""
        spaces = [namespace] if namespace is not None else sorted(self._by_ns)
        out: list[tuple[_Key, dict[str, Any]]] = []
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
        self._pod_labels = pod_labels
        self._kinds = kinds
        self._now = now
        self._object_labels = object_labels
        counter = itertools.count(1)
        self._next_rv: Callable[[], str] = next_resource_version or (lambda: str(next(counter)))
        self._stores: dict[_Kind, _Objects] = {
            _POD_METRICS: _Objects(),
            _METRIC_VALUE: _Objects(),
            _EXTERNAL_VALUE: _Objects(),
        }
        self._unavailable: frozenset[str] = frozenset()

    # ----------------------------------------------------------------- scripting API

    def set_pod_metrics(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Replace all PodMetrics (metrics.k8s.io/v1beta1 PodMetrics dicts)."""
        self._replace(_POD_METRICS, items, self._normalize_pod_metrics)

    def put_pod_metrics(self, obj: Mapping[str, Any]) -> None:
        """Create or replace one PodMetrics (a PodMetricsList puts each item)."""
        self._put(_POD_METRICS, obj, self._normalize_pod_metrics)

    def delete_pod_metrics(self, namespace: str, name: str) -> None:
        self._stores[_POD_METRICS].pop((namespace, name))

    def set_custom(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Replace all custom metric values (v1beta2 MetricValue-like dicts)."""
        self._replace(_METRIC_VALUE, items, self._normalize_metric_value)

    def put_custom(self, obj: Mapping[str, Any]) -> None:
        """Create or replace one custom metric value (a MetricValue, with or without
        metadata; a MetricValueList puts each item)."""
        self._put(_METRIC_VALUE, obj, self._normalize_metric_value)

    def delete_custom(self, namespace: str, name: str) -> None:
        self._stores[_METRIC_VALUE].pop((namespace, name))

    def put_external(self, obj: Mapping[str, Any]) -> None:
        """Create or replace one external metric value (an ExternalMetricValueList
        puts each item)."""
        self._put(_EXTERNAL_VALUE, obj, self._normalize_external_value)

    def delete_external(self, namespace: str, name: str) -> None:
        self._stores[_EXTERNAL_VALUE].pop((namespace, name))

    def _put(
        self,
        kind: _Kind,
        obj: Mapping[str, Any],
        normalize: Callable[[Mapping[str, Any], str | None], dict[str, Any]],
    ) -> None:
        items = obj.get("items")
        for raw in items if isinstance(items, list) else [obj]:
            try:
                item = normalize(raw, None)
            except ApiError as exc:
                raise ValueError(exc.message) from exc
            meta = item["metadata"]
            self._stores[kind][(meta["namespace"], meta["name"])] = item

    def set_external(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Replace all external metric values ({namespace, metricName, metricLabels?,
        timestamp?, window?, value})."""
        self._replace(_EXTERNAL_VALUE, items, self._normalize_external_value)

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
        return [copy.deepcopy(v) for v in self._stores[_POD_METRICS].values()]

    # ----------------------------------------------------------------- normalization

    def _replace(
        self,
        kind: _Kind,
        items: Iterable[Mapping[str, Any]],
        normalize: Callable[[Mapping[str, Any], str | None], dict[str, Any]],
    ) -> None:
        store = _Objects()
        for raw in items:
            try:
                item = normalize(raw, None)
            except ApiError as exc:
                raise ValueError(exc.message) from exc
            meta = item["metadata"]
            key = (meta["namespace"], meta["name"])
            named = bool(_as_mapping(raw.get("metadata"), "metadata").get("name"))
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

    def _meta(
        self, kind: _Kind, raw: Mapping[str, Any], namespace: str | None, default_name: str | None
    ) -> dict[str, Any]:
        meta = _as_mapping(raw.get("metadata"), "metadata")
        name = meta.get("name") or default_name
        if not name:
            raise _invalid(
                kind.group,
                kind.kind,
                "",
                "metadata.name",
                "Required value: name or generateName is required",
            )
        ns = meta.get("namespace") or namespace or raw.get("namespace")
        if not ns:
            raise _invalid(kind.group, kind.kind, str(name), "metadata.namespace", "Required value")
        out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in meta.items()}
        out["name"] = str(name)
        out["namespace"] = str(ns)
        if "labels" in meta:
            out["labels"] = _string_map(meta.get("labels"), "metadata.labels")
        if "annotations" in meta:
            out["annotations"] = _string_map(meta.get("annotations"), "metadata.annotations")
        return out

    def _normalize_pod_metrics(
        self, raw: Mapping[str, Any], namespace: str | None
    ) -> dict[str, Any]:
        meta = self._meta(_POD_METRICS, raw, namespace, None)
        containers_raw = raw.get("containers") or []
        if not isinstance(containers_raw, list):
            raise errors.bad_request("containers: expected a list")
        containers = []
        for i, c in enumerate(containers_raw):
            c = _as_mapping(c, f"containers[{i}]")
            usage = _as_mapping(c.get("usage"), f"containers[{i}].usage")
            containers.append(
                {
                    "name": str(c.get("name", "")),
                    "usage": {
                        str(k): _canonical_quantity(v, f"containers[{i}].usage.{k}")
                        for k, v in usage.items()
                    },
                }
            )
        window = raw.get("window")
        if window is not None:
            try:
                window = format_go_duration(parse_go_duration(str(window)))
            except ValueError as exc:
                raise errors.bad_request(f"window: {exc}") from exc
        return {
            "metadata": meta,
            "timestamp": _canonical_time(raw.get("timestamp"), "timestamp"),
            "window": window,
            "containers": containers,
        }

    def _normalize_metric_value(
        self, raw: Mapping[str, Any], namespace: str | None
    ) -> dict[str, Any]:
        described = _as_mapping(raw.get("describedObject"), "describedObject")
        metric = _as_mapping(raw.get("metric"), "metric")
        kind = str(described.get("kind") or "")
        obj_name = str(described.get("name") or "")
        metric_name = str(metric.get("name") or "")
        meta_ns = _as_mapping(raw.get("metadata"), "metadata").get("namespace") or namespace
        if not kind or not obj_name or not metric_name:
            raise _invalid(
                CUSTOM_GROUP,
                "MetricValue",
                str(_as_mapping(raw.get("metadata"), "metadata").get("name", "")),
                "describedObject.kind, describedObject.name, metric.name",
                "Required value",
            )
        if kind in _ROOT_SCOPED_KINDS:
            obj_ns = ""
            # A Namespace's metric is written in that namespace by default.
            default_ns = obj_name if kind == "Namespace" else (meta_ns or "default")
        else:
            obj_ns = str(described.get("namespace") or meta_ns or "")
            if not obj_ns:
                raise _invalid(
                    CUSTOM_GROUP,
                    "MetricValue",
                    obj_name,
                    "describedObject.namespace",
                    "Required value",
                )
            if meta_ns and obj_ns != meta_ns:
                raise errors.bad_request(
                    f"describedObject.namespace ({obj_ns}) must be the namespace of the "
                    f"MetricValue ({meta_ns})"
                )
            default_ns = obj_ns
        labels = "".join(f"-{k}-{v}" for k, v in sorted(_metric_labels({"metric": metric}).items()))
        default_name = _NAME_SANITIZE.sub(
            "-", f"{kind}-{obj_name}-{metric_name}{labels}".lower()
        ).strip("-.")
        meta = self._meta(_METRIC_VALUE, raw, meta_ns or default_ns, default_name)
        out_described: dict[str, Any] = {"kind": kind, "name": obj_name}
        if obj_ns:
            out_described["namespace"] = obj_ns
        if described.get("apiVersion"):
            out_described["apiVersion"] = str(described["apiVersion"])
        out_metric: dict[str, Any] = {"name": metric_name}
        if metric.get("selector") is not None:
            out_metric["selector"] = _as_mapping(metric.get("selector"), "metric.selector")
        item: dict[str, Any] = {
            "metadata": meta,
            "describedObject": out_described,
            "metric": out_metric,
            "timestamp": _canonical_time(raw.get("timestamp"), "timestamp"),
            "value": _canonical_quantity(raw.get("value"), "value"),
        }
        if raw.get("windowSeconds") is not None:
            item["windowSeconds"] = _int_field(raw.get("windowSeconds"), "windowSeconds")
        return item

    def _normalize_external_value(
        self, raw: Mapping[str, Any], namespace: str | None
    ) -> dict[str, Any]:
        metric_name = str(raw.get("metricName") or "")
        if not metric_name:
            raise _invalid(
                EXTERNAL_GROUP, "ExternalMetricValue", "", "metricName", "Required value"
            )
        labels = _string_map(raw.get("metricLabels"), "metricLabels")
        ns = (
            _as_mapping(raw.get("metadata"), "metadata").get("namespace")
            or raw.get("namespace")
            or namespace
        )
        label_part = "-".join(f"{k}-{v}" for k, v in sorted(labels.items()))
        default_name = _NAME_SANITIZE.sub("-", f"{metric_name}-{label_part}".lower()).strip("-.")
        meta = self._meta(_EXTERNAL_VALUE, raw, str(ns) if ns else None, default_name or "metric")
        item: dict[str, Any] = {
            "metadata": meta,
            "metricName": metric_name,
            "metricLabels": labels,
            "timestamp": _canonical_time(raw.get("timestamp"), "timestamp"),
            "value": _canonical_quantity(raw.get("value"), "value"),
        }
        window = raw.get("window", raw.get("windowSeconds"))
        if window is not None:
            item["window"] = _int_field(window, "window")
        return item

    # ----------------------------------------------------------------- reads

    def _labels_for(
        self, gr: _GroupResource, namespace: str, name: str
    ) -> Mapping[str, str] | None:
        if self._object_labels is not None:
            return self._object_labels(gr.group, gr.resource, namespace, name)
        if gr == _GroupResource("", "pods"):
            return self._pod_labels(namespace, name)
        return {}

    def _render_pod_metrics(
        self, item: Mapping[str, Any], *, with_type: bool
    ) -> dict[str, Any] | None:
        meta = item["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if "labels" in meta:
            labels: Mapping[str, str] | None = meta["labels"]
        else:
            # metrics-server serves metrics only for pods it knows, with their labels.
            labels = self._pod_labels(ns, name)
            if labels is None:
                return None
        out_meta = {k: copy.deepcopy(v) for k, v in meta.items()}
        out_meta.setdefault("creationTimestamp", format_time(self._now()))
        if labels:
            out_meta["labels"] = dict(labels)
        else:
            out_meta.pop("labels", None)
        body: dict[str, Any] = {}
        if with_type:
            body["kind"] = "PodMetrics"
            body["apiVersion"] = _POD_METRICS.api_version
        body["metadata"] = out_meta
        body["timestamp"] = item["timestamp"] or format_time(self._now())
        body["window"] = item["window"] or DEFAULT_WINDOW
        body["containers"] = copy.deepcopy(item["containers"])
        return body

    def _pod_metrics_list(self, namespace: str | None, request: web.Request) -> dict[str, Any]:
        selector = _selector_param(request, "labelSelector")
        field_ok = _field_selector_filter(request)
        items = []
        for (ns, name), item in self._stores[_POD_METRICS].sorted_items(namespace):
            if not field_ok(ns, name):
                continue
            body = self._render_pod_metrics(item, with_type=False)
            if body is None:
                continue
            if selector is not None and not selector.matches(body["metadata"].get("labels", {})):
                continue
            items.append(body)
        return {
            "kind": "PodMetricsList",
            "apiVersion": _POD_METRICS.api_version,
            "metadata": {},
            "items": items,
        }

    def _get_pod_metrics(self, namespace: str, name: str) -> dict[str, Any]:
        item = self._stores[_POD_METRICS].get((namespace, name))
        body = self._render_pod_metrics(item, with_type=True) if item is not None else None
        if body is None:
            # metrics-server names the object "namespace/name" in this error.
            raise _not_found(METRICS_GROUP, "podmetrics", f"{namespace}/{name}")
        return body

    def _render_metric_value(self, item: Mapping[str, Any], kinds: _KindCache) -> dict[str, Any]:
        described = dict(item["describedObject"])
        if "apiVersion" not in described:
            default = kinds.default_api_version(described["kind"])
            if default is not None:
                described["apiVersion"] = default
        out: dict[str, Any] = {
            "describedObject": described,
            "metric": copy.deepcopy(item["metric"]),
            "timestamp": item["timestamp"] or format_time(self._now()),
        }
        if "windowSeconds" in item:
            out["windowSeconds"] = item["windowSeconds"]
        out["value"] = item["value"]
        return out

    def _custom_query(
        self,
        namespace: str | None,
        requested: _GroupResource,
        name: str,
        metric: str,
        request: web.Request,
    ) -> dict[str, Any]:
        """One object (name) or every object matching labelSelector (name "*")."""
        metric_selector = _selector_param(request, "metricLabelSelector")
        wildcard = name == "*"
        selector = _selector_param(request, "labelSelector") if wildcard else None
        known = False
        items = []
        kinds = _KindCache(self._kinds)
        store = self._stores[_METRIC_VALUE]
        # A namespaced object's values are stored in its namespace; root-scoped
        # objects' values may be anywhere.
        candidates = (
            (item for _key, item in store.items(namespace))
            if namespace is not None
            else store.values()
        )
        for item in candidates:
            if item["metric"]["name"] != metric:
                continue
            described = item["describedObject"]
            gr = kinds.resource_of(described)
            if not gr.matches_request(requested):
                continue
            obj_ns = described.get("namespace", "")
            if (namespace or "") != obj_ns:
                continue
            known = True
            if not wildcard and described["name"] != name:
                continue
            if metric_selector is not None and not metric_selector.matches(_metric_labels(item)):
                continue
            if wildcard:
                labels = self._labels_for(gr, obj_ns, described["name"])
                if labels is None:
                    continue  # adapters list the objects first: a missing object has no series
                if selector is not None and not selector.matches(labels):
                    continue
            items.append((obj_ns, described["name"], self._render_metric_value(item, kinds)))
        if not items and not wildcard:
            raise ApiError(
                404,
                "NotFound",
                f"the server could not find the metric {metric} for {requested} {name}",
            )
        if not items and not known:
            raise ApiError(
                404, "NotFound", f"the server could not find the metric {metric} for {requested}"
            )
        items.sort(key=lambda t: (t[0], t[1]))
        return {
            "kind": "MetricValueList",
            "apiVersion": f"{CUSTOM_GROUP}/{CUSTOM_VERSION}",
            "metadata": {},
            "items": [t[2] for t in items],
        }

    def _external_query(self, namespace: str, metric: str, request: web.Request) -> dict[str, Any]:
        selector = _selector_param(request, "labelSelector")
        items = []
        for _key, item in self._stores[_EXTERNAL_VALUE].items(namespace):
            if item["metricName"] != metric:
                continue
            if selector is not None and not selector.matches(item["metricLabels"]):
                continue
            out: dict[str, Any] = {
                "metricName": item["metricName"],
                "metricLabels": dict(item["metricLabels"]),
                "timestamp": item["timestamp"] or format_time(self._now()),
            }
            if "window" in item:
                out["window"] = item["window"]
            out["value"] = item["value"]
            items.append(out)
        return {
            "kind": "ExternalMetricValueList",
            "apiVersion": f"{EXTERNAL_GROUP}/{EXTERNAL_VERSION}",
            "metadata": {},
            "items": items,
        }

    # ----------------------------------------------------------------- discovery

    def resource_list(self, group: str) -> dict[str, Any]:
        """The APIResourceList of ``/apis/{group}/{version}``."""
        version = METRICS_GROUPS[group]
        resources: list[dict[str, Any]] = []
        if group == METRICS_GROUP:
            resources = [
                {
                    "name": "nodes",
                    "singularName": "",
                    "namespaced": False,
                    "kind": "NodeMetrics",
                    "verbs": ["get", "list"],
                },
                {
                    "name": "pods",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "PodMetrics",
                    "verbs": list(_WRITE_VERBS),
                },
            ]
        elif group == CUSTOM_GROUP:
            seen: dict[str, bool] = {}
            kinds = _KindCache(self._kinds)
            for item in self._stores[_METRIC_VALUE].values():
                described = item["describedObject"]
                gr = kinds.resource_of(described)
                seen[f"{gr}/{item['metric']['name']}"] = described["kind"] not in _ROOT_SCOPED_KINDS
            resources = [
                {
                    "name": n,
                    "singularName": "",
                    "namespaced": ns,
                    "kind": "MetricValueList",
                    "verbs": ["get"],
                }
                for n, ns in sorted(seen.items())
            ]
            resources.append(
                {
                    "name": "metricvalues",
                    "singularName": "metricvalue",
                    "namespaced": True,
                    "kind": "MetricValue",
                    "verbs": list(_WRITE_VERBS),
                }
            )
        else:
            names = sorted({item["metricName"] for item in self._stores[_EXTERNAL_VALUE].values()})
            resources = [
                {
                    "name": n,
                    "singularName": "",
                    "namespaced": True,
                    "kind": "ExternalMetricValueList",
                    "verbs": ["get"],
                }
                for n in names
                if n != "externalmetricvalues"
            ]
            resources.append(
                {
                    "name": "externalmetricvalues",
                    "singularName": "externalmetricvalue",
                    "namespaced": True,
                    "kind": "ExternalMetricValue",
                    "verbs": list(_WRITE_VERBS),
                }
            )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}",
            "resources": resources,
        }

    # ----------------------------------------------------------------- writes

    def _render_stored(self, kind: _Kind, item: Mapping[str, Any]) -> dict[str, Any]:
        if kind is _POD_METRICS:
            body = {"kind": kind.kind, "apiVersion": kind.api_version}
            body.update(copy.deepcopy(dict(item)))
            if body.get("timestamp") is None:
                body.pop("timestamp", None)
            if body.get("window") is None:
                body.pop("window", None)
            return body
        body = {"kind": kind.kind, "apiVersion": kind.api_version}
        body.update(copy.deepcopy(dict(item)))
        if body.get("timestamp") is None:
            body.pop("timestamp", None)
        return body

    def _normalizer(self, kind: _Kind) -> Callable[[Mapping[str, Any], str | None], dict[str, Any]]:
        if kind is _POD_METRICS:
            return self._normalize_pod_metrics
        if kind is _METRIC_VALUE:
            return self._normalize_metric_value
        return self._normalize_external_value

    def _check_body(
        self, kind: _Kind, body: Any, namespace: str, name: str | None
    ) -> Mapping[str, Any]:
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

    def _store_new(
        self, kind: _Kind, body: Mapping[str, Any], namespace: str, dry_run: bool
    ) -> dict[str, Any]:
        item = self._normalizer(kind)(body, namespace)
        meta = item["metadata"]
        key = (namespace, meta["name"])
        if key in self._stores[kind]:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{kind.qualified} "{meta["name"]}" already exists',
                {"name": meta["name"], "group": kind.group, "kind": kind.resource},
            )
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = format_time(self._now())
        if not dry_run:
            meta["resourceVersion"] = self._next_rv()
            self._stores[kind][key] = item
        return self._render_stored(kind, item)

    def _store_update(
        self,
        kind: _Kind,
        body: Mapping[str, Any],
        namespace: str,
        name: str,
        dry_run: bool,
        *,
        create: bool,
    ) -> tuple[dict[str, Any], bool]:
        old = self._stores[kind].get((namespace, name))
        if old is None:
            if not create:
                raise _not_found(kind.group, kind.resource, name)
            body = dict(body)
            body["metadata"] = {**dict(body.get("metadata") or {}), "name": name}
            return self._store_new(kind, body, namespace, dry_run), True
        old_meta = old["metadata"]
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv and old_meta.get("resourceVersion") and rv != old_meta["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {kind.qualified} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                {"name": name, "group": kind.group, "kind": kind.resource},
            )
        body = dict(body)
        body["metadata"] = {**dict(body.get("metadata") or {}), "name": name}
        item = self._normalizer(kind)(body, namespace)
        meta = item["metadata"]
        for kept in ("uid", "creationTimestamp"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
        meta["resourceVersion"] = old_meta.get("resourceVersion", "")
        if not dry_run:
            meta["resourceVersion"] = self._next_rv()
            self._stores[kind][(namespace, name)] = item
        return self._render_stored(kind, item), False

    def _delete(self, kind: _Kind, namespace: str, name: str, dry_run: bool) -> dict[str, Any]:
        item = self._stores[kind].get((namespace, name))
        if item is None:
            raise _not_found(kind.group, kind.resource, name)
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

    def _list_stored(
        self, kind: _Kind, namespace: str | None, request: web.Request
    ) -> dict[str, Any]:
        selector = _selector_param(request, "labelSelector")
        field_ok = _field_selector_filter(request)
        items = []
        for (ns, name), item in self._stores[kind].sorted_items(namespace):
            if not field_ok(ns, name):
                continue
            if selector is not None and not selector.matches(item["metadata"].get("labels", {})):
                continue
            body = self._render_stored(kind, item)
            del body["kind"], body["apiVersion"]
            items.append(body)
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.api_version,
            "metadata": {},
            "items": items,
        }


# --------------------------------------------------------------------------- tables


def _table_version(request: web.Request) -> str | None:
    """The meta.k8s.io version of the Table the client asks for first, if any
    (kubectl get sends ``application/json;as=Table;v=v1;g=meta.k8s.io,...``)."""
    for part in request.headers.get("Accept", "").split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            if params.get("v") in ("v1", "v1beta1"):
                return params["v"]
        elif fields[0] in ("application/json", "*/*"):
            return None
    return None


def _string_columns(*named: tuple[str, str]) -> list[dict[str, Any]]:
    """Table columns of plain strings: (name, description) each."""
    return [
        {"name": n, "type": "string", "format": "", "description": d, "priority": 0}
        for n, d in named
    ]


def _table_rows(
    kind: _Kind, objects: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    name_col = {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name of the resource",
        "priority": 0,
    }
    if kind is _POD_METRICS:
        # metrics-server's ConvertToTable: the usage summed over containers, one column
        # per resource of the first item (sorted), then the window.
        if not objects:
            return [], []
        totals = []
        for obj in objects:
            usage: dict[str, Any] = {}
            for c in obj.get("containers", []):
                for res, q in c.get("usage", {}).items():
                    usage[res] = (
                        usage[res] + parse_quantity(q) if res in usage else parse_quantity(q)
                    )
            totals.append(usage)
        resources = sorted(totals[0])
        columns = [name_col]
        columns += [
            {"name": r, "type": "string", "format": "quantity", "description": "", "priority": 0}
            for r in resources
        ]
        columns.append(
            {
                "name": "Window",
                "type": "string",
                "format": "duration",
                "description": "",
                "priority": 0,
            }
        )
        rows = [
            [
                obj["metadata"]["name"],
                *(str(t[r]) if r in t else "0" for r in resources),
                obj.get("window", DEFAULT_WINDOW),
            ]
            for obj, t in zip(objects, totals, strict=True)
        ]
        return columns, rows
    if kind is _METRIC_VALUE:
        columns = [
            name_col,
            *_string_columns(
                ("Object", "The described object"),
                ("Metric", "The metric name"),
                ("Value", "The value"),
            ),
        ]
        rows = [
            [
                obj["metadata"]["name"],
                f"{obj['describedObject']['kind']}/{obj['describedObject']['name']}",
                obj["metric"]["name"],
                obj["value"],
            ]
            for obj in objects
        ]
        return columns, rows
    columns = [
        name_col,
        *_string_columns(
            ("Metric", "The metric name"),
            ("Labels", "The metric labels"),
            ("Value", "The value"),
        ),
    ]
    rows = [
        [
            obj["metadata"]["name"],
            obj["metricName"],
            ",".join(f"{k}={v}" for k, v in sorted(obj.get("metricLabels", {}).items()))
            or "<none>",
            obj["value"],
        ]
        for obj in objects
    ]
    return columns, rows


def _respond(
    kind: _Kind, request: web.Request, body: dict[str, Any], status: int = 200
) -> web.Response:
    """The object or list as JSON, or as a meta.k8s.io Table when asked for one."""
    version = _table_version(request)
    if version is None or status != 200:
        return _json(body, status)
    objects = body.get("items", [body])
    columns, cells = _table_rows(kind, objects)
    include = request.query.get("includeObject", "Metadata")
    rows = []
    for obj, row in zip(objects, cells, strict=True):
        entry: dict[str, Any] = {"cells": row}
        if include == "Object":
            entry["object"] = {
                "kind": kind.kind,
                "apiVersion": kind.api_version,
                **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
            }
        elif include != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": f"meta.k8s.io/{version}",
                "metadata": copy.deepcopy(obj["metadata"]),
            }
        rows.append(entry)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    }
    return _json(table)


def _metric_labels(item: Mapping[str, Any]) -> dict[str, str]:
    selector = item["metric"].get("selector") or {}
    labels = selector.get("matchLabels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def _int_field(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise errors.bad_request(f"{field}: expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise errors.bad_request(f"{field}: expected an integer, got {value!r}") from exc


# --------------------------------------------------------------------------- discovery docs


def metrics_api_group_discovery() -> list[dict[str, Any]]:
    """APIGroup entries for the three metrics groups, to merge into ``/apis``."""
    groups = []
    for group, version in METRICS_GROUPS.items():
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        groups.append({"name": group, "versions": [gv], "preferredVersion": dict(gv)})
    return groups


def metrics_api_resource_lists(state: MetricsState) -> dict[str, dict[str, Any]]:
    """groupVersion -> APIResourceList for the groups currently available (for an
    aggregated-discovery document; unavailable groups are left out)."""
    return {
        f"{group}/{version}": state.resource_list(group)
        for group, version in METRICS_GROUPS.items()
        if group not in state.unavailable
    }


# --------------------------------------------------------------------------- routing


async def _read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise errors.bad_request("the request body is empty")
    ctype = request.content_type
    try:
        if ctype in ("application/yaml", "application/apply-patch+yaml"):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc


def _method_not_allowed() -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


async def _writable(
    state: MetricsState, kind: _Kind, request: web.Request, namespace: str | None, name: str | None
) -> web.Response:
    """Collection (name None) or item endpoints of a writable kind."""
    dry_run = request.query.get("dryRun") == "All"
    method = request.method
    if name is None:
        if method == "GET":
            return _respond(kind, request, state._list_stored(kind, namespace, request))
        if namespace is None:
            raise _method_not_allowed()
        if method == "POST":
            body = state._check_body(kind, await _read_body(request), namespace, None)
            return _json(state._store_new(kind, body, namespace, dry_run), 201)
        if method == "DELETE":
            for ns, n in [k for k, _ in state._stores[kind].items(namespace)]:
                state._delete(kind, ns, n, dry_run)
            return _json(
                {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            )
        raise _method_not_allowed()
    assert namespace is not None
    if method == "GET":
        if kind is _POD_METRICS:
            return _respond(kind, request, state._get_pod_metrics(namespace, name))
        item = state._stores[kind].get((namespace, name))
        if item is None:
            raise _not_found(kind.group, kind.resource, name)
        return _respond(kind, request, state._render_stored(kind, item))
    if method == "PUT":
        body = state._check_body(kind, await _read_body(request), namespace, name)
        out, created = state._store_update(kind, body, namespace, name, dry_run, create=True)
        return _json(out, 201 if created else 200)
    if method == "PATCH":
        patch = await _read_body(request)
        ctype = request.content_type
        old = state._stores[kind].get((namespace, name))
        apply_patch = ctype == "application/apply-patch+yaml"
        if old is None:
            if not apply_patch:
                raise _not_found(kind.group, kind.resource, name)
            body = state._check_body(kind, patch, namespace, name)
            out, _ = state._store_update(kind, body, namespace, name, dry_run, create=True)
            return _json(out, 201)
        current = state._render_stored(kind, old)
        if ctype == "application/json-patch+json":
            patched = _json_patch(current, patch)
        elif ctype == "application/strategic-merge-patch+json":
            patched = _strategic_as_merge(current, patch)
        elif ctype in ("application/merge-patch+json", "application/apply-patch+yaml"):
            patched = _merge_patch(current, patch)
        else:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            )
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        body = state._check_body(kind, patched, namespace, name)
        out, _ = state._store_update(kind, body, namespace, name, dry_run, create=False)
        return _json(out)
    if method == "DELETE":
        return _json(state._delete(kind, namespace, name, dry_run))
    raise _method_not_allowed()


def _group_document(group: str) -> dict[str, Any]:
    entry = next(g for g in metrics_api_group_discovery() if g["name"] == group)
    return {"kind": "APIGroup", "apiVersion": "v1", **entry}


async def _dispatch(state: MetricsState, group: str, request: web.Request) -> web.Response:
    version = METRICS_GROUPS[group]
    tail = request.match_info.get("tail", "")
    segments = [s for s in tail.split("/") if s]
    if not segments:
        if request.method != "GET":
            raise _method_not_allowed()
        return _json(_group_document(group))
    if segments[0] != version:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if group in state.unavailable:
        return _unavailable_response()
    rest = segments[1:]
    method = request.method
    if not rest:
        if method != "GET":
            raise _method_not_allowed()
        return _json(state.resource_list(group))
    if method == "GET" and request.query.get("watch") in ("1", "t", "T", "true", "TRUE", "True"):
        # No metrics API implements watch (errors.NewMethodNotSupported).
        resource = rest[2] if rest[0] == "namespaces" and len(rest) > 2 else rest[0]
        raise ApiError(
            405,
            "MethodNotAllowed",
            f'watch is not supported on resources of kind "{resource}.{group}"',
            {"group": group, "kind": resource},
        )
    if group == METRICS_GROUP:
        return await _dispatch_resource_metrics(state, request, rest)
    if group == CUSTOM_GROUP:
        return await _dispatch_custom(state, request, rest)
    return await _dispatch_external(state, request, rest)


def _not_served() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


async def _dispatch_resource_metrics(
    state: MetricsState, request: web.Request, rest: list[str]
) -> web.Response:
    method = request.method
    if rest == ["pods"]:
        if method != "GET":
            raise _method_not_allowed()
        return _respond(_POD_METRICS, request, state._pod_metrics_list(None, request))
    if rest[0] == "nodes" and len(rest) <= 2:
        if method != "GET":
            raise _method_not_allowed()
        if len(rest) == 2:
            raise _not_found(METRICS_GROUP, "nodemetrics", rest[1])
        return _json(
            {
                "kind": "NodeMetricsList",
                "apiVersion": _POD_METRICS.api_version,
                "metadata": {},
                "items": [],
            }
        )
    if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == "pods":
        if len(rest) == 3 and method == "GET":
            return _respond(_POD_METRICS, request, state._pod_metrics_list(rest[1], request))
        return await _writable(
            state, _POD_METRICS, request, rest[1], rest[3] if len(rest) == 4 else None
        )
    raise _not_served()


async def _dispatch_custom(
    state: MetricsState, request: web.Request, rest: list[str]
) -> web.Response:
    if rest == ["metricvalues"]:
        return await _writable(state, _METRIC_VALUE, request, None, None)
    if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == "metricvalues":
        return await _writable(
            state, _METRIC_VALUE, request, rest[1], rest[3] if len(rest) == 4 else None
        )
    if request.method != "GET":
        raise _method_not_allowed()
    if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "metrics":
        # Metrics describing a Namespace: /namespaces/{ns}/metrics/{metric}.
        return _json(
            state._custom_query(None, _GroupResource("", "namespaces"), rest[1], rest[3], request)
        )
    if len(rest) == 5 and rest[0] == "namespaces":
        return _json(
            state._custom_query(rest[1], _GroupResource.parse(rest[2]), rest[3], rest[4], request)
        )
    if len(rest) == 3:
        return _json(
            state._custom_query(None, _GroupResource.parse(rest[0]), rest[1], rest[2], request)
        )
    raise _not_served()


async def _dispatch_external(
    state: MetricsState, request: web.Request, rest: list[str]
) -> web.Response:
    if rest == ["externalmetricvalues"]:
        return await _writable(state, _EXTERNAL_VALUE, request, None, None)
    if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == "externalmetricvalues":
        return await _writable(
            state, _EXTERNAL_VALUE, request, rest[1], rest[3] if len(rest) == 4 else None
        )
    if len(rest) == 3 and rest[0] == "namespaces":
        if request.method != "GET":
            raise _method_not_allowed()
        return _json(state._external_query(rest[1], rest[2], request))
    raise _not_served()


def metrics_api_openapi_v3(group: str) -> dict[str, Any]:
    """The ``/openapi/v3/apis/{group}/{version}`` document of a metrics group.

    It carries only what kubectl looks for: each writable kind's PATCH operation with
    its ``fieldValidation`` parameter (so validation is left to the server) and no
    strategic-merge content type (so ``kubectl apply`` sends JSON merge patches).
    """
    version = METRICS_GROUPS[group]
    prefix = f"/apis/{group}/{version}/namespaces/{{namespace}}"
    kinds = [k for k in (_POD_METRICS, _METRIC_VALUE, _EXTERNAL_VALUE) if k.group == group]
    params = [
        {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
        for name in ("dryRun", "fieldManager", "fieldValidation", "force")
    ]
    patch_types = (
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    )
    paths = {
        f"{prefix}/{k.resource}/{{name}}": {
            "patch": {
                "operationId": f"patch{k.kind}",
                "parameters": list(params),
                "requestBody": {
                    "content": {t: {"schema": {"type": "object"}} for t in patch_types},
                    "required": True,
                },
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": k.group,
                    "version": k.version,
                    "kind": k.kind,
                },
            }
        }
        for k in kinds
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "components": {"schemas": {}},
    }


def register_metrics_routes(app: web.Application, state: MetricsState) -> None:
    """Add ``/apis/{metrics group}[/...]`` and ``/openapi/v3/apis/{group}/{version}``
    for the three groups to ``app``.

    Register these before any generic ``/apis/...`` or ``/openapi/...`` route: aiohttp
    picks the first matching resource in registration order. The ``/openapi/v3`` root
    document (the server's) should list ``apis/{group}/{version}`` for the three groups.
    """
    for group, version in METRICS_GROUPS.items():

        async def handler(request: web.Request, group: str = group) -> web.Response:
            try:
                return await _dispatch(state, group, request)
            except ApiError as err:
                return _error_response(err)

        async def openapi(request: web.Request, group: str = group) -> web.Response:
            return _json(metrics_api_openapi_v3(group))

        app.router.add_route("*", "/apis/" + group + "{tail:(/.*)?}", handler)
        app.router.add_get(f"/openapi/v3/apis/{group}/{version}", openapi)
