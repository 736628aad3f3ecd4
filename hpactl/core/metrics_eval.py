"""Evaluation of ``spec.metrics``: one proposal per metric, then the combined result.

Mirrors ``horizontal.go``: ``validateAndParseSelector``,
``hpasControllingPodsUnderSelector``, ``computeReplicasForMetrics``,
``computeReplicasForMetric``, ``computeStatusFor{Object,Pods,Resource,
ContainerResource,External}Metric``, ``computeStatusForResourceMetricGeneric``,
``getUnableComputeReplicaCountCondition`` and ``tolerancesForHpa``. The per-metric
arithmetic is :mod:`hpactl.core.replica_calculator` (``replica_calculator.go``).

Upstream emits events and sets conditions while it computes; here they are returned
as data in call order, so the caller can replay them exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from hpactl.core import conditions as C
from hpactl.core.replica_calculator import (
    MetricReplicas,
    ReplicaCalcError,
    ReplicaCalculator,
    ResourceReplicas,
    Tolerances,
)
from hpactl.model.hpa import (
    AVERAGE_VALUE,
    CONTAINER_RESOURCE,
    EXTERNAL,
    HPA,
    OBJECT,
    PODS,
    RESOURCE,
    VALUE,
    ContainerResourceMetricStatus,
    ExternalMetricStatus,
    LabelSelectorSpec,
    MetricSpec,
    MetricStatus,
    MetricTarget,
    MetricValueStatus,
    ObjectMetricStatus,
    PodsMetricStatus,
    ResourceMetricStatus,
)
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetricsInfo,
)
from hpactl.model.pod import PodView
from hpactl.model.quantity import Quantity
from hpactl.model.selectors import Selector, parse_selector, selector_from_label_selector

__all__ = [
    "Event",
    "MetricInput",
    "MetricOutcome",
    "MetricsResult",
    "SelectorResult",
    "compute_replicas_for_metric",
    "compute_replicas_for_metrics",
    "tolerances_for_hpa",
    "validate_and_parse_selector",
]

#: What the shell fetched for one ``spec.metrics`` entry (None: nothing was fetched).
MetricInput = PodMetricsInfo | ObjectMetricValue | ExternalMetricValues | MetricFetchError | None

WARNING = "Warning"
NORMAL = "Normal"


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes Event to emit on the HPA (source ``horizontal-pod-autoscaler``)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Cond:
    """A condition to set (``setCondition`` arguments, message already formatted)."""

    type: str
    status: str
    reason: str
    message: str


# ------------------------------------------------------------------------- selectors


@dataclass(frozen=True, slots=True)
class SelectorResult:
    """``validateAndParseSelector`` outcome.

    ``selector`` is None on failure (then ``error`` is the whole-sync error text);
    ``pods`` are the namespace's pods the parsed selector matches; ``store`` is the
    selector to record in the selector store (None: nothing to record).
    """

    selector: Selector | None
    pods: tuple[PodView, ...]
    events: tuple[Event, ...]
    condition: Cond | None
    error: str | None
    store: Selector | None
    controlling_hpas: tuple[str, ...] = ()


def validate_and_parse_selector(
    hpa: HPA,
    selector_text: str,
    namespace_pods: Sequence[PodView],
    hpa_selectors: Mapping[str, Selector],
) -> SelectorResult:
    """``horizontal.go: validateAndParseSelector`` + ``hpasControllingPodsUnderSelector``.

    ``hpa_selectors`` is the selector store of the HPA's namespace (key → stored
    selector; match-nothing for an HPA registered but not yet reconciled). This HPA's
    entry, if registered, is replaced by the parsed selector before the check.
    The list of HPA keys in the message is sorted (upstream prints Go map order).
    """
    if selector_text == "":
        msg = "selector is required"
        return SelectorResult(
            None,
            (),
            (Event(WARNING, "SelectorRequired", msg),),
            Cond(C.SCALING_ACTIVE, C.FALSE, "InvalidSelector", C.MSG_MISSING_SELECTOR),
            msg,
            None,
        )
    try:
        parsed = parse_selector(selector_text)
    except ValueError as e:
        msg = f"couldn't convert selector into a corresponding internal selector object: {e}"
        return SelectorResult(
            None,
            (),
            (Event(WARNING, "InvalidSelector", msg),),
            Cond(C.SCALING_ACTIVE, C.FALSE, "InvalidSelector", msg),
            msg,
            None,
        )
    key = hpa.key
    store: Selector | None = None
    selectors = dict(hpa_selectors)
    if key in selectors:
        selectors[key] = parsed
        store = parsed
    # Pods of one workload share their labels: match each distinct label set once.
    verdicts: dict[frozenset[tuple[str, str]], bool] = {}
    distinct: list[Mapping[str, str]] = []
    matched: list[PodView] = []
    for p in namespace_pods:
        lk = frozenset(p.labels.items())
        verdict = verdicts.get(lk)
        if verdict is None:
            verdict = verdicts[lk] = parsed.matches(p.labels)
            if verdict:
                distinct.append(p.labels)
        if verdict:
            matched.append(p)
    pods = tuple(matched)
    controlling: set[str] = set()
    for k, sel in selectors.items():
        if any(sel.matches(labels) for labels in distinct):
            controlling.add(k)
    keys = tuple(sorted(controlling))
    if len(keys) > 1:
        msg = (
            f"pods by selector {selector_text} are controlled by multiple HPAs: [{' '.join(keys)}]"
        )
        return SelectorResult(
            None,
            pods,
            (Event(WARNING, "AmbiguousSelector", msg),),
            Cond(C.SCALING_ACTIVE, C.FALSE, "AmbiguousSelector", msg),
            msg,
            store,
            keys,
        )
    return SelectorResult(parsed, pods, (), None, None, store, keys)


# --------------------------------------------------------------------------- metrics


def tolerances_for_hpa(hpa: HPA, tolerance: float, configurable_tolerance: bool) -> Tolerances:
    """``horizontal.go: tolerancesForHpa`` — per-HPA tolerances behind their gate."""
    down = up = tolerance
    behavior = hpa.spec.behavior
    if behavior is None or not configurable_tolerance:
        return Tolerances(down, up)
    if behavior.scale_down.tolerance is not None:
        down = behavior.scale_down.tolerance
    if behavior.scale_up.tolerance is not None:
        up = behavior.scale_up.tolerance
    return Tolerances(down, up)


@dataclass(frozen=True, slots=True)
class MetricOutcome:
    """One metric's evaluation (for status, conditions, events and explanations)."""

    index: int
    type: str
    replicas: int | None
    name: str
    status: MetricStatus
    error: str | None = None
    failure_reason: str | None = None
    condition: Cond | None = None
    events: tuple[Event, ...] = ()
    within_tolerance: bool = False
    set_aside: tuple[tuple[str, str], ...] = ()
    timestamp: datetime | None = None
    # For explanations: the usage ratio checked against the tolerance, the pods
    # counted as ready and the pods the selector matched (None where not used).
    ratio: float | None = None
    ready_pods: int | None = None
    total_pods: int | None = None


class _Failure(Exception):
    """Internal: a metric failed. ``event_err`` is what the event/condition show,
    ``err`` what ``computeReplicasForMetric`` returns (possibly wrapped more)."""

    def __init__(self, reason: str, event_err: str, err: str) -> None:
        super().__init__(err)
        self.reason = reason
        self.event_err = event_err
        self.err = err


def _average_value_quantity(milli: int, resource: str) -> Quantity:
    """``horizontal.go: buildQuantity`` (kubernetes PR #132351, 1.34+).

    Memory: the milli-byte average truncated to whole bytes (Go int64 division by
    1000), as a BinarySI ``NewQuantity``; anything else: ``NewMilliQuantity`` DecimalSI.
    A fractional-byte average therefore prints as bytes, never as ``...m``.
    """
    if resource == "memory":
        whole = abs(milli) // 1000
        return Quantity.from_int(whole if milli >= 0 else -whole, "BinarySI")
    return Quantity.from_milli(milli, "DecimalSI")


def _check_selector(raw: LabelSelectorSpec | None) -> None:
    """``metav1.LabelSelectorAsSelector`` on a metric selector; raises ValueError."""
    if raw is not None:
        selector_from_label_selector(raw.to_raw())


def _as_pod_metrics(data: MetricInput) -> PodMetricsInfo | MetricFetchError:
    if isinstance(data, MetricFetchError | Mapping):
        return data
    return MetricFetchError("no metrics were fetched for this metric")


def _as_object(data: MetricInput) -> ObjectMetricValue | MetricFetchError:
    if isinstance(data, ObjectMetricValue | MetricFetchError):
        return data
    return MetricFetchError("no metrics were fetched for this metric")


def _as_external(data: MetricInput) -> ExternalMetricValues | MetricFetchError:
    if isinstance(data, ExternalMetricValues | MetricFetchError):
        return data
    return MetricFetchError("no metrics were fetched for this metric")


def _resource_generic(
    calc: ReplicaCalculator,
    current_replicas: int,
    target: MetricTarget,
    resource: str,
    container: str,
    source_type: str,
    tolerances: Tolerances,
    pods: Sequence[PodView],
    data: MetricInput,
    now: datetime,
) -> tuple[int, MetricValueStatus, str, ResourceReplicas | MetricReplicas]:
    """``horizontal.go: computeStatusForResourceMetricGeneric``; raises ValueError(err).

    Returns (replicas, status value, metric name, the calculator's result)."""
    metrics = _as_pod_metrics(data)
    if target.average_value_milli is not None:
        try:
            r = calc.get_raw_resource_replicas(
                current_replicas,
                target.average_value_milli,
                resource,
                tolerances,
                pods,
                metrics,
                now,
                container,
            )
        except ReplicaCalcError as e:
            raise ValueError(f"failed to get {resource} usage: {e.message}") from None
        status = MetricValueStatus(average_value=_average_value_quantity(r.usage, resource))
        return r.replicas, status, f"{resource} resource", r
    if target.average_utilization is None:
        raise ValueError(
            "invalid resource metric source: neither an average utilization target "
            "nor an average value (usage) target was set"
        )
    try:
        rr = calc.get_resource_replicas(
            current_replicas,
            target.average_utilization,
            resource,
            tolerances,
            pods,
            metrics,
            now,
            container,
        )
    except ReplicaCalcError as e:
        raise ValueError(f"failed to get {resource} utilization: {e.message}") from None
    name = f"{resource} resource utilization (percentage of request)"
    if source_type == CONTAINER_RESOURCE:
        name = f"{resource} container resource utilization (percentage of request)"
    status = MetricValueStatus(
        average_value=_average_value_quantity(rr.raw_average, resource),
        average_utilization=rr.utilization,
    )
    return rr.replicas, status, name, rr


def _dec(milli: int) -> Quantity:
    return Quantity.from_milli(milli, "DecimalSI")


def compute_replicas_for_metric(
    hpa: HPA,
    index: int,
    spec: MetricSpec,
    spec_replicas: int,
    status_replicas: int,
    pods: Sequence[PodView],
    data: MetricInput,
    calc: ReplicaCalculator,
    tolerances: Tolerances,
    now: datetime,
) -> MetricOutcome:
    """``horizontal.go: computeReplicasForMetric`` with the ``computeStatusFor*`` helpers."""
    try:
        return _compute(
            hpa, index, spec, spec_replicas, status_replicas, pods, data, calc, tolerances, now
        )
    except _Failure as f:
        return MetricOutcome(
            index=index,
            type=spec.type,
            replicas=None,
            name="",
            status=MetricStatus(),
            error=f.err,
            failure_reason=f.reason,
            condition=Cond(
                C.SCALING_ACTIVE, C.FALSE, f.reason, C.MSG_UNABLE_TO_COMPUTE.format(f.event_err)
            ),
            events=(Event(WARNING, f.reason, f.event_err),),
        )


def _compute(
    hpa: HPA,
    index: int,
    spec: MetricSpec,
    spec_replicas: int,
    status_replicas: int,
    pods: Sequence[PodView],
    data: MetricInput,
    calc: ReplicaCalculator,
    tolerances: Tolerances,
    now: datetime,
) -> MetricOutcome:
    ns = hpa.namespace
    if spec.type == OBJECT and spec.object is not None:
        src = spec.object
        reason = "FailedGetObjectMetric"
        outer = "failed to get object metric value: {}"
        try:
            _check_selector(src.metric.selector)
        except ValueError as e:
            raise _Failure(reason, str(e), outer.format(e)) from None
        target = src.target
        obj = _as_object(data)
        r: MetricReplicas
        if target.type == VALUE and target.value_milli is not None:
            try:
                r = calc.get_object_metric_replicas(
                    spec_replicas,
                    target.value_milli,
                    src.metric.name,
                    tolerances,
                    ns,
                    src.described_object.kind,
                    src.described_object.name,
                    pods,
                    obj,
                )
            except ReplicaCalcError as e:
                raise _Failure(reason, e.message, outer.format(e.message)) from None
            status = MetricStatus(
                OBJECT,
                object=ObjectMetricStatus(
                    src.metric, MetricValueStatus(value=_dec(r.usage)), src.described_object
                ),
            )
            name = f"{src.described_object.kind} metric {src.metric.name}"
        elif target.type == AVERAGE_VALUE and target.average_value_milli is not None:
            try:
                r = calc.get_object_per_pod_metric_replicas(
                    status_replicas,
                    target.average_value_milli,
                    src.metric.name,
                    tolerances,
                    ns,
                    src.described_object.kind,
                    src.described_object.name,
                    obj,
                )
            except ReplicaCalcError as e:
                inner = f"failed to get {src.metric.name} object metric: {e.message}"
                raise _Failure(reason, e.message, outer.format(inner)) from None
            # describedObject is filled here too since kubernetes PR #124555 (1.31).
            status = MetricStatus(
                OBJECT,
                object=ObjectMetricStatus(
                    src.metric,
                    MetricValueStatus(average_value=_dec(r.usage)),
                    src.described_object,
                ),
            )
            name = f"external metric {src.metric.name}({src.metric.selector_go_string()})"
        else:
            msg = (
                "invalid object metric source: neither a value target nor an average "
                "value target was set"
            )
            raise _Failure(reason, msg, outer.format(msg))
        return _ok(index, spec, r, name, status, pods)

    if spec.type == PODS and spec.pods is not None:
        psrc = spec.pods
        reason = "FailedGetPodsMetric"
        outer = "failed to get pods metric value: {}"
        try:
            _check_selector(psrc.metric.selector)
        except ValueError as e:
            raise _Failure(reason, str(e), outer.format(e)) from None
        try:
            r = calc.get_metric_replicas(
                spec_replicas,
                psrc.target.average_value_milli or 0,
                psrc.metric.name,
                tolerances,
                pods,
                _as_pod_metrics(data),
                now,
            )
        except ReplicaCalcError as e:
            raise _Failure(reason, e.message, outer.format(e.message)) from None
        status = MetricStatus(
            PODS,
            pods=PodsMetricStatus(psrc.metric, MetricValueStatus(average_value=_dec(r.usage))),
        )
        return _ok(index, spec, r, f"pods metric {psrc.metric.name}", status, pods)

    if spec.type == RESOURCE and spec.resource is not None:
        rsrc = spec.resource
        reason = "FailedGetResourceMetric"
        try:
            replicas, value, name, calc_result = _resource_generic(
                calc,
                spec_replicas,
                rsrc.target,
                rsrc.name,
                "",
                RESOURCE,
                tolerances,
                pods,
                data,
                now,
            )
        except ValueError as e:
            raise _Failure(
                reason, str(e), f"failed to get {rsrc.name} resource metric value: {e}"
            ) from None
        status = MetricStatus(RESOURCE, resource=ResourceMetricStatus(rsrc.name, value))
        return _with_calc(
            MetricOutcome(index, spec.type, replicas, name, status), calc_result, pods
        )

    if spec.type == CONTAINER_RESOURCE and spec.container_resource is not None:
        csrc = spec.container_resource
        reason = "FailedGetContainerResourceMetric"
        try:
            replicas, value, name, calc_result = _resource_generic(
                calc,
                spec_replicas,
                csrc.target,
                csrc.name,
                csrc.container,
                CONTAINER_RESOURCE,
                tolerances,
                pods,
                data,
                now,
            )
        except ValueError as e:
            raise _Failure(
                reason,
                str(e),
                f"failed to get {csrc.container} container metric value: {e}",
            ) from None
        status = MetricStatus(
            CONTAINER_RESOURCE,
            container_resource=ContainerResourceMetricStatus(csrc.name, value, csrc.container),
        )
        return _with_calc(
            MetricOutcome(index, spec.type, replicas, name, status), calc_result, pods
        )

    if spec.type == EXTERNAL and spec.external is not None:
        esrc = spec.external
        reason = "FailedGetExternalMetric"
        outer = f"failed to get {esrc.metric.name} external metric value: {{}}"
        ext = _as_external(data)
        sel_raw: dict[str, Any] | None = (
            None if esrc.metric.selector is None else esrc.metric.selector.to_raw()
        )
        name = f"external metric {esrc.metric.name}({esrc.metric.selector_go_string()})"
        target = esrc.target
        if target.average_value_milli is not None:
            try:
                r = calc.get_external_per_pod_metric_replicas(
                    status_replicas,
                    target.average_value_milli,
                    esrc.metric.name,
                    tolerances,
                    ns,
                    sel_raw,
                    ext,
                )
            except ReplicaCalcError as e:
                inner = f"failed to get {esrc.metric.name} external metric: {e.message}"
                raise _Failure(reason, e.message, outer.format(inner)) from None
            status = MetricStatus(
                EXTERNAL,
                external=ExternalMetricStatus(
                    esrc.metric, MetricValueStatus(average_value=_dec(r.usage))
                ),
            )
            return _ok(index, spec, r, name, status, pods)
        if target.value_milli is not None:
            try:
                r = calc.get_external_metric_replicas(
                    spec_replicas,
                    target.value_milli,
                    esrc.metric.name,
                    tolerances,
                    ns,
                    sel_raw,
                    pods,
                    ext,
                )
            except ReplicaCalcError as e:
                inner = f"failed to get external metric {esrc.metric.name}: {e.message}"
                raise _Failure(reason, e.message, outer.format(inner)) from None
            status = MetricStatus(
                EXTERNAL,
                external=ExternalMetricStatus(esrc.metric, MetricValueStatus(value=_dec(r.usage))),
            )
            return _ok(index, spec, r, name, status, pods)
        msg = (
            "invalid external metric source: neither a value target nor an average value "
            "target was set"
        )
        raise _Failure(reason, msg, outer.format(msg))

    msg = f'unknown metric source type "{spec.type}"'
    raise _Failure("InvalidMetricSourceType", msg, msg)


def _ok(
    index: int,
    spec: MetricSpec,
    r: MetricReplicas,
    name: str,
    status: MetricStatus,
    pods: Sequence[PodView] | None = None,
) -> MetricOutcome:
    return _with_calc(MetricOutcome(index, spec.type, r.replicas, name, status), r, pods)


def _with_calc(
    o: MetricOutcome, r: ResourceReplicas | MetricReplicas, pods: Sequence[PodView] | None
) -> MetricOutcome:
    """``o`` with what the calculator reports besides the count (explanations only).
    ``pods``: the pods the calculation looked at (None: it used status.replicas)."""
    return replace(
        o,
        within_tolerance=r.limited_by_tolerance,
        set_aside=r.set_aside,
        timestamp=r.timestamp,
        ratio=r.ratio,
        ready_pods=r.ready_pods,
        total_pods=None if pods is None or r.ready_pods is None else len(pods),
    )


@dataclass(frozen=True, slots=True)
class MetricsResult:
    """``computeReplicasForMetrics`` outcome.

    ``replicas`` is -1 when the whole sync fails (then ``error`` is the aggregated
    error and ``condition`` the first failed metric's). Otherwise ``condition`` is
    ``ScalingActive=True/ValidMetricFound`` and ``error`` is set if some metric failed.
    """

    replicas: int
    metric_name: str
    statuses: tuple[MetricStatus, ...]
    condition: Cond | None
    error: str | None
    events: tuple[Event, ...]
    outcomes: tuple[MetricOutcome, ...] = field(default=())


def compute_replicas_for_metrics(
    hpa: HPA,
    spec_replicas: int,
    status_replicas: int,
    pods: Sequence[PodView],
    metric_data: Sequence[MetricInput],
    calc: ReplicaCalculator,
    tolerances: Tolerances,
    now: datetime,
    fallback: Callable[[MetricOutcome], MetricOutcome] | None = None,
) -> MetricsResult:
    """``horizontal.go: computeReplicasForMetrics`` after the selector was validated.

    ``fallback`` (hpactl's metric fallback) may turn a failed metric's outcome into
    one that proposes its fallback replicas; None is upstream's behaviour.
    """
    specs = hpa.spec.metrics
    outcomes: list[MetricOutcome] = []
    events: list[Event] = []
    replicas = 0
    metric = ""
    invalid = 0
    first: MetricOutcome | None = None
    for i, spec in enumerate(specs):
        data = metric_data[i] if i < len(metric_data) else None
        o = compute_replicas_for_metric(
            hpa, i, spec, spec_replicas, status_replicas, pods, data, calc, tolerances, now
        )
        if fallback is not None and o.replicas is None:
            o = fallback(o)
        outcomes.append(o)
        events.extend(o.events)
        if o.replicas is None:
            if invalid <= 0:
                first = o
            invalid += 1
            continue
        if replicas == 0 or o.replicas > replicas:
            replicas = o.replicas
            metric = o.name
    statuses = tuple(o.status for o in outcomes)
    error: str | None = None
    if first is not None:
        error = f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: {first.error}"
    if invalid >= len(specs) or (invalid > 0 and replicas < spec_replicas):
        cond = first.condition if first is not None else None
        return MetricsResult(-1, "", statuses, cond, error, tuple(events), tuple(outcomes))
    cond = Cond(
        C.SCALING_ACTIVE, C.TRUE, "ValidMetricFound", C.MSG_VALID_METRIC_FOUND.format(metric)
    )
    return MetricsResult(replicas, metric, statuses, cond, error, tuple(events), tuple(outcomes))
