"""Feature gates that change what the HPA controller does, parsed like
kube-controller-manager's ``--feature-gates`` (k8s.io/component-base/featuregate).

Only the gates that concern the HorizontalPodAutoscaler are known; any other
name is rejected with upstream's message ``unrecognized feature gate: <name>``.
Defaults are those of kube-controller-manager 1.37 (see ``KNOWN_GATES``);
``HPATopologySkewEvents`` is hpactl's own (alpha, off: events stay upstream's).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType


class Stage(Enum):
    """featuregate.PreRelease."""

    ALPHA = "ALPHA"
    BETA = "BETA"
    GA = "GA"
    DEPRECATED = "DEPRECATED"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """featuregate.FeatureSpec at kube-controller-manager 1.37."""

    name: str
    default: bool
    stage: Stage
    lock_to_default: bool
    summary: str


HPA_SCALE_TO_ZERO = "HPAScaleToZero"
HPA_CONFIGURABLE_TOLERANCE = "HPAConfigurableTolerance"
POD_LEVEL_RESOURCES = "PodLevelResources"
HPA_GENERATION = "HPAGeneration"
STALE_CONTROLLER_CONSISTENCY_HPA = "StaleControllerConsistencyHPA"
HPA_OPTIMIZED_SELECTOR_STORE = "HPAOptimizedSelectorStore"
# hpactl's own (kube-controller-manager has no such gate): a Warning event when the
# pods of a target spread with more skew than its template's maxSkew allows.
HPA_TOPOLOGY_SKEW_EVENTS = "HPATopologySkewEvents"
# KEP-5679's gate: fallback replicas for a metric failing for a configured duration,
# read by hpactl from the annotation hpactl.dev/metric-fallback for every metric type.
HPA_EXTERNAL_METRIC_FALLBACK = "HPAExternalMetricFallback"
# KEP-6003's gate (alpha targeted for 1.38): a per-HPA sync period, read by hpactl from
# the annotation hpactl.dev/sync-period-seconds (docs/extensions.md).
HPA_CONFIGURABLE_SYNC_PERIOD = "HPAConfigurableSyncPeriod"
# hpactl's own (KEP-3428 names no gate): honour autoscaling.kubernetes.io/suspend.
HPA_SUSPEND = "HPASuspend"
# hpactl's own: stabilization and scale-event history kept in ConfigMaps so that a new
# leader (or a shard's new owner) decides as the old one would have (docs/high-availability.md).
HPA_HISTORY_PERSISTENCE = "HPAHistoryPersistence"
# KEP-5325's gate: the per-HPA pod selection strategy (hpactl reads it from the
# hpactl.dev/selection-strategy annotation until the spec field ships).
HPA_SELECTION_STRATEGY = "HPASelectionStrategy"
# KEP-6382's gate: per-metric source routing (hpactl reads the sources from the
# hpactl.dev/metric-sources annotation and asks providers of --metrics-providers-config).
HPA_METRIC_SOURCE = "HPAMetricSource"

# Meta gates that set every non-locked alpha (beta) gate the same command line does
# not name explicitly (featuregate.go: allAlphaGate / allBetaGate).
ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"

KNOWN_GATES: Mapping[str, GateSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            GateSpec(
                HPA_SCALE_TO_ZERO,
                True,
                Stage.BETA,
                False,
                "minReplicas may be 0 when an Object or External metric is configured.",
            ),
            GateSpec(
                HPA_CONFIGURABLE_TOLERANCE,
                True,
                Stage.BETA,
                False,
                "Per-HPA tolerance in spec.behavior.scaleUp/scaleDown.tolerance.",
            ),
            GateSpec(
                POD_LEVEL_RESOURCES,
                True,
                Stage.BETA,
                False,
                "Pod-level resource requests are used for Resource metrics when set.",
            ),
            GateSpec(
                HPA_GENERATION,
                False,
                Stage.ALPHA,
                False,
                "status.observedGeneration; reconcile at once on a spec change.",
            ),
            GateSpec(
                STALE_CONTROLLER_CONSISTENCY_HPA,
                True,
                Stage.BETA,
                False,
                "Skip a reconcile while the informer has not yet seen the controller's own last write.",
            ),
            GateSpec(
                HPA_OPTIMIZED_SELECTOR_STORE,
                True,
                Stage.BETA,
                False,
                "Faster detection of HPAs sharing pods; no change in decisions.",
            ),
            GateSpec(
                HPA_TOPOLOGY_SKEW_EVENTS,
                False,
                Stage.ALPHA,
                False,
                "hpactl's own, not kube-controller-manager's: a Warning event "
                "TopologySkewExceeded when, after a rescale, the target's pods spread with "
                "more skew than a topologySpreadConstraint's maxSkew.",
            ),
            GateSpec(
                HPA_EXTERNAL_METRIC_FALLBACK,
                False,
                Stage.ALPHA,
                False,
                "KEP-5679, read from the annotation hpactl.dev/metric-fallback for every "
                "metric type: a metric failing for failureDuration (default 3m) proposes "
                "its fallback replica count (ExternalMetricFallbackActive condition).",
            ),
            GateSpec(
                HPA_CONFIGURABLE_SYNC_PERIOD,
                False,
                Stage.ALPHA,
                False,
                "KEP-6003 (alpha targeted for 1.38), read from the annotation "
                "hpactl.dev/sync-period-seconds (1-3600): an HPA synced at its own period "
                "instead of --horizontal-pod-autoscaler-sync-period.",
            ),
            GateSpec(
                HPA_SUSPEND,
                False,
                Stage.ALPHA,
                False,
                "hpactl's own gate for KEP-3428: an HPA annotated "
                "autoscaling.kubernetes.io/suspend=true is not scaled (ScalingActive=False, "
                "reason Suspended) until the annotation is removed or false.",
            ),
            GateSpec(
                HPA_HISTORY_PERSISTENCE,
                False,
                Stage.ALPHA,
                False,
                "hpactl's own: each HPA's stabilization recommendations and scale events are "
                "kept in ConfigMaps in hpactl's namespace and read back by the next leader "
                "(or shard owner), so a failover or restart does not drop them.",
            ),
            GateSpec(
                HPA_SELECTION_STRATEGY,
                False,
                Stage.ALPHA,
                False,
                "KEP-5325: an HPA annotated hpactl.dev/selection-strategy: OwnerReference "
                "counts only the label-selected pods its target owns (directly, or through "
                "the ReplicaSets a Deployment owns).",
            ),
            GateSpec(
                HPA_METRIC_SOURCE,
                False,
                Stage.ALPHA,
                False,
                "KEP-6382: Pods, Object and External metrics fetched from the API group an "
                "HPA names in hpactl.dev/metric-sources, or directly from a provider of "
                "--metrics-providers-config (by API group or metric name pattern).",
            ),
        )
    }
)


class FeatureGateError(ValueError):
    """A --feature-gates value upstream would reject; the message is upstream's text."""


def parse_go_bool(text: str) -> bool:
    """Go ``strconv.ParseBool``; ValueError with Go's message on anything else."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def parse_feature_gates_text(text: str) -> dict[str, bool]:
    """Split ``Name=bool,Name2=false`` like featuregate.go ``Set`` (names are not yet checked)."""
    result: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        raw = raw.strip()
        try:
            result[name] = parse_go_bool(raw)
        except ValueError as exc:
            raise FeatureGateError(f"invalid value of {name}={raw}, err: {exc}") from None
    return result


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The effective gate values: KNOWN_GATES defaults overridden by ``overrides``.

    Build with :meth:`from_map` or :func:`parse_feature_gates` so unknown or locked
    gates are rejected; direct construction trusts its argument.
    """

    # Sorted (name, value) pairs of the gates set explicitly: hashable, like the rest
    # of the frozen configuration.
    overrides: tuple[tuple[str, bool], ...] = ()

    @classmethod
    def defaults(cls) -> FeatureGates:
        return cls()

    @classmethod
    def from_map(cls, requested: Mapping[str, bool]) -> FeatureGates:
        """featuregate.go ``SetFromMap``: validate names, locks and the All* meta gates."""
        for name, value in requested.items():
            if name in (ALL_ALPHA, ALL_BETA):
                continue
            spec = KNOWN_GATES.get(name)
            if spec is None:
                raise FeatureGateError(f"unrecognized feature gate: {name}")
            if spec.lock_to_default and value != spec.default:
                raise FeatureGateError(
                    f"cannot set feature gate {name} to {_go_bool(value)}, "
                    f"feature is locked to {_go_bool(spec.default)}"
                )
        resolved: dict[str, bool] = {}
        for meta, stage in ((ALL_ALPHA, Stage.ALPHA), (ALL_BETA, Stage.BETA)):
            if meta in requested:
                for spec in KNOWN_GATES.values():
                    if spec.stage is stage and not spec.lock_to_default:
                        resolved[spec.name] = requested[meta]
        # A gate named explicitly wins over AllAlpha/AllBeta, whatever the order.
        resolved.update({k: v for k, v in requested.items() if k in KNOWN_GATES})
        return cls(tuple(sorted(resolved.items())))

    def enabled(self, name: str) -> bool:
        spec = KNOWN_GATES.get(name)
        if spec is None:
            # Same contract as upstream: asking for an unregistered gate is a bug.
            raise KeyError(f"feature {name!r} is not registered in FeatureGate")
        for key, value in self.overrides:
            if key == name:
                return value
        return spec.default

    def as_dict(self) -> dict[str, bool]:
        """Every known gate with its effective value, sorted by name."""
        return {name: self.enabled(name) for name in sorted(KNOWN_GATES)}

    def __str__(self) -> str:
        """featuregate.go ``String``: sorted ``Name=bool`` pairs of the gates that were set."""
        return ",".join(f"{k}={_go_bool(v)}" for k, v in self.overrides)


def parse_feature_gates(text: str) -> FeatureGates:
    """Parse one or more ``--feature-gates`` values joined by commas."""
    return FeatureGates.from_map(parse_feature_gates_text(text))


def _go_bool(value: bool) -> str:
    return "true" if value else "false"
