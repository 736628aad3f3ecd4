"""Normalization of a metric proposal: stabilization, rate limits, min/max clamping.

Mirrors ``pkg/controller/podautoscaler/horizontal.go`` function by function: the
legacy path (``normalizeDesiredReplicas``, ``stabilizeRecommendation``,
``convertDesiredReplicasWithRules``, ``calculateScaleUpLimit``) for HPAs without
``spec.behavior``, and the behavior path (``normalizeDesiredReplicasWithBehaviors``,
``stabilizeRecommendationWithBehaviors``, ``convertDesiredReplicasWithBehaviorRate``,
``calculateScaleUpLimitWithScalingRules``, ``calculateScaleDownLimitWithBehaviors``).

Upstream mutates controller maps and sets conditions as it goes; here each function
returns its result plus the new :class:`History`, and the caller applies conditions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from hpactl.core import conditions as C
from hpactl.core.history import (
    History,
    get_replicas_change_per_period,
    in_window,
    is_old,
    record_recommendation,
)
from hpactl.model.hpa import (
    PERCENT_POLICY,
    PODS_POLICY,
    SELECT_DISABLED,
    SELECT_MIN,
    ScalingRules,
)

__all__ = [
    "Normalized",
    "calculate_scale_down_limit_with_behaviors",
    "calculate_scale_up_limit",
    "calculate_scale_up_limit_with_scaling_rules",
    "convert_desired_replicas_with_behavior_rate",
    "convert_desired_replicas_with_rules",
    "get_longest_policy_period",
    "normalize_desired_replicas",
    "normalize_desired_replicas_with_behaviors",
    "stabilize_recommendation",
    "stabilize_recommendation_with_behaviors",
]

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0

DESIRED_WITHIN_RANGE = "DesiredWithinRange"
TOO_MANY_REPLICAS = "TooManyReplicas"
TOO_FEW_REPLICAS = "TooFewReplicas"
SCALE_UP_LIMIT = "ScaleUpLimit"
SCALE_DOWN_LIMIT = "ScaleDownLimit"
READY_FOR_NEW_SCALE = "ReadyForNewScale"
SCALE_UP_STABILIZED = "ScaleUpStabilized"
SCALE_DOWN_STABILIZED = "ScaleDownStabilized"


@dataclass(frozen=True, slots=True)
class Normalized:
    """Outcome of one normalization.

    ``able_reason``/``able_message``: the ``AbleToScale=True`` condition it sets;
    ``limit_reason``/``limit_message``: the ``ScalingLimited`` condition (status True iff
    ``desired != stabilized``); ``limit_bound``: the bound that was compared with.
    """

    desired: int
    stabilized: int
    able_reason: str
    able_message: str
    limit_reason: str
    limit_message: str
    history: History

    @property
    def limited(self) -> bool:
        return self.desired != self.stabilized


# ----------------------------------------------------------------------- legacy path


def stabilize_recommendation(
    history: History, prenormalized: int, window: timedelta, now: datetime
) -> tuple[int, History]:
    """``horizontal.go: stabilizeRecommendation``.

    Max of the proposal and every entry not older than ``now - window``; the proposal
    is then recorded, overwriting the last old entry found.
    """
    max_rec = prenormalized
    old_index: int | None = None
    cutoff = now - window
    for i, rec in enumerate(history.recommendations):
        if is_old(rec.timestamp, cutoff):
            old_index = i
        elif rec.recommendation > max_rec:
            max_rec = rec.recommendation
    return max_rec, record_recommendation(history, prenormalized, now, old_index)


def calculate_scale_up_limit(current_replicas: int) -> int:
    """``horizontal.go: calculateScaleUpLimit`` — ``int32(max(2*current, 4))``, saturated
    at MaxInt32 where Go's conversion overflows to MinInt32 (a negative limit would
    become a negative scale write for a target at more than 2^30 replicas)."""
    return _sat32(max(SCALE_UP_LIMIT_FACTOR * float(current_replicas), SCALE_UP_LIMIT_MINIMUM))


def convert_desired_replicas_with_rules(
    current_replicas: int, desired_replicas: int, hpa_min_replicas: int, hpa_max_replicas: int
) -> tuple[int, str, str]:
    """``horizontal.go: convertDesiredReplicasWithRules`` → (replicas, reason, message)."""
    minimum_allowed = hpa_min_replicas
    scale_up_limit = calculate_scale_up_limit(current_replicas)
    if hpa_max_replicas > scale_up_limit:
        maximum_allowed = scale_up_limit
        reason, message = SCALE_UP_LIMIT, C.MSG_SCALE_UP_LIMIT
    else:
        maximum_allowed = hpa_max_replicas
        reason, message = TOO_MANY_REPLICAS, C.MSG_TOO_MANY_REPLICAS
    if desired_replicas < minimum_allowed:
        return minimum_allowed, TOO_FEW_REPLICAS, C.MSG_TOO_FEW_REPLICAS
    if desired_replicas > maximum_allowed:
        return maximum_allowed, reason, message
    return desired_replicas, DESIRED_WITHIN_RANGE, C.MSG_DESIRED_WITHIN_RANGE


def normalize_desired_replicas(
    history: History,
    current_replicas: int,
    prenormalized: int,
    min_replicas: int,
    max_replicas: int,
    downscale_stabilization: timedelta,
    now: datetime,
) -> Normalized:
    """``horizontal.go: normalizeDesiredReplicas`` (HPAs without ``spec.behavior``)."""
    stabilized, history = stabilize_recommendation(
        history, prenormalized, downscale_stabilization, now
    )
    if stabilized != prenormalized:
        able = (SCALE_DOWN_STABILIZED, C.MSG_SCALE_DOWN_STABILIZED)
    else:
        able = (READY_FOR_NEW_SCALE, C.MSG_READY_FOR_NEW_SCALE)
    desired, reason, message = convert_desired_replicas_with_rules(
        current_replicas, stabilized, min_replicas, max_replicas
    )
    return Normalized(desired, stabilized, able[0], able[1], reason, message, history)


# --------------------------------------------------------------------- behavior path


def stabilize_recommendation_with_behaviors(
    history: History,
    current_replicas: int,
    desired_replicas: int,
    up_window_seconds: int,
    down_window_seconds: int,
    now: datetime,
) -> tuple[int, str, str, History]:
    """``horizontal.go: stabilizeRecommendationWithBehaviors`` → (value, reason, msg, history)."""
    up_cutoff = now - timedelta(seconds=up_window_seconds)
    down_cutoff = now - timedelta(seconds=down_window_seconds)
    up_rec = desired_replicas
    down_rec = desired_replicas
    old_index: int | None = None
    for i, rec in enumerate(history.recommendations):
        if in_window(rec.timestamp, up_cutoff):
            up_rec = min(rec.recommendation, up_rec)
        if in_window(rec.timestamp, down_cutoff):
            down_rec = max(rec.recommendation, down_rec)
        if is_old(rec.timestamp, up_cutoff) and is_old(rec.timestamp, down_cutoff):
            old_index = i
    recommendation = current_replicas
    if recommendation < up_rec:
        recommendation = up_rec
    if recommendation > down_rec:
        recommendation = down_rec
    history = record_recommendation(history, desired_replicas, now, old_index)
    if desired_replicas >= current_replicas:
        return recommendation, SCALE_UP_STABILIZED, C.MSG_SCALE_UP_STABILIZED, history
    return recommendation, SCALE_DOWN_STABILIZED, C.MSG_SCALE_DOWN_STABILIZED, history


def _int32(x: float) -> int:
    """Go ``int32(f)`` on amd64: truncation toward zero; out of range → MinInt32."""
    if math.isnan(x) or not (MIN_INT32 <= x < MAX_INT32 + 1):
        return MIN_INT32
    return int(x)


def _sat32(x: float) -> int:
    """``int32(f)`` truncated toward zero, clamped to the int32 range (unlike Go's
    conversion, which overflows): used for scale-up limits, which must not wrap."""
    if math.isnan(x):
        return MIN_INT32
    return int(min(max(x, MIN_INT32), MAX_INT32))


def _wrap32(x: int) -> int:
    """Go int32 addition overflow (two's complement wrap-around)."""
    return (x + 2**31) % 2**32 - 2**31


def calculate_scale_up_limit_with_scaling_rules(
    current_replicas: int, history: History, rules: ScalingRules, now: datetime
) -> int:
    """``horizontal.go: calculateScaleUpLimitWithScalingRules``; a proposal past MaxInt32
    is MaxInt32 (upstream's int32 arithmetic wraps it negative)."""
    if rules.select_policy == SELECT_DISABLED:
        return current_replicas
    if rules.select_policy == SELECT_MIN:
        result, pick = MAX_INT32, min
    else:
        result, pick = MIN_INT32, max
    for policy in rules.policies:
        added = get_replicas_change_per_period(policy.period_seconds, history.scale_up_events, now)
        deleted = get_replicas_change_per_period(
            policy.period_seconds, history.scale_down_events, now
        )
        period_start = _wrap32(current_replicas - added + deleted)
        if policy.type == PODS_POLICY:
            proposed = _sat32(period_start + policy.value)
        elif policy.type == PERCENT_POLICY:
            # Rounded up so a small target still grows (upstream comment); float64.
            proposed = _sat32(math.ceil(float(period_start) * (1 + float(policy.value) / 100)))
        else:
            continue  # unknown types are rejected by validation; upstream would reuse 0
        result = pick(result, proposed)
    return result


def calculate_scale_down_limit_with_behaviors(
    current_replicas: int, history: History, rules: ScalingRules, now: datetime
) -> int:
    """``horizontal.go: calculateScaleDownLimitWithBehaviors``."""
    if rules.select_policy == SELECT_DISABLED:
        return current_replicas
    if rules.select_policy == SELECT_MIN:
        result, pick = MIN_INT32, max
    else:
        result, pick = MAX_INT32, min
    for policy in rules.policies:
        added = get_replicas_change_per_period(policy.period_seconds, history.scale_up_events, now)
        deleted = get_replicas_change_per_period(
            policy.period_seconds, history.scale_down_events, now
        )
        period_start = _wrap32(current_replicas - added + deleted)
        if policy.type == PODS_POLICY:
            proposed = _wrap32(period_start - policy.value)
        elif policy.type == PERCENT_POLICY:
            proposed = _int32(float(period_start) * (1 - float(policy.value) / 100))
        else:
            continue
        result = pick(result, proposed)
    return result


def convert_desired_replicas_with_behavior_rate(
    history: History,
    current_replicas: int,
    desired_replicas: int,
    min_replicas: int,
    max_replicas: int,
    scale_up: ScalingRules,
    scale_down: ScalingRules,
    now: datetime,
) -> tuple[int, str, str]:
    """``horizontal.go: convertDesiredReplicasWithBehaviorRate`` → (replicas, reason, msg)."""
    if desired_replicas > current_replicas:
        limit = calculate_scale_up_limit_with_scaling_rules(
            current_replicas, history, scale_up, now
        )
        if limit < current_replicas:
            limit = current_replicas  # never forces a scale down
        if max_replicas > limit:
            maximum_allowed, reason, message = limit, SCALE_UP_LIMIT, C.MSG_SCALE_UP_LIMIT
        else:
            maximum_allowed, reason, message = (
                max_replicas,
                TOO_MANY_REPLICAS,
                C.MSG_TOO_MANY_REPLICAS,
            )
        if desired_replicas > maximum_allowed:
            return maximum_allowed, reason, message
    elif desired_replicas < current_replicas:
        limit = calculate_scale_down_limit_with_behaviors(
            current_replicas, history, scale_down, now
        )
        if limit > current_replicas:
            limit = current_replicas
        if min_replicas < limit:
            minimum_allowed, reason, message = limit, SCALE_DOWN_LIMIT, C.MSG_SCALE_DOWN_LIMIT
        else:
            minimum_allowed, reason, message = (
                min_replicas,
                TOO_FEW_REPLICAS,
                C.MSG_TOO_FEW_REPLICAS,
            )
        if desired_replicas < minimum_allowed:
            return minimum_allowed, reason, message
    return desired_replicas, DESIRED_WITHIN_RANGE, C.MSG_DESIRED_WITHIN_RANGE


def normalize_desired_replicas_with_behaviors(
    history: History,
    current_replicas: int,
    prenormalized: int,
    min_replicas: int,
    max_replicas: int,
    scale_up: ScalingRules,
    scale_down: ScalingRules,
    downscale_stabilization: timedelta,
    now: datetime,
) -> Normalized:
    """``horizontal.go: normalizeDesiredReplicasWithBehaviors``.

    ``maybeInitScaleDownStabilizationWindow`` is folded in: an unset scaleDown window
    means the ``--horizontal-pod-autoscaler-downscale-stabilization`` flag.
    """
    up_window = scale_up.stabilization_window_seconds or 0
    down_window = scale_down.stabilization_window_seconds
    if down_window is None:
        down_window = int(downscale_stabilization.total_seconds())
    stabilized, reason, message, history = stabilize_recommendation_with_behaviors(
        history, current_replicas, prenormalized, up_window, down_window, now
    )
    if stabilized == prenormalized:
        reason, message = READY_FOR_NEW_SCALE, C.MSG_READY_FOR_NEW_SCALE
    desired, limit_reason, limit_message = convert_desired_replicas_with_behavior_rate(
        history, current_replicas, stabilized, min_replicas, max_replicas, scale_up, scale_down, now
    )
    return Normalized(desired, stabilized, reason, message, limit_reason, limit_message, history)


def get_longest_policy_period(rules: ScalingRules) -> int:
    """``horizontal.go: getLongestPolicyPeriod``."""
    longest = 0
    for p in rules.policies:
        if p.period_seconds > longest:
            longest = p.period_seconds
    return longest
