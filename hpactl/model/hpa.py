"""Typed projection of an ``autoscaling/v2`` HorizontalPodAutoscaler.

``hpa_from_raw`` turns the JSON dict the API server returns into frozen dataclasses;
anything malformed raises :class:`InvalidHPA` here, so nothing downstream crashes on
a bad object. ``status_to_raw`` writes the status back exactly as upstream's Go
structs serialize (``omitempty`` rules, canonical quantity strings, RFC 3339 times),
and ``status_equal`` is the semantic comparison the controller uses to decide whether
a status write is needed (``apiequality.Semantic.DeepEqual``: quantities by value,
nil and empty lists alike).

Go types: ``k8s.io/api/autoscaling/v2/types.go``; defaults:
``pkg/apis/autoscaling/v2/defaults.go``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from hpactl.model.quantity import Quantity, parse_quantity
from hpactl.model.times import format_time, parse_time

__all__ = [
    "CR_KEY_PREFIX",
    "HPA",
    "V2_API_VERSION",
    "Behavior",
    "ContainerResourceMetricSource",
    "ContainerResourceMetricStatus",
    "CrossVersionObjectReference",
    "ExternalMetricSource",
    "ExternalMetricStatus",
    "HPACondition",
    "HPASpec",
    "HPAStatus",
    "InvalidHPA",
    "LabelSelectorRequirement",
    "LabelSelectorSpec",
    "MetricIdentifier",
    "MetricSpec",
    "MetricStatus",
    "MetricTarget",
    "MetricValueStatus",
    "ObjectMetricSource",
    "ObjectMetricStatus",
    "PodsMetricSource",
    "PodsMetricStatus",
    "ResourceMetricSource",
    "ResourceMetricStatus",
    "ScalingPolicy",
    "ScalingRules",
    "condition_to_raw",
    "hpa_from_raw",
    "hpa_key",
    "metric_status_to_raw",
    "split_key",
    "status_equal",
    "status_from_raw",
    "status_to_raw",
]

# Metric source types (Go autoscalingv2.MetricSourceType).
OBJECT = "Object"
PODS = "Pods"
RESOURCE = "Resource"
CONTAINER_RESOURCE = "ContainerResource"
EXTERNAL = "External"

# Target types (Go autoscalingv2.MetricTargetType).
UTILIZATION = "Utilization"
VALUE = "Value"
AVERAGE_VALUE = "AverageValue"

# Scaling policy types and select policies.
PODS_POLICY = "Pods"
PERCENT_POLICY = "Percent"
SELECT_MAX = "Max"
SELECT_MIN = "Min"
SELECT_DISABLED = "Disabled"


V2_API_VERSION = "autoscaling/v2"
#: The name part of an hpactl HorizontalPodAutoscaler's key (autoscaling.hpactl.dev)
#: starts with this: ``:`` is never part of an object name, so a built-in HPA and an
#: hpactl one of the same name have different keys, and the namespace stays first
#: (shards, the selector store and the metrics cache group HPAs by it).
CR_KEY_PREFIX = "hhpa:"


def hpa_key(namespace: str, name: str, api_version: str = V2_API_VERSION) -> str:
    """The controller's key of an HPA (see :data:`CR_KEY_PREFIX`)."""
    prefix = "" if api_version == V2_API_VERSION else CR_KEY_PREFIX
    return f"{namespace}/{prefix}{name}"


def split_key(key: str) -> tuple[str, str, bool]:
    """(namespace, object name, whether it is an hpactl HorizontalPodAutoscaler)."""
    ns, _, name = key.partition("/")
    if name.startswith(CR_KEY_PREFIX):
        return ns, name[len(CR_KEY_PREFIX) :], True
    return ns, name, False


class InvalidHPA(ValueError):
    """The raw object cannot be projected (a required field is missing or mistyped)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --------------------------------------------------------------------------- helpers


def _map(raw: object, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InvalidHPA(f"{where}: expected an object, got {type(raw).__name__}")
    return raw


def _opt_map(raw: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    v = raw.get(key)
    if v is None:
        return None
    return _map(v, f"{where}.{key}")


def _str(raw: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    v = raw.get(key)
    if v is None:
        if required:
            raise InvalidHPA(f"{where}.{key}: required")
        return ""
    if not isinstance(v, str):
        raise InvalidHPA(f"{where}.{key}: expected a string, got {type(v).__name__}")
    return v


def _opt_int(raw: Mapping[str, Any], key: str, where: str) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        # JSON numbers such as 3.0 are accepted by Go's decoder for int32 fields.
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise InvalidHPA(f"{where}.{key}: expected an integer, got {v!r}")
    return v


def _int(raw: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    v = _opt_int(raw, key, where)
    if v is None:
        if default is None:
            raise InvalidHPA(f"{where}.{key}: required")
        return default
    return v


def _opt_quantity(raw: Mapping[str, Any], key: str, where: str) -> Quantity | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        raise InvalidHPA(f"{where}.{key}: expected a quantity, got {v!r}")
    try:
        return parse_quantity(v)
    except ValueError as e:
        raise InvalidHPA(f"{where}.{key}: {e}") from None


def _list(raw: Mapping[str, Any], key: str, where: str) -> Sequence[Any] | None:
    v = raw.get(key)
    if v is None:
        return None
    if not isinstance(v, list | tuple):
        raise InvalidHPA(f"{where}.{key}: expected a list, got {type(v).__name__}")
    return v


def _opt_time(raw: Mapping[str, Any], key: str, where: str) -> datetime | None:
    v = raw.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise InvalidHPA(f"{where}.{key}: expected a time string, got {v!r}")
    try:
        return parse_time(v)
    except ValueError as e:
        raise InvalidHPA(f"{where}.{key}: {e}") from None


# ------------------------------------------------------------------ label selectors


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    """Go ``metav1.LabelSelectorRequirement``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelectorSpec:
    """Go ``metav1.LabelSelector`` as data (kept to echo it into status and names).

    ``match_labels`` is sorted by key: Go serializes maps with sorted keys, and
    equality must not depend on the order the JSON happened to use.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    def to_raw(self) -> dict[str, Any]:
        """JSON as Go writes it (empty fields omitted)."""
        out: dict[str, Any] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            exprs = []
            for r in self.match_expressions:
                e: dict[str, Any] = {"key": r.key, "operator": r.operator}
                if r.values:
                    e["values"] = list(r.values)
                exprs.append(e)
            out["matchExpressions"] = exprs
        return out

    def go_string(self) -> str:
        """The generated ``(*LabelSelector).String()`` that ``%+v`` prints in metric names."""
        exprs = "[]LabelSelectorRequirement{"
        for r in self.match_expressions:
            exprs += (
                f"LabelSelectorRequirement{{Key:{r.key},Operator:{r.operator},"
                f"Values:[{' '.join(r.values)}],}},"
            )
        exprs += "}"
        labels = "map[string]string{"
        for k, v in self.match_labels:
            labels += f"{k}: {v},"
        labels += "}"
        return f"&LabelSelector{{MatchLabels:{labels},MatchExpressions:{exprs},}}"


def _label_selector(raw: object, where: str) -> LabelSelectorSpec:
    m = _map(raw, where)
    labels_raw = m.get("matchLabels")
    labels: list[tuple[str, str]] = []
    if labels_raw is not None:
        lm = _map(labels_raw, f"{where}.matchLabels")
        for k, v in lm.items():
            if not isinstance(v, str):
                raise InvalidHPA(f"{where}.matchLabels.{k}: expected a string")
            labels.append((str(k), v))
    exprs: list[LabelSelectorRequirement] = []
    for i, e in enumerate(_list(m, "matchExpressions", where) or ()):
        ew = f"{where}.matchExpressions[{i}]"
        em = _map(e, ew)
        vals = _list(em, "values", ew) or ()
        if not all(isinstance(x, str) for x in vals):
            raise InvalidHPA(f"{ew}.values: expected strings")
        exprs.append(
            LabelSelectorRequirement(
                key=_str(em, "key", ew, required=True),
                operator=_str(em, "operator", ew, required=True),
                values=tuple(vals),
            )
        )
    return LabelSelectorSpec(tuple(sorted(labels)), tuple(exprs))


# ------------------------------------------------------------------------------ spec


@dataclass(frozen=True, slots=True)
class CrossVersionObjectReference:
    """Go ``autoscalingv2.CrossVersionObjectReference``."""

    kind: str
    name: str
    api_version: str = ""

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.api_version:
            out["apiVersion"] = self.api_version
        return out


@dataclass(frozen=True, slots=True)
class MetricIdentifier:
    """Go ``autoscalingv2.MetricIdentifier`` (name + optional label selector)."""

    name: str
    selector: LabelSelectorSpec | None = None

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.selector is not None:
            out["selector"] = self.selector.to_raw()
        return out

    def selector_go_string(self) -> str:
        """``%+v`` of the selector pointer: ``nil`` when unset."""
        return "nil" if self.selector is None else self.selector.go_string()


@dataclass(frozen=True, slots=True)
class MetricTarget:
    """Go ``autoscalingv2.MetricTarget``; quantities as milli-units (``MilliValue()``)."""

    type: str
    value_milli: int | None = None
    average_value_milli: int | None = None
    average_utilization: int | None = None


@dataclass(frozen=True, slots=True)
class ResourceMetricSource:
    name: str
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class ContainerResourceMetricSource:
    name: str
    container: str
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class PodsMetricSource:
    metric: MetricIdentifier
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class ObjectMetricSource:
    described_object: CrossVersionObjectReference
    metric: MetricIdentifier
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class ExternalMetricSource:
    metric: MetricIdentifier
    target: MetricTarget


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """Go ``autoscalingv2.MetricSpec``: ``type`` plus the matching source (others None).

    An unknown ``type`` is kept with no source: the core reports it as upstream does
    (``InvalidMetricSourceType``).
    """

    type: str
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    pods: PodsMetricSource | None = None
    object: ObjectMetricSource | None = None
    external: ExternalMetricSource | None = None


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """Go ``autoscalingv2.HPAScalingPolicy``."""

    type: str
    value: int
    period_seconds: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """Go ``autoscalingv2.HPAScalingRules`` after API defaulting.

    ``stabilization_window_seconds`` stays None for scaleDown when unset: the
    controller substitutes its downscale-stabilization flag
    (``maybeInitScaleDownStabilizationWindow``). ``tolerance`` is
    ``Quantity.AsApproximateFloat64()`` or None.
    """

    stabilization_window_seconds: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]
    tolerance: float | None = None


@dataclass(frozen=True, slots=True)
class Behavior:
    """Go ``autoscalingv2.HorizontalPodAutoscalerBehavior`` with both sides defaulted."""

    scale_up: ScalingRules
    scale_down: ScalingRules


@dataclass(frozen=True, slots=True)
class HPASpec:
    scale_target_ref: CrossVersionObjectReference
    min_replicas: int | None
    max_replicas: int
    metrics: tuple[MetricSpec, ...]
    behavior: Behavior | None = None


# ---------------------------------------------------------------------------- status


@dataclass(frozen=True, slots=True)
class MetricValueStatus:
    """Go ``autoscalingv2.MetricValueStatus``; quantities compare by value."""

    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.value is not None:
            out["value"] = str(self.value)
        if self.average_value is not None:
            out["averageValue"] = str(self.average_value)
        if self.average_utilization is not None:
            out["averageUtilization"] = self.average_utilization
        return out


@dataclass(frozen=True, slots=True)
class ResourceMetricStatus:
    name: str
    current: MetricValueStatus


@dataclass(frozen=True, slots=True)
class ContainerResourceMetricStatus:
    name: str
    current: MetricValueStatus
    container: str


@dataclass(frozen=True, slots=True)
class PodsMetricStatus:
    metric: MetricIdentifier
    current: MetricValueStatus


@dataclass(frozen=True, slots=True)
class ObjectMetricStatus:
    metric: MetricIdentifier
    current: MetricValueStatus
    described_object: CrossVersionObjectReference


@dataclass(frozen=True, slots=True)
class ExternalMetricStatus:
    metric: MetricIdentifier
    current: MetricValueStatus


@dataclass(frozen=True, slots=True)
class MetricStatus:
    """Go ``autoscalingv2.MetricStatus``; ``MetricStatus()`` (type "") is a failed slot."""

    type: str = ""
    object: ObjectMetricStatus | None = None
    pods: PodsMetricStatus | None = None
    resource: ResourceMetricStatus | None = None
    container_resource: ContainerResourceMetricStatus | None = None
    external: ExternalMetricStatus | None = None


@dataclass(frozen=True, slots=True)
class HPACondition:
    """Go ``autoscalingv2.HorizontalPodAutoscalerCondition``."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class HPAStatus:
    """Go ``autoscalingv2.HorizontalPodAutoscalerStatus``."""

    current_replicas: int = 0
    desired_replicas: int = 0
    current_metrics: tuple[MetricStatus, ...] = ()
    conditions: tuple[HPACondition, ...] = ()
    last_scale_time: datetime | None = None
    observed_generation: int | None = None

    def condition(self, type_: str) -> HPACondition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None


@dataclass(frozen=True, slots=True)
class HPA:
    """An autoscaling/v2 HPA: the metadata the controller needs, spec and status."""

    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str
    spec: HPASpec
    status: HPAStatus
    # Only the annotations hpactl's opt-in extensions read (see EXTENSION_ANNOTATION_PREFIXES):
    # keeping every annotation would cost memory at 10,000 HPAs for nothing.
    annotations: Mapping[str, str] = field(default_factory=dict)
    # Where the object lives: autoscaling/v2, or hpactl's own resource
    # (autoscaling.hpactl.dev/v1alpha1, projected through hpactl.model.crd.cr_to_v2).
    api_version: str = V2_API_VERSION

    @property
    def key(self) -> str:
        """The work-queue key: ``namespace/name``, ``namespace/hhpa:name`` for hpactl's own."""
        return hpa_key(self.namespace, self.name, self.api_version)

    @property
    def key_name(self) -> str:
        """The key's name part: the ``hpa_name`` of this HPA's metric series."""
        return self.key.partition("/")[2]

    @property
    def is_builtin(self) -> bool:
        return self.api_version == V2_API_VERSION


# --------------------------------------------------------------------------- parsing


def _target(raw: object, where: str) -> MetricTarget:
    m = _map(raw, where)
    vq = _opt_quantity(m, "value", where)
    avq = _opt_quantity(m, "averageValue", where)
    # The API server's validation (validateMetricTarget), for objects that bypassed it: a
    # target of zero or less would scale on an infinite or negative usage ratio.
    for key, q in (("value", vq), ("averageValue", avq)):
        if q is not None and q.sign() != 1:
            raise InvalidHPA(
                f"{where}.{key}: Invalid value: {json.dumps(m[key])}: must be positive"
            )
    util = _opt_int(m, "averageUtilization", where)
    if util is not None and util < 1:
        raise InvalidHPA(
            f"{where}.averageUtilization: Invalid value: {util}: must be greater than 0"
        )
    return MetricTarget(
        type=_str(m, "type", where),
        value_milli=None if vq is None else vq.milli_value(),
        average_value_milli=None if avq is None else avq.milli_value(),
        average_utilization=util,
    )


def _identifier(raw: object, where: str) -> MetricIdentifier:
    m = _map(raw, where)
    sel = m.get("selector")
    return MetricIdentifier(
        name=_str(m, "name", where, required=True),
        selector=None if sel is None else _label_selector(sel, f"{where}.selector"),
    )


def _object_ref(raw: object, where: str) -> CrossVersionObjectReference:
    m = _map(raw, where)
    return CrossVersionObjectReference(
        kind=_str(m, "kind", where, required=True),
        name=_str(m, "name", where, required=True),
        api_version=_str(m, "apiVersion", where),
    )


def _required_source(m: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    src = _opt_map(m, key, where)
    if src is None:
        raise InvalidHPA(f"{where}.{key}: required for type {m.get('type')!r}")
    return src


def _metric_spec(raw: object, where: str) -> MetricSpec:
    m = _map(raw, where)
    t = _str(m, "type", where, required=True)
    if t == RESOURCE:
        w = f"{where}.resource"
        s = _required_source(m, "resource", where)
        return MetricSpec(
            t,
            resource=ResourceMetricSource(
                _str(s, "name", w, required=True), _target(s.get("target"), f"{w}.target")
            ),
        )
    if t == CONTAINER_RESOURCE:
        w = f"{where}.containerResource"
        s = _required_source(m, "containerResource", where)
        return MetricSpec(
            t,
            container_resource=ContainerResourceMetricSource(
                _str(s, "name", w, required=True),
                _str(s, "container", w, required=True),
                _target(s.get("target"), f"{w}.target"),
            ),
        )
    if t == PODS:
        w = f"{where}.pods"
        s = _required_source(m, "pods", where)
        return MetricSpec(
            t,
            pods=PodsMetricSource(
                _identifier(s.get("metric"), f"{w}.metric"), _target(s.get("target"), f"{w}.target")
            ),
        )
    if t == OBJECT:
        w = f"{where}.object"
        s = _required_source(m, "object", where)
        return MetricSpec(
            t,
            object=ObjectMetricSource(
                _object_ref(s.get("describedObject"), f"{w}.describedObject"),
                _identifier(s.get("metric"), f"{w}.metric"),
                _target(s.get("target"), f"{w}.target"),
            ),
        )
    if t == EXTERNAL:
        w = f"{where}.external"
        s = _required_source(m, "external", where)
        return MetricSpec(
            t,
            external=ExternalMetricSource(
                _identifier(s.get("metric"), f"{w}.metric"), _target(s.get("target"), f"{w}.target")
            ),
        )
    return MetricSpec(t)


_DEFAULT_SCALE_UP_POLICIES = (
    ScalingPolicy(PODS_POLICY, 4, 15),
    ScalingPolicy(PERCENT_POLICY, 100, 15),
)
_DEFAULT_SCALE_DOWN_POLICIES = (ScalingPolicy(PERCENT_POLICY, 100, 15),)
MAX_PERIOD_SECONDS = 1800  # validation.go: MaxPeriodSeconds
MAX_STABILIZATION_WINDOW_SECONDS = 3600  # validation.go: MaxStabilizationWindowSeconds


def _scaling_rules(
    raw: object | None,
    where: str,
    default_window: int | None,
    default_policies: tuple[ScalingPolicy, ...],
) -> ScalingRules:
    """``GenerateHPAScaleUpRules`` / ``GenerateHPAScaleDownRules``: fill unset fields."""
    if raw is None:
        return ScalingRules(default_window, SELECT_MAX, default_policies)
    m = _map(raw, where)
    window = _opt_int(m, "stabilizationWindowSeconds", where)
    # The API server's ranges, for objects that bypassed it: past them the window and
    # period arithmetic overflows datetime (a traceback on every sync).
    if window is not None and not 0 <= window <= MAX_STABILIZATION_WINDOW_SECONDS:
        bound = (
            "must be greater than or equal to zero"
            if window < 0
            else f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"
        )
        raise InvalidHPA(f"{where}.stabilizationWindowSeconds: Invalid value: {window}: {bound}")
    select = m.get("selectPolicy")
    if select is not None and not isinstance(select, str):
        raise InvalidHPA(f"{where}.selectPolicy: expected a string")
    pol_raw = _list(m, "policies", where)
    policies: tuple[ScalingPolicy, ...]
    if pol_raw is None:
        policies = default_policies
    else:
        pl = []
        for i, p in enumerate(pol_raw):
            pw = f"{where}.policies[{i}]"
            pm = _map(p, pw)
            value, period = _int(pm, "value", pw), _int(pm, "periodSeconds", pw)
            if value <= 0:
                raise InvalidHPA(f"{pw}.value: Invalid value: {value}: must be greater than zero")
            if not 0 < period <= MAX_PERIOD_SECONDS:
                bound = (
                    "must be greater than zero"
                    if period <= 0
                    else f"must be less than or equal to {MAX_PERIOD_SECONDS}"
                )
                raise InvalidHPA(f"{pw}.periodSeconds: Invalid value: {period}: {bound}")
            pl.append(ScalingPolicy(_str(pm, "type", pw, required=True), value, period))
        policies = tuple(pl)
    tol = _opt_quantity(m, "tolerance", where)
    return ScalingRules(
        stabilization_window_seconds=default_window if window is None else window,
        select_policy=SELECT_MAX if select is None else select,
        policies=policies,
        tolerance=None if tol is None else tol.as_float(),
    )


def _behavior(raw: object | None, where: str) -> Behavior | None:
    if raw is None:
        return None
    m = _map(raw, where)
    return Behavior(
        scale_up=_scaling_rules(
            m.get("scaleUp"), f"{where}.scaleUp", 0, _DEFAULT_SCALE_UP_POLICIES
        ),
        scale_down=_scaling_rules(
            m.get("scaleDown"), f"{where}.scaleDown", None, _DEFAULT_SCALE_DOWN_POLICIES
        ),
    )


def _value_status(raw: object, where: str) -> MetricValueStatus:
    if raw is None:
        return MetricValueStatus()
    m = _map(raw, where)
    return MetricValueStatus(
        value=_opt_quantity(m, "value", where),
        average_value=_opt_quantity(m, "averageValue", where),
        average_utilization=_opt_int(m, "averageUtilization", where),
    )


def _metric_status(raw: object, where: str) -> MetricStatus:
    m = _map(raw, where)
    t = _str(m, "type", where)
    res = _opt_map(m, "resource", where)
    cres = _opt_map(m, "containerResource", where)
    pods = _opt_map(m, "pods", where)
    obj = _opt_map(m, "object", where)
    ext = _opt_map(m, "external", where)
    return MetricStatus(
        type=t,
        resource=None
        if res is None
        else ResourceMetricStatus(
            _str(res, "name", where), _value_status(res.get("current"), f"{where}.resource.current")
        ),
        container_resource=None
        if cres is None
        else ContainerResourceMetricStatus(
            _str(cres, "name", where),
            _value_status(cres.get("current"), f"{where}.containerResource.current"),
            _str(cres, "container", where),
        ),
        pods=None
        if pods is None
        else PodsMetricStatus(
            _identifier(pods.get("metric"), f"{where}.pods.metric"),
            _value_status(pods.get("current"), f"{where}.pods.current"),
        ),
        object=None
        if obj is None
        else ObjectMetricStatus(
            _identifier(obj.get("metric"), f"{where}.object.metric"),
            _value_status(obj.get("current"), f"{where}.object.current"),
            _object_ref(obj.get("describedObject") or {"kind": "", "name": ""}, f"{where}.object"),
        ),
        external=None
        if ext is None
        else ExternalMetricStatus(
            _identifier(ext.get("metric"), f"{where}.external.metric"),
            _value_status(ext.get("current"), f"{where}.external.current"),
        ),
    )


def _condition(raw: object, where: str) -> HPACondition:
    m = _map(raw, where)
    return HPACondition(
        type=_str(m, "type", where),
        status=_str(m, "status", where),
        reason=_str(m, "reason", where),
        message=_str(m, "message", where),
        last_transition_time=_opt_time(m, "lastTransitionTime", where),
    )


def status_from_raw(raw: Mapping[str, Any] | None) -> HPAStatus:
    """Project ``status`` (absent → the zero status). Raises :class:`InvalidHPA`."""
    if raw is None:
        return HPAStatus()
    w = "status"
    m = _map(raw, w)
    metrics = tuple(
        _metric_status(x, f"{w}.currentMetrics[{i}]")
        for i, x in enumerate(_list(m, "currentMetrics", w) or ())
    )
    conds = tuple(
        _condition(x, f"{w}.conditions[{i}]") for i, x in enumerate(_list(m, "conditions", w) or ())
    )
    return HPAStatus(
        current_replicas=_int(m, "currentReplicas", w, 0),
        desired_replicas=_int(m, "desiredReplicas", w, 0),
        current_metrics=metrics,
        conditions=conds,
        last_scale_time=_opt_time(m, "lastScaleTime", w),
        observed_generation=_opt_int(m, "observedGeneration", w),
    )


#: v2 defaulting (``SetDefaults_HorizontalPodAutoscaler``): no metrics → cpu at 80%.
_DEFAULT_METRICS = (
    MetricSpec(
        RESOURCE,
        resource=ResourceMetricSource("cpu", MetricTarget(UTILIZATION, average_utilization=80)),
    ),
)


#: Annotation prefixes projected into :attr:`HPA.annotations` (opt-in extensions; the
#: upstream proposals' own annotation names are added here as features adopt them).
EXTENSION_ANNOTATION_PREFIXES: tuple[str, ...] = (
    "hpactl.dev/",
    "autoscaling.kubernetes.io/suspend",  # KEP-3428
)


def _extension_annotations(meta: Mapping[str, Any]) -> Mapping[str, str]:
    raw = meta.get("annotations")
    if not isinstance(raw, Mapping) or not raw:
        return _NO_ANNOTATIONS
    kept = {
        str(k): str(v)
        for k, v in raw.items()
        if isinstance(k, str) and k.startswith(EXTENSION_ANNOTATION_PREFIXES)
    }
    return kept or _NO_ANNOTATIONS


_NO_ANNOTATIONS: Mapping[str, str] = MappingProxyType({})


def hpa_from_raw(raw: Mapping[str, Any]) -> HPA:
    """Project a raw ``autoscaling/v2`` HPA (as served by the API, i.e. defaulted).

    API defaulting is re-applied where the controller depends on it (behavior rules,
    the default cpu metric) so objects from sources that skip defaulting behave the
    same; defaulting is idempotent. Raises :class:`InvalidHPA` on malformed input.
    """
    top = _map(raw, "object")
    meta = _map(top.get("metadata") or {}, "metadata")
    spec = _map(top.get("spec"), "spec")
    metrics_raw = _list(spec, "metrics", "spec")
    metrics = tuple(_metric_spec(x, f"spec.metrics[{i}]") for i, x in enumerate(metrics_raw or ()))
    min_replicas = _opt_int(spec, "minReplicas", "spec")
    max_replicas = _int(spec, "maxReplicas", "spec")
    # What the API server's validation rejects and the controller cannot honour: replica
    # bounds outside int32 (Go's decoder fails on them) and min > max (the target would
    # flap between the two bounds, one each sync).
    for key, v in (("minReplicas", min_replicas), ("maxReplicas", max_replicas)):
        if v is not None and not -(2**31) <= v < 2**31:
            raise InvalidHPA(f"spec.{key}: Invalid value: {v}: out of range for int32")
    if min_replicas is not None and max_replicas < min_replicas:
        raise InvalidHPA(
            f"spec.maxReplicas: Invalid value: {max_replicas}: "
            "must be greater than or equal to `minReplicas`"
        )
    return HPA(
        namespace=_str(meta, "namespace", "metadata"),
        name=_str(meta, "name", "metadata", required=True),
        uid=_str(meta, "uid", "metadata"),
        generation=_int(meta, "generation", "metadata", 0),
        resource_version=_str(meta, "resourceVersion", "metadata"),
        spec=HPASpec(
            scale_target_ref=_object_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef"),
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            metrics=metrics or _DEFAULT_METRICS,
            behavior=_behavior(spec.get("behavior"), "spec.behavior"),
        ),
        status=status_from_raw(top.get("status")),
        annotations=_extension_annotations(meta),
    )


# ------------------------------------------------------------------------ serializing


def metric_status_to_raw(ms: MetricStatus) -> dict[str, Any]:
    """One ``currentMetrics`` entry in Go field order (type, object, pods, resource, ...)."""
    out: dict[str, Any] = {"type": ms.type}
    if ms.object is not None:
        out["object"] = {
            "metric": ms.object.metric.to_raw(),
            "current": ms.object.current.to_raw(),
            "describedObject": ms.object.described_object.to_raw(),
        }
    if ms.pods is not None:
        out["pods"] = {"metric": ms.pods.metric.to_raw(), "current": ms.pods.current.to_raw()}
    if ms.resource is not None:
        out["resource"] = {"name": ms.resource.name, "current": ms.resource.current.to_raw()}
    if ms.container_resource is not None:
        out["containerResource"] = {
            "name": ms.container_resource.name,
            "current": ms.container_resource.current.to_raw(),
            "container": ms.container_resource.container,
        }
    if ms.external is not None:
        out["external"] = {
            "metric": ms.external.metric.to_raw(),
            "current": ms.external.current.to_raw(),
        }
    return out


def condition_to_raw(c: HPACondition) -> dict[str, Any]:
    """A condition as Go writes it (a zero ``lastTransitionTime`` marshals as null)."""
    out: dict[str, Any] = {
        "type": c.type,
        "status": c.status,
        "lastTransitionTime": None
        if c.last_transition_time is None
        else format_time(c.last_transition_time),
    }
    if c.reason:
        out["reason"] = c.reason
    if c.message:
        out["message"] = c.message
    return out


def status_to_raw(status: HPAStatus) -> dict[str, Any]:
    """The ``status`` JSON upstream writes (Go field order and ``omitempty`` rules)."""
    out: dict[str, Any] = {}
    if status.observed_generation is not None:
        out["observedGeneration"] = status.observed_generation
    if status.last_scale_time is not None:
        out["lastScaleTime"] = format_time(status.last_scale_time)
    if status.current_replicas:
        out["currentReplicas"] = status.current_replicas
    out["desiredReplicas"] = status.desired_replicas
    if status.current_metrics:
        out["currentMetrics"] = [metric_status_to_raw(m) for m in status.current_metrics]
    if status.conditions:
        out["conditions"] = [condition_to_raw(c) for c in status.conditions]
    return out


def status_equal(a: HPAStatus, b: HPAStatus) -> bool:
    """``apiequality.Semantic.DeepEqual`` on two statuses.

    Quantities compare by value (``Quantity.__eq__``), nil and empty lists are equal
    (both are ``()`` here), times compare as instants. Dataclass equality gives
    exactly that.
    """
    return a == b
