"""Fallback replicas for a metric that keeps failing (KEP-5679, extended to every type).

KEP-5679 (gate ``HPAExternalMetricFallback``) adds ``fallback: {failureDuration,
replicas}`` to an External metric: once the metric has failed continuously for
``failureDuration`` (default 3m, measured from the first failure of the streak), the
controller takes ``replicas`` as that metric's proposal, combined with the others
by the usual max. A success ends the streak. The API server would drop the new
field, so hpactl reads the same two fields from the annotation
``hpactl.dev/metric-fallback``, for any metric type::

    {"external:queue_depth": {"replicas": 10, "failureDuration": "3m"}, "0": {"replicas": 4}}

A key is a metric's index in ``spec.metrics`` or its label as ``hpactl explain``
shows it (``cpu``, ``memory(app)``, ``pods:rps``, ``object:hits``,
``external:queue``). Everything else is refused with one line (:func:`fallback_problem`,
reported as every malformed annotation is: ``AnnotationsValid=False`` with reason
``InvalidMetricFallback`` and a Warning event, see
:mod:`hpactl.core.extension_conditions`), and the HPA is then synced as if the
annotation were absent.

Pure: the controller's per-HPA :class:`~hpactl.core.history.History` carries the
failure streaks (``failing_metrics``); ``now`` is passed in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from hpactl.core import conditions as C
from hpactl.core.history import FailingMetric, History
from hpactl.core.metrics_eval import NORMAL, Cond, Event, MetricOutcome
from hpactl.model.hpa import (
    CONTAINER_RESOURCE,
    EXTERNAL,
    HPA,
    OBJECT,
    PODS,
    RESOURCE,
    HPACondition,
    MetricSpec,
)
from hpactl.model.times import format_go_duration, format_time, parse_go_duration

__all__ = [
    "ANNOTATION",
    "CONDITION",
    "DEFAULT_FAILURE_DURATION",
    "EVENT_ACTIVATED",
    "EVENT_DEACTIVATED",
    "INVALID_METRIC_FALLBACK",
    "Fallback",
    "FallbackConfig",
    "Settled",
    "Setup",
    "fallback_problem",
    "metric_label",
    "parse_fallback",
    "settle",
    "setup",
    "substitute",
]

ANNOTATION = "hpactl.dev/metric-fallback"
#: KEP-5679's condition type (here for every metric type, not only External).
CONDITION = "ExternalMetricFallbackActive"
#: KEP-5679's default ``failureDuration``.
DEFAULT_FAILURE_DURATION = timedelta(minutes=3)
#: Longest ``failureDuration`` accepted (keeps ``since + duration`` far from overflow).
MAX_FAILURE_DURATION = timedelta(hours=24)
_MAX_INT32 = 2**31 - 1

#: Events: KEP-5679 names the activation event; the deactivation one is hpactl's.
EVENT_ACTIVATED = "ExternalMetricFallbackActivated"
EVENT_DEACTIVATED = "ExternalMetricFallbackDeactivated"
#: Reason of the Warning event and of ``AnnotationsValid=False`` for a malformed value.
INVALID_METRIC_FALLBACK = "InvalidMetricFallback"

#: Condition reasons.
REASON_ACTIVE = "FallbackActive"
REASON_PENDING = "FallbackPending"
REASON_NONE_FAILING = "NoMetricFailing"

# Failures that are not a failure to retrieve the metric: the spec itself is wrong.
_SPEC_FAILURES = frozenset({"InvalidMetricSourceType"})


@dataclass(frozen=True, slots=True)
class Fallback:
    """KEP-5679's ``ExternalMetricFallback`` for the metric at ``index``."""

    index: int
    label: str
    replicas: int
    failure_duration: timedelta = DEFAULT_FAILURE_DURATION

    @property
    def key(self) -> str:
        """The metric's name in :attr:`History.failing_metrics`."""
        return f"{self.index}/{self.label}"


@dataclass(frozen=True, slots=True)
class FallbackConfig:
    """A valid annotation: the fallbacks, by metric index."""

    fallbacks: tuple[Fallback, ...]

    def get(self, index: int) -> Fallback | None:
        for f in self.fallbacks:
            if f.index == index:
                return f
        return None


def metric_label(spec: MetricSpec) -> str:
    """The metric's short label (as ``hpactl explain`` shows it)."""
    if spec.type == RESOURCE and spec.resource is not None:
        return spec.resource.name
    if spec.type == CONTAINER_RESOURCE and spec.container_resource is not None:
        return f"{spec.container_resource.name}({spec.container_resource.container})"
    if spec.type == PODS and spec.pods is not None:
        return f"pods:{spec.pods.metric.name}"
    if spec.type == OBJECT and spec.object is not None:
        return f"object:{spec.object.metric.name}"
    if spec.type == EXTERNAL and spec.external is not None:
        return f"external:{spec.external.metric.name}"
    return spec.type or "?"


def _describe(spec: MetricSpec) -> str:
    """The metric in event and condition texts (KEP: ``external metric 'queue_depth'``)."""
    if spec.type == RESOURCE and spec.resource is not None:
        return f"resource metric '{spec.resource.name}'"
    if spec.type == CONTAINER_RESOURCE and spec.container_resource is not None:
        cr = spec.container_resource
        return f"container resource metric '{cr.name}' of container '{cr.container}'"
    if spec.type == PODS and spec.pods is not None:
        return f"pods metric '{spec.pods.metric.name}'"
    if spec.type == OBJECT and spec.object is not None:
        return f"object metric '{spec.object.metric.name}'"
    if spec.type == EXTERNAL and spec.external is not None:
        return f"external metric '{spec.external.metric.name}'"
    return f"metric {metric_label(spec)}"


# ------------------------------------------------------------------------------ parsing


class _Duplicate(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(f"key {json.dumps(k)} given twice")
        out[k] = v
    return out


def _resolve(key: str, metrics: Sequence[MetricSpec]) -> int:
    if key.isdigit() and key.isascii():
        i = int(key)
        if i >= len(metrics):
            raise ValueError(
                f"{json.dumps(key)}: no metric at index {i} (spec.metrics has {len(metrics)})"
            )
        return i
    found = [i for i, m in enumerate(metrics) if metric_label(m) == key]
    if not found:
        labels = ", ".join(metric_label(m) for m in metrics)
        raise ValueError(f"{json.dumps(key)}: no such metric in spec.metrics (metrics: {labels})")
    if len(found) > 1:
        raise ValueError(
            f"{json.dumps(key)}: names metrics {', '.join(map(str, found))}: use the index"
        )
    return found[0]


def _entry(key: str, index: int, label: str, raw: Any) -> Fallback:
    where = json.dumps(key)
    if not isinstance(raw, dict):
        raise ValueError(f'{where}: expected an object like {{"replicas": 10}}')
    unknown = sorted(set(raw) - {"replicas", "failureDuration"})
    if unknown:
        raise ValueError(
            f"{where}: unknown field {json.dumps(unknown[0])} (expected replicas, failureDuration)"
        )
    if "replicas" not in raw:
        raise ValueError(f"{where}.replicas: required")
    replicas = raw["replicas"]
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise ValueError(f"{where}.replicas: must be an integer, got {json.dumps(replicas)}")
    if not 1 <= replicas <= _MAX_INT32:
        raise ValueError(f"{where}.replicas: must be between 1 and {_MAX_INT32}, got {replicas}")
    duration = DEFAULT_FAILURE_DURATION
    if "failureDuration" in raw:
        text = raw["failureDuration"]
        if not isinstance(text, str):
            raise ValueError(
                f'{where}.failureDuration: must be a duration string like "3m", '
                f"got {json.dumps(text)}"
            )
        try:
            duration = parse_go_duration(text)
        except ValueError as e:
            raise ValueError(f"{where}.failureDuration: {e}") from None
        if not timedelta(0) < duration <= MAX_FAILURE_DURATION:
            raise ValueError(
                f"{where}.failureDuration: must be more than 0s and at most "
                f"{format_go_duration(MAX_FAILURE_DURATION)}, got {json.dumps(text)}"
            )
    return Fallback(index, label, replicas, duration)


def parse_fallback(value: str, metrics: Sequence[MetricSpec]) -> FallbackConfig:
    """The annotation's value against the HPA's metrics; ValueError with one line."""
    try:
        raw = json.loads(value, object_pairs_hook=_no_duplicates)
    except _Duplicate as e:
        raise ValueError(str(e)) from None
    except RecursionError:
        raise ValueError("not JSON: nested too deeply") from None
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ValueError(
            'expected a JSON object of metric -> {"replicas": N, "failureDuration": "3m"}'
        )
    if not raw:
        raise ValueError("names no metric")
    fallbacks: list[Fallback] = []
    seen: dict[int, str] = {}
    for key, entry in raw.items():
        index = _resolve(key, metrics)
        if index in seen:
            raise ValueError(
                f"{json.dumps(key)} and {json.dumps(seen[index])} name the same metric"
            )
        seen[index] = key
        fallbacks.append(_entry(key, index, metric_label(metrics[index]), entry))
    return FallbackConfig(tuple(sorted(fallbacks, key=lambda f: f.index)))


# ---------------------------------------------------------------------------- decisions


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class Setup:
    """What :func:`setup` decided: the fallbacks to apply (None: none), and the
    history, conditions and events the sync continues with."""

    config: FallbackConfig | None
    history: History
    conditions: tuple[HPACondition, ...]
    events: tuple[Event, ...]


def _condition(conds: tuple[HPACondition, ...]) -> HPACondition | None:
    for c in conds:
        if c.type == CONDITION:
            return c
    return None


def _read(hpa: HPA) -> tuple[FallbackConfig | None, str]:
    """The annotation's fallbacks (None: unset or malformed) and, when malformed, why."""
    value = hpa.annotations.get(ANNOTATION)
    if value is None:
        return None, ""
    try:
        return parse_fallback(value, hpa.spec.metrics), ""
    except ValueError as e:
        return None, _one_line(f"annotation {ANNOTATION}: {e}; no metric falls back")


def fallback_problem(hpa: HPA, enabled: bool) -> str:
    """The one-line message for a malformed annotation ("" when valid, unset or gated off)."""
    return _read(hpa)[1] if enabled else ""


def setup(
    hpa: HPA,
    enabled: bool,
    history: History,
    conds: tuple[HPACondition, ...],
    now: datetime,
) -> Setup:
    """Read the annotation when the metrics are about to be evaluated.

    Gate off: nothing at all changes. Annotation absent or malformed: the HPA is
    upstream's (the streaks and the condition left from an earlier setting are
    dropped; a malformed value is reported by :func:`fallback_problem`'s caller).
    """
    if not enabled:
        return Setup(None, history, conds, ())
    config, _ = _read(hpa)
    if config is not None:
        # Streaks of metrics that no longer have a fallback (or moved) are dropped.
        keys = {f.key for f in config.fallbacks}
        kept = tuple(m for m in history.failing_metrics if m.metric in keys)
        if kept != history.failing_metrics:
            history = replace(history, failing_metrics=kept)
        return Setup(config, history, conds, ())
    events = [
        Event(
            NORMAL,
            EVENT_DEACTIVATED,
            f"Fallback deactivated for metric {m.metric.partition('/')[2]}: "
            "the fallback configuration was removed",
        )
        for m in history.failing_metrics
        if m.active
    ]
    if history.failing_metrics:
        history = replace(history, failing_metrics=())
    if _condition(conds) is not None:
        conds = C.remove_condition(conds, CONDITION)
    return Setup(None, history, conds, tuple(events))


def _failed(o: MetricOutcome) -> bool:
    """The metric could not be computed for want of data (not because its spec is
    wrong). A substituted outcome keeps its error, so it still counts as failed."""
    return o.error is not None and o.failure_reason not in _SPEC_FAILURES


def _streak(history: History, key: str) -> FailingMetric | None:
    for m in history.failing_metrics:
        if m.metric == key:
            return m
    return None


def _due(f: Fallback, since: datetime, now: datetime) -> bool:
    """KEP: active once ``now - firstFailureTime >= failureDuration``."""
    return now - since >= f.failure_duration


def substitute(
    config: FallbackConfig, history: History, hpa: HPA, now: datetime
) -> Callable[[MetricOutcome], MetricOutcome]:
    """For ``compute_replicas_for_metrics``: a failed metric whose streak has lasted
    ``failureDuration`` proposes its fallback replicas (its error and Warning event
    stay: the metric still fails)."""

    def apply(o: MetricOutcome) -> MetricOutcome:
        f = config.get(o.index)
        if f is None or o.replicas is not None or not _failed(o):
            return o
        streak = _streak(history, f.key)
        since = streak.since if streak is not None else now
        if not _due(f, since, now):
            return o
        return replace(
            o, replicas=f.replicas, name=f"{_describe(hpa.spec.metrics[o.index])} (fallback)"
        )

    return apply


@dataclass(frozen=True, slots=True)
class Settled:
    history: History
    conditions: tuple[HPACondition, ...]
    events: tuple[Event, ...]


def settle(
    config: FallbackConfig,
    hpa: HPA,
    history: History,
    outcomes: Sequence[MetricOutcome],
    conds: tuple[HPACondition, ...],
    now: datetime,
) -> Settled:
    """After the metrics were evaluated: update the streaks, emit the activation and
    deactivation events, set ``ExternalMetricFallbackActive``."""
    by_index: Mapping[int, MetricOutcome] = {o.index: o for o in outcomes}
    failing: list[FailingMetric] = []
    events: list[Event] = []
    active_texts: list[str] = []
    pending_texts: list[str] = []
    for f in config.fallbacks:
        o = by_index.get(f.index)
        streak = _streak(history, f.key)
        spec = hpa.spec.metrics[f.index]
        what = _describe(spec)
        if o is None or not _failed(o):
            if streak is not None and streak.active:
                events.append(
                    Event(
                        NORMAL,
                        EVENT_DEACTIVATED,
                        f"Fallback deactivated for {what}: the metric was retrieved again "
                        f"after {format_go_duration(now - streak.since)} of failures",
                    )
                )
            continue
        since = streak.since if streak is not None else now
        active = _due(f, since, now)
        if active and (streak is None or not streak.active):
            events.append(
                Event(
                    NORMAL,
                    EVENT_ACTIVATED,
                    f"Fallback activated for {what} after {format_go_duration(now - since)} "
                    f"of consecutive failures, using fallback replica count: {f.replicas}",
                )
            )
        failing.append(FailingMetric(f.key, since, active))
        if active:
            active_texts.append(
                f"{what} uses its fallback replica count {f.replicas} "
                f"(failing since {format_time(since)})"
            )
        else:
            pending_texts.append(
                f"{what} failing since {format_time(since)}; fallback after "
                f"{format_go_duration(f.failure_duration)}"
            )
    if tuple(failing) != history.failing_metrics:
        history = replace(history, failing_metrics=tuple(failing))
    if active_texts:
        cond = Cond(CONDITION, C.TRUE, REASON_ACTIVE, "; ".join(active_texts + pending_texts))
    elif pending_texts:
        cond = Cond(CONDITION, C.FALSE, REASON_PENDING, "; ".join(pending_texts))
    else:
        cond = Cond(CONDITION, C.FALSE, REASON_NONE_FAILING, "no metric with a fallback is failing")
    conds = C.set_condition_in_list(conds, cond.type, cond.status, cond.reason, cond.message, now)
    return Settled(history, conds, tuple(events))
