"""Per-HPA memory of the controller: recommendations and scale events (immutable).

Upstream keeps three maps keyed by ``namespace/name`` in ``HorizontalController``
(``recommendations``, ``scaleUpEvents``, ``scaleDownEvents``) and drops them when the
HPA is deleted. Here one :class:`History` value holds all three; every update is a
pure function returning a new value, and the controller stores whatever ``finalize``
returns.

Time comparisons follow hpa-behavior.md §16: upstream reads the wall clock each time,
so an entry recorded at an instant *t* is strictly older than any cutoff computed
later. A virtual clock reconciling at exact multiples of the period must decide ties
the way a real, slightly later reconcile would: an entry exactly at a cutoff is
*outside* the window (``in_window`` is strict, ``is_old`` includes equality).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

__all__ = [
    "FailingMetric",
    "History",
    "Recommendation",
    "ScaleEvent",
    "get_replicas_change_per_period",
    "in_window",
    "is_old",
    "mark_scale_events_outdated",
    "record_initial_recommendation",
    "record_recommendation",
    "store_scale_event",
]


@dataclass(frozen=True, slots=True)
class Recommendation:
    """Go ``timestampedRecommendation``."""

    recommendation: int
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class ScaleEvent:
    """Go ``timestampedScaleEvent``: ``replica_change`` is the size of the change (> 0)."""

    replica_change: int
    timestamp: datetime
    outdated: bool = False


@dataclass(frozen=True, slots=True)
class FailingMetric:
    """A metric with a fallback (HPAExternalMetricFallback) failing since ``since``.

    ``metric`` names it as ``<index>/<label>`` (a spec edit that moves or changes the
    metric starts afresh); ``active``: its fallback replica count is in use.
    """

    metric: str
    since: datetime
    active: bool = False


@dataclass(frozen=True, slots=True)
class History:
    """Everything upstream remembers about one HPA between reconciles.

    ``History()`` is the state of an HPA never seen (or just forgotten): upstream's
    ``recommendations[key] == nil``.
    """

    recommendations: tuple[Recommendation, ...] = ()
    scale_up_events: tuple[ScaleEvent, ...] = ()
    scale_down_events: tuple[ScaleEvent, ...] = ()
    # hpactl's metric fallback (only for HPAs that opted in): the failing metrics.
    failing_metrics: tuple[FailingMetric, ...] = ()


def in_window(ts: datetime, cutoff: datetime) -> bool:
    """Go ``ts.After(cutoff)`` as a real, slightly later clock would see it (strict)."""
    return ts > cutoff


def is_old(ts: datetime, cutoff: datetime) -> bool:
    """Go ``ts.Before(cutoff)`` as a real, slightly later clock would see it (ties old)."""
    return ts <= cutoff


def record_initial_recommendation(
    history: History, current_replicas: int, now: datetime
) -> History:
    """``horizontal.go: recordInitialRecommendation`` — seed ``(current, now)`` once."""
    if history.recommendations:
        return history
    return replace(history, recommendations=(Recommendation(current_replicas, now),))


def record_recommendation(
    history: History, recommendation: int, now: datetime, old_index: int | None
) -> History:
    """Store an unstabilized recommendation: overwrite the old entry found, else append.

    The tail of ``stabilizeRecommendation`` / ``stabilizeRecommendationWithBehaviors``.
    """
    entry = Recommendation(recommendation, now)
    recs = list(history.recommendations)
    if old_index is not None:
        recs[old_index] = entry
    else:
        recs.append(entry)
    return replace(history, recommendations=tuple(recs))


def get_replicas_change_per_period(
    period_seconds: int, events: tuple[ScaleEvent, ...], now: datetime
) -> int:
    """``horizontal.go: getReplicasChangePerPeriod`` — sum of changes inside the period."""
    cutoff = now - timedelta(seconds=period_seconds)
    return sum(e.replica_change for e in events if in_window(e.timestamp, cutoff))


def mark_scale_events_outdated(
    events: tuple[ScaleEvent, ...], longest_policy_period: int, now: datetime
) -> tuple[ScaleEvent, ...]:
    """``horizontal.go: markScaleEventsOutdated`` — flag events older than the longest period."""
    cutoff = now - timedelta(seconds=longest_policy_period)
    return tuple(
        replace(e, outdated=True) if is_old(e.timestamp, cutoff) and not e.outdated else e
        for e in events
    )


def _store(
    events: tuple[ScaleEvent, ...], longest: int, change: int, now: datetime
) -> tuple[ScaleEvent, ...]:
    marked = list(mark_scale_events_outdated(events, longest, now))
    old_index: int | None = None
    for i, e in enumerate(marked):
        if e.outdated:
            old_index = i  # upstream reuses the *last* outdated slot
    new = ScaleEvent(change, now, False)
    if old_index is not None:
        marked[old_index] = new
    else:
        marked.append(new)
    return tuple(marked)


def store_scale_event(
    history: History,
    prev_replicas: int,
    new_replicas: int,
    longest_up_period: int,
    longest_down_period: int,
    now: datetime,
) -> History:
    """``horizontal.go: storeScaleEvent`` (the caller skips HPAs without behavior)."""
    if new_replicas > prev_replicas:
        return replace(
            history,
            scale_up_events=_store(
                history.scale_up_events, longest_up_period, new_replicas - prev_replicas, now
            ),
        )
    return replace(
        history,
        scale_down_events=_store(
            history.scale_down_events, longest_down_period, prev_replicas - new_replicas, now
        ),
    )
