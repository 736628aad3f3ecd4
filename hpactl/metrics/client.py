"""Metrics APIs as upstream's ``pkg/controller/podautoscaler/metrics`` reads them.

``MetricsClient`` mirrors ``metrics/interfaces.go``; every method returns the plain
values of ``hpactl.model.metrics`` or a ``MetricFetchError`` whose message is exactly
``metrics/client.go``'s text, with ``<err>`` reading as client-go's error would:

* resource: ``unable to fetch metrics from resource metrics API: <err>`` /
  ``no metrics returned from resource metrics API``; per pod the sum over all
  containers (a pod with no containers, or a container without the resource, has no
  sample); with ``container`` only that container's usage (a pod whose metrics lack the
  container has no sample: newest upstream, no error).
* pods (custom): ``unable to fetch metrics from custom metrics API: <err>`` /
  ``no metrics returned from custom metrics API``; ``windowSeconds`` defaults to 60 s.
* object (custom): ``unable to fetch metrics from custom metrics API: <err>``, where
  ``<err>`` may be ``unable to map kind <Kind.group> to resource: <mapper error>`` or
  ``the custom metrics API server returned <n> results when we asked for exactly one``.
* external: ``unable to fetch metrics from external metrics API: <err>`` /
  ``no metrics returned from external metrics API``.
For a 503 from an aggregated API ``<err>`` is e.g. ``the server is currently unable to
handle the request (get pods.metrics.k8s.io)``.

``RestMetricsClient(session, *, mapper=None, timeout=10.0, custom_prefix=...,
external_prefix=...)``
    Over metrics.k8s.io/v1beta1, custom.metrics.k8s.io/v1beta2 and
    external.metrics.k8s.io/v1beta1 (the last two prefixes may name another API group
    serving the same paths, ``hpactl.metrics.providers``). ``mapper``: anything with
    ``async mapping(group, kind)`` returning an object with ``.group_resource``
    (``hpactl.kube.restmapper.RestMapper``), for Object metrics. The custom metrics
    version is fixed at v1beta2 (upstream negotiates it by discovery).

``await fetch_metric(client, req, selector) -> MetricInput``
    Runs the fetch one ``hpactl.core.decide.MetricRequest`` asks for (the controller's
    ``MetricsSource.fetch`` shape); ``RestMetricsClient.fetch`` is that bound.

Parsing helpers for raw answers (used by the shared fetcher too):
``pod_metrics_from_items(items, resource, container) -> dict[str, PodMetric]``,
``raw_metrics_from_items(items) -> dict[str, PodMetric]``.

PodMetrics lists are kept compact (``compact_pod_metrics``): each item parsed once into
a :class:`PodSample` (name, labels, timestamp, window, per container its usage as
milli-values) and the decoded JSON dropped, since the shared fetcher keeps a
namespace's list between the syncs of its HPAs (at 10,000 HPAs the decoded items were
the largest live allocation, ~4.5 MiB per 1,000 HPAs). An item that does not parse
(a malformed quantity, timestamp, shape) is kept as it came and interpreted as before,
when and if an HPA selects it, so errors surface exactly as they did.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote

from hpactl.core.decide import MetricRequest
from hpactl.core.metrics_eval import MetricInput
from hpactl.kube.errors import KubeError
from hpactl.kube.requests import get_json, list_json
from hpactl.kube.session import KubeSession
from hpactl.model.hpa import CrossVersionObjectReference
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetric,
    PodMetricsInfo,
)
from hpactl.model.quantity import parse_quantity
from hpactl.model.selectors import Selector, selector_from_label_selector
from hpactl.model.times import parse_go_duration, parse_time

__all__ = [
    "CUSTOM_METRICS_PREFIX",
    "DEFAULT_METRIC_WINDOW",
    "EXTERNAL_METRICS_PREFIX",
    "RESOURCE_METRICS_PREFIX",
    "MetricsClient",
    "PodSample",
    "RestMetricsClient",
    "compact_pod_metrics",
    "custom_fetch_error",
    "external_fetch_error",
    "external_values_from_items",
    "fetch_metric",
    "group_of",
    "guessed_group_resource",
    "object_value_from_items",
    "pod_metrics_from_items",
    "pod_metrics_from_samples",
    "raw_metrics_from_items",
    "raw_result",
    "resource_fetch_error",
    "resource_result",
    "sample_labels",
]

# metrics/client.go metricServerDefaultMetricWindow
DEFAULT_METRIC_WINDOW = timedelta(minutes=1)

RESOURCE_METRICS_PREFIX = "/apis/metrics.k8s.io/v1beta1"
CUSTOM_METRICS_PREFIX = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL_METRICS_PREFIX = "/apis/external.metrics.k8s.io/v1beta1"

NO_RESOURCE_METRICS = "no metrics returned from resource metrics API"
NO_CUSTOM_METRICS = "no metrics returned from custom metrics API"
NO_EXTERNAL_METRICS = "no metrics returned from external metrics API"


def resource_fetch_error(err: object) -> MetricFetchError:
    return MetricFetchError(f"unable to fetch metrics from resource metrics API: {err}")


def custom_fetch_error(err: object) -> MetricFetchError:
    return MetricFetchError(f"unable to fetch metrics from custom metrics API: {err}")


def external_fetch_error(err: object) -> MetricFetchError:
    return MetricFetchError(f"unable to fetch metrics from external metrics API: {err}")


class MetricsClient(Protocol):
    """``metrics/interfaces.go`` ``MetricsClient``."""

    async def get_resource_metric(
        self, resource: str, namespace: str, selector: Selector, container: str = ""
    ) -> PodMetricsInfo | MetricFetchError: ...

    async def get_raw_metric(
        self, metric_name: str, namespace: str, selector: Selector, metric_selector: Selector
    ) -> PodMetricsInfo | MetricFetchError: ...

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        object_ref: CrossVersionObjectReference,
        metric_selector: Selector,
    ) -> ObjectMetricValue | MetricFetchError: ...

    async def get_external_metric(
        self, metric_name: str, namespace: str, selector: Selector
    ) -> ExternalMetricValues | MetricFetchError: ...


class _Mapping(Protocol):
    @property
    def group_resource(self) -> str: ...


class KindMapper(Protocol):
    async def mapping(self, group: str, kind: str) -> _Mapping: ...


def _seg(s: str) -> str:
    return quote(s, safe="*:")


def _milli(v: Any) -> int:
    return parse_quantity(v).milli_value()


# The HPAs of a namespace read their pods from one shared list per period, whose
# items mostly carry the same few timestamps and windows: parse each text once.
_timestamp = functools.lru_cache(maxsize=1024)(parse_time)
_window = functools.lru_cache(maxsize=64)(parse_go_duration)


@functools.lru_cache(maxsize=4096)
def _usage_milli(text: str) -> int:
    """A usage quantity's milli-value (usages repeat across pods and periods)."""
    return _milli(text)


def pod_metrics_from_items(
    items: Iterable[Mapping[str, Any]], resource: str, container: str = ""
) -> dict[str, PodMetric]:
    """``getPodMetrics`` / ``getContainerMetrics`` over PodMetrics items, in item order."""
    res: dict[str, PodMetric] = {}
    for m in items:
        meta = m.get("metadata") or {}
        name = str(meta.get("name") or "")
        ts = _timestamp(str(m.get("timestamp")))
        window = _window(str(m.get("window") or "0s"))
        containers = m.get("containers") or []
        if container:
            for c in containers:
                if c.get("name") == container:
                    usage = c.get("usage") or {}
                    if resource in usage:
                        res[name] = PodMetric(ts, window, _milli(usage[resource]))
                    break
            continue
        total = 0
        missing = len(containers) == 0
        for c in containers:
            usage = c.get("usage") or {}
            if resource not in usage:
                missing = True
                break
            total += _milli(usage[resource])
        if not missing:
            res[name] = PodMetric(ts, window, total)
    return res


class PodSample(NamedTuple):
    """One PodMetrics item as upstream reads it, parsed once (see the module docstring)."""

    name: str
    labels: Mapping[str, str]  # the item's metadata.labels (shared by equal label sets)
    timestamp: datetime
    window: timedelta
    # per container in item order: (its name, ((resource, usage in milli-units), ...))
    containers: tuple[tuple[Any, tuple[tuple[str, int], ...]], ...]


#: A compact PodMetrics list: samples, and the items that did not parse, as they came.
PodSamples = list[Any]


def _sample(m: Any, labels_seen: dict[tuple[tuple[str, str], ...], Mapping[str, str]]) -> PodSample:
    meta = m.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    labels = labels_seen.setdefault(tuple(labels.items()), labels)
    containers = []
    for c in m.get("containers") or []:
        name = c.get("name")
        usage = tuple(
            (sys.intern(r), _usage_milli(v) if type(v) is str else _milli(v))
            for r, v in (c.get("usage") or {}).items()
        )
        containers.append((sys.intern(name) if isinstance(name, str) else name, usage))
    return PodSample(
        str(meta.get("name") or ""),
        labels,
        _timestamp(str(m.get("timestamp"))),
        _window(str(m.get("window") or "0s")),
        tuple(containers),
    )


def compact_pod_metrics(items: Iterable[Any]) -> PodSamples:
    """PodMetrics items as :class:`PodSample` (unparsable ones left as they are), in order."""
    labels_seen: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
    out: PodSamples = []
    for m in items:
        try:
            out.append(_sample(m, labels_seen))
        except Exception:  # interpreted as it came, failing (or not) as before
            out.append(m)
    return out


def sample_labels(item: Any) -> Mapping[str, str]:
    """The labels a server-side selector matches a PodMetrics item (or sample) by."""
    if isinstance(item, PodSample):
        return item.labels
    labels: Mapping[str, str] = (item.get("metadata") or {}).get("labels") or {}
    return labels


def pod_metrics_from_samples(
    samples: Iterable[Any], resource: str, container: str = ""
) -> dict[str, PodMetric]:
    """:func:`pod_metrics_from_items` over a compact list (same result, item for item)."""
    res: dict[str, PodMetric] = {}
    for s in samples:
        if not isinstance(s, PodSample):
            res.update(pod_metrics_from_items((s,), resource, container))
            continue
        if container:
            for cname, usage in s.containers:
                if cname == container:
                    for r, v in usage:
                        if r == resource:
                            res[s.name] = PodMetric(s.timestamp, s.window, v)
                            break
                    break
            continue
        if not s.containers:
            continue
        total = 0
        for _, usage in s.containers:
            for r, v in usage:
                if r == resource:
                    total += v
                    break
            else:  # a container without the resource: no sample for the pod
                break
        else:
            res[s.name] = PodMetric(s.timestamp, s.window, total)
    return res


def raw_metrics_from_items(items: Iterable[Mapping[str, Any]]) -> dict[str, PodMetric]:
    """``GetRawMetric``'s loop over custom MetricValue items."""
    res: dict[str, PodMetric] = {}
    for m in items:
        ws = m.get("windowSeconds")
        window = timedelta(seconds=int(ws)) if ws is not None else DEFAULT_METRIC_WINDOW
        name = str((m.get("describedObject") or {}).get("name") or "")
        res[name] = PodMetric(_timestamp(str(m.get("timestamp"))), window, _milli(m.get("value")))
    return res


def resource_result(
    items: Sequence[Any], resource: str, container: str
) -> PodMetricsInfo | MetricFetchError:
    """Over PodMetrics items or a compact list of them (:func:`compact_pod_metrics`)."""
    if not items:
        return MetricFetchError(NO_RESOURCE_METRICS)
    return pod_metrics_from_samples(items, resource, container)


def raw_result(items: Sequence[Mapping[str, Any]]) -> PodMetricsInfo | MetricFetchError:
    if not items:
        return MetricFetchError(NO_CUSTOM_METRICS)
    return raw_metrics_from_items(items)


def object_value_from_items(
    items: Sequence[Mapping[str, Any]],
) -> ObjectMetricValue | MetricFetchError:
    """``GetForObject`` insists on exactly one value."""
    if len(items) != 1:
        return custom_fetch_error(
            f"the custom metrics API server returned {len(items)} results when we asked for exactly one"
        )
    item = items[0]
    return ObjectMetricValue(_milli(item.get("value")), parse_time(str(item.get("timestamp"))))


def external_values_from_items(
    items: Sequence[Mapping[str, Any]],
) -> ExternalMetricValues | MetricFetchError:
    if not items:
        return MetricFetchError(NO_EXTERNAL_METRICS)
    return ExternalMetricValues(
        tuple(_milli(i.get("value")) for i in items),
        parse_time(str(items[0].get("timestamp"))),
    )


def group_of(api_version: str) -> str:
    # schema.FromAPIVersionAndKind: an unparsable apiVersion leaves the group empty.
    parts = api_version.split("/")
    return parts[0] if len(parts) == 2 else ""


def guessed_group_resource(group: str, kind: str) -> str:
    """``plural.group`` by the conventional plural (no discovery: tests and fakes)."""
    plural = kind.lower() + "s"
    return f"{plural}.{group}" if group else plural


def _group_kind(group: str, kind: str) -> str:
    # schema.GroupKind.String()
    return f"{kind}.{group}" if group else kind


class RestMetricsClient:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession,
        *,
        mapper: KindMapper | None = None,
        timeout: float = 10.0,
        custom_prefix: str = CUSTOM_METRICS_PREFIX,
        external_prefix: str = EXTERNAL_METRICS_PREFIX,
    ) -> None:
        self._s = session
        self._mapper = mapper
        self.timeout = timeout
        # Another API group serving the same paths (KEP-6382's source.apiGroup).
        self._custom = custom_prefix
        self._external = external_prefix

    # -- raw requests (shared by the fetcher) -------------------------------------
    async def list_pod_metrics(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        out = await list_json(
            self._s,
            f"{RESOURCE_METRICS_PREFIX}/namespaces/{_seg(namespace)}/pods",
            label_selector=selector or None,
            limit=None,
            timeout=self.timeout,
        )
        return out.items

    async def list_pod_samples(self, namespace: str, selector: str) -> PodSamples:
        """:meth:`list_pod_metrics`, compact (the decoded JSON is not kept)."""
        return compact_pod_metrics(await self.list_pod_metrics(namespace, selector))

    async def list_pods_custom_metric(
        self, namespace: str, metric_name: str, selector: str, metric_selector: str
    ) -> list[dict[str, Any]]:
        return await self._items(
            f"{self._custom}/namespaces/{_seg(namespace)}/pods/*/{_seg(metric_name)}",
            labelSelector=selector,
            metricLabelSelector=metric_selector,
        )

    # -- MetricsClient ---------------------------------------------------------------
    async def get_resource_metric(
        self, resource: str, namespace: str, selector: Selector, container: str = ""
    ) -> PodMetricsInfo | MetricFetchError:
        try:
            items = await self.list_pod_samples(namespace, str(selector))
        except KubeError as exc:
            return resource_fetch_error(exc)
        return resource_result(items, resource, container)

    async def get_raw_metric(
        self, metric_name: str, namespace: str, selector: Selector, metric_selector: Selector
    ) -> PodMetricsInfo | MetricFetchError:
        try:
            items = await self.list_pods_custom_metric(
                namespace, metric_name, str(selector), str(metric_selector)
            )
        except KubeError as exc:
            return custom_fetch_error(exc)
        return raw_result(items)

    async def get_object_metric_items(
        self,
        metric_name: str,
        namespace: str,
        object_ref: CrossVersionObjectReference,
        metric_selector: str,
    ) -> list[dict[str, Any]]:
        group = group_of(object_ref.api_version)
        if object_ref.kind == "Namespace" and group == "":
            # Root-scoped: the namespace itself (the reference's name is ignored).
            path = f"{self._custom}/namespaces/{_seg(namespace)}/metrics/{_seg(metric_name)}"
        else:
            try:
                gr = await self._group_resource(group, object_ref.kind)
            except KubeError as exc:
                raise KubeError(
                    f"unable to map kind {_group_kind(group, object_ref.kind)} to resource: {exc}"
                ) from exc
            path = (
                f"{self._custom}/namespaces/{_seg(namespace)}/{gr}/"
                f"{_seg(object_ref.name)}/{_seg(metric_name)}"
            )
        return await self._items(path, metricLabelSelector=metric_selector)

    async def list_external_metric(
        self, metric_name: str, namespace: str, selector: str
    ) -> list[dict[str, Any]]:
        return await self._items(
            f"{self._external}/namespaces/{_seg(namespace)}/{_seg(metric_name)}",
            labelSelector=selector,
        )

    async def _items(self, path: str, **query: str) -> list[dict[str, Any]]:
        """GET a metrics list; empty query parameters are left out."""
        q = {k: v for k, v in query.items() if v}
        out = await get_json(self._s, path, query=q, timeout=self.timeout)
        return list(out.get("items") or [])

    async def _group_resource(self, group: str, kind: str) -> str:
        if self._mapper is None:
            # Without discovery: the conventional plural (good enough for tests).
            return guessed_group_resource(group, kind)
        m = await self._mapper.mapping(group, kind)
        return m.group_resource

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        object_ref: CrossVersionObjectReference,
        metric_selector: Selector,
    ) -> ObjectMetricValue | MetricFetchError:
        try:
            items = await self.get_object_metric_items(
                metric_name, namespace, object_ref, str(metric_selector)
            )
        except KubeError as exc:
            return custom_fetch_error(exc)
        return object_value_from_items(items)

    async def get_external_metric(
        self, metric_name: str, namespace: str, selector: Selector
    ) -> ExternalMetricValues | MetricFetchError:
        try:
            items = await self.list_external_metric(metric_name, namespace, str(selector))
        except KubeError as exc:
            return external_fetch_error(exc)
        return external_values_from_items(items)

    async def fetch(self, req: MetricRequest, selector: Selector) -> MetricInput:
        return await fetch_metric(self, req, selector)


async def fetch_metric(
    client: MetricsClient, req: MetricRequest, selector: Selector
) -> MetricInput:
    """The fetch one ``MetricRequest`` asks for (None for kind "none")."""
    msel = selector_from_label_selector(req.metric_selector)
    if req.kind == "resource":
        return await client.get_resource_metric(
            req.resource, req.namespace, selector, req.container
        )
    if req.kind == "pods":
        return await client.get_raw_metric(req.metric_name, req.namespace, selector, msel)
    if req.kind == "object":
        if req.described_object is None:
            return None
        return await client.get_object_metric(
            req.metric_name, req.namespace, req.described_object, msel
        )
    if req.kind == "external":
        return await client.get_external_metric(req.metric_name, req.namespace, msel)
    return None
