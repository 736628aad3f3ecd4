"""examples/per-hpa-period.yaml (KEP-6003) and examples/suspend.yaml (KEP-3428).

Each runs as docs/extensions.md says, and with its gate off the annotations change
nothing: the whole output (status, conditions, events, replicas) is byte for byte
that of the same scenario without them.
"""

from __future__ import annotations

import copy
import itertools

import pytest

from hpactl.simulate.runner import StepResult

from .example_runs import gate_off, jsonl, load, run, without

pytestmark = pytest.mark.timeout(120)

PERIOD_ANNOTATION = "hpactl.dev/sync-period-seconds"
SUSPEND_ANNOTATION = "autoscaling.kubernetes.io/suspend"


def series(results: list[StepResult], target: str) -> list[tuple[float, int]]:
    t0 = results[0].time
    # (A step where no HPA names the target, e.g. the HPA deleted, has no entry.)
    return [
        ((r.time - t0).total_seconds(), r.targets[target]["replicas"])
        for r in results
        if target in r.targets
    ]


def changes(s: list[tuple[float, int]]) -> list[tuple[float, int]]:
    out = [s[0]]
    for t, v in s[1:]:
        if v != out[-1][1]:
            out.append((t, v))
    return out


def synced(results: list[StepResult], key: str) -> list[float]:
    t0 = results[0].time
    return [(r.time - t0).total_seconds() for r in results if key in r.decisions]


# -- per-HPA sync period -------------------------------------------------------------------


async def test_per_hpa_period_each_hpa_at_its_own_period_and_policies_hold() -> None:
    results = await run(load("per-hpa-period"))
    # Synced at their own periods: every 5 s, every 60 s, and the default 15 s for
    # the HPA whose annotation is out of range.
    assert synced(results, "shop/fast") == [5.0 * i for i in range(169)]
    assert synced(results, "shop/slow") == [60.0 * i for i in range(15)]
    assert synced(results, "shop/misconfigured") == [15.0 * i for i in range(57)]
    fast = series(results, "Deployment/shop/fast")
    slow = series(results, "Deployment/shop/slow")
    # The crowd arrives at 1m: the fast HPA reacts 5 s later, the slow one at 2m.
    assert changes(fast)[1] == (65.0, 6)
    assert changes(slow)[1] == (120.0, 6)
    for s in (fast, slow, series(results, "Deployment/shop/misconfigured")):
        moves = [(t, b - a) for (_, a), (t, b) in itertools.pairwise(s) if b != a]
        for t, _ in moves:
            window = [d for u, d in moves if t - 60 < u <= t]
            # scaleUp: at most 4 pods per 60 s; scaleDown: at most half per 60 s,
            # whatever the period (upstream's arithmetic is in time, not in syncs).
            assert sum(d for d in window if d > 0) <= 4
            start = dict(s)[max(0.0, t - 60)]
            assert -sum(d for d in window if d < 0) <= max(start // 2, start - 2)
        # The crowd leaves at 6m; the 2-minute window holds until 8m for all three.
        downs = [t for t, d in moves if d < 0]
        assert downs[0] == 480.0
    misconfigured = [
        e
        for r in results
        for e in r.events
        if e["object"] == "HorizontalPodAutoscaler/shop/misconfigured"
    ]
    warnings = [e for e in misconfigured if e["type"] == "Warning"]
    assert {e["reason"] for e in warnings} == {"InvalidSyncPeriod"}
    assert warnings[0]["message"] == (
        f'annotation {PERIOD_ANNOTATION}="0" is out of range (1-3600 seconds); '
        "the default sync period is used"
    )
    cond = {c["type"]: c for c in results[-1].hpas["shop/misconfigured"]["conditions"]}
    assert cond["AnnotationsValid"]["status"] == "False"
    assert cond["AnnotationsValid"]["reason"] == "InvalidSyncPeriod"
    assert "AnnotationsValid" not in {
        c["type"] for c in results[-1].hpas["shop/fast"]["conditions"]
    }


async def test_per_hpa_period_gate_off_is_upstream_byte_for_byte() -> None:
    data = load("per-hpa-period")
    off = await run(gate_off(data))
    plain = await run(gate_off(without(data, PERIOD_ANNOTATION)))
    assert jsonl(off) == jsonl(plain)
    # Gate off: every HPA is synced at every step, as one period of the flag.
    assert synced(off, "shop/slow") == synced(off, "shop/fast") == [5.0 * i for i in range(169)]


# -- suspend --------------------------------------------------------------------------------


async def test_suspend_writes_no_scale_and_resumes_with_its_history() -> None:
    results = await run(load("suspend"))
    target = "Deployment/shop/checkout"
    assert changes(series(results, target)) == [
        (0.0, 2),
        (75.0, 6),
        (135.0, 10),
        (180.0, 12),  # set by hand at 3m, while suspended
        (435.0, 10),  # resumed at 6m; the window still holds what it held at 2m15s
        (465.0, 2),  # five minutes after the last recommendation before the suspension
    ]
    for r in results:
        t = (r.time - results[0].time).total_seconds()
        status = r.hpas["shop/checkout"]
        active = {c["type"]: c for c in status["conditions"]}["ScalingActive"]
        if 180 <= t < 360:
            assert (active["status"], active["reason"]) == ("False", "Suspended")
            assert SUSPEND_ANNOTATION in active["message"]
            assert status["currentReplicas"] == status["desiredReplicas"] == 12
            assert not status.get("currentMetrics")
            assert r.events == [] and r.rescales == {}
        else:
            assert active["reason"] == "ValidMetricFound"


async def test_suspend_differs_from_deleting_and_recreating_the_hpa() -> None:
    data = load("suspend")
    recreated = copy.deepcopy(data)
    suspend_step = next(s for s in recreated["steps"] if "apply" in s and len(s["apply"]) == 2)
    suspend_step["apply"] = suspend_step["apply"][1:]  # the hand-set Deployment only
    suspend_step["delete"] = [
        {"kind": "HorizontalPodAutoscaler", "name": "checkout", "namespace": "shop"}
    ]
    results = await run(recreated)
    # A new HPA starts with an empty history: the window restarts at 6m.
    s = series(results, "Deployment/shop/checkout")
    downs = [t for (_, a), (t, b) in itertools.pairwise(s) if b < a]
    assert downs[0] == 660.0  # not 435 s as the suspended (and resumed) HPA


async def test_suspend_gate_off_is_upstream_byte_for_byte() -> None:
    data = load("suspend")
    off = await run(gate_off(data))
    plain = await run(gate_off(without(data, SUSPEND_ANNOTATION)))
    assert jsonl(off) == jsonl(plain)
    # Not suspended: the HPA went on scaling the target it was set to leave alone.
    assert (225.0, 15) in changes(series(off, "Deployment/shop/checkout"))
