"""Per-metric replica proposals, mirroring upstream ``replica_calculator.go``.

Each public function keeps the Go name in snake_case and cites it. The one difference
from upstream: metrics are fetched by the shell and passed in (a value, or a
:class:`~hpactl.model.metrics.MetricFetchError`), and pods are passed in already
filtered by namespace and selector (from the informer cache). Errors raise
:class:`ReplicaCalcError` whose message is exactly upstream's error text.

Arithmetic follows Go: ``int64`` sums wrap, integer division truncates toward zero,
ratios are ``float64`` computed from operands converted to ``float64`` first, and
``int32(math.Ceil(x))`` is applied where upstream applies it. Go leaves float->int
conversions of out-of-range values implementation-defined; here they saturate
(arm64 behaviour; NaN -> 0) so a result is always a valid replica count.

Besides upstream's return values, every result records which pods were set aside and
why (``set_aside``), whether the tolerance kept the current count
(``limited_by_tolerance``), the usage ratio the tolerance was checked against
(``ratio``) and the pods counted as ready (``ready_pods``), for decision
explanations. None of these feed back into the result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetric,
    PodMetricsInfo,
)
from hpactl.model.pod import PodView, is_pod_ready_running
from hpactl.model.selectors import selector_from_label_selector

__all__ = [
    "GO_ZERO_TIME",
    "MAX_INT32",
    "MAX_INT64",
    "REASON_IGNORED_DELETING",
    "REASON_IGNORED_FAILED",
    "REASON_MISSING_METRICS",
    "REASON_UNREADY_CPU_INITIALIZING",
    "REASON_UNREADY_NOT_READY",
    "REASON_UNREADY_PENDING",
    "MetricReplicas",
    "PodGroups",
    "ReplicaCalcError",
    "ReplicaCalculator",
    "ResourceReplicas",
    "Tolerances",
    "calculate_pod_requests",
    "calculate_requests",
    "format_label_selector_go",
    "get_metric_usage_ratio",
    "get_ready_pods_count",
    "get_resource_utilization_ratio",
    "group_pods",
    "remove_metrics_for_pods",
]

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)

#: Go's zero ``time.Time`` (0001-01-01 UTC): what an unset metav1.Time holds.
GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)

# Reasons a pod is set aside (``set_aside`` entries).
REASON_IGNORED_DELETING = "ignored-deleting"
REASON_IGNORED_FAILED = "ignored-failed"
REASON_UNREADY_PENDING = "unready-pending"
REASON_UNREADY_CPU_INITIALIZING = "unready-cpu-initializing"
REASON_UNREADY_NOT_READY = "unready-not-ready"
REASON_MISSING_METRICS = "missing-metrics"

ERR_NO_PODS = "no pods returned by selector while calculating replica count"
ERR_NO_READY_METRICS = "did not receive metrics for targeted pods (pods might be unready)"
ERR_NO_MATCHED_METRICS = "no metrics returned matched known pods"


class ReplicaCalcError(Exception):
    """A replica calculation failed; ``message`` is upstream's error text, byte for byte."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- Go numeric semantics -----------------------------------------------------------


def _wrap64(v: int) -> int:
    """Go int64 two's-complement wrap-around."""
    return ((v + 2**63) % 2**64) - 2**63


def _wrap32(v: int) -> int:
    """Go ``int32(x)`` conversion of an integer (keeps the low 32 bits)."""
    return ((v + 2**31) % 2**32) - 2**31


def _go_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero; int64 wrap on MinInt64 / -1)."""
    q = abs(a) // abs(b)
    return _wrap64(q if (a >= 0) == (b >= 0) else -q)


def _fdiv(a: float, b: float) -> float:
    """Go float64 division (IEEE: x/0 is ±Inf, 0/0 is NaN)."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _f2i(x: float, lo: int, hi: int) -> int:
    """Go float->int conversion (truncation); out of range saturates, NaN -> 0."""
    if math.isnan(x):
        return 0
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def _ceil_int32(x: float) -> int:
    """Go ``int32(math.Ceil(x))``."""
    if math.isnan(x) or math.isinf(x):
        return _f2i(x, MIN_INT32, MAX_INT32)
    return _f2i(float(math.ceil(x)), MIN_INT32, MAX_INT32)


def _ceil_int64(x: float) -> int:
    """Go ``int64(math.Ceil(x))``."""
    if math.isnan(x) or math.isinf(x):
        return _f2i(x, MIN_INT64, MAX_INT64)
    return _f2i(float(math.ceil(x)), MIN_INT64, MAX_INT64)


# --- value types ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tolerances:
    """Go ``Tolerances``: scale-down and scale-up tolerance on the usage ratio."""

    scale_down: float
    scale_up: float

    def is_within(self, ratio: float) -> bool:
        """Go ``Tolerances.isWithin``: ``1-down <= ratio <= 1+up`` (inclusive, float64)."""
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)

    def __str__(self) -> str:
        """Go ``Tolerances.String``: ``[down:10.0%, up:10.0%]``."""
        return f"[down:{self.scale_down * 100.0:.1f}%, up:{self.scale_up * 100.0:.1f}%]"


@dataclass(frozen=True, slots=True)
class ResourceReplicas:
    """Result of :meth:`ReplicaCalculator.get_resource_replicas`.

    ``utilization`` is the average utilization percent and ``raw_average`` the average
    usage in milli-units, both computed over ready pods *before* the missing/unready
    adjustments (what upstream puts in status). ``timestamp`` is the metrics timestamp.
    """

    replicas: int
    utilization: int
    raw_average: int
    timestamp: datetime | None
    set_aside: tuple[tuple[str, str], ...] = ()
    limited_by_tolerance: bool = False
    ratio: float | None = None
    ready_pods: int | None = None


@dataclass(frozen=True, slots=True)
class MetricReplicas:
    """Result of the plain-value calculations (raw resource, pods, object, external).

    ``usage`` is the value upstream reports in status (average value, object value,
    external sum, or per-pod average). ``timestamp`` is None where upstream returns Go's
    zero time (Object Value and External Value targets discard the fetch timestamp).
    ``ratio`` is the usage ratio the tolerance was checked against (after the
    missing/unready adjustment when there was one); ``ready_pods`` the pods counted
    (None where upstream uses ``status.replicas`` instead of pods).
    """

    replicas: int
    usage: int
    timestamp: datetime | None
    set_aside: tuple[tuple[str, str], ...] = ()
    limited_by_tolerance: bool = False
    ratio: float | None = None
    ready_pods: int | None = None


@dataclass(frozen=True, slots=True)
class PodGroups:
    """Go ``groupPods`` results, plus the reason each pod was set aside (in pod order)."""

    ready_pod_count: int
    unready_pods: frozenset[str]
    missing_pods: frozenset[str]
    ignored_pods: frozenset[str]
    set_aside: tuple[tuple[str, str], ...]


# --- helpers (package-level functions upstream) --------------------------------------


def group_pods(
    pods: Sequence[PodView],
    metrics: PodMetricsInfo,
    resource: str,
    cpu_initialization_period: timedelta,
    delay_of_initial_readiness_status: timedelta,
    now: datetime,
) -> PodGroups:
    """Go ``groupPods``: classify pods as ready, unready, missing (no sample) or ignored.

    Ignored: deleting or Failed. Unready: Pending, or (for the ``cpu`` resource only)
    not yet ready per the cpu-initialization / initial-readiness rules. Missing: no sample.
    """
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    set_aside: list[tuple[str, str]] = []
    check_cpu = resource == "cpu"
    for pod in pods:
        name = pod.name
        if pod.deleting or pod.phase == "Failed":
            ignored.add(name)
            set_aside.append(
                (name, REASON_IGNORED_DELETING if pod.deleting else REASON_IGNORED_FAILED)
            )
            continue
        if pod.phase == "Pending":
            unready.add(name)
            set_aside.append((name, REASON_UNREADY_PENDING))
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            set_aside.append((name, REASON_MISSING_METRICS))
            continue
        if check_cpu:
            reason = _cpu_unready_reason(
                pod, metric, cpu_initialization_period, delay_of_initial_readiness_status, now
            )
            if reason is not None:
                unready.add(name)
                set_aside.append((name, reason))
                continue
        ready += 1
    return PodGroups(
        ready_pod_count=ready,
        unready_pods=frozenset(unready),
        missing_pods=frozenset(missing),
        ignored_pods=frozenset(ignored),
        set_aside=tuple(set_aside),
    )


def _cpu_unready_reason(
    pod: PodView,
    metric: PodMetric,
    cpu_initialization_period: timedelta,
    delay_of_initial_readiness_status: timedelta,
    now: datetime,
) -> str | None:
    """The cpu branch of Go ``groupPods``; None when the pod counts as ready."""
    if pod.ready is None or pod.start_time is None:
        return REASON_UNREADY_NOT_READY
    ready_false = pod.ready is False and not pod.ready_unknown
    # A condition without lastTransitionTime carries Go's zero time.
    transition = pod.ready_transition or GO_ZERO_TIME
    if pod.start_time + cpu_initialization_period > now:
        # Still initializing: set aside if unready, or if one full metric window has not
        # passed since the last readiness transition.
        if ready_false or metric.timestamp < transition + metric.window:
            return REASON_UNREADY_CPU_INITIALIZING
        return None
    # Past initialization: set aside only an unready pod that has never been ready.
    if ready_false and pod.start_time + delay_of_initial_readiness_status > transition:
        return REASON_UNREADY_NOT_READY
    return None


def calculate_requests(
    pods: Sequence[PodView], container: str, resource: str, pod_level_resources: bool
) -> dict[str, int]:
    """Go ``calculateRequests``: request (milli) of ``resource`` per pod name.

    Pod-level requests are used when the PodLevelResources gate is on, the pod sets
    pod-level requests and no container is named (Go ``calculatePodLevelRequests``);
    otherwise the containers' and sidecars' requests are summed, or only the named
    container's (Go ``calculatePodRequestsFromContainers``).
    """
    requests: dict[str, int] = {}
    for pod in pods:
        if pod_level_resources and pod.pod_requests is not None and container == "":
            value = pod.pod_requests.get(resource)
            if value is None:
                raise ReplicaCalcError(
                    f"missing pod-level request for {resource} in Pod {pod.name}"
                )
            requests[pod.name] = value
        else:
            requests[pod.name] = _pod_requests_from_containers(pod, container, resource)
    return requests


#: The name the lead's brief uses for :func:`calculate_requests`.
calculate_pod_requests = calculate_requests


def _pod_requests_from_containers(pod: PodView, container: str, resource: str) -> int:
    """Go ``calculatePodRequestsFromContainers`` (containers, then sidecars)."""
    request = 0
    for group in (pod.containers, pod.sidecars):
        for c in group:
            if container == "" or container == c.name:
                value = c.requests.get(resource)
                if value is None:
                    raise ReplicaCalcError(
                        f"missing request for {resource} in container {c.name} of Pod {pod.name}"
                    )
                request += value
                # Container names are unique inside a pod.
                if container:
                    return _wrap64(request)
    if container != "":
        raise ReplicaCalcError(f"container {container} not found in Pod {pod.name}")
    # int64 sums wrap; wrapping once at the end is the same modulo 2**64.
    return _wrap64(request)


def remove_metrics_for_pods(metrics: dict[str, PodMetric], pods: frozenset[str]) -> None:
    """Go ``removeMetricsForPods`` (mutates ``metrics``)."""
    for name in pods:
        metrics.pop(name, None)


def get_resource_utilization_ratio(
    metrics: Mapping[str, PodMetric], requests: Mapping[str, int], target_utilization: int
) -> tuple[float, int, int]:
    """Go ``metrics.GetResourceUtilizationRatio`` -> (ratio, utilization %, raw average).

    Only samples of pods with a known request count (others are superfluous).
    utilization = int32(Σusage·100 / Σrequest) and average = Σusage / n, in Go integer
    arithmetic; ratio = float64(utilization) / float64(target).
    """
    metrics_total = 0
    requests_total = 0
    num_entries = 0
    for pod_name, metric in metrics.items():
        request = requests.get(pod_name)
        if request is None:
            continue
        metrics_total += metric.value
        requests_total += request
        num_entries += 1
    metrics_total = _wrap64(metrics_total)
    requests_total = _wrap64(requests_total)
    if requests_total == 0:
        raise ReplicaCalcError(ERR_NO_MATCHED_METRICS)
    utilization = _wrap32(_go_div(_wrap64(metrics_total * 100), requests_total))
    raw_average = _go_div(metrics_total, num_entries)
    return _fdiv(float(utilization), float(target_utilization)), utilization, raw_average


def get_metric_usage_ratio(
    metrics: Mapping[str, PodMetric], target_usage: int
) -> tuple[float, int]:
    """Go ``metrics.GetMetricUsageRatio`` -> (ratio, average usage): int64 sum / count."""
    total = _wrap64(sum(m.value for m in metrics.values()))
    usage = _go_div(total, len(metrics))
    return _fdiv(float(usage), float(target_usage)), usage


def get_ready_pods_count(pods: Sequence[PodView]) -> int:
    """Go ``getReadyPodsCount``: pods that are Running and Ready."""
    if not pods:
        raise ReplicaCalcError(ERR_NO_PODS)
    return sum(1 for pod in pods if is_pod_ready_running(pod))


def _first_timestamp(metrics: PodMetricsInfo) -> datetime | None:
    # Upstream reports Items[0].Timestamp of the metrics API response.
    for metric in metrics.values():
        return metric.timestamp
    return None


def _go_value(v: Any) -> str:
    """Go ``%v`` of a string or a []string."""
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(str(x) for x in v) + "]"
    if v is None:
        return ""
    return str(v)


def format_label_selector_go(raw: Mapping[str, Any] | None) -> str:
    """Go ``fmt.Sprintf("%+v", *metav1.LabelSelector)``: the generated ``String()``.

    ``nil`` for None; otherwise e.g.
    ``&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}``
    with label keys sorted and each requirement rendered as
    ``LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],}``.
    """
    if raw is None:
        return "nil"
    labels = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or []
    label_text = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    expr_text = "".join(
        "LabelSelectorRequirement{"
        f"Key:{_go_value(e.get('key'))},"
        f"Operator:{_go_value(e.get('operator'))},"
        f"Values:{_go_value(e.get('values') or [])},"
        "},"
        for e in expressions
    )
    return (
        "&LabelSelector{"
        f"MatchLabels:map[string]string{{{label_text}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expr_text}}},"
        "}"
    )


# --- the calculator -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplicaCalculator:
    """Go ``ReplicaCalculator`` without its clients: the timing flags and one gate.

    ``cpu_initialization_period`` = ``--horizontal-pod-autoscaler-cpu-initialization-period``,
    ``delay_of_initial_readiness_status`` = ``--horizontal-pod-autoscaler-initial-readiness-delay``,
    ``pod_level_resources`` = the PodLevelResources feature gate.
    """

    cpu_initialization_period: timedelta = timedelta(minutes=5)
    delay_of_initial_readiness_status: timedelta = timedelta(seconds=30)
    pod_level_resources: bool = True

    def get_resource_replicas(
        self,
        current_replicas: int,
        target_utilization: int,
        resource: str,
        tolerances: Tolerances,
        pods: Sequence[PodView],
        metrics: PodMetricsInfo | MetricFetchError,
        now: datetime,
        container: str = "",
    ) -> ResourceReplicas:
        """Go ``ReplicaCalculator.GetResourceReplicas`` (Utilization target).

        ``container`` non-empty for ContainerResource metrics. Raises ReplicaCalcError.
        """
        if isinstance(metrics, MetricFetchError):
            raise ReplicaCalcError(
                f"unable to get metrics for resource {resource}: {metrics.message}"
            )
        timestamp = _first_timestamp(metrics)
        if not pods:
            raise ReplicaCalcError(ERR_NO_PODS)
        groups = group_pods(
            pods,
            metrics,
            resource,
            self.cpu_initialization_period,
            self.delay_of_initial_readiness_status,
            now,
        )
        work = dict(metrics)
        remove_metrics_for_pods(work, groups.ignored_pods)
        remove_metrics_for_pods(work, groups.unready_pods)
        if not work:
            raise ReplicaCalcError(ERR_NO_READY_METRICS)
        requests = calculate_requests(pods, container, resource, self.pod_level_resources)
        usage_ratio, utilization, raw_average = get_resource_utilization_ratio(
            work, requests, target_utilization
        )

        def result(
            replicas: int, limited: bool = False, ratio: float = usage_ratio
        ) -> ResourceReplicas:
            return ResourceReplicas(
                replicas,
                utilization,
                raw_average,
                timestamp,
                groups.set_aside,
                limited,
                ratio,
                groups.ready_pod_count,
            )

        scale_up_with_unready = bool(groups.unready_pods) and usage_ratio > 1.0
        if not scale_up_with_unready and not groups.missing_pods:
            if tolerances.is_within(usage_ratio):
                return result(current_replicas, True)
            return result(_ceil_int32(usage_ratio * float(groups.ready_pod_count)))

        if groups.missing_pods:
            if usage_ratio < 1.0:
                # Scale down: a missing pod counts as using 100% of its request (or the
                # target, when the target is above 100%).
                fallback = max(100, target_utilization)
                for name in groups.missing_pods:
                    value = _go_div(_wrap64(requests[name] * fallback), 100)
                    work[name] = PodMetric(now, timedelta(0), value)
            elif usage_ratio > 1.0:
                for name in groups.missing_pods:
                    work[name] = PodMetric(now, timedelta(0), 0)
        if scale_up_with_unready:
            for name in groups.unready_pods:
                work[name] = PodMetric(now, timedelta(0), 0)

        new_usage_ratio, _, _ = get_resource_utilization_ratio(work, requests, target_utilization)
        if tolerances.is_within(new_usage_ratio):
            return result(current_replicas, True, new_usage_ratio)
        if (usage_ratio < 1.0 < new_usage_ratio) or (usage_ratio > 1.0 > new_usage_ratio):
            return result(current_replicas, ratio=new_usage_ratio)
        new_replicas = _ceil_int32(new_usage_ratio * float(len(work)))
        if (new_usage_ratio < 1.0 and new_replicas > current_replicas) or (
            new_usage_ratio > 1.0 and new_replicas < current_replicas
        ):
            return result(current_replicas, ratio=new_usage_ratio)
        return result(new_replicas, ratio=new_usage_ratio)

    def get_raw_resource_replicas(
        self,
        current_replicas: int,
        target_usage: int,
        resource: str,
        tolerances: Tolerances,
        pods: Sequence[PodView],
        metrics: PodMetricsInfo | MetricFetchError,
        now: datetime,
        container: str = "",
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.GetRawResourceReplicas`` (AverageValue target, milli).

        ``container`` is accepted for symmetry: the shell already reduced the samples
        to the container; requests are not consulted on this path.
        """
        del container
        if isinstance(metrics, MetricFetchError):
            raise ReplicaCalcError(
                f"unable to get metrics for resource {resource}: {metrics.message}"
            )
        return self.calc_plain_metric_replicas(
            metrics, current_replicas, target_usage, tolerances, pods, resource, now
        )

    def get_metric_replicas(
        self,
        current_replicas: int,
        target_usage: int,
        metric_name: str,
        tolerances: Tolerances,
        pods: Sequence[PodView],
        metrics: PodMetricsInfo | MetricFetchError,
        now: datetime,
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.GetMetricReplicas`` (Pods metric, AverageValue, milli)."""
        if isinstance(metrics, MetricFetchError):
            raise ReplicaCalcError(f"unable to get metric {metric_name}: {metrics.message}")
        return self.calc_plain_metric_replicas(
            metrics, current_replicas, target_usage, tolerances, pods, "", now
        )

    def calc_plain_metric_replicas(
        self,
        metrics: PodMetricsInfo,
        current_replicas: int,
        target_usage: int,
        tolerances: Tolerances,
        pods: Sequence[PodView],
        resource: str,
        now: datetime,
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.calcPlainMetricReplicas`` (average-value algorithm).

        Unlike the utilization path, samples of pods outside the pod list are kept and
        counted (upstream does not filter them here).
        """
        timestamp = _first_timestamp(metrics)
        if not pods:
            raise ReplicaCalcError(ERR_NO_PODS)
        groups = group_pods(
            pods,
            metrics,
            resource,
            self.cpu_initialization_period,
            self.delay_of_initial_readiness_status,
            now,
        )
        work = dict(metrics)
        remove_metrics_for_pods(work, groups.ignored_pods)
        remove_metrics_for_pods(work, groups.unready_pods)
        if not work:
            raise ReplicaCalcError(ERR_NO_READY_METRICS)
        usage_ratio, usage = get_metric_usage_ratio(work, target_usage)

        def result(
            replicas: int, limited: bool = False, ratio: float = usage_ratio
        ) -> MetricReplicas:
            return MetricReplicas(
                replicas, usage, timestamp, groups.set_aside, limited, ratio, groups.ready_pod_count
            )

        scale_up_with_unready = bool(groups.unready_pods) and usage_ratio > 1.0
        if not scale_up_with_unready and not groups.missing_pods:
            if tolerances.is_within(usage_ratio):
                return result(current_replicas, True)
            return result(_ceil_int32(usage_ratio * float(groups.ready_pod_count)))

        if groups.missing_pods:
            if usage_ratio < 1.0:
                # Scale down: a missing pod counts as using exactly the target.
                for name in groups.missing_pods:
                    work[name] = PodMetric(now, timedelta(0), target_usage)
            elif usage_ratio > 1.0:
                for name in groups.missing_pods:
                    work[name] = PodMetric(now, timedelta(0), 0)
        if scale_up_with_unready:
            for name in groups.unready_pods:
                work[name] = PodMetric(now, timedelta(0), 0)

        new_usage_ratio, _ = get_metric_usage_ratio(work, target_usage)
        if tolerances.is_within(new_usage_ratio):
            return result(current_replicas, True, new_usage_ratio)
        if (usage_ratio < 1.0 < new_usage_ratio) or (usage_ratio > 1.0 > new_usage_ratio):
            return result(current_replicas, ratio=new_usage_ratio)
        new_replicas = _ceil_int32(new_usage_ratio * float(len(work)))
        if (new_usage_ratio < 1.0 and new_replicas > current_replicas) or (
            new_usage_ratio > 1.0 and new_replicas < current_replicas
        ):
            return result(current_replicas, ratio=new_usage_ratio)
        return result(new_replicas, ratio=new_usage_ratio)

    def get_object_metric_replicas(
        self,
        current_replicas: int,
        target_usage: int,
        metric_name: str,
        tolerances: Tolerances,
        namespace: str,
        object_kind: str,
        object_name: str,
        pods: Sequence[PodView],
        metric: ObjectMetricValue | MetricFetchError,
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.GetObjectMetricReplicas`` (Object metric, Value target).

        ``pods`` are the pods matching the HPA's selector (for the ready-pod count).
        """
        if isinstance(metric, MetricFetchError):
            raise ReplicaCalcError(
                f"unable to get metric {metric_name}: {object_kind} on {namespace} "
                f"{object_name}/{metric.message}"
            )
        usage = metric.value
        usage_ratio = _fdiv(float(usage), float(target_usage))
        replicas, limited = self.get_usage_ratio_replica_count(
            current_replicas, usage_ratio, tolerances, pods
        )
        # Upstream discards the fetch timestamp here and returns the zero time.
        return MetricReplicas(
            replicas, usage, None, (), limited, usage_ratio, _ready_count(pods, current_replicas)
        )

    def get_usage_ratio_replica_count(
        self,
        current_replicas: int,
        usage_ratio: float,
        tolerances: Tolerances,
        pods: Sequence[PodView],
    ) -> tuple[int, bool]:
        """Go ``ReplicaCalculator.getUsageRatioReplicaCount`` -> (replicas, within tolerance).

        At zero current replicas: ``ceil(ratio)`` with no tolerance and no pods.
        """
        if current_replicas != 0:
            if tolerances.is_within(usage_ratio):
                return current_replicas, True
            try:
                ready_pod_count = get_ready_pods_count(pods)
            except ReplicaCalcError as err:
                raise ReplicaCalcError(f"unable to calculate ready pods: {err.message}") from None
            replica_count_float = usage_ratio * float(ready_pod_count)
            if replica_count_float > MAX_INT32:
                return MAX_INT32, False
            return _ceil_int32(replica_count_float), False
        return _ceil_int32(usage_ratio), False

    def get_object_per_pod_metric_replicas(
        self,
        status_replicas: int,
        target_average_usage: int,
        metric_name: str,
        tolerances: Tolerances,
        namespace: str,
        object_kind: str,
        object_name: str,
        metric: ObjectMetricValue | MetricFetchError,
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.GetObjectPerPodMetricReplicas`` (Object, AverageValue).

        ``usage`` in the result is ``ceil(value / statusReplicas)`` as upstream reports it.
        """
        if isinstance(metric, MetricFetchError):
            raise ReplicaCalcError(
                f"unable to get metric {metric_name}: {object_kind} on {namespace} "
                f"{object_name}/{metric.message}"
            )
        usage = metric.value
        replica_count = status_replicas
        usage_ratio = _fdiv(float(usage), float(target_average_usage) * float(replica_count))
        limited = tolerances.is_within(usage_ratio)
        if not limited:
            replica_count = _ceil_int32(_fdiv(float(usage), float(target_average_usage)))
        average = _ceil_int64(_fdiv(float(usage), float(status_replicas)))
        return MetricReplicas(replica_count, average, metric.timestamp, (), limited, usage_ratio)

    def get_external_metric_replicas(
        self,
        current_replicas: int,
        target_usage: int,
        metric_name: str,
        tolerances: Tolerances,
        namespace: str,
        metric_selector: Mapping[str, Any] | None,
        pods: Sequence[PodView],
        metric: ExternalMetricValues | MetricFetchError,
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.GetExternalMetricReplicas`` (External, Value target).

        Usage is the sum of all series, capped at MaxInt64.
        """
        _check_metric_selector(metric_selector)
        if isinstance(metric, MetricFetchError):
            raise ReplicaCalcError(
                f"unable to get external metric {namespace}/{metric_name}/"
                f"{format_label_selector_go(metric_selector)}: {metric.message}"
            )
        usage = 0
        for val in metric.values:
            if val > 0 and usage > MAX_INT64 - val:
                usage = MAX_INT64
                break
            usage = _wrap64(usage + val)
        usage_ratio = _fdiv(float(usage), float(target_usage))
        replicas, limited = self.get_usage_ratio_replica_count(
            current_replicas, usage_ratio, tolerances, pods
        )
        # Upstream discards the fetch timestamp here and returns the zero time.
        return MetricReplicas(
            replicas, usage, None, (), limited, usage_ratio, _ready_count(pods, current_replicas)
        )

    def get_external_per_pod_metric_replicas(
        self,
        status_replicas: int,
        target_average_usage: int,
        metric_name: str,
        tolerances: Tolerances,
        namespace: str,
        metric_selector: Mapping[str, Any] | None,
        metric: ExternalMetricValues | MetricFetchError,
    ) -> MetricReplicas:
        """Go ``ReplicaCalculator.GetExternalPerPodMetricReplicas`` (External, AverageValue).

        ``usage`` in the result is ``ceil(sum / statusReplicas)`` as upstream reports it.
        """
        _check_metric_selector(metric_selector)
        if isinstance(metric, MetricFetchError):
            raise ReplicaCalcError(
                f"unable to get external metric {namespace}/{metric_name}/"
                f"{format_label_selector_go(metric_selector)}: {metric.message}"
            )
        usage = 0
        for val in metric.values:
            usage = _wrap64(usage + val)
            if usage < 0:
                # Upstream reads any negative running sum as an int64 overflow.
                usage = MAX_INT64
                break
        replica_count = status_replicas
        usage_ratio = _fdiv(float(usage), float(target_average_usage) * float(replica_count))
        limited = tolerances.is_within(usage_ratio)
        if not limited:
            per_target = _fdiv(float(usage), float(target_average_usage))
            # ceil(x) > MaxInt32 exactly when x > MaxInt32.
            replica_count = MAX_INT32 if per_target > MAX_INT32 else _ceil_int32(per_target)
        if float(usage) >= float(MAX_INT64):
            average = MAX_INT64
        else:
            average = _ceil_int64(_fdiv(float(usage), float(status_replicas)))
        return MetricReplicas(replica_count, average, metric.timestamp, (), limited, usage_ratio)


def _ready_count(pods: Sequence[PodView], current_replicas: int) -> int | None:
    """The ready pods ``getUsageRatioReplicaCount`` counts (None at zero replicas,
    where it counts none). For explanations only."""
    if current_replicas == 0:
        return None
    return sum(1 for pod in pods if is_pod_ready_running(pod))


def _check_metric_selector(metric_selector: Mapping[str, Any] | None) -> None:
    """Go ``metav1.LabelSelectorAsSelector`` on the metric selector; its error is returned raw."""
    if metric_selector is None:
        return
    try:
        selector_from_label_selector(metric_selector)
    except ValueError as err:
        raise ReplicaCalcError(str(err)) from None
