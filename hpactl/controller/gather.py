"""Gather what one sync reads: the target's scale, the pods, the metrics.

* Scale: Deployments, ReplicaSets, StatefulSets and ReplicationControllers come
  from their informer caches (projected to exactly what ``GET .../scale`` returns);
  any other kind is read live through its scale subresource, resolved by discovery.
  A missing cached object gives the API's own NotFound text
  (``deployments.apps "web" not found``), as the live GET would; a cached object that
  could not be read (an unparseable selector) says what is wrong with it.
  ``distrust(hpa)`` makes the next reads of that target live (GET ``.../scale``) until
  the cache has caught up with what the live read saw: after a write that conflicted
  (the cache was stale) or whose answer was lost (it may have landed).
* Pods: the namespace's pods matching the scale's selector, from the pod cache
  (the core re-checks the selector; filtering here only saves work).
* Topology skew (``topology_skew``): for a cached target whose pod template has
  ``topologySpreadConstraints``, the observed skew per constraint from the pod and
  node caches, once the pods number the target's replicas.
* Metrics: one fetch per ``spec.metrics`` entry (``metrics_to_fetch``), concurrently,
  through ``hpactl.metrics.SharedMetricsFetcher`` (one request per namespace and
  period), each in its own span and bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry import trace

from hpactl.cache.listers import NodeLister, PodLister, WorkloadLister
from hpactl.cache.projections import WORKLOAD_KINDS, WorkloadScale
from hpactl.core.decide import MetricRequest, ScaleView
from hpactl.core.metrics_eval import MetricInput
from hpactl.core.pod_selection import owner_uids
from hpactl.kube.errors import KubeError
from hpactl.kube.restmapper import RestMapper, RestMapping, split_api_version
from hpactl.kube.scaling import get_scale, read_scale
from hpactl.kube.session import KubeSession
from hpactl.model.hpa import HPA
from hpactl.model.metrics import MetricFetchError
from hpactl.model.pod import PodView
from hpactl.model.selectors import Selector, parse_selector
from hpactl.model.topology import ConstraintSkew, PodPlacement, observed_skew
from hpactl.obs.tracing import SPAN_METRIC, SPAN_SCALE_GET, start_span

__all__ = ["FetchedMetric", "Gatherer", "MetricsSource", "ScaleRead", "SkewRead"]


class MetricsSource(Protocol):
    """What ``hpactl.metrics`` offers: one ``spec.metrics`` entry's fetch."""

    async def fetch(self, req: MetricRequest, selector: Selector) -> MetricInput: ...


@dataclass(slots=True)
class ScaleRead:
    """The scale read and where to write it back."""

    scale: ScaleView | None
    error: str = ""
    mapping: RestMapping | None = None
    # resourceVersion of the Scale read (live) or of the cached object: the
    # precondition of the first write attempt, as upstream writes back what it read.
    resource_version: str = ""
    cached: bool = False
    # The target's uid (the Scale's metadata.uid is the object's), for KEP-5325.
    uid: str = ""


@dataclass(slots=True)
class FetchedMetric:
    request: MetricRequest
    value: MetricInput
    seconds: float
    error: str | None = field(default=None)


@dataclass(frozen=True, slots=True)
class SkewRead:
    """The observed topology skew of a target's pods (``Gatherer.topology_skew``).

    ``ready`` False: not measurable yet (the pods have not followed the scale, or the
    node cache has not synced); ``skews`` empty: the template has no constraints
    (or the target is not a cached kind, whose template hpactl does not read).
    """

    ready: bool
    skews: tuple[ConstraintSkew, ...] = ()


def _not_found(group: str, resource: str, name: str) -> str:
    gr = f"{resource}.{group}" if group else resource
    return f'{gr} "{name}" not found'


class Gatherer:
    def __init__(
        self,
        *,
        session: KubeSession,
        pods: PodLister,
        workloads: WorkloadLister | None,
        mapper: RestMapper,
        metrics: MetricsSource,
        tracer: trace.Tracer,
        call_timeout: float,
        nodes: NodeLister | None = None,
    ) -> None:
        self._s = session
        self._nodes = nodes
        self._pods = pods
        self._workloads = workloads
        self._mapper = mapper
        self._metrics = metrics
        self._tracer = tracer
        self._timeout = call_timeout
        # target key -> resourceVersion the cache must reach before it is trusted
        # again ("" = read live at least once).
        self._distrusted: dict[str, str] = {}

    def distrust(self, hpa: HPA) -> None:
        """Read ``hpa``'s target live until the cache has caught up (module doc)."""
        ref = hpa.spec.scale_target_ref
        self._distrusted[_target_key(ref.kind, hpa.namespace, ref.name)] = ""

    def forget(self, hpa: HPA) -> None:
        ref = hpa.spec.scale_target_ref
        self._distrusted.pop(_target_key(ref.kind, hpa.namespace, ref.name), None)

    async def scale(self, hpa: HPA) -> ScaleRead:
        ref = hpa.spec.scale_target_ref
        with start_span(self._tracer, SPAN_SCALE_GET) as span:
            if not span.is_recording():
                return await self._scale(hpa)
            span.set_attribute("hpactl.target.kind", ref.kind)
            span.set_attribute("hpactl.target.name", ref.name)
            read = await self._scale(hpa)
            span.set_attribute("hpactl.scale.cached", read.cached)
            if read.scale is None:
                span.set_status(trace.Status(trace.StatusCode.ERROR, read.error))
            else:
                span.set_attribute("hpactl.replicas.current", read.scale.spec_replicas)
            return read

    async def _scale(self, hpa: HPA) -> ScaleRead:
        ref = hpa.spec.scale_target_ref
        try:
            group, _version = split_api_version(ref.api_version)
        except ValueError as exc:
            return ScaleRead(None, str(exc))
        wk = WORKLOAD_KINDS.get(ref.kind)
        if wk is not None and wk.group == group and self._workloads is not None:
            mapping = RestMapping(wk.group, wk.version, wk.kind, wk.resource, True, True)
            ws = self._workloads.get(ref.kind, hpa.namespace, ref.name)
            tkey = _target_key(ref.kind, hpa.namespace, ref.name)
            wanted = self._distrusted.get(tkey)
            if wanted is not None:
                if ws is not None and wanted and _rv_at_least(ws.resource_version, wanted):
                    del self._distrusted[tkey]  # the cache has caught up
                else:
                    return await self._live(hpa, mapping, tkey)
            if ws is None:
                bad = self._workloads.get_error(ref.kind, hpa.namespace, ref.name)
                if bad is not None:
                    gr = f"{wk.resource}.{wk.group}" if wk.group else wk.resource
                    return ScaleRead(
                        None, f'{gr} "{ref.name}" cannot be scaled: {bad.message}', mapping
                    )
                return ScaleRead(None, _not_found(wk.group, wk.resource, ref.name), mapping)
            view = ScaleView(ws.spec_replicas, ws.status_replicas, ws.selector)
            return ScaleRead(
                view,
                mapping=mapping,
                resource_version=ws.resource_version,
                cached=True,
                uid=ws.uid,
            )
        try:
            async with asyncio.timeout(self._timeout * 2):
                res = await get_scale(
                    self._s,
                    self._mapper,
                    hpa.namespace,
                    ref.api_version,
                    ref.kind,
                    ref.name,
                    timeout=self._timeout,
                )
        except KubeError as exc:
            return ScaleRead(None, str(exc))
        except TimeoutError:
            return ScaleRead(None, "context deadline exceeded")
        sc = res.scale
        view = ScaleView(sc.spec_replicas, sc.status_replicas, sc.selector)
        return ScaleRead(
            view, mapping=res.mapping, resource_version=sc.resource_version, uid=sc.uid
        )

    async def _live(self, hpa: HPA, mapping: RestMapping, tkey: str) -> ScaleRead:
        try:
            async with asyncio.timeout(self._timeout * 2):
                sc = await read_scale(
                    self._s,
                    mapping,
                    hpa.namespace,
                    hpa.spec.scale_target_ref.name,
                    timeout=self._timeout,
                )
        except KubeError as exc:
            return ScaleRead(None, str(exc), mapping)
        except TimeoutError:
            return ScaleRead(None, "context deadline exceeded", mapping)
        if tkey in self._distrusted:
            self._distrusted[tkey] = sc.resource_version
        view = ScaleView(sc.spec_replicas, sc.status_replicas, sc.selector)
        return ScaleRead(view, mapping=mapping, resource_version=sc.resource_version, uid=sc.uid)

    def topology_skew(
        self, hpa: HPA, target_pods: Sequence[PodView], spec_replicas: int
    ) -> SkewRead:
        """The skew of the target's pods per spread constraint of its pod template,
        once they number ``spec_replicas`` (terminating ones left out), from the
        caches (hpactl.model.topology.observed_skew)."""
        ref = hpa.spec.scale_target_ref
        ws = None
        if self._workloads is not None and ref.kind in WORKLOAD_KINDS:
            ws = self._workloads.get(ref.kind, hpa.namespace, ref.name)
        if ws is None or ws.spread is None or self._nodes is None:
            return SkewRead(True)
        if sum(1 for p in target_pods if not p.deleting) != spec_replicas:
            return SkewRead(False)
        if not self._nodes.synced:
            return SkewRead(False)
        placements: dict[str, PodPlacement] = {}
        for c in ws.spread.constraints:
            for p in self._pods.list(hpa.namespace, c.selector):
                placements[p.name] = PodPlacement(p.labels, p.node_name, p.deleting)
        skews = observed_skew(ws.spread, self._nodes.list(), placements.values())
        return SkewRead(True, skews)

    def pod_owners(self, hpa: HPA, read: ScaleRead) -> frozenset[str] | None:
        """KEP-5325 ``OwnerReference``: the controller uids of the target's pods (its
        own, and its ReplicaSets' from the ReplicaSet cache); None if its uid is unknown."""
        rs: Sequence[WorkloadScale] = ()
        if self._workloads is not None and self._workloads.supports("ReplicaSet"):
            rs = self._workloads.list("ReplicaSet", hpa.namespace)
        return owner_uids(read.uid, ((r.uid, r.owner_uid) for r in rs))

    def pods(self, namespace: str, selector_text: str) -> Sequence[PodView]:
        if not selector_text:
            return ()
        try:
            sel = parse_selector(selector_text)
        except ValueError:
            return ()
        return self._pods.list(namespace, sel)

    async def metrics(
        self, requests: Sequence[MetricRequest], selector_text: str
    ) -> list[FetchedMetric]:
        """Fetch every request concurrently."""
        try:
            selector = parse_selector(selector_text)
        except ValueError:
            selector = Selector.nothing()
        if len(requests) == 1:  # the common case: no gather, no task
            return [await self._one(requests[0], selector)]
        return list(await asyncio.gather(*(self._one(r, selector) for r in requests)))

    async def _one(self, req: MetricRequest, selector: Selector) -> FetchedMetric:
        if req.kind == "none":
            return FetchedMetric(req, None, 0.0)
        started = time.perf_counter()
        with start_span(self._tracer, SPAN_METRIC) as span:
            recording = span.is_recording()
            if recording:
                span.set_attribute("hpactl.metric.index", req.index)
                span.set_attribute("hpactl.metric.source", req.kind)
                if req.metric_name:
                    span.set_attribute("hpactl.metric.name", req.metric_name)
                if req.resource:
                    span.set_attribute("hpactl.metric.resource", req.resource)
            try:
                async with asyncio.timeout(self._timeout):
                    value = await self._metrics.fetch(req, selector)
            except TimeoutError:
                value = MetricFetchError(_deadline_text(req))
            err = value.message if isinstance(value, MetricFetchError) else None
            if not recording:
                pass
            elif err is not None:
                span.set_status(trace.Status(trace.StatusCode.ERROR, err))
                span.set_attribute("hpactl.metric.error", err)
            elif isinstance(value, dict):
                span.set_attribute("hpactl.metric.samples", len(value))
            return FetchedMetric(req, value, time.perf_counter() - started, err)


def _target_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def _rv_at_least(cached: str, seen: str) -> bool:
    try:
        return int(cached) >= int(seen)
    except ValueError:
        return cached == seen


def _deadline_text(req: MetricRequest) -> str:
    api = {
        "resource": "resource metrics API",
        "pods": "custom metrics API",
        "object": "custom metrics API",
        "external": "external metrics API",
    }.get(req.kind, "metrics API")
    return f"unable to fetch metrics from {api}: context deadline exceeded"
