"""Replica counts at the int32 limit (issue 12, bad input): a scale-up limit past
MaxInt32 saturates instead of wrapping negative, as Go's int32 arithmetic does; the
wrapped value became a scale write of -2147483648 for a target at 2147483647 replicas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpactl.core.behavior import (
    MAX_INT32,
    calculate_scale_up_limit,
    calculate_scale_up_limit_with_scaling_rules,
    normalize_desired_replicas,
)
from hpactl.core.history import History, Recommendation
from hpactl.model.hpa import PERCENT_POLICY, PODS_POLICY, SELECT_MAX, ScalingPolicy, ScalingRules

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("current", "limit"),
    [(0, 4), (3, 6), (2**30 - 1, 2**31 - 2), (2**30, MAX_INT32), (MAX_INT32, MAX_INT32)],
)
def test_legacy_scale_up_limit_saturates(current: int, limit: int) -> None:
    assert calculate_scale_up_limit(current) == limit


@pytest.mark.parametrize(
    ("policy", "current", "limit"),
    [
        (ScalingPolicy(PODS_POLICY, 4, 15), 10, 14),
        (ScalingPolicy(PODS_POLICY, 4, 15), MAX_INT32 - 2, MAX_INT32),
        (ScalingPolicy(PERCENT_POLICY, 100, 15), MAX_INT32, MAX_INT32),
        (ScalingPolicy(PERCENT_POLICY, 100, 15), 2**30 + 1, MAX_INT32),
    ],
)
def test_behavior_scale_up_limit_saturates(policy: ScalingPolicy, current: int, limit: int) -> None:
    rules = ScalingRules(
        stabilization_window_seconds=0, select_policy=SELECT_MAX, policies=(policy,)
    )
    assert calculate_scale_up_limit_with_scaling_rules(current, History(), rules, NOW) == limit


def test_a_target_at_max_int32_held_by_the_window_is_not_rewritten() -> None:
    history = History(recommendations=(Recommendation(MAX_INT32, NOW),))
    out = normalize_desired_replicas(
        history, MAX_INT32, 1, 1, MAX_INT32, timedelta(minutes=5), NOW + timedelta(seconds=15)
    )
    assert out.desired == MAX_INT32  # was -2147483648
