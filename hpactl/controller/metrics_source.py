"""Fetching what ``spec.metrics`` asks for, shared between the HPAs of a namespace.

:class:`RestMetricsSource` reads the three metrics APIs like upstream's
``metrics/client.go`` (``resourceMetricsClient``, ``customMetricsClient``,
``externalMetricsClient``) and returns the plain values the core takes
(``PodMetricsInfo``, ``ObjectMetricValue``, ``ExternalMetricValues``) or a
``MetricFetchError`` whose text is upstream's.

:class:`SharedMetricsFetcher` puts one cache in front: requests with the same
namespace, metric and selectors made within one sharing window share one API call
(and one in-flight call when they overlap). A request is identified by everything
that shapes the API answer, so a shared answer is exactly what each HPA would have
got by asking alone. ``new_period()`` empties the cache (``sync_all`` calls it, so a
simulation step never sees the previous step's values).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from hpactl.clock import Clock
from hpactl.core.decide import MetricRequest
from hpactl.core.metrics_eval import MetricInput
from hpactl.kube import requests as kreq
from hpactl.kube.errors import KubeError
from hpactl.kube.session import KubeSession
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetric,
)
from hpactl.model.quantity import parse_quantity
from hpactl.model.selectors import Selector, selector_from_label_selector
from hpactl.model.times import parse_go_duration, parse_time

__all__ = [
    "MetricsSource",
    "RawAnswer",
    "RestMetricsSource",
    "SharedMetricsFetcher",
    "request_key",
]

# metrics/client.go: metricServerDefaultMetricWindow
DEFAULT_WINDOW = timedelta(minutes=1)

#: One API answer: raw per-pod items, an object/external value, or the error.
RawAnswer = (
    list[dict[str, Any]] | ObjectMetricValue | ExternalMetricValues | MetricFetchError | None
)


class MetricsSource(Protocol):
    async def fetch(
        self, req: MetricRequest, selector: Selector, pod_names: Collection[str] | None = None
    ) -> MetricInput: ...


def _metric_selector_string(raw: Mapping[str, Any] | None) -> str:
    if raw is None:
        return ""
    return str(selector_from_label_selector(raw))


def request_key(req: MetricRequest) -> tuple[Any, ...]:
    """The sharing key: the API call that answers ``req``.

    Per-pod requests (resource metrics, pods metrics) are answered by one
    namespace-wide list, filtered afterwards to the HPA's pods; object and external
    requests by the call with exactly their parameters.
    """
    if req.kind == "resource":
        return ("resource", req.namespace)
    if req.kind == "pods":
        return (
            "pods",
            req.namespace,
            req.metric_name,
            _metric_selector_string(req.metric_selector),
        )
    obj = req.described_object
    return (
        req.kind,
        req.namespace,
        req.metric_name,
        _metric_selector_string(req.metric_selector),
        (obj.kind, obj.name, obj.api_version) if obj is not None else None,
    )


def _milli(value: Any) -> int:
    return parse_quantity(value).milli_value()


def _ts(raw: Any) -> datetime:
    return parse_time(str(raw))


def _pod_name(item: Mapping[str, Any]) -> str:
    meta = item.get("metadata")
    if isinstance(meta, Mapping) and meta.get("name"):
        return str(meta["name"])
    return str((item.get("describedObject") or {}).get("name") or "")


def _parse_resource(req: MetricRequest, items: list[dict[str, Any]]) -> MetricInput:
    """``resourceMetricsClient.GetResourceMetric`` once the list is in."""
    if not items:
        return MetricFetchError("no metrics returned from resource metrics API")
    res: dict[str, PodMetric] = {}
    for m in items:
        meta = m.get("metadata") or {}
        name = str(meta.get("name") or "")
        ts = _ts(m.get("timestamp"))
        window = parse_go_duration(str(m.get("window") or "0s"))
        containers = m.get("containers") or []
        if req.container:
            # getContainerResourceMetrics
            found = False
            for c in containers:
                if c.get("name") == req.container:
                    found = True
                    usage = c.get("usage") or {}
                    if req.resource in usage:
                        res[name] = PodMetric(ts, window, _milli(usage[req.resource]))
                    break
            if not found:
                return MetricFetchError(
                    f"container {req.container} not present in metrics for pod "
                    f"{meta.get('namespace')}/{name}"
                )
            continue
        # getPodResourceMetrics: a pod missing the resource in any container is skipped.
        total = 0
        missing = len(containers) == 0
        for c in containers:
            usage = c.get("usage") or {}
            if req.resource not in usage:
                missing = True
                break
            total += _milli(usage[req.resource])
        if not missing:
            res[name] = PodMetric(ts, window, total)
    return res


def _parse_pods(items: list[dict[str, Any]]) -> MetricInput:
    """``customMetricsClient.GetForObjects`` (pods) once the list is in."""
    if not items:
        return MetricFetchError("no metrics returned from custom metrics API")
    res: dict[str, PodMetric] = {}
    for m in items:
        ws = m.get("windowSeconds")
        window = timedelta(seconds=int(ws)) if ws is not None else DEFAULT_WINDOW
        name = str((m.get("describedObject") or {}).get("name") or "")
        res[name] = PodMetric(_ts(m.get("timestamp")), window, _milli(m.get("value")))
    return res


class RestMetricsSource:
    """The metrics APIs over HTTP (metrics.k8s.io v1beta1, custom v1beta2, external v1beta1)."""

    def __init__(
        self,
        session: KubeSession,
        *,
        timeout: float = 10.0,
        resource_for_kind: Callable[[str, str], Any] | None = None,
    ) -> None:
        self._s = session
        self._timeout = timeout
        # (group, kind) -> awaitable plural resource name, for Object metrics.
        self._resource_for_kind = resource_for_kind

    async def fetch(
        self, req: MetricRequest, selector: Selector, pod_names: Collection[str] | None = None
    ) -> MetricInput:
        """What one HPA asks alone: the call with its selector (server-side), parsed."""
        per_pod = req.kind in ("resource", "pods")
        raw = await self.call(req, str(selector) if per_pod else None)
        return self.parse(req, raw, pod_names if per_pod else None)

    async def call(self, req: MetricRequest, label_selector: str | None) -> RawAnswer:
        """The API call answering ``req`` (``label_selector`` None: the whole namespace)."""
        if req.kind == "resource":
            return await self._resource(req, label_selector)
        if req.kind == "pods":
            return await self._pods(req, label_selector)
        if req.kind == "object":
            return await self._object(req)
        if req.kind == "external":
            return await self._external(req)
        return None

    def parse(
        self, req: MetricRequest, raw: RawAnswer, pod_names: Collection[str] | None
    ) -> MetricInput:
        """An API answer as the core's input; ``pod_names`` narrows per-pod lists."""
        if not isinstance(raw, list):
            return raw
        items = raw if pod_names is None else [i for i in raw if _pod_name(i) in pod_names]
        if req.kind == "resource":
            return _parse_resource(req, items)
        return _parse_pods(items)

    async def _resource(self, req: MetricRequest, selector: str | None) -> RawAnswer:
        path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{req.namespace}/pods"
        try:
            out = await kreq.list_json(
                self._s, path, label_selector=selector or None, limit=None, timeout=self._timeout
            )
        except KubeError as exc:
            return MetricFetchError(f"unable to fetch metrics from resource metrics API: {exc}")
        return list(out.items)

    async def _pods(self, req: MetricRequest, selector: str | None) -> RawAnswer:
        path = (
            f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{req.namespace}/pods/*/"
            f"{req.metric_name}"
        )
        q: dict[str, str] = {}
        if selector:
            q["labelSelector"] = selector
        msel = _metric_selector_string(req.metric_selector)
        if msel:
            q["metricLabelSelector"] = msel
        try:
            out = await kreq.get_json(self._s, path, query=q, timeout=self._timeout)
        except KubeError as exc:
            return MetricFetchError(f"unable to fetch metrics from custom metrics API: {exc}")
        return list(out.get("items") or [])

    async def _object(self, req: MetricRequest) -> RawAnswer:
        obj = req.described_object
        if obj is None:
            return None
        group = obj.api_version.rpartition("/")[0] if "/" in obj.api_version else ""
        q: dict[str, str] = {}
        msel = _metric_selector_string(req.metric_selector)
        if msel:
            q["metricLabelSelector"] = msel
        try:
            if obj.kind == "Namespace" and group == "":
                path = (
                    f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{req.namespace}/metrics/"
                    f"{req.metric_name}"
                )
            else:
                resource = await self._plural(group, obj.kind)
                gr = f"{resource}.{group}" if group else resource
                path = (
                    f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{req.namespace}/{gr}/"
                    f"{obj.name}/{req.metric_name}"
                )
            out = await kreq.get_json(self._s, path, query=q, timeout=self._timeout)
        except KubeError as exc:
            return MetricFetchError(f"unable to fetch metrics from custom metrics API: {exc}")
        except LookupError as exc:
            return MetricFetchError(f"unable to fetch metrics from custom metrics API: {exc}")
        item: Mapping[str, Any] = out
        if out.get("kind") == "MetricValueList" or "items" in out:
            items = out.get("items") or []
            if len(items) != 1:
                return MetricFetchError(
                    "unable to fetch metrics from custom metrics API: "
                    f"expected exactly one metric value, got {len(items)}"
                )
            item = items[0]
        return ObjectMetricValue(_milli(item.get("value")), _ts(item.get("timestamp")))

    async def _plural(self, group: str, kind: str) -> str:
        if self._resource_for_kind is not None:
            return str(await self._resource_for_kind(group, kind))
        return kind.lower() + "s"

    async def _external(self, req: MetricRequest) -> RawAnswer:
        path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{req.namespace}/{req.metric_name}"
        q: dict[str, str] = {}
        msel = _metric_selector_string(req.metric_selector)
        if msel:
            q["labelSelector"] = msel
        try:
            out = await kreq.get_json(self._s, path, query=q, timeout=self._timeout)
        except KubeError as exc:
            return MetricFetchError(f"unable to fetch metrics from external metrics API: {exc}")
        items = out.get("items") or []
        if not items:
            return MetricFetchError("no metrics returned from external metrics API")
        values = tuple(_milli(i.get("value")) for i in items)
        return ExternalMetricValues(values, _ts(items[0].get("timestamp")))


class SharedMetricsFetcher:
    """One API call per distinct call per sharing window (see the module docstring)."""

    def __init__(
        self, source: RestMetricsSource, clock: Clock, *, window: float = 5.0, timeout: float = 15.0
    ) -> None:
        self._source = source
        self._clock = clock
        self._window = window
        self._timeout = timeout
        self._cache: dict[tuple[Any, ...], tuple[float, asyncio.Future[RawAnswer]]] = {}
        self.requests = 0  # API calls made (for tests and metrics)
        self.shared = 0  # answers served from the cache

    def new_period(self) -> None:
        self._cache.clear()

    def _evict(self, now: float) -> None:
        if len(self._cache) < 1024:
            return
        for k in [k for k, (exp, f) in self._cache.items() if exp <= now and f.done()]:
            del self._cache[k]

    async def fetch(
        self, req: MetricRequest, selector: Selector, pod_names: Collection[str] | None = None
    ) -> MetricInput:
        if req.kind == "none":
            return None
        per_pod = req.kind in ("resource", "pods")
        if per_pod and pod_names is None:
            # Without the pod list the answer cannot be narrowed: ask with the selector.
            return await self._source.fetch(req, selector)
        raw = await self._call(req)
        return self._source.parse(req, raw, pod_names if per_pod else None)

    async def _call(self, req: MetricRequest) -> RawAnswer:
        key = request_key(req)
        now = self._clock.monotonic()
        hit = self._cache.get(key)
        if hit is not None and (hit[0] > now or not hit[1].done()):
            self.shared += 1
            return await asyncio.shield(hit[1])
        self._evict(now)
        fut: asyncio.Future[RawAnswer] = asyncio.get_running_loop().create_future()
        self._cache[key] = (now + self._window, fut)
        self.requests += 1
        try:
            async with asyncio.timeout(self._timeout):
                value = await self._source.call(req, None)
        except TimeoutError:
            value = _timeout_error(req)
        except BaseException as exc:
            self._cache.pop(key, None)
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        if isinstance(value, MetricFetchError):
            # An error is shared with the HPAs waiting on this call, never kept for later.
            self._cache.pop(key, None)
        fut.set_result(value)
        return value


def _timeout_error(req: MetricRequest) -> MetricFetchError:
    api = {
        "resource": "resource metrics API",
        "pods": "custom metrics API",
        "object": "custom metrics API",
        "external": "external metrics API",
    }.get(req.kind, "metrics API")
    return MetricFetchError(f"unable to fetch metrics from {api}: context deadline exceeded")
