"""One metrics request per namespace and slot, shared by the HPAs that need it.

``SharedMetricsFetcher(client, *, clock, period=15.0, share_window=5.0, pod_labels=None)``
    A ``MetricsClient`` (and a controller ``MetricsSource``: ``fetch(req, selector)``)
    in front of ``RestMetricsClient``. Within a short window of the injected clock:

    * resource metrics: ONE ``PodMetricsList`` of the whole namespace (no label
      selector); each HPA's pods are picked client-side with the selector the server
      would have applied (the PodMetrics' own ``metadata.labels``, which metrics-server
      copies from the pod) and the upstream interpretation runs on that subset, so the
      answer is item for item what ``?labelSelector=<selector>`` returns;
    * custom pods metrics: one request per (namespace, metric, metric selector) over all
      pods when ``pod_labels(namespace, name) -> labels | None`` is given (the adapter
      filters by pod labels; a pod unknown to ``pod_labels`` has no series), otherwise
      one per exact (namespace, metric, metric selector, selector);
    * object and external metrics: one request per exact key.

    Concurrent askers share the in-flight request. Only answers are kept: a request
    that failed (API error, timeout) is not cached, so the next asker in the window
    tries again. ``requests`` counts API calls made, ``shared`` answers served without
    one. ``new_period()`` forgets everything now (``sync_all`` in simulate). Answers
    past the window are dropped, and PodMetrics lists are kept compact
    (``hpactl.metrics.client.compact_pod_metrics``), so little stays between syncs.

    How long an answer is shared: at most ``share_window`` seconds (default 5 s) from
    when it was requested, and never longer than half the asking HPA's own sync period
    (KEP-6003: the controller sets it in :data:`ASKER_PERIOD` for the sync; unset:
    ``period``). An older answer is fetched again. So an HPA synced every 5 s never
    decides on a list a 60 s HPA fetched 40 s ago, while the 60 s HPA happily reuses
    the 5 s HPA's fresher one; and no HPA decides on metrics older than the window.

    The sharing comes from the schedule (``hpactl.controller.scheduling``): a
    namespace's HPAs tick clustered in a short slot (0.5 s at 100 HPAs) right after
    the namespace's phase, and namespaces are staggered over the period, so the first
    sync of the slot lists the namespace and the others reuse that answer: about one
    list per namespace and period, as fresh as the slot is short. Before, an answer
    was reused for a whole period at a per-namespace offset while the HPAs ticked
    anywhere in it, so a decision could rest on metrics almost a period old.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from hpactl.core.decide import MetricRequest
from hpactl.core.metrics_eval import MetricInput
from hpactl.kube.errors import KubeError
from hpactl.metrics.client import (
    RestMetricsClient,
    custom_fetch_error,
    external_fetch_error,
    external_values_from_items,
    fetch_metric,
    object_value_from_items,
    raw_result,
    resource_fetch_error,
    resource_result,
    sample_labels,
)
from hpactl.model.hpa import CrossVersionObjectReference
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetricsInfo,
)
from hpactl.model.selectors import DOUBLE_EQUALS, EQUALS, IN, Selector, parse_selector

__all__ = ["ASKER_PERIOD", "SHARE_WINDOW", "PodLabels", "SharedMetricsFetcher"]

#: The sync period (seconds) of the HPA whose sync is asking; None: the fetcher's own.
ASKER_PERIOD: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "hpactl_asker_period", default=None
)

PodLabels = Callable[[str, str], Mapping[str, str] | None]
Items = list[Any]  # decoded items, or a compact PodMetrics list


class _LabelIndex:
    """Positions of items by (label key, value), to pick a selector's pods fast.

    Equality and set-membership requirements narrow the candidates to the smallest
    posting list; every candidate is still checked with the full selector, and the
    result keeps the items' order (upstream takes the first item's timestamp).
    """

    __slots__ = ("_labels", "_postings", "items")

    def __init__(self, items: Items, labels_of: Callable[[Any], Mapping[str, str] | None]):
        self.items = items
        self._labels: list[Mapping[str, str] | None] = [labels_of(i) for i in items]
        self._postings: dict[tuple[str, str], list[int]] = {}
        for pos, labels in enumerate(self._labels):
            for kv in (labels or {}).items():
                self._postings.setdefault(kv, []).append(pos)

    def select(self, sel: Selector) -> Items:
        best: list[int] | None = None
        for r in sel.requirements:
            if r.operator in (EQUALS, DOUBLE_EQUALS, IN):
                if len(r.values) == 1:
                    cand = self._postings.get((r.key, r.values[0]), [])
                else:
                    cand = sorted({p for v in r.values for p in self._postings.get((r.key, v), [])})
                if best is None or len(cand) < len(best):
                    best = cand
        positions = range(len(self.items)) if best is None else best
        out: Items = []
        for pos in positions:
            labels = self._labels[pos]
            if labels is not None and sel.matches(labels):
                out.append(self.items[pos])
        return out


#: How long a shared answer is served, at most (seconds; and at most the asker's period).
SHARE_WINDOW = 5.0


class _Monotonic(Protocol):
    def monotonic(self) -> float: ...


class SharedMetricsFetcher:
    """See the module docstring."""

    def __init__(
        self,
        client: RestMetricsClient,
        *,
        clock: _Monotonic,
        period: float = 15.0,
        share_window: float = SHARE_WINDOW,
        pod_labels: PodLabels | None = None,
    ) -> None:
        if period <= 0 or share_window <= 0:
            raise ValueError("period and share_window must be positive")
        self._client = client
        self._clock = clock
        self._period = period
        self.share_window = share_window
        self._pod_labels = pod_labels
        # key -> (when the request was made, the request); every key starts with
        # (kind, namespace, ...).
        self._cache: dict[tuple[Any, ...], tuple[float, asyncio.Future[Items]]] = {}
        self._indexes: dict[tuple[Any, ...], _LabelIndex] = {}
        # (when, key) in request order: answers past the window are dropped (never
        # served again), so only the lists of the last few seconds stay in memory.
        self._made: collections.deque[tuple[float, tuple[Any, ...]]] = collections.deque()
        self._selectors: dict[str, Selector] = {}
        self.requests = 0
        self.shared = 0

    def new_period(self) -> None:
        self._cache.clear()
        self._indexes.clear()
        self._made.clear()

    def cached_keys(self) -> list[tuple[Any, ...]]:
        """The answers held now (for tests and debugging)."""
        return list(self._cache)

    def _drop_expired(self, now: float) -> None:
        made, cache = self._made, self._cache
        oldest = now - self.share_window
        while made and made[0][0] <= oldest:
            when, key = made.popleft()
            entry = cache.get(key)
            if entry is not None and entry[0] == when:
                del cache[key]
                self._indexes.pop(key, None)

    def _max_age(self) -> float:
        """How old an answer the asking HPA may be served: the window, within half its
        period. Half: the HPAs of a slot share, the next slot (one period later, give or
        take ms of jitter) lists again instead of deciding on the previous slot's answer
        (at 1 s periods, a list made 0.99 s before; its pods may have changed since)."""
        asked = ASKER_PERIOD.get()
        period = asked if asked is not None and asked > 0 else self._period
        return min(self.share_window, period / 2)

    # -- the shared core -------------------------------------------------------------
    async def _items(self, key: tuple[Any, ...], call: Callable[[], Awaitable[Items]]) -> Items:
        now = self._clock.monotonic()
        self._drop_expired(now)
        entry = self._cache.get(key)
        if entry is not None and now - entry[0] < self._max_age():
            fut = entry[1]
            self.shared += 1
        else:
            self.requests += 1
            fut = asyncio.ensure_future(call())
            self._cache[key] = (now, fut)
            self._made.append((now, key))
            fut.add_done_callback(functools.partial(self._forget_failure, key))
        if fut.done():  # the common case once a period's list is in: no shield needed
            return fut.result()
        # shield: one asker giving up must not cancel the request for the others
        return await asyncio.shield(fut)

    def _forget_failure(self, key: tuple[Any, ...], fut: asyncio.Future[Items]) -> None:
        failed = fut.cancelled() or fut.exception() is not None
        entry = self._cache.get(key)
        if failed and entry is not None and entry[1] is fut:
            del self._cache[key]

    def _select(
        self,
        key: tuple[Any, ...],
        every: Items,
        selector: Selector,
        labels_of: Callable[[Any], Mapping[str, str] | None],
    ) -> Items:
        idx = self._indexes.get(key)
        if idx is None or idx.items is not every:
            idx = _LabelIndex(every, labels_of)
            self._indexes[key] = idx
        return idx.select(self._server_selector(selector))

    def _server_selector(self, selector: Selector) -> Selector:
        # What the API server applies: the selector's string form, parsed back
        # (Go's labels.Nothing() stringifies to "", which selects everything).
        text = str(selector)
        sel = self._selectors.get(text)
        if sel is None:
            sel = parse_selector(text) if text else Selector.everything()
            if len(self._selectors) > 4096:
                self._selectors.clear()
            self._selectors[text] = sel
        return sel

    # -- MetricsClient -------------------------------------------------------------------
    async def get_resource_metric(
        self, resource: str, namespace: str, selector: Selector, container: str = ""
    ) -> PodMetricsInfo | MetricFetchError:
        key = ("resource", namespace)
        try:
            every = await self._items(key, lambda: self._client.list_pod_samples(namespace, ""))
        except KubeError as exc:
            return resource_fetch_error(exc)
        items = self._select(key, every, selector, sample_labels)
        return resource_result(items, resource, container)

    async def get_raw_metric(
        self, metric_name: str, namespace: str, selector: Selector, metric_selector: Selector
    ) -> PodMetricsInfo | MetricFetchError:
        msel = str(metric_selector)
        labels_of = self._pod_labels
        try:
            if labels_of is None:
                sel_text = str(selector)
                items = await self._items(
                    ("pods", namespace, metric_name, msel, sel_text),
                    lambda: self._client.list_pods_custom_metric(
                        namespace, metric_name, sel_text, msel
                    ),
                )
            else:
                key = ("pods", namespace, metric_name, msel)
                every = await self._items(
                    key,
                    lambda: self._client.list_pods_custom_metric(namespace, metric_name, "", msel),
                )

                def pod_of(item: dict[str, Any]) -> Mapping[str, str] | None:
                    name = str((item.get("describedObject") or {}).get("name") or "")
                    return labels_of(namespace, name)

                items = self._select(key, every, selector, pod_of)
        except KubeError as exc:
            return custom_fetch_error(exc)
        return raw_result(items)

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        object_ref: CrossVersionObjectReference,
        metric_selector: Selector,
    ) -> ObjectMetricValue | MetricFetchError:
        msel = str(metric_selector)
        key = ("object", namespace, metric_name, object_ref.api_version, object_ref.kind,
               object_ref.name, msel)  # fmt: skip
        try:
            items = await self._items(
                key,
                lambda: self._client.get_object_metric_items(
                    metric_name, namespace, object_ref, msel
                ),
            )
        except KubeError as exc:
            return custom_fetch_error(exc)
        return object_value_from_items(items)

    async def get_external_metric(
        self, metric_name: str, namespace: str, selector: Selector
    ) -> ExternalMetricValues | MetricFetchError:
        sel = str(selector)
        try:
            items = await self._items(
                ("external", namespace, metric_name, sel),
                lambda: self._client.list_external_metric(metric_name, namespace, sel),
            )
        except KubeError as exc:
            return external_fetch_error(exc)
        return external_values_from_items(items)

    async def fetch(self, req: MetricRequest, selector: Selector) -> MetricInput:
        return await fetch_metric(self, req, selector)
