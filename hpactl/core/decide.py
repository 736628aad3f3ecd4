"""One reconcile of one HPA as two pure steps: ``decide`` and ``finalize``.

``horizontal.go: reconcileAutoscaler`` reads the scale, computes the metrics, normalizes,
writes the scale, then writes the status. The shell does the I/O; the core splits the
logic at the scale write (architecture.md C4):

1. :func:`decide` (``SyncInputs`` → :class:`Plan`): everything up to the scale update —
   pre-checks, selector validation and ambiguity, metric proposals, normalization,
   the recommendation history, conditions and events so far.
2. The shell writes ``plan.desired_replicas`` to the target's scale iff ``plan.rescale``.
3. :func:`finalize` (``Plan`` + :class:`ScaleWriteResult` → :class:`Outcome`): the rescale
   events and conditions, scale events, ``lastScaleTime``, the final status.

The shell writes ``outcome.status_raw`` only if ``outcome.status_changed`` (upstream's
``updateStatusIfNeeded``), emits ``outcome.events`` and stores ``outcome.history``.

Inputs use pods of the whole namespace: the selector comes from the scale read in
the same sync and is parsed here, so the shell cannot filter before calling. Use
:func:`needs_metrics` to learn whether metrics must be fetched at all (upstream never
queries the metrics APIs in the pre-check paths or when the selector is invalid or
ambiguous) and :func:`metrics_to_fetch` for what to fetch; :func:`with_selector` first
runs the selector validation once, so that neither of them nor :func:`decide` repeats it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple

from hpactl.core import conditions as C
from hpactl.core import metric_fallback
from hpactl.core.behavior import (
    Normalized,
    calculate_scale_down_limit_with_behaviors,
    calculate_scale_up_limit,
    calculate_scale_up_limit_with_scaling_rules,
    get_longest_policy_period,
    normalize_desired_replicas,
    normalize_desired_replicas_with_behaviors,
)
from hpactl.core.conflict import CONFLICTING_AUTOSCALER
from hpactl.core.extension_conditions import annotation_problems, apply_problems
from hpactl.core.history import (
    History,
    Recommendation,
    in_window,
    record_initial_recommendation,
    store_scale_event,
)
from hpactl.core.metrics_eval import (
    NORMAL,
    WARNING,
    Cond,
    Event,
    MetricInput,
    MetricOutcome,
    MetricsResult,
    SelectorResult,
    compute_replicas_for_metrics,
    tolerances_for_hpa,
    validate_and_parse_selector,
)
from hpactl.core.pod_selection import OWNER_REFERENCE, owned_only, selection_strategy
from hpactl.core.replica_calculator import ReplicaCalculator, Tolerances
from hpactl.core.suspend import MSG_SUSPENDED, SUSPENDED_REASON, parse_suspension
from hpactl.model.featuregates import (
    HPA_CONFIGURABLE_SYNC_PERIOD,
    HPA_CONFIGURABLE_TOLERANCE,
    HPA_EXTERNAL_METRIC_FALLBACK,
    HPA_GENERATION,
    HPA_METRIC_SOURCE,
    HPA_SCALE_TO_ZERO,
    HPA_SELECTION_STRATEGY,
    HPA_SUSPEND,
    POD_LEVEL_RESOURCES,
    FeatureGates,
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
    CrossVersionObjectReference,
    HPACondition,
    HPAStatus,
    LabelSelectorSpec,
    MetricSpec,
    MetricStatus,
    MetricTarget,
    MetricValueStatus,
    ScalingPolicy,
    status_equal,
    status_to_raw,
)
from hpactl.model.pod import PodView
from hpactl.model.quantity import Quantity
from hpactl.model.selectors import Selector
from hpactl.model.times import format_time

__all__ = [
    "CoreConfig",
    "Event",
    "Explanation",
    "MetricExplanation",
    "MetricRequest",
    "Outcome",
    "Plan",
    "RateLimit",
    "ReplicaMemo",
    "ScaleView",
    "ScaleWriteResult",
    "StabilizationWindow",
    "SyncInputs",
    "decide",
    "finalize",
    "metrics_to_fetch",
    "needs_metrics",
    "reconcile",
    "record_rescale",
    "with_selector",
]

ABOVE_MAX_REASON = "Current number of replicas above Spec.MaxReplicas"
BELOW_MIN_REASON = "Current number of replicas below Spec.MinReplicas"
ALL_BELOW_REASON = "All metrics below target"


# ------------------------------------------------------------------------------ inputs


@dataclass(frozen=True, slots=True)
class CoreConfig:
    """kube-controller-manager flags and feature gates the decision depends on.

    Defaults are kube-controller-manager 1.37's.
    """

    tolerance: float = 0.1
    downscale_stabilization: timedelta = timedelta(minutes=5)
    cpu_initialization_period: timedelta = timedelta(minutes=5)
    initial_readiness_delay: timedelta = timedelta(seconds=30)
    scale_to_zero: bool = True  # HPAScaleToZero (beta in 1.37)
    configurable_tolerance: bool = True  # HPAConfigurableTolerance
    pod_level_resources: bool = True  # PodLevelResources
    hpa_generation: bool = False  # HPAGeneration (alpha): status.observedGeneration
    metric_fallback: bool = False  # HPAExternalMetricFallback (KEP-5679; hpactl alpha)
    selection_strategy: bool = False  # HPASelectionStrategy (alpha, KEP-5325)
    metric_source: bool = False  # HPAMetricSource (alpha, KEP-6382)
    configurable_sync_period: bool = False  # HPAConfigurableSyncPeriod (hpactl alpha)
    suspend: bool = False  # HPASuspend (hpactl alpha)

    @classmethod
    def from_flags(
        cls,
        gates: FeatureGates,
        *,
        tolerance: float = 0.1,
        downscale_stabilization: timedelta = timedelta(minutes=5),
        cpu_initialization_period: timedelta = timedelta(minutes=5),
        initial_readiness_delay: timedelta = timedelta(seconds=30),
    ) -> CoreConfig:
        """Build from the parsed ``--feature-gates`` and the HPA flags."""
        return cls(
            tolerance=tolerance,
            downscale_stabilization=downscale_stabilization,
            cpu_initialization_period=cpu_initialization_period,
            initial_readiness_delay=initial_readiness_delay,
            scale_to_zero=gates.enabled(HPA_SCALE_TO_ZERO),
            configurable_tolerance=gates.enabled(HPA_CONFIGURABLE_TOLERANCE),
            pod_level_resources=gates.enabled(POD_LEVEL_RESOURCES),
            hpa_generation=gates.enabled(HPA_GENERATION),
            metric_fallback=gates.enabled(HPA_EXTERNAL_METRIC_FALLBACK),
            selection_strategy=gates.enabled(HPA_SELECTION_STRATEGY),
            metric_source=gates.enabled(HPA_METRIC_SOURCE),
            configurable_sync_period=gates.enabled(HPA_CONFIGURABLE_SYNC_PERIOD),
            suspend=gates.enabled(HPA_SUSPEND),
        )

    def calculator(self) -> ReplicaCalculator:
        return ReplicaCalculator(
            self.cpu_initialization_period, self.initial_readiness_delay, self.pod_level_resources
        )


@dataclass(frozen=True, slots=True)
class ScaleView:
    """What a successful ``GET .../scale`` returned (autoscaling/v1 Scale)."""

    spec_replicas: int
    status_replicas: int
    selector: str


@dataclass(frozen=True, slots=True)
class SyncInputs:
    """Everything one reconcile reads.

    * ``scale``: the scale read, or None when it failed; then ``scale_error`` is the
      error text (for a missing target the API error, e.g.
      ``deployments.apps "web" not found``; no mapping: ``unrecognized resource``) and
      ``scale_error_stage`` says where it failed: ``version`` (``scaleTargetRef.apiVersion``
      does not parse), ``mapping`` (no REST mapping) or ``get`` (the GET failed).
    * ``pods``: the pods of the HPA's namespace, or only those the scale's selector
      matches (the core filters by the parsed selector either way; the ambiguity check
      and the calculations only ever look at matching pods).
    * ``metrics``: one entry per ``hpa.spec.metrics`` (same order) as fetched per
      :func:`metrics_to_fetch`; may be empty when :func:`needs_metrics` is False.
    * ``hpa_selectors``: the controller's selector store for this namespace —
      HPA key → stored selector (``Selector.nothing()`` for an HPA registered but not
      reconciled yet). This HPA's key is present iff it is registered.
    * ``history``: what ``finalize`` returned last time for this key (``History()``
      for a new key).
    * ``selector_result``: the selector validation of these very inputs, as
      :func:`with_selector` stores it (None: computed when needed).
    * ``conflict``: for an hpactl HPA whose target a built-in HPA also names, the
      message saying so (:mod:`hpactl.core.conflict`): nothing is computed or scaled.
    * ``reach``: where the pre-checks of these inputs lead, as :func:`with_selector`
      stores it (used only while it names this ``hpa``, ``scale``, ``config`` and
      ``conflict``; None: computed when needed).
    * ``replica_memo``: the previous sync's ``Plan.replica_memo`` for this HPA (the
      replica calculation is reused when it provably gives the same answer).
    * ``pod_owners``: with the OwnerReference selection strategy
      (:mod:`hpactl.core.pod_selection`), the controller uids of the target's pods
      (None: every label-selected pod counts).
    """

    hpa: HPA
    scale: ScaleView | None
    pods: Sequence[PodView]
    metrics: Sequence[MetricInput]
    history: History
    config: CoreConfig
    now: datetime
    hpa_selectors: Mapping[str, Selector] = field(default_factory=dict)
    scale_error: str = ""
    scale_error_stage: Literal["version", "mapping", "get"] = "get"
    selector_result: SelectorResult | None = None
    pod_owners: frozenset[str] | None = None
    conflict: str = ""
    replica_memo: ReplicaMemo | None = None
    reach: Reach | None = None


@dataclass(frozen=True, slots=True)
class MetricRequest:
    """What the shell must fetch for one ``spec.metrics`` entry.

    ``kind``: ``resource`` (metrics.k8s.io PodMetrics of the selected pods; per pod the
    sum over containers of ``resource``, or only ``container`` when set — a pod whose
    containers lack it has no sample), ``pods`` (custom.metrics per pod),
    ``object`` (custom.metrics for ``described_object``), ``external``
    (external.metrics values for ``metric_name`` + ``metric_selector``), or ``none``
    (nothing to fetch: unknown type or a target upstream rejects before fetching).
    """

    index: int
    kind: Literal["resource", "pods", "object", "external", "none"]
    namespace: str
    resource: str = ""
    container: str = ""
    metric_name: str = ""
    metric_selector: Mapping[str, Any] | None = None
    described_object: CrossVersionObjectReference | None = None
    # KEP-6382: the API group to fetch a Pods/Object/External metric from ("" = the
    # default group; hpactl.core.metric_sources sets it from the HPA's annotation).
    source: str = ""


def _sel_raw(sel: LabelSelectorSpec | None) -> dict[str, Any] | None:
    return None if sel is None else sel.to_raw()


def metrics_to_fetch(hpa: HPA) -> tuple[MetricRequest, ...]:
    """The fetch each ``spec.metrics`` entry needs, in order (see :class:`MetricRequest`)."""
    out: list[MetricRequest] = []
    ns = hpa.namespace
    for i, m in enumerate(hpa.spec.metrics):
        if m.type == RESOURCE and m.resource is not None:
            t = m.resource.target
            ok = t.average_value_milli is not None or t.average_utilization is not None
            out.append(
                MetricRequest(i, "resource", ns, resource=m.resource.name)
                if ok
                else MetricRequest(i, "none", ns)
            )
        elif m.type == CONTAINER_RESOURCE and m.container_resource is not None:
            cr = m.container_resource
            t = cr.target
            ok = t.average_value_milli is not None or t.average_utilization is not None
            out.append(
                MetricRequest(i, "resource", ns, resource=cr.name, container=cr.container)
                if ok
                else MetricRequest(i, "none", ns)
            )
        elif m.type == PODS and m.pods is not None:
            out.append(
                MetricRequest(
                    i,
                    "pods",
                    ns,
                    metric_name=m.pods.metric.name,
                    metric_selector=_sel_raw(m.pods.metric.selector),
                )
            )
        elif m.type == OBJECT and m.object is not None:
            t = m.object.target
            ok = (t.type == VALUE and t.value_milli is not None) or (
                t.type == AVERAGE_VALUE and t.average_value_milli is not None
            )
            out.append(
                MetricRequest(
                    i,
                    "object",
                    ns,
                    metric_name=m.object.metric.name,
                    metric_selector=_sel_raw(m.object.metric.selector),
                    described_object=m.object.described_object,
                )
                if ok
                else MetricRequest(i, "none", ns)
            )
        elif m.type == EXTERNAL and m.external is not None:
            t = m.external.target
            ok = t.average_value_milli is not None or t.value_milli is not None
            out.append(
                MetricRequest(
                    i,
                    "external",
                    ns,
                    metric_name=m.external.metric.name,
                    metric_selector=_sel_raw(m.external.metric.selector),
                )
                if ok
                else MetricRequest(i, "none", ns)
            )
        else:
            out.append(MetricRequest(i, "none", ns))
    return tuple(out)


# ----------------------------------------------------------------------------- outputs


@dataclass(frozen=True, slots=True)
class MetricExplanation:
    """One metric's part in the decision.

    ``label`` is a short name (``cpu``, ``memory(app)``, ``pods:rps``,
    ``object:hits``, ``external:queue``); ``current`` and ``target`` are as status
    and spec show them, in the metric's own unit (``175%`` for a utilization
    target, a quantity otherwise); ``ratio`` is the usage ratio the tolerance was
    checked against and ``tolerance`` the (scale-down, scale-up) tolerances used;
    ``ready_pods`` / ``total_pods`` the pods counted as ready and those the selector
    matched (None where the calculation uses ``status.replicas``).
    """

    index: int
    type: str
    name: str
    proposal: int | None
    error: str | None = None
    failure_reason: str | None = None
    within_tolerance: bool = False
    set_aside: tuple[tuple[str, str], ...] = ()
    label: str = ""
    current: str | None = None
    target: str | None = None
    ratio: float | None = None
    tolerance: tuple[float, float] | None = None
    ready_pods: int | None = None
    total_pods: int | None = None

    def to_dict(self) -> dict[str, Any]:
        ratio = self.ratio if self.ratio is not None and math.isfinite(self.ratio) else None
        return {
            "index": self.index,
            "type": self.type,
            "name": self.name,
            "proposal": self.proposal,
            "error": self.error,
            "failureReason": self.failure_reason,
            "withinTolerance": self.within_tolerance,
            "setAside": [{"pod": p, "reason": r} for p, r in self.set_aside],
            "label": self.label,
            "current": self.current,
            "target": self.target,
            "ratio": ratio,
            "tolerance": None
            if self.tolerance is None
            else {"scaleDown": self.tolerance[0], "scaleUp": self.tolerance[1]},
            "readyPods": self.ready_pods,
            "totalPods": self.total_pods,
        }


@dataclass(frozen=True, slots=True)
class StabilizationWindow:
    """One stabilization window as the decision saw it: the recommendations inside
    it (oldest first, the one being made not included). Scale-down takes the highest
    of them and the proposal, scale-up the lowest."""

    direction: Literal["scaleUp", "scaleDown"]
    seconds: int
    recommendations: tuple[Recommendation, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "seconds": self.seconds,
            "recommendations": [_rec_dict(r) for r in self.recommendations],
        }


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The rate limit computed for a change: at most ``limit`` replicas (scaleUp) or
    at least ``limit`` (scaleDown) this sync, set by ``policy``; ``applied`` when it
    changed the value."""

    direction: Literal["scaleUp", "scaleDown"]
    limit: int
    policy: str
    applied: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "limit": self.limit,
            "policy": self.policy,
            "applied": self.applied,
        }


def _rec_dict(r: Recommendation) -> dict[str, Any]:
    return {"replicas": r.recommendation, "time": format_time(r.timestamp)}


#: Which rule produced (or blocked) the final count.
LimitedBy = Literal[
    "none",
    "failed-get-scale",
    "scaling-disabled",
    "suspended",
    "conflicting-autoscaler",
    "pre-check-max",
    "pre-check-min",
    "invalid-selector",
    "ambiguous-selector",
    "invalid-metrics",
    "tolerance",
    "stabilization",
    "scale-up-limit",
    "scale-down-limit",
    "max",
    "min",
    "scale-from-zero-min",
    "failed-rescale",
]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why the decision came out as it did (for traces, logs and ``hpactl explain``).

    ``limited_by`` lists the rules that changed the value, in the order applied
    (empty: the metric proposal was applied as is). ``policy`` names the behavior
    policy that set a rate limit (e.g. ``scaleUp Pods 4 per 15s``).

    On the metrics path also: ``min_replicas`` / ``max_replicas``; ``windows``, the
    stabilization windows with their contents; ``stabilized_by``, the
    recommendation that set the stabilized value when it differs from the proposal;
    ``rate_limit``, the limit computed for a change (applied or not).
    """

    path: str
    current_replicas: int | None
    desired_replicas: int | None
    metrics: tuple[MetricExplanation, ...] = ()
    metric_proposal: int | None = None
    metric_name: str = ""
    stabilized: int | None = None
    limited_by: tuple[LimitedBy, ...] = ()
    limit_reason: str = ""
    policy: str = ""
    rescale_reason: str = ""
    error: str | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    windows: tuple[StabilizationWindow, ...] = ()
    stabilized_by: Recommendation | None = None
    rate_limit: RateLimit | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for logs, traces and ``hpactl explain``."""
        return {
            "path": self.path,
            "currentReplicas": self.current_replicas,
            "desiredReplicas": self.desired_replicas,
            "metrics": [m.to_dict() for m in self.metrics],
            "metricProposal": self.metric_proposal,
            "metricName": self.metric_name,
            "stabilized": self.stabilized,
            "limitedBy": list(self.limited_by),
            "limitReason": self.limit_reason,
            "policy": self.policy,
            "rescaleReason": self.rescale_reason,
            "error": self.error,
            "minReplicas": self.min_replicas,
            "maxReplicas": self.max_replicas,
            "stabilizationWindows": [w.to_dict() for w in self.windows],
            "stabilizedBy": None if self.stabilized_by is None else _rec_dict(self.stabilized_by),
            "rateLimit": None if self.rate_limit is None else self.rate_limit.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """``decide`` result: what to write to the scale, and the state to finish with.

    ``status`` is the status as it stands before the scale write: final when
    ``rescale`` is False.
    """

    hpa: HPA
    now: datetime
    config: CoreConfig
    current_replicas: int | None
    desired_replicas: int
    rescale: bool
    rescale_reason: str
    status: HPAStatus
    metric_statuses: tuple[MetricStatus, ...]
    conditions: tuple[HPACondition, ...]
    events: tuple[Event, ...]
    history: History
    explanation: Explanation
    min_replicas: int = 1
    error: str | None = None
    error_is_spec: bool = False
    selector: Selector | None = None
    replica_memo: ReplicaMemo | None = None


@dataclass(frozen=True, slots=True)
class ScaleWriteResult:
    """Outcome of ``PUT .../scale`` (``error`` is the API error text on failure)."""

    ok: bool
    error: str = ""

    @classmethod
    def succeeded(cls) -> ScaleWriteResult:
        return cls(True)

    @classmethod
    def failed(cls, error: str) -> ScaleWriteResult:
        return cls(False, error)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one reconcile.

    ``status_changed``: write ``status_raw`` with UpdateStatus (else skip).
    ``desired_replicas``: the status' desiredReplicas; ``rescaled``: the scale was written.
    ``error``: what ``reconcileAutoscaler`` would return (logged only; None = success).
    ``action``: ``scale_up`` / ``scale_down`` / ``none``; ``error_label``: ``none`` /
    ``internal`` / ``spec`` (upstream's monitor labels).
    """

    status: HPAStatus
    status_changed: bool
    events: tuple[Event, ...]
    history: History
    explanation: Explanation
    desired_replicas: int
    rescaled: bool
    error: str | None
    action: Literal["scale_up", "scale_down", "none"]
    error_label: Literal["none", "internal", "spec"]

    @property
    def status_raw(self) -> dict[str, Any]:
        """The status JSON to write: built on demand (a steady sync writes nothing)."""
        return status_to_raw(self.status)


# ------------------------------------------------------------------------------ helpers


def _set(conds: tuple[HPACondition, ...], c: Cond, now: datetime) -> tuple[HPACondition, ...]:
    return C.set_condition_in_list(conds, c.type, c.status, c.reason, c.message, now)


def _set_status(
    hpa: HPA,
    config: CoreConfig,
    conds: tuple[HPACondition, ...],
    current: int,
    desired: int,
    metrics: tuple[MetricStatus, ...],
    rescale: bool,
    now: datetime,
) -> HPAStatus:
    """``horizontal.go: setStatus`` (a fresh status; lastScaleTime kept unless rescaled)."""
    return HPAStatus(
        current_replicas=current,
        desired_replicas=desired,
        current_metrics=metrics,
        conditions=conds,
        last_scale_time=now if rescale else hpa.status.last_scale_time,
        observed_generation=hpa.generation if config.hpa_generation else None,
    )


def _has_object_or_external_metrics(hpa: HPA) -> bool:
    """``horizontal.go: hasObjectOrExternalMetrics``."""
    return any(m.type in (OBJECT, EXTERNAL) for m in hpa.spec.metrics)


def _scaled_to_zero_condition(hpa: HPA) -> bool:
    """``horizontal.go: getScaledToZeroConditionStatus``."""
    c = hpa.status.condition(C.SCALED_TO_ZERO)
    return c is not None and c.status == C.TRUE


def _reference(hpa: HPA) -> str:
    ref = hpa.spec.scale_target_ref
    return f"{ref.kind}/{hpa.namespace}/{ref.name}"


def _min_replicas(hpa: HPA) -> int:
    return hpa.spec.min_replicas if hpa.spec.min_replicas is not None else 1


@dataclass(frozen=True, slots=True)
class _Precheck:
    needs_metrics: bool
    desired: int
    rescale: bool
    reason: str
    path: str
    scaled_to_zero: bool


def _precheck(hpa: HPA, current: int, config: CoreConfig) -> _Precheck:
    """The pre-check branch of ``reconcileAutoscaler`` (incl. ``shouldComputeMetricsForZeroReplicas``)."""
    min_replicas = _min_replicas(hpa)
    stz = config.scale_to_zero and _scaled_to_zero_condition(hpa)
    can_scale_from_zero = stz and _has_object_or_external_metrics(hpa)
    if current == 0:
        if (min_replicas != 0 and stz) or can_scale_from_zero:
            return _Precheck(True, 0, True, "", "metrics", stz)
        return _Precheck(False, 0, False, "", "scaling-disabled", stz)
    if current > hpa.spec.max_replicas:
        return _Precheck(False, hpa.spec.max_replicas, True, ABOVE_MAX_REASON, "pre-check-max", stz)
    if current < min_replicas:
        return _Precheck(False, min_replicas, True, BELOW_MIN_REASON, "pre-check-min", stz)
    return _Precheck(True, 0, True, "", "metrics", stz)


class Reach(NamedTuple):
    """The pre-checks (zero/min/max, suspension) of one sync and what they read.

    A pure function of ``hpa``, ``scale``, ``config`` and ``conflict``: computed once
    per sync (:func:`with_selector`) instead of once each in :func:`with_selector`,
    :func:`needs_metrics` and :func:`decide`; reused only for those very objects.
    (A tuple: a frozen dataclass costs more to build than the pre-checks it saves.)
    """

    hpa: HPA
    scale: ScaleView
    config: CoreConfig
    conflict: str
    precheck: _Precheck
    suspended: bool

    def fits(self, inputs: SyncInputs) -> bool:
        return (
            self.hpa is inputs.hpa
            and self.scale is inputs.scale
            and self.config is inputs.config
            and self.conflict == inputs.conflict
        )


def _reach(inputs: SyncInputs) -> Reach | None:
    """The inputs' pre-checks (None when the scale read failed), stored or computed."""
    r = inputs.reach
    if r is not None and r.fits(inputs):
        return r
    scale = inputs.scale
    if scale is None:
        return None
    hpa, config = inputs.hpa, inputs.config
    return Reach(
        hpa,
        scale,
        config,
        inputs.conflict,
        _precheck(hpa, scale.spec_replicas, config),
        parse_suspension(hpa, config.suspend).suspended,
    )


def _passes(r: Reach | None) -> bool:
    """Whether a sync with these pre-checks gets as far as the selector (§4)."""
    return r is not None and r.precheck.needs_metrics and not r.suspended and not r.conflict


def _selector(inputs: SyncInputs, scale: ScaleView) -> SelectorResult:
    """§4's ``validateAndParseSelector`` for these inputs, unless already done."""
    if inputs.selector_result is not None:
        return inputs.selector_result
    return validate_and_parse_selector(
        inputs.hpa, scale.selector, inputs.pods, inputs.hpa_selectors
    )


def _reaches_selector(inputs: SyncInputs) -> ScaleView | None:
    """The scale when this sync gets past the scale read and the pre-checks."""
    r = _reach(inputs)
    return r.scale if r is not None and _passes(r) else None


def with_selector(inputs: SyncInputs) -> SyncInputs:
    """``inputs`` with ``selector_result`` set when this sync gets as far as §4.

    The validation (parse, pods matched, ambiguity) and the pre-checks (``reach``)
    then run once per sync: :func:`needs_metrics` and :func:`decide` reuse them.
    Keep ``pods`` and ``hpa_selectors`` as they were when calling this.
    """
    r = _reach(inputs)
    sel = inputs.selector_result
    if r is not None and _passes(r) and sel is None:
        sel = _selector(inputs, r.scale)
    if r is inputs.reach and sel is inputs.selector_result:
        return inputs
    return _inputs_with(inputs, inputs.metrics, sel, r)


def with_metrics(inputs: SyncInputs, metrics: Sequence[MetricInput]) -> SyncInputs:
    """``inputs`` with the fetched ``metrics`` (``replace`` without its cost)."""
    return _inputs_with(inputs, metrics, inputs.selector_result, inputs.reach)


_INPUT_FIELDS = (
    "hpa",
    "scale",
    "pods",
    "metrics",
    "history",
    "config",
    "now",
    "hpa_selectors",
    "scale_error",
    "scale_error_stage",
    "selector_result",
    "pod_owners",
    "conflict",
    "replica_memo",
    "reach",
)
# _inputs_with names every field: a new one must be added there too.
assert tuple(f.name for f in fields(SyncInputs)) == _INPUT_FIELDS, "update _inputs_with"


def _inputs_with(
    i: SyncInputs,
    metrics: Sequence[MetricInput],
    selector_result: SelectorResult | None,
    reach: Reach | None,
) -> SyncInputs:
    return SyncInputs(
        i.hpa,
        i.scale,
        i.pods,
        metrics,
        i.history,
        i.config,
        i.now,
        i.hpa_selectors,
        i.scale_error,
        i.scale_error_stage,
        selector_result,
        i.pod_owners,
        i.conflict,
        i.replica_memo,
        reach,
    )


def needs_metrics(inputs: SyncInputs) -> bool:
    """Whether this sync will evaluate metrics (so the shell should fetch them).

    False when the scale read failed, in the zero/min/max pre-check paths, and when
    the selector is missing, unparsable or ambiguous, and while the HPA is suspended.
    """
    scale = _reaches_selector(inputs)
    return scale is not None and _selector(inputs, scale).selector is not None


def _policy_text(direction: str, p: ScalingPolicy) -> str:
    return f"{direction} {p.type} {p.value} per {p.period_seconds}s"


def _limiting_policy(hpa: HPA, history: History, current: int, up: bool, now: datetime) -> str:
    """Which behavior policy set the rate limit (for explanations only)."""
    b = hpa.spec.behavior
    if b is None:
        return ""
    rules = b.scale_up if up else b.scale_down
    direction = "scaleUp" if up else "scaleDown"
    if rules.select_policy == "Disabled":
        return f"{direction} selectPolicy Disabled"
    fn = (
        calculate_scale_up_limit_with_scaling_rules
        if up
        else calculate_scale_down_limit_with_behaviors
    )
    target = fn(current, history, rules, now)
    for p in rules.policies:
        single = replace(rules, policies=(p,))
        if fn(current, history, single, now) == target:
            return _policy_text(direction, p)
    return f"{direction} selectPolicy {rules.select_policy}"


# ------------------------------------------------------------------------------- decide


#: Reuse the previous sync's replica calculation when it provably gives the same
#: answer (``ReplicaMemo``). A switch for the equivalence tests, which run both paths.
REUSE_REPLICA_CALCULATION = True

# Metric types whose calculation reads ``now`` only in groupPods' CPU-initialization
# test (the samples it makes up for missing pods carry ``now`` but only their values
# are used). Others (Object, External, Pods) always take the full path.
_MEMO_TYPES = frozenset({RESOURCE, CONTAINER_RESOURCE})
_NEVER = datetime.max.replace(tzinfo=UTC)
_EVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ReplicaMemo:
    """One sync's replica calculation and what it read (the "decide only what changed"
    fast path; hpactl, not upstream).

    ``compute_replicas_for_metrics`` is a function of the HPA, the CoreConfig, the
    scale's replicas, the pods, the metric samples and ``now``. For Resource and
    ContainerResource metrics (without a metric fallback):

    * ``now`` enters only through groupPods' ``pod.start_time + cpuInitializationPeriod
      > now`` (the samples made up for missing or unready pods carry ``now``, but only
      their values are read): each pod's answer is constant for ``now`` in
      ``[valid_from, valid_until)``;
    * a sample's timestamp enters only through groupPods' test of an initializing pod
      (``timestamp < readiness transition + window``: none once ``valid_until`` is
      unbounded, as no pod is initializing then) and as the first sample's timestamp
      in ``MetricOutcome.timestamp``, which the reuse refreshes.

    So when the HPA and config are the same objects, the pods the same objects in the
    same order, the replicas equal, the samples' pod names, windows and values equal
    in the same order, the timestamps equal too unless no pod is initializing, and
    ``now`` inside that interval, the result is the one computed before. The
    stabilization, rate limits, conditions, status, events and history are computed
    afresh every sync.
    """

    hpa: HPA
    config: CoreConfig
    spec_replicas: int
    status_replicas: int
    pods: tuple[PodView, ...]
    values: tuple[tuple[str | timedelta | int, ...], ...]
    stamps: tuple[tuple[datetime, ...], ...] | None
    valid_from: datetime
    valid_until: datetime
    result: MetricsResult
    explanations: tuple[MetricExplanation, ...]


_Values = tuple[tuple[str | timedelta | int, ...], ...]
_Stamps = tuple[tuple[datetime, ...], ...]


def _samples_key(metric_inputs: Sequence[MetricInput]) -> tuple[_Values, _Stamps] | None:
    """The samples' pod, window, value (flat, per metric: kept per HPA, so small) and
    timestamps, each in the samples' order,
    or None when an input is not a plain sample map (a fetch error: the full path)."""
    values = []
    stamps = []
    for m in metric_inputs:
        if type(m) is not dict:
            return None
        values.append(tuple(x for name, pm in m.items() for x in (name, pm.window, pm.value)))
        stamps.append(tuple(pm.timestamp for pm in m.values()))
    return tuple(values), tuple(stamps)


def _memo_valid(
    memo: ReplicaMemo | None,
    inputs: SyncInputs,
    scale: ScaleView,
    pods: Sequence[PodView],
    values: _Values,
    stamps: _Stamps,
) -> bool:
    """Whether ``memo``'s result is what the calculation would give now (ReplicaMemo)."""
    if memo is None:
        return False
    if not (
        memo.hpa is inputs.hpa
        and memo.config is inputs.config
        and memo.spec_replicas == scale.spec_replicas
        and memo.status_replicas == scale.status_replicas
        and memo.valid_from <= inputs.now < memo.valid_until
        and len(memo.pods) == len(pods)
        and all(a is b for a, b in zip(memo.pods, pods, strict=True))
        and memo.values == values
    ):
        return False
    return memo.valid_until == _NEVER or memo.stamps == stamps


def _validity(pods: Sequence[PodView], init: timedelta, now: datetime) -> tuple[datetime, datetime]:
    """The interval around ``now`` in which no pod's CPU-initialization test flips."""
    lo, hi = _EVER, _NEVER
    for pod in pods:
        if pod.start_time is None:
            continue
        flip = pod.start_time + init
        if flip > now:
            hi = min(hi, flip)
        else:
            lo = max(lo, flip)
    return lo, hi


def _restamped(res: MetricsResult, stamps: _Stamps) -> MetricsResult:
    """``res`` with each outcome's first-sample timestamp taken from ``stamps``."""
    outcomes = tuple(
        o
        if o.timestamp is None
        or o.index >= len(stamps)
        or not stamps[o.index]
        or o.timestamp == stamps[o.index][0]
        else replace(o, timestamp=stamps[o.index][0])
        for o in res.outcomes
    )
    if all(a is b for a, b in zip(outcomes, res.outcomes, strict=True)):
        return res
    return replace(res, outcomes=outcomes)


def _replica_calculation(
    inputs: SyncInputs,
    scale: ScaleView,
    pods: Sequence[PodView],
    metric_inputs: Sequence[MetricInput],
    tolerances: Tolerances,
    fallback: metric_fallback.FallbackConfig | None,
    history: History,
) -> tuple[MetricsResult, tuple[MetricExplanation, ...], ReplicaMemo | None]:
    """``compute_replicas_for_metrics`` and the metrics' explanations, reused from
    ``inputs.replica_memo`` when that provably gives the same answer."""
    hpa, config, now = inputs.hpa, inputs.config, inputs.now
    key = None
    if (
        REUSE_REPLICA_CALCULATION
        and fallback is None
        and all(m.type in _MEMO_TYPES for m in hpa.spec.metrics)
    ):
        key = _samples_key(metric_inputs)
    memo = inputs.replica_memo
    if key is not None and memo is not None and _memo_valid(memo, inputs, scale, pods, *key):
        return _restamped(memo.result, key[1]), memo.explanations, memo
    res = compute_replicas_for_metrics(
        hpa,
        scale.spec_replicas,
        scale.status_replicas,
        pods,
        metric_inputs,
        config.calculator(),
        tolerances,
        now,
        None if fallback is None else metric_fallback.substitute(fallback, history, hpa, now),
    )
    metric_expl = tuple(
        _metric_explanation(o, hpa.spec.metrics[o.index], tolerances) for o in res.outcomes
    )
    if key is None:
        return res, metric_expl, None
    lo, hi = _validity(pods, config.cpu_initialization_period, now)
    values, stamps = key
    new = ReplicaMemo(
        hpa,
        config,
        scale.spec_replicas,
        scale.status_replicas,
        tuple(pods),
        values,
        stamps if hi != _NEVER else None,  # only read while a pod is initializing
        lo,
        hi,
        res,
        metric_expl,
    )
    return res, metric_expl, new


def decide(inputs: SyncInputs) -> Plan:
    """``horizontal.go: reconcileAutoscaler`` up to (not including) the scale update."""
    hpa = inputs.hpa
    config = inputs.config
    now = inputs.now
    original = hpa.status
    conds = original.conditions
    events: list[Event] = []
    history = inputs.history
    strategy = selection_strategy(hpa, config.selection_strategy)

    # §3: any failure to read the scale subresource.
    if inputs.scale is None:
        err = inputs.scale_error or "unrecognized resource"
        events.append(Event(WARNING, "FailedGetScale", err))
        conds = _set(
            conds,
            Cond(C.ABLE_TO_SCALE, C.FALSE, "FailedGetScale", C.MSG_FAILED_GET_SCALE.format(err)),
            now,
        )
        if parse_suspension(hpa, config.suspend).suspended:
            conds = _set(conds, _SUSPENDED, now)
        if inputs.conflict:
            conds = _set(conds, _conflict_condition(inputs.conflict), now)
        status = replace(original, conditions=conds)
        expl = Explanation(
            "failed-get-scale", None, None, limited_by=("failed-get-scale",), error=err
        )
        stage = inputs.scale_error_stage
        if stage == "version":
            error = f"invalid API version in scale target reference: {err}"
        elif stage == "mapping":
            error = f"unable to determine resource for scale target reference: {err}"
        else:
            error = f"failed to query scale subresource for {_reference(hpa)}: {err}"
        return Plan(
            hpa,
            now,
            config,
            None,
            original.desired_replicas,
            False,
            "",
            status,
            (),
            conds,
            tuple(events),
            history,
            expl,
            _min_replicas(hpa),
            error=error,
            error_is_spec=stage == "version",
        )

    scale = inputs.scale
    conds = _set(
        conds, Cond(C.ABLE_TO_SCALE, C.TRUE, "SucceededGetScale", C.MSG_SUCCEEDED_GET_SCALE), now
    )
    if not config.scale_to_zero:
        conds = C.remove_condition(conds, C.SCALED_TO_ZERO)
    current = scale.spec_replicas
    if inputs.conflict:
        return _conflict_plan(inputs, conds, current)
    reach = _reach(inputs)
    assert reach is not None  # the scale was read
    if reach.suspended:
        return _suspended_plan(inputs, conds, current)
    history = record_initial_recommendation(history, current, now)
    min_replicas = _min_replicas(hpa)
    pre = reach.precheck

    if not pre.needs_metrics:
        if pre.path == "scaling-disabled":
            conds = _set(
                conds,
                Cond(C.SCALING_ACTIVE, C.FALSE, "ScalingDisabled", C.MSG_SCALING_DISABLED),
                now,
            )
        desired = pre.desired if pre.rescale else current
        status = _set_status(hpa, config, conds, current, current, (), False, now)
        limited: tuple[LimitedBy, ...] = (
            ("scaling-disabled",)
            if pre.path == "scaling-disabled"
            else ("pre-check-max",)
            if pre.path == "pre-check-max"
            else ("pre-check-min",)
        )
        expl = Explanation(
            pre.path, current, desired, limited_by=limited, rescale_reason=pre.reason
        )
        return Plan(
            hpa,
            now,
            config,
            current,
            desired,
            pre.rescale,
            pre.reason,
            status,
            (),
            conds,
            tuple(events),
            history,
            expl,
            min_replicas,
        )

    # §4: selector.
    sel = _selector(inputs, scale)
    events.extend(sel.events)
    if sel.selector is None:
        assert sel.condition is not None and sel.error is not None
        conds = _set(conds, sel.condition, now)
        status = _set_status(hpa, config, conds, current, original.desired_replicas, (), False, now)
        events.append(Event(WARNING, "FailedComputeMetricsReplicas", sel.error))
        path = (
            "ambiguous-selector"
            if sel.condition.reason == "AmbiguousSelector"
            else "invalid-selector"
        )
        expl = Explanation(
            path,
            current,
            original.desired_replicas,
            limited_by=("ambiguous-selector",)
            if path == "ambiguous-selector"
            else ("invalid-selector",),
            error=sel.error,
        )
        return Plan(
            hpa,
            now,
            config,
            current,
            original.desired_replicas,
            False,
            "",
            status,
            (),
            conds,
            tuple(events),
            history,
            expl,
            min_replicas,
            error=_metrics_failure_error(hpa, sel.error),
            selector=sel.store,
        )

    # §6: metrics.
    tolerances = tolerances_for_hpa(hpa, config.tolerance, config.configurable_tolerance)
    pods: Sequence[PodView] = sel.pods
    metric_inputs: Sequence[MetricInput] = inputs.metrics
    if strategy.strategy == OWNER_REFERENCE and inputs.pod_owners is not None:
        pods, metric_inputs = owned_only(pods, metric_inputs, inputs.pod_owners)
    # KEP-5679 (hpactl.dev/metric-fallback): fallback replicas for failing metrics.
    fb = metric_fallback.setup(hpa, config.metric_fallback, history, conds, now)
    history, conds = fb.history, fb.conditions
    events.extend(fb.events)
    res, metric_expl, memo = _replica_calculation(
        inputs, scale, pods, metric_inputs, tolerances, fb.config, history
    )
    events.extend(res.events)
    if fb.config is not None:
        settled = metric_fallback.settle(fb.config, hpa, history, res.outcomes, conds, now)
        history, conds = settled.history, settled.conditions
        events.extend(settled.events)
    if res.replicas == -1:
        if res.condition is not None:
            conds = _set(conds, res.condition, now)
        err = res.error or "invalid metrics (0 invalid out of 0), first error is: <nil>"
        status = _set_status(
            hpa, config, conds, current, original.desired_replicas, res.statuses, False, now
        )
        events.append(Event(WARNING, "FailedComputeMetricsReplicas", err))
        expl = Explanation(
            "invalid-metrics",
            current,
            original.desired_replicas,
            metric_expl,
            limited_by=("invalid-metrics",),
            error=err,
        )
        return Plan(
            hpa,
            now,
            config,
            current,
            original.desired_replicas,
            False,
            "",
            status,
            res.statuses,
            conds,
            tuple(events),
            history,
            expl,
            min_replicas,
            error=_metrics_failure_error(hpa, err),
            error_is_spec=_spec_error(res.outcomes),
            selector=sel.store,
            replica_memo=memo,
        )
    assert res.condition is not None
    conds = _set(conds, res.condition, now)

    desired = 0
    rescale_metric = ""
    if res.replicas > desired:
        desired = res.replicas
        rescale_metric = res.metric_name
    reason = ""
    if desired > current:
        reason = f"{rescale_metric} above target"
    if desired < current:
        reason = ALL_BELOW_REASON
    proposal = desired
    windows = _windows(hpa, config, history, now)

    b = hpa.spec.behavior
    norm: Normalized
    if b is None:
        norm = normalize_desired_replicas(
            history,
            current,
            desired,
            min_replicas,
            hpa.spec.max_replicas,
            config.downscale_stabilization,
            now,
        )
    else:
        norm = normalize_desired_replicas_with_behaviors(
            history,
            current,
            desired,
            min_replicas,
            hpa.spec.max_replicas,
            b.scale_up,
            b.scale_down,
            config.downscale_stabilization,
            now,
        )
    history = norm.history
    conds = _set(conds, Cond(C.ABLE_TO_SCALE, C.TRUE, norm.able_reason, norm.able_message), now)
    conds = _set(
        conds,
        Cond(
            C.SCALING_LIMITED,
            C.TRUE if norm.limited else C.FALSE,
            norm.limit_reason,
            norm.limit_message,
        ),
        now,
    )
    desired = norm.desired

    limited_by: list[LimitedBy] = []
    if proposal == current and any(
        o.within_tolerance for o in res.outcomes if o.name == res.metric_name
    ):
        limited_by.append("tolerance")
    if norm.stabilized != proposal:
        limited_by.append("stabilization")
    policy = ""
    if norm.limited:
        lr = norm.limit_reason
        if lr == "ScaleUpLimit":
            limited_by.append("scale-up-limit")
            policy = (
                _limiting_policy(hpa, history, current, True, now)
                if b is not None
                else "max(2 x current, 4)"
            )
        elif lr == "ScaleDownLimit":
            limited_by.append("scale-down-limit")
            policy = _limiting_policy(hpa, history, current, False, now)
        elif lr == "TooManyReplicas":
            limited_by.append("max")
        elif lr == "TooFewReplicas":
            limited_by.append("min")

    # Scale from zero with ScaledToZero still set: never below minReplicas.
    if current == 0 and min_replicas != 0 and pre.scaled_to_zero and desired < min_replicas:
        desired = min_replicas
        limited_by.append("scale-from-zero-min")
        if reason == "":
            reason = BELOW_MIN_REASON

    rescale = desired != current
    status = _set_status(
        hpa,
        config,
        conds,
        current,
        current if not rescale else original.desired_replicas,
        res.statuses,
        False,
        now,
    )
    expl = Explanation(
        "metrics",
        current,
        desired,
        metric_expl,
        proposal,
        res.metric_name,
        norm.stabilized,
        tuple(limited_by),
        norm.limit_reason,
        policy,
        reason if rescale else "",
        res.error,
        min_replicas=min_replicas,
        max_replicas=hpa.spec.max_replicas,
        windows=windows,
        stabilized_by=_stabilized_by(windows, proposal, norm.stabilized),
        rate_limit=_rate_limit(hpa, history, current, norm.stabilized, limited_by, now),
    )
    return Plan(
        hpa,
        now,
        config,
        current,
        desired,
        rescale,
        reason,
        status,
        res.statuses,
        conds,
        tuple(events),
        history,
        expl,
        min_replicas,
        error=res.error,
        selector=sel.store,
        replica_memo=memo,
    )


_SUSPENDED = Cond(C.SCALING_ACTIVE, C.FALSE, SUSPENDED_REASON, MSG_SUSPENDED)


def _suspended_plan(inputs: SyncInputs, conds: tuple[HPACondition, ...], current: int) -> Plan:
    """KEP-3428: a suspended HPA computes nothing and writes no scale.

    Its status is that of upstream's other state where scaling is off
    (``ScalingDisabled``: replicas 0): the current replicas, desired = current, no
    metrics (none were computed; old ones would look current). The history is left
    as it is, so the windows and scale events from before still count on resume.
    """
    expl = Explanation(
        "suspended", current, current, limited_by=("suspended",), limit_reason=SUSPENDED_REASON
    )
    return _held_plan(inputs, _set(conds, _SUSPENDED, inputs.now), current, expl, ())


def _conflict_condition(message: str) -> Cond:
    return Cond(C.SCALING_ACTIVE, C.FALSE, CONFLICTING_AUTOSCALER, message)


def _conflict_plan(inputs: SyncInputs, conds: tuple[HPACondition, ...], current: int) -> Plan:
    """A built-in HPA also targets this hpactl HPA's workload: compute nothing, scale
    nothing, say so (condition and Warning). The status is a suspended HPA's; the
    history is kept for when the other HPA is gone."""
    conds = _set(conds, _conflict_condition(inputs.conflict), inputs.now)
    expl = Explanation(
        "conflicting-autoscaler",
        current,
        current,
        limited_by=("conflicting-autoscaler",),
        limit_reason=CONFLICTING_AUTOSCALER,
        error=inputs.conflict,
    )
    events = (Event(WARNING, CONFLICTING_AUTOSCALER, inputs.conflict),)
    return _held_plan(inputs, conds, current, expl, events)


def _held_plan(
    inputs: SyncInputs,
    conds: tuple[HPACondition, ...],
    current: int,
    expl: Explanation,
    events: tuple[Event, ...],
) -> Plan:
    """A sync that computed nothing: no scale, desired = current, no metrics in the
    status, the history kept as it is."""
    hpa, config, now = inputs.hpa, inputs.config, inputs.now
    status = _set_status(hpa, config, conds, current, current, (), False, now)
    return Plan(
        hpa,
        now,
        config,
        current,
        current,
        False,
        "",
        status,
        (),
        conds,
        events,
        inputs.history,
        expl,
        _min_replicas(hpa),
    )


def _metrics_failure_error(hpa: HPA, err: str) -> str:
    return (
        "failed to compute desired number of replicas based on listed metrics for "
        f"{_reference(hpa)}: {err}"
    )


def _spec_error(outcomes: Sequence[MetricOutcome]) -> bool:
    return any(o.failure_reason == "InvalidMetricSourceType" for o in outcomes)


def _metric_explanation(
    o: MetricOutcome, spec: MetricSpec, tolerances: Tolerances
) -> MetricExplanation:
    label, target, utilization = _metric_label_target(spec)
    return MetricExplanation(
        o.index,
        o.type,
        o.name,
        o.replicas,
        o.error,
        o.failure_reason,
        o.within_tolerance,
        o.set_aside,
        label=label,
        current=_current_text(o.status, utilization) if o.replicas is not None else None,
        target=target,
        ratio=o.ratio,
        tolerance=(tolerances.scale_down, tolerances.scale_up),
        ready_pods=o.ready_pods,
        total_pods=o.total_pods,
    )


def _target_text(t: MetricTarget) -> tuple[str | None, bool]:
    """(target as the spec states it, whether it is a utilization), in the order the
    calculations read the target's fields."""
    if t.type == VALUE and t.value_milli is not None:
        return str(Quantity.from_milli(t.value_milli, "DecimalSI")), False
    if t.average_value_milli is not None:
        return str(Quantity.from_milli(t.average_value_milli, "DecimalSI")), False
    if t.average_utilization is not None:
        return f"{t.average_utilization}%", True
    if t.value_milli is not None:
        return str(Quantity.from_milli(t.value_milli, "DecimalSI")), False
    return None, False


def _metric_label_target(spec: MetricSpec) -> tuple[str, str | None, bool]:
    """A short label for a metric, its target text and whether it is a utilization."""
    if spec.type == RESOURCE and spec.resource is not None:
        return (spec.resource.name, *_target_text(spec.resource.target))
    if spec.type == CONTAINER_RESOURCE and spec.container_resource is not None:
        cr = spec.container_resource
        return (f"{cr.name}({cr.container})", *_target_text(cr.target))
    if spec.type == PODS and spec.pods is not None:
        return (f"pods:{spec.pods.metric.name}", *_target_text(spec.pods.target))
    if spec.type == OBJECT and spec.object is not None:
        return (f"object:{spec.object.metric.name}", *_target_text(spec.object.target))
    if spec.type == EXTERNAL and spec.external is not None:
        return (f"external:{spec.external.metric.name}", *_target_text(spec.external.target))
    return spec.type or "?", None, False


def _current_text(status: MetricStatus, utilization: bool) -> str | None:
    """The current value as ``status.currentMetrics`` shows it."""
    current: MetricValueStatus | None = None
    for src in (
        status.resource,
        status.container_resource,
        status.pods,
        status.object,
        status.external,
    ):
        if src is not None:
            current = src.current
            break
    if current is None:
        return None
    if utilization and current.average_utilization is not None:
        return f"{current.average_utilization}%"
    q = current.average_value if current.average_value is not None else current.value
    return None if q is None else str(q)


def _windows(
    hpa: HPA, config: CoreConfig, history: History, now: datetime
) -> tuple[StabilizationWindow, ...]:
    """The stabilization windows of this HPA and what they hold before this sync's
    recommendation is recorded (the same cutoffs as :mod:`hpactl.core.behavior`)."""
    b = hpa.spec.behavior
    spans: list[tuple[Literal["scaleUp", "scaleDown"], timedelta]] = []
    if b is None:
        spans.append(("scaleDown", config.downscale_stabilization))
    else:
        down = b.scale_down.stabilization_window_seconds
        spans.append(("scaleUp", timedelta(seconds=b.scale_up.stabilization_window_seconds or 0)))
        spans.append(
            (
                "scaleDown",
                config.downscale_stabilization if down is None else timedelta(seconds=down),
            )
        )
    return tuple(
        StabilizationWindow(
            direction,
            int(span.total_seconds()),
            tuple(r for r in history.recommendations if in_window(r.timestamp, now - span)),
        )
        for direction, span in spans
    )


def _stabilized_by(
    windows: tuple[StabilizationWindow, ...], proposal: int, stabilized: int
) -> Recommendation | None:
    """The recommendation that moved the value: the highest of the scale-down window
    when stabilization raised it, the lowest of the scale-up window when it lowered it
    (the latest such entry)."""
    if stabilized == proposal:
        return None
    want: Literal["scaleUp", "scaleDown"] = "scaleDown" if stabilized > proposal else "scaleUp"
    recs = [r for w in windows if w.direction == want for r in w.recommendations]
    if not recs:
        return None
    pick = max if want == "scaleDown" else min
    best = pick(r.recommendation for r in recs)
    return [r for r in recs if r.recommendation == best][-1]


def _rate_limit(
    hpa: HPA,
    history: History,
    current: int,
    stabilized: int,
    limited_by: Sequence[LimitedBy],
    now: datetime,
) -> RateLimit | None:
    """The rate limit the normalization computed for a change from ``current``."""
    if stabilized == current:
        return None
    up = stabilized > current
    b = hpa.spec.behavior
    if b is None:
        if not up:
            return None  # no scale-down rate limit without spec.behavior
        return RateLimit(
            "scaleUp",
            calculate_scale_up_limit(current),
            "max(2 x current, 4)",
            "scale-up-limit" in limited_by,
        )
    if up:
        limit = max(
            calculate_scale_up_limit_with_scaling_rules(current, history, b.scale_up, now), current
        )
    else:
        limit = min(
            calculate_scale_down_limit_with_behaviors(current, history, b.scale_down, now), current
        )
    return RateLimit(
        "scaleUp" if up else "scaleDown",
        limit,
        _limiting_policy(hpa, history, current, up, now),
        ("scale-up-limit" if up else "scale-down-limit") in limited_by,
    )


# ----------------------------------------------------------------------------- finalize


def record_rescale(history: History, hpa: HPA, previous: int, new: int, at: datetime) -> History:
    """The scale event a successful rescale stores (``storeScaleEvent``; behavior HPAs
    only). Also used when a write whose answer was lost turns out to have landed."""
    b = hpa.spec.behavior
    if b is None or previous == new:
        return history
    return store_scale_event(
        history,
        previous,
        new,
        get_longest_policy_period(b.scale_up),
        get_longest_policy_period(b.scale_down),
        at,
    )


def finalize(plan: Plan, scale_result: ScaleWriteResult | None = None) -> Outcome:
    """The rest of ``reconcileAutoscaler`` once the scale update was attempted.

    ``scale_result`` is required when ``plan.rescale`` (None otherwise).
    """
    hpa = plan.hpa
    now = plan.now
    config = plan.config
    events = list(plan.events)
    history = plan.history
    expl = plan.explanation
    error = plan.error
    action: Literal["scale_up", "scale_down", "none"] = "none"

    if not plan.rescale or plan.current_replicas is None:
        return _outcome(plan, plan.status, events, history, expl, False, error, action)

    if scale_result is None:
        raise ValueError("finalize: the plan rescales, a ScaleWriteResult is required")
    current = plan.current_replicas
    desired = plan.desired_replicas
    conds = plan.conditions
    if not scale_result.ok:
        err = scale_result.error
        events.append(
            Event(
                WARNING,
                "FailedRescale",
                f"New size: {desired}; reason: {plan.rescale_reason}; error: {err}",
            )
        )
        conds = _set(
            conds,
            Cond(
                C.ABLE_TO_SCALE, C.FALSE, "FailedUpdateScale", C.MSG_FAILED_UPDATE_SCALE.format(err)
            ),
            now,
        )
        status = _set_status(
            hpa,
            config,
            conds,
            current,
            hpa.status.desired_replicas,
            plan.metric_statuses,
            False,
            now,
        )
        expl = replace(expl, limited_by=(*expl.limited_by, "failed-rescale"), error=err)
        return _outcome(
            plan,
            status,
            events,
            history,
            expl,
            False,
            f"failed to rescale {_reference(hpa)}: {err}",
            action,
        )

    conds = _set(
        conds,
        Cond(C.ABLE_TO_SCALE, C.TRUE, "SucceededRescale", C.MSG_SUCCEEDED_RESCALE.format(desired)),
        now,
    )
    events.append(
        Event(NORMAL, "SuccessfulRescale", f"New size: {desired}; reason: {plan.rescale_reason}")
    )
    history = record_rescale(history, hpa, current, desired, now)
    if config.scale_to_zero:
        if (
            current > 0
            and desired == 0
            and plan.min_replicas == 0
            and _has_object_or_external_metrics(hpa)
        ):
            conds = _set(
                conds, Cond(C.SCALED_TO_ZERO, C.TRUE, "ScaledToZero", C.MSG_SCALED_TO_ZERO), now
            )
        else:
            conds = _set(
                conds,
                Cond(C.SCALED_TO_ZERO, C.FALSE, "NotScaledToZero", C.MSG_NOT_SCALED_TO_ZERO),
                now,
            )
    action = "scale_up" if desired > current else "scale_down"
    status = _set_status(hpa, config, conds, current, desired, plan.metric_statuses, True, now)
    return _outcome(plan, status, events, history, expl, True, error, action)


def _outcome(
    plan: Plan,
    status: HPAStatus,
    events: list[Event],
    history: History,
    expl: Explanation,
    rescaled: bool,
    error: str | None,
    action: Literal["scale_up", "scale_down", "none"],
) -> Outcome:
    label: Literal["none", "internal", "spec"] = "none"
    if error is not None:
        label = "spec" if plan.error_is_spec else "internal"
    config = plan.config
    # Malformed extension annotations: AnnotationsValid=False and a Warning each.
    problems = annotation_problems(
        plan.hpa,
        sync_period=config.configurable_sync_period,
        suspend=config.suspend,
        selection_strategy=config.selection_strategy,
        metric_sources=config.metric_source,
        metric_fallback=config.metric_fallback,
    )
    conds = apply_problems(status.conditions, problems, plan.now)
    if conds is not status.conditions:
        status = replace(status, conditions=conds)
    if problems:
        events = [*events, *(Event(WARNING, p.reason, p.message) for p in problems)]
    return Outcome(
        status=status,
        status_changed=not status_equal(plan.hpa.status, status),
        events=tuple(events),
        history=history,
        explanation=expl,
        desired_replicas=status.desired_replicas,
        rescaled=rescaled,
        error=error,
        action=action,
        error_label=label,
    )


def reconcile(inputs: SyncInputs, scale_result: ScaleWriteResult | None = None) -> Outcome:
    """``decide`` then ``finalize`` in one call (tests, benchmarks, dry runs).

    When the plan rescales and ``scale_result`` is None the write is taken as successful.
    """
    plan = decide(inputs)
    if plan.rescale and scale_result is None:
        scale_result = ScaleWriteResult.succeeded()
    return finalize(plan, scale_result if plan.rescale else None)
