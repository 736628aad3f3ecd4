"""Prometheus metrics.

The ``horizontal_pod_autoscaler_controller_*`` families carry the names, labels
and buckets of upstream's ``pkg/controller/podautoscaler/monitor/metrics.go``,
so dashboards built for kube-controller-manager keep working. So do the families
kube-controller-manager's dashboards and alerts read besides those, under
component-base's names, labels and buckets: ``rest_client_*`` (client-go's rest
client), ``workqueue_*`` (the HPA queue, ``name="horizontalpodautoscaler"``),
``leader_election_master_status`` and ``process_*``; ``python_*`` stand where a Go
binary has ``go_*``. No ``*_created`` series are served (component-base has none).
The ``hpactl_*`` families are our own additions. Each ``ControllerMetrics`` owns
its registry, so several controllers can live in one process (tests).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

SUBSYSTEM = "horizontal_pod_autoscaler_controller"
# metrics.ExponentialBuckets(0.001, 2, 15)
UPSTREAM_BUCKETS = tuple(0.001 * 2**i for i in range(15))
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Label values upstream uses.
ACTION_SCALE_UP = "scale_up"
ACTION_SCALE_DOWN = "scale_down"
ACTION_NONE = "none"
ERROR_SPEC = "spec"
ERROR_INTERNAL = "internal"
ERROR_NONE = "none"

# component-base/metrics/prometheus/restclient: request and rate limiter latency.
REST_CLIENT_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
# component-base/metrics/prometheus/workqueue: ExponentialBuckets(10e-7, 10, 10).
WORKQUEUE_BUCKETS = tuple(1e-6 * 10**i for i in range(10))
# pkg/controller/podautoscaler: NewNamedRateLimitingQueue(..., "horizontalpodautoscaler").
HPA_QUEUE = "horizontalpodautoscaler"

# client-go labels requests by HTTP method; the session reports Kubernetes verbs.
_HTTP_METHODS = {
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}


def http_method(verb: str) -> str:
    """The HTTP method of a request the session reported with Kubernetes ``verb``."""
    return _HTTP_METHODS.get(verb, verb.upper())


QueueState = Callable[[], tuple[int, float, float]]
"""() -> (depth, unfinished work seconds, longest running processor seconds)."""


class _WorkqueueGauges:
    """The HPA queue's gauges, read from the scheduler when scraped.

    Upstream refreshes unfinished work and the longest running processor every
    500 ms; here they are computed at scrape time, which is when they are read.
    """

    def __init__(self) -> None:
        self.source: QueueState | None = None

    def collect(self) -> Iterator[Metric]:
        depth, unfinished, longest = self.source() if self.source is not None else (0, 0.0, 0.0)
        for name, doc, value in (
            ("workqueue_depth", "Current depth of workqueue", float(depth)),
            (
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has done that is in progress and hasn't been "
                "observed by work_duration. Large values indicate stuck threads. One can "
                "deduce the number of stuck threads by observing the rate at which this "
                "increases.",
                unfinished,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                longest,
            ),
        ):
            fam = GaugeMetricFamily(name, doc, labels=["name"])
            fam.add_metric([HPA_QUEUE], value)
            yield fam


class WorkqueueMetrics:
    """client-go's workqueue metrics for the HPA schedule (``SyncSupervisor``'s observer)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.gauges = _WorkqueueGauges()
        r.register(self.gauges)
        self._adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            ["name"],
            registry=r,
        ).labels(HPA_QUEUE)
        self._queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        ).labels(HPA_QUEUE)
        self._work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name"],
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        ).labels(HPA_QUEUE)
        self._retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            ["name"],
            registry=r,
        ).labels(HPA_QUEUE)

    def added(self) -> None:
        self._adds.inc()

    def started(self, queued_seconds: float) -> None:
        self._queue_duration.observe(queued_seconds)

    def done(self, seconds: float) -> None:
        self._work_duration.observe(seconds)

    def requeued(self) -> None:
        self._retries.inc()


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        # Process-wide: counters and histograms get no ``*_created`` series (as
        # component-base's); the same as PROMETHEUS_DISABLE_CREATED_SERIES=true.
        prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = registry or CollectorRegistry()
        r = self.registry
        # process_* as a Go binary's (CPU, RSS, fds, start time); python_info and
        # python_gc_* are this runtime's counterpart of go_*.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.reconciliations = Counter(
            "reconciliations_total",
            "Number of reconciliations of HPA controller, by action and error.",
            ["action", "error"],
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self.reconciliation_duration = Histogram(
            "reconciliation_duration_seconds",
            "The time(seconds) that the HPA controller takes to reconcile once.",
            ["action", "error"],
            subsystem=SUBSYSTEM,
            buckets=UPSTREAM_BUCKETS,
            registry=r,
        )
        self.metric_computations = Counter(
            "metric_computation_total",
            "Number of metric computations, by action, error and metric_type.",
            ["action", "error", "metric_type"],
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self.metric_computation_duration = Histogram(
            "metric_computation_duration_seconds",
            "The time(seconds) that the HPA controller takes to calculate one metric.",
            ["action", "error", "metric_type"],
            subsystem=SUBSYSTEM,
            buckets=UPSTREAM_BUCKETS,
            registry=r,
        )
        self.num_hpas = Gauge(
            "num_horizontal_pod_autoscalers",
            "Current number of controlled HPA objects.",
            subsystem=SUBSYSTEM,
            registry=r,
        )
        self.desired_replicas = Gauge(
            "desired_replicas",
            "Current desired replica count for HPA objects.",
            ["namespace", "hpa_name"],
            subsystem=SUBSYSTEM,
            registry=r,
        )
        # client-go's rest client (component-base/metrics/prometheus/restclient).
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=r,
        )
        self.rest_request_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_CLIENT_BUCKETS,
            registry=r,
        )
        self.rest_rate_limiter_duration = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_CLIENT_BUCKETS,
            registry=r,
        )
        self._rest_children: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}
        self._throttle_children: dict[tuple[str, str], Histogram] = {}
        # client-go's workqueue, for the HPA schedule.
        self.workqueue = WorkqueueMetrics(r)
        # client-go's leader election (one series per Lease, as one elector per Lease).
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=r,
        )
        # hpactl's own.
        self.schedule_lag = Histogram(
            "hpactl_sync_schedule_lag_seconds",
            "How late a sync started relative to its scheduled tick.",
            buckets=UPSTREAM_BUCKETS,
            registry=r,
        )
        self.syncs_in_flight = Gauge(
            "hpactl_syncs_in_flight", "HPA syncs running right now.", registry=r
        )
        self.api_requests = Counter(
            "hpactl_api_requests_total",
            "Requests to the Kubernetes API (metrics APIs included), by verb and HTTP code.",
            ["verb", "code"],
            registry=r,
        )
        self.api_request_duration = Histogram(
            "hpactl_api_request_duration_seconds",
            "Latency of requests to the Kubernetes API, by verb.",
            ["verb"],
            buckets=UPSTREAM_BUCKETS,
            registry=r,
        )
        self.leader = Gauge(
            "hpactl_leader", "1 while this process holds the leader lease, else 0.", registry=r
        )
        self.shard_held = Gauge(
            "hpactl_shard_held",
            "1 for each shard (--shards) whose Lease this process holds; series of shards "
            "not held are removed.",
            ["shard"],
            registry=r,
        )
        self.shards_held = Gauge(
            "hpactl_shards_held", "How many shards (--shards) this process holds.", registry=r
        )
        self.history_writes = Counter(
            "hpactl_history_writes_total",
            "ConfigMap writes of persisted HPA history (HPAHistoryPersistence), by result.",
            ["result"],
            registry=r,
        )
        self.caches_synced = Gauge(
            "hpactl_informer_caches_synced", "1 once all informer caches have synced.", registry=r
        )
        self.target_topology_skew = Gauge(
            "hpactl_target_topology_skew",
            "Observed skew (most minus fewest matching pods over the eligible domains) of "
            "a scale target's pods per topology key of its topologySpreadConstraints, "
            "measured once its pods have followed the last rescale.",
            ["namespace", "name", "topology_key"],
            registry=r,
        )
        # Shadow mode (hpactl run --shadow): hpactl's decisions against the writer's.
        self.shadow_divergences = Counter(
            "hpactl_shadow_divergences_total",
            "Decisions of the writing controller that hpactl, deciding from the same "
            "inputs, did not reproduce (or contradicted), by HPA and field.",
            ["namespace", "name", "field"],
            registry=r,
        )
        self.shadow_comparisons = Counter(
            "hpactl_shadow_comparisons_total",
            "Field verdicts of shadow mode: agree, diverge, or not-compared (no decision "
            "of the other controller from the same inputs within one sync period).",
            ["result"],
            registry=r,
        )
        self.shadow_hpas_compared = Gauge(
            "hpactl_shadow_hpas_compared",
            "HPAs for which at least one decision was compared with the writing controller.",
            registry=r,
        )
        self.shadow_hpas_agreeing = Gauge(
            "hpactl_shadow_hpas_agreeing",
            "Compared HPAs without any divergence since hpactl started (or the HPA appeared).",
            registry=r,
        )

    def observe_api_request(self, verb: str, code: int, seconds: float) -> None:
        self.api_requests.labels(verb=verb, code=str(code)).inc()
        self.api_request_duration.labels(verb=verb).observe(seconds)

    def observe_rest_request(self, verb: str, host: str, code: str, seconds: float) -> None:
        """One request of Kubernetes ``verb`` to ``host`` (host:port), as client-go counts it."""
        # Called for every request: the labelled children are looked up once.
        key = (verb, host, code)
        children = self._rest_children.get(key)
        if children is None:
            method = http_method(verb)
            children = (
                self.rest_requests.labels(code, method, host),
                self.rest_request_duration.labels(method, host),
            )
            self._rest_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_rate_limiter(self, verb: str, host: str, seconds: float) -> None:
        key = (verb, host)
        child = self._throttle_children.get(key)
        if child is None:
            child = self.rest_rate_limiter_duration.labels(http_method(verb), host)
            self._throttle_children[key] = child
        child.observe(seconds)

    def leader_lease(self, name: str, held: bool) -> None:
        """``leader_election_master_status{name}``: 1 while Lease ``name`` is held, else 0."""
        self.leader_election_master_status.labels(name).set(1 if held else 0)

    def forget_hpa(self, namespace: str, name: str) -> None:
        with contextlib.suppress(KeyError):
            self.desired_replicas.remove(namespace, name)

    def forget_topology_skew(self, namespace: str, name: str, keys: tuple[str, ...]) -> None:
        for key in keys:
            with contextlib.suppress(KeyError):
                self.target_topology_skew.remove(namespace, name, key)

    def render(self) -> bytes:
        return generate_latest(self.registry)
