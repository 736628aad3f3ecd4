"""Prometheus metrics.

The ``horizontal_pod_autoscaler_controller_*`` families carry the names, labels
and buckets of upstream's ``pkg/controller/podautoscaler/monitor/metrics.go``,
so dashboards built for kube-controller-manager keep working.  The ``hpactl_*``
families are our own additions.  Each ``ControllerMetrics`` owns its registry,
so several controllers can live in one process (tests).
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

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


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
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

    def forget_hpa(self, namespace: str, name: str) -> None:
        with contextlib.suppress(KeyError):
            self.desired_replicas.remove(namespace, name)

    def forget_topology_skew(self, namespace: str, name: str, keys: tuple[str, ...]) -> None:
        for key in keys:
            with contextlib.suppress(KeyError):
                self.target_topology_skew.remove(namespace, name, key)

    def render(self) -> bytes:
        return generate_latest(self.registry)
