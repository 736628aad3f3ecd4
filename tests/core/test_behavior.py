"""Normalization tables (hpa-behavior.md §7, §8) for hpactl.core.behavior and history.

Cases follow upstream's TestConvertDesiredReplicasWithRules, TestNormalizeDesiredReplicas,
TestCalculateScaleUpLimitWithScalingRules, TestCalculateScaleDownLimitWithBehaviors,
TestStoreScaleEvents and TestNormalizeDesiredReplicasWithBehavior as facts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpactl.core.behavior import (
    calculate_scale_down_limit_with_behaviors,
    calculate_scale_up_limit,
    calculate_scale_up_limit_with_scaling_rules,
    convert_desired_replicas_with_behavior_rate,
    convert_desired_replicas_with_rules,
    normalize_desired_replicas_with_behaviors,
    stabilize_recommendation,
)
from hpactl.core.history import (
    History,
    Recommendation,
    ScaleEvent,
    get_replicas_change_per_period,
    record_initial_recommendation,
    store_scale_event,
)
from hpactl.model.hpa import ScalingPolicy, ScalingRules

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def rules(
    *policies: tuple[str, int, int], select: str = "Max", window: int | None = 0
) -> ScalingRules:
    return ScalingRules(window, select, tuple(ScalingPolicy(t, v, p) for t, v, p in policies))


@pytest.mark.parametrize(
    ("current", "desired", "lo", "hi", "expected", "reason"),
    [
        (5, 7, 3, 8, 7, "DesiredWithinRange"),
        (3, 1, 2, 8, 2, "TooFewReplicas"),
        (1, 0, 0, 10, 0, "DesiredWithinRange"),
        (20, 1000, 1, 10, 10, "TooManyReplicas"),
        (3, 1000, 1, 2000, 6, "ScaleUpLimit"),
        (1, 8, 1, 8, 4, "ScaleUpLimit"),
    ],
)
def test_convert_desired_replicas_with_rules(
    current: int, desired: int, lo: int, hi: int, expected: int, reason: str
) -> None:
    got, got_reason, _ = convert_desired_replicas_with_rules(current, desired, lo, hi)
    assert (got, got_reason) == (expected, reason)


@pytest.mark.parametrize(("current", "limit"), [(0, 4), (1, 4), (2, 4), (3, 6), (10, 20)])
def test_calculate_scale_up_limit(current: int, limit: int) -> None:
    assert calculate_scale_up_limit(current) == limit


@pytest.mark.parametrize(
    ("recs", "proposal", "expected", "log_len"),
    [
        ((), 5, 5, 1),
        (((4, 120), (5, 60)), 3, 5, 3),
        (((1, 120), (2, 60)), 3, 3, 3),
        (((10, 600), (9, 540)), 3, 3, 2),
        (((10, 600), (4, 60), (5, 120), (9, 540)), 3, 5, 4),
    ],
    ids=["empty", "stabilize", "no-stabilize", "old-only", "old-and-recent"],
)
def test_stabilize_recommendation(
    recs: tuple[tuple[int, int], ...], proposal: int, expected: int, log_len: int
) -> None:
    h = History(tuple(Recommendation(r, ago(s)) for r, s in recs))
    got, h2 = stabilize_recommendation(h, proposal, timedelta(minutes=5), NOW)
    assert got == expected
    assert len(h2.recommendations) == log_len
    assert Recommendation(proposal, NOW) in h2.recommendations


UP_DEFAULT = rules(("Pods", 4, 15), ("Percent", 100, 15))


@pytest.mark.parametrize(
    ("current", "up_events", "down_events", "r", "expected"),
    [
        (10, (), (), UP_DEFAULT, 20),
        (2, (), (), UP_DEFAULT, 6),
        (10, (), (), rules(("Pods", 4, 15), ("Percent", 100, 15), select="Min"), 14),
        (10, ((5, 10),), (), rules(("Pods", 4, 60), ("Percent", 100, 60)), 10),
        (10, ((5, 10),), ((2, 10),), rules(("Pods", 4, 60)), 11),
        (10, ((5, 61),), (), rules(("Pods", 4, 60)), 14),
        (3, (), (), rules(("Percent", 50, 60)), 5),  # ceil(4.5)
        (10, (), (), rules(("Pods", 4, 60), select="Disabled"), 10),
        (0, (), (), rules(("Percent", 100, 15)), 0),
    ],
)
def test_calculate_scale_up_limit_with_scaling_rules(
    current: int,
    up_events: tuple[tuple[int, int], ...],
    down_events: tuple[tuple[int, int], ...],
    r: ScalingRules,
    expected: int,
) -> None:
    h = History(
        scale_up_events=tuple(ScaleEvent(c, ago(s)) for c, s in up_events),
        scale_down_events=tuple(ScaleEvent(c, ago(s)) for c, s in down_events),
    )
    assert calculate_scale_up_limit_with_scaling_rules(current, h, r, NOW) == expected


@pytest.mark.parametrize(
    ("current", "down_events", "r", "expected"),
    [
        (10, (), rules(("Percent", 100, 15)), 0),
        (10, (), rules(("Percent", 10, 60), ("Pods", 3, 60)), 7),
        (10, (), rules(("Percent", 10, 60), ("Pods", 3, 60), select="Min"), 9),
        (20, (), rules(("Percent", 90, 60)), 1),  # trunc(1.9999999999999996)
        (8, ((2, 30),), rules(("Percent", 50, 60)), 5),  # period start 10
        (8, ((2, 60),), rules(("Percent", 50, 60)), 4),  # event exactly one period old
        (10, (), rules(("Pods", 3, 60), select="Disabled"), 10),
    ],
)
def test_calculate_scale_down_limit_with_behaviors(
    current: int, down_events: tuple[tuple[int, int], ...], r: ScalingRules, expected: int
) -> None:
    h = History(scale_down_events=tuple(ScaleEvent(c, ago(s)) for c, s in down_events))
    assert calculate_scale_down_limit_with_behaviors(current, h, r, NOW) == expected


@pytest.mark.parametrize(
    ("current", "desired", "lo", "hi", "expected", "reason"),
    [
        (5, 100, 1, 10, 10, "TooManyReplicas"),
        (5, 100, 1, 1000, 10, "ScaleUpLimit"),
        (10, 1, 1, 100, 1, "DesiredWithinRange"),
        (10, 1, 5, 100, 5, "TooFewReplicas"),
        (5, 5, 1, 10, 5, "DesiredWithinRange"),
    ],
)
def test_convert_desired_replicas_with_behavior_rate(
    current: int, desired: int, lo: int, hi: int, expected: int, reason: str
) -> None:
    got, got_reason, _ = convert_desired_replicas_with_behavior_rate(
        History(), current, desired, lo, hi, UP_DEFAULT, rules(("Percent", 100, 15)), NOW
    )
    assert (got, got_reason) == (expected, reason)


def test_scale_down_limit_reason() -> None:
    got, reason, msg = convert_desired_replicas_with_behavior_rate(
        History(), 10, 1, 1, 100, UP_DEFAULT, rules(("Pods", 2, 60)), NOW
    )
    assert (got, reason) == (8, "ScaleDownLimit")
    assert msg == "the desired replica count is decreasing faster than the maximum scale rate"


@pytest.mark.parametrize(
    ("current", "proposal", "recs", "up_w", "down_w", "expected", "reason"),
    [
        (4, 6, ((5, 60), (4, 120)), 300, 300, 4, "ScaleUpStabilized"),
        (5, 3, ((4, 60), (5, 120)), 0, 300, 5, "ScaleDownStabilized"),
        (5, 3, ((4, 60), (5, 120)), 0, 30, 3, "ReadyForNewScale"),
        (4, 6, ((5, 60), (4, 120)), 0, 300, 6, "ReadyForNewScale"),
    ],
)
def test_normalize_desired_replicas_with_behaviors(
    current: int,
    proposal: int,
    recs: tuple[tuple[int, int], ...],
    up_w: int,
    down_w: int,
    expected: int,
    reason: str,
) -> None:
    h = History(tuple(Recommendation(r, ago(s)) for r, s in recs))
    up = rules(("Pods", 100, 15), window=up_w)
    down = rules(("Percent", 100, 15), window=down_w)
    n = normalize_desired_replicas_with_behaviors(
        h, current, proposal, 1, 100, up, down, timedelta(minutes=5), NOW
    )
    assert (n.desired, n.able_reason) == (expected, reason)
    assert Recommendation(proposal, NOW) in n.history.recommendations


def test_unset_scale_down_window_uses_flag() -> None:
    h = History((Recommendation(8, ago(100)),))
    down = rules(("Percent", 100, 15), window=None)
    n1 = normalize_desired_replicas_with_behaviors(
        h, 8, 2, 1, 10, UP_DEFAULT, down, timedelta(seconds=120), NOW
    )
    n2 = normalize_desired_replicas_with_behaviors(
        h, 8, 2, 1, 10, UP_DEFAULT, down, timedelta(seconds=60), NOW
    )
    assert (n1.desired, n2.desired) == (8, 2)


def test_record_initial_recommendation_only_once() -> None:
    h = record_initial_recommendation(History(), 3, NOW)
    assert h.recommendations == (Recommendation(3, NOW),)
    assert record_initial_recommendation(h, 7, NOW + timedelta(seconds=15)) is h


def test_store_scale_event_reuses_last_outdated_slot() -> None:
    prev = (ScaleEvent(3, ago(200)), ScaleEvent(2, ago(120)), ScaleEvent(1, ago(30)))
    h = History(scale_up_events=prev)
    h2 = store_scale_event(h, 5, 9, 60, 60, NOW)
    assert h2.scale_up_events == (
        ScaleEvent(3, ago(200), True),
        ScaleEvent(4, NOW),
        ScaleEvent(1, ago(30)),
    )
    assert get_replicas_change_per_period(60, h2.scale_up_events, NOW) == 5


def test_store_scale_event_appends_and_uses_direction() -> None:
    h = store_scale_event(History(), 10, 7, 60, 300, NOW)
    assert h.scale_down_events == (ScaleEvent(3, NOW),) and h.scale_up_events == ()
    # an event exactly one longest period old is outdated (§16)
    h2 = store_scale_event(h, 7, 5, 60, 300, NOW + timedelta(seconds=300))
    assert h2.scale_down_events == (ScaleEvent(2, NOW + timedelta(seconds=300)),)


def test_legacy_entry_exactly_one_window_old_is_outside_and_overwritten() -> None:
    h = History((Recommendation(9, ago(300)), Recommendation(4, ago(299))))
    got, h2 = stabilize_recommendation(h, 2, timedelta(minutes=5), NOW)
    assert got == 4
    assert h2.recommendations == (Recommendation(2, NOW), Recommendation(4, ago(299)))


DOWN_DEFAULT = rules(("Percent", 100, 15))


@pytest.mark.parametrize(
    ("up", "down", "current", "desired", "lo", "hi", "expected", "reason"),
    [
        (UP_DEFAULT, DOWN_DEFAULT, 5, 12, 1, 1000, 10, "ScaleUpLimit"),
        (
            rules(("Pods", 100, 60), ("Percent", 100, 60)),
            DOWN_DEFAULT,
            3,
            500,
            1,
            1000,
            103,
            "ScaleUpLimit",
        ),
        (
            rules(("Pods", 2, 60), ("Percent", 100, 60)),
            DOWN_DEFAULT,
            3,
            500,
            1,
            1000,
            6,
            "ScaleUpLimit",
        ),
        (
            rules(("Pods", 100, 60), ("Percent", 100, 60)),
            DOWN_DEFAULT,
            3,
            500,
            1,
            100,
            100,
            "TooManyReplicas",
        ),
        (UP_DEFAULT, DOWN_DEFAULT, 5, 2, 1, 10, 2, "DesiredWithinRange"),
        (
            UP_DEFAULT,
            rules(("Pods", 1, 60), ("Percent", 10, 60)),
            100,
            2,
            1,
            1000,
            90,
            "ScaleDownLimit",
        ),
        (
            UP_DEFAULT,
            rules(("Pods", 1, 60), ("Percent", 10, 60), select="Min"),
            100,
            2,
            1,
            1000,
            99,
            "ScaleDownLimit",
        ),
        (UP_DEFAULT, DOWN_DEFAULT, 5, 0, 2, 10, 2, "TooFewReplicas"),
        (UP_DEFAULT, rules(("Pods", 1, 60), select="Disabled"), 5, 1, 1, 10, 5, "ScaleDownLimit"),
    ],
    ids=[
        "up-default-behavior",
        "up-pods-policy-larger",
        "up-percent-policy-larger",
        "up-max-replicas",
        "down-default-behavior",
        "down-max-select-largest-change",
        "down-min-select-smallest-change",
        "down-min-replicas",
        "down-disabled",
    ],
)
def test_scaling_with_rules(
    up: ScalingRules,
    down: ScalingRules,
    current: int,
    desired: int,
    lo: int,
    hi: int,
    expected: int,
    reason: str,
) -> None:
    got, got_reason, _ = convert_desired_replicas_with_behavior_rate(
        History(), current, desired, lo, hi, up, down, NOW
    )
    assert (got, got_reason) == (expected, reason)
