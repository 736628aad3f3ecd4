"""The details an explanation carries besides the decision (for decision records and
``hpactl explain``): per-metric values, tolerance verdicts, pods counted, the
stabilization windows' contents, the rate limit computed, min/max. None of them
changes a decision (the other core tests pin those)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from core_builders import NOW, ext_value, external, hpa, inputs, pods, pods_metric, samples

from hpactl.core.decide import RateLimit, reconcile
from hpactl.core.history import History, Recommendation, ScaleEvent


def test_metric_values_tolerance_and_pods_counted() -> None:
    ps = pods(4)
    out = reconcile(inputs(hpa(), 4, [samples(ps, 540)], ps))  # 54% of a 50% target
    m = out.explanation.metrics[0]
    assert (m.label, m.current, m.target) == ("cpu", "54%", "50%")
    assert m.ratio is not None and abs(m.ratio - 1.08) < 1e-9
    assert m.tolerance == (0.1, 0.1) and m.within_tolerance
    assert (m.ready_pods, m.total_pods) == (4, 4)


def test_per_hpa_tolerance_is_the_one_reported() -> None:
    ps = pods(4)
    h = hpa(behavior={"scaleUp": {"tolerance": "0.5"}, "scaleDown": {"tolerance": "0.05"}})
    m = reconcile(inputs(h, 4, [samples(ps, 650)], ps)).explanation.metrics[0]
    assert m.tolerance == (0.05, 0.5) and m.within_tolerance


def test_unready_pods_are_counted_apart_and_the_adjusted_ratio_reported() -> None:
    ready = pods(3)
    pending = tuple(replace(p, name=f"new-{i}") for i, p in enumerate(pods(2, phase="Pending")))
    ps = (*ready, *pending)
    out = reconcile(inputs(hpa(max_replicas=20), 5, [samples(ready, 1000)], ps))
    m = out.explanation.metrics[0]
    assert (m.ready_pods, m.total_pods) == (3, 5)
    assert sorted(m.set_aside) == [("new-0", "unready-pending"), ("new-1", "unready-pending")]
    # 100% of 50% on the 3 ready pods; the 2 unready ones count as 0% when scaling up:
    # 3000m / 5000m = 60% → ratio 1.2, checked against the tolerance.
    assert m.current == "100%" and m.ratio is not None and abs(m.ratio - 1.2) < 1e-9
    assert m.proposal == 6


def test_plain_values_in_their_own_unit() -> None:
    ps = pods(2)
    h = hpa(metrics=[pods_metric("qps", "10"), external("queue", value="100")])
    qps = {p.name: s for p, s in zip(ps, samples(ps, 15_000).values(), strict=True)}
    out = reconcile(inputs(h, 2, [qps, ext_value(250_000)], ps))
    by_label = {m.label: m for m in out.explanation.metrics}
    assert (by_label["pods:qps"].current, by_label["pods:qps"].target) == ("15", "10")
    assert (by_label["external:queue"].current, by_label["external:queue"].target) == (
        "250",
        "100",
    )
    assert by_label["external:queue"].ready_pods == 2


def test_scale_down_window_contents_and_the_value_chosen() -> None:
    ps = pods(5)
    t1, t2 = NOW - timedelta(seconds=200), NOW - timedelta(seconds=100)
    old = NOW - timedelta(seconds=400)
    hist = History(
        (Recommendation(9, old), Recommendation(6, t1), Recommendation(5, t2)),
    )
    out = reconcile(inputs(hpa(), 5, [samples(ps, 100)], ps, history=hist))
    e = out.explanation
    assert e.limited_by == ("stabilization",) and e.stabilized == 6 and e.desired_replicas == 6
    (window,) = e.windows
    assert (window.direction, window.seconds) == ("scaleDown", 300)
    # The entry older than the window is not in it.
    assert window.recommendations == (Recommendation(6, t1), Recommendation(5, t2))
    assert e.stabilized_by == Recommendation(6, t1)
    assert e.metric_proposal == 1 and (e.min_replicas, e.max_replicas) == (1, 10)
    d = json.loads(json.dumps(e.to_dict()))
    assert d["stabilizedBy"] == {"replicas": 6, "time": "2026-01-01T11:56:40Z"}
    assert d["stabilizationWindows"][0]["recommendations"][1] == {
        "replicas": 5,
        "time": "2026-01-01T11:58:20Z",
    }


def test_scale_up_window_lowest_recommendation() -> None:
    ps = pods(2)
    t = NOW - timedelta(seconds=30)
    h = hpa(behavior={"scaleUp": {"stabilizationWindowSeconds": 120}})
    hist = History((Recommendation(3, t),))
    out = reconcile(inputs(h, 2, [samples(ps, 1000)], ps, history=hist))
    e = out.explanation
    assert e.metric_proposal == 4 and e.stabilized == 3 and "stabilization" in e.limited_by
    assert [w.direction for w in e.windows] == ["scaleUp", "scaleDown"]
    assert e.stabilized_by == Recommendation(3, t)


def test_scale_up_policy_limit_and_which_policy() -> None:
    ps = pods(4)
    h = hpa(
        max_replicas=50,
        behavior={
            "scaleUp": {
                "policies": [
                    {"type": "Pods", "value": 1, "periodSeconds": 60},
                    {"type": "Percent", "value": 10, "periodSeconds": 60},
                ],
                "selectPolicy": "Max",
            }
        },
    )
    # One pod was added 30 s ago: the period started at 3, Pods allows 3+1 = 4,
    # Percent ceil(3 x 1.1) = 4; the limit is the current count, 4.
    hist = History(scale_up_events=(ScaleEvent(1, NOW - timedelta(seconds=30)),))
    out = reconcile(inputs(h, 4, [samples(ps, 1000)], ps, history=hist))
    e = out.explanation
    assert e.desired_replicas == 4 and e.limited_by == ("scale-up-limit",)
    assert e.rate_limit == RateLimit("scaleUp", 4, "scaleUp Pods 1 per 60s", True)


def test_scale_down_policy_limit() -> None:
    ps = pods(10)
    h = hpa(
        behavior={
            "scaleDown": {
                "stabilizationWindowSeconds": 0,
                "policies": [{"type": "Percent", "value": 20, "periodSeconds": 60}],
            }
        }
    )
    out = reconcile(inputs(h, 10, [samples(ps, 50)], ps))
    e = out.explanation
    assert e.desired_replicas == 8 and e.limited_by == ("scale-down-limit",)
    assert e.rate_limit == RateLimit("scaleDown", 8, "scaleDown Percent 20 per 60s", True)


def test_rate_limit_computed_but_not_applied() -> None:
    ps = pods(3)
    out = reconcile(inputs(hpa(), 3, [samples(ps, 600)], ps))  # 60% of 50% → 4
    e = out.explanation
    assert e.desired_replicas == 4 and e.limited_by == ()
    assert e.rate_limit == RateLimit("scaleUp", 6, "max(2 x current, 4)", False)


def test_no_rate_limit_when_nothing_changes() -> None:
    ps = pods(4)
    e = reconcile(inputs(hpa(), 4, [samples(ps, 500)], ps)).explanation
    assert e.rate_limit is None and e.stabilized_by is None


def test_new_keys_are_added_and_old_ones_kept() -> None:
    ps = pods(3)
    d = reconcile(inputs(hpa(), 3, [samples(ps, 600)], ps)).explanation.to_dict()
    old = {
        "path",
        "currentReplicas",
        "desiredReplicas",
        "metrics",
        "metricProposal",
        "metricName",
        "stabilized",
        "limitedBy",
        "limitReason",
        "policy",
        "rescaleReason",
        "error",
    }
    assert old <= set(d)
    assert {"index", "type", "name", "proposal", "error", "failureReason"} <= set(d["metrics"][0])
    assert d["metrics"][0]["tolerance"] == {"scaleDown": 0.1, "scaleUp": 0.1}
    assert d["rateLimit"] == {
        "direction": "scaleUp",
        "limit": 6,
        "policy": "max(2 x current, 4)",
        "applied": False,
    }


def test_failed_metric_has_no_current_value() -> None:
    ps = pods(2)
    out = reconcile(inputs(hpa(), 2, [], ps))
    (m,) = out.explanation.metrics
    assert m.proposal is None and m.current is None and m.target == "50%" and m.error
