"""Whole-reconcile tests for hpactl.core.decide (decide + finalize), written from
hpa-behavior.md §2-§12/§16 and upstream's horizontal_test.go cases (TestScaleUp,
TestUpscaleCap, TestConditionFailedGetScale, TestConditionInvalidSelector*,
TestConditionAmbiguousSelector*, TestZeroReplicas, TestScaleUpOneMetricInvalid,
TestNoScaleDownOneMetricInvalid, TestConditionFailedUpdateScale, ...).

Every expected string is copied from the behaviour description, not from the code.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from core_builders import (
    KEY,
    NOW,
    cond_map,
    conds,
    cpu,
    ext_value,
    external,
    hpa,
    inputs,
    memory_avg,
    obj,
    obj_value,
    pods,
    pods_metric,
    raw_hpa,
    samples,
)

from hpactl.core.decide import (
    CoreConfig,
    Outcome,
    ScaleWriteResult,
    decide,
    finalize,
    metrics_to_fetch,
    needs_metrics,
    reconcile,
    with_selector,
)
from hpactl.core.history import History, Recommendation, ScaleEvent
from hpactl.model.hpa import hpa_from_raw, status_to_raw
from hpactl.model.metrics import MetricFetchError
from hpactl.model.selectors import Selector, parse_selector

CPU_NAME = "cpu resource utilization (percentage of request)"
GOT_SCALE = (
    "True",
    "SucceededGetScale",
    "the HPA controller was able to get the target's current scale",
)
NOT_SCALED_TO_ZERO = (
    "False",
    "NotScaledToZero",
    "the HPA controller did not scale the workload to zero",
)
WITHIN_RANGE = ("False", "DesiredWithinRange", "the desired count is within the acceptable range")
VALID_CPU = (
    "True",
    "ValidMetricFound",
    f"the HPA was able to successfully calculate a replica count from {CPU_NAME}",
)
BEHAVIOR_FAST_DOWN = {"scaleDown": {"stabilizationWindowSeconds": 0}}


def ev(outcome: Outcome) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in outcome.events]


# ------------------------------------------------------------------ metric path


def test_scale_up_on_cpu_legacy() -> None:
    ps = pods(3)
    out = reconcile(inputs(hpa(), 3, [samples(ps, 900)], ps))
    # utilization 90% vs 50% → ratio 1.8 → ceil(1.8 x 3) = 6; legacy cap max(2x3, 4) = 6.
    assert out.rescaled and out.desired_replicas == 6
    assert ev(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 6; reason: {CPU_NAME} above target")
    ]
    raw = out.status_raw
    assert raw["currentReplicas"] == 3 and raw["desiredReplicas"] == 6
    assert raw["lastScaleTime"] == "2026-01-01T12:00:00Z"
    assert raw["currentMetrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "current": {"averageValue": "900m", "averageUtilization": 90},
            },
        }
    ]
    assert conds(raw) == [
        (
            "AbleToScale",
            "True",
            "SucceededRescale",
            "the HPA controller was able to update the target scale to 6",
        ),
        ("ScalingActive", *VALID_CPU),
        ("ScalingLimited", *WITHIN_RANGE),
        ("ScaledToZero", *NOT_SCALED_TO_ZERO),
    ]
    assert all(c["lastTransitionTime"] == "2026-01-01T12:00:00Z" for c in raw["conditions"])
    assert out.status_changed and out.action == "scale_up" and out.error is None


def test_upscale_cap_legacy() -> None:
    # TestUpscaleCap: 3 replicas, proposal far above → max(2x3, 4) = 6, ScaleUpLimit.
    ps = pods(3, cpu_request="100m")
    out = reconcile(inputs(hpa(max_replicas=100, metrics=[cpu(10)]), 3, [samples(ps, 300)], ps))
    assert out.desired_replicas == 6
    assert cond_map(out.status_raw)["ScalingLimited"] == (
        "True",
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
    )
    assert "scale-up-limit" in out.explanation.limited_by
    # The rescale reason is decided before normalization: still "above target".
    assert ev(out)[0][2] == f"New size: 6; reason: {CPU_NAME} above target"


def test_max_replicas_clamp_legacy() -> None:
    ps = pods(8)
    out = reconcile(inputs(hpa(max_replicas=10), 8, [samples(ps, 1000)], ps))
    assert out.desired_replicas == 10
    assert cond_map(out.status_raw)["ScalingLimited"] == (
        "True",
        "TooManyReplicas",
        "the desired replica count is more than the maximum replica count",
    )
    assert out.explanation.limited_by == ("max",)


def test_scale_down_held_by_legacy_stabilization() -> None:
    ps = pods(5)
    hist = History((Recommendation(5, NOW - timedelta(minutes=1)),))
    out = reconcile(inputs(hpa(), 5, [samples(ps, 100)], ps, history=hist))
    assert not out.rescaled and out.desired_replicas == 5
    assert out.events == ()
    c = cond_map(out.status_raw)
    assert c["AbleToScale"] == (
        "True",
        "ScaleDownStabilized",
        "recent recommendations were higher than current one, applying the highest recent recommendation",
    )
    assert c["ScalingLimited"] == WITHIN_RANGE
    assert "lastScaleTime" not in out.status_raw
    assert out.explanation.limited_by == ("stabilization",)
    # the proposal (1) was recorded, not the stabilized value
    assert [r.recommendation for r in out.history.recommendations] == [5, 1]


def test_scale_down_clamped_by_min_says_all_metrics_below_target() -> None:
    ps = pods(5)
    hist = History((Recommendation(5, NOW - timedelta(minutes=6)),))
    out = reconcile(inputs(hpa(min_replicas=2), 5, [samples(ps, 50)], ps, history=hist))
    assert out.desired_replicas == 2
    assert ev(out) == [
        ("Normal", "SuccessfulRescale", "New size: 2; reason: All metrics below target")
    ]
    assert cond_map(out.status_raw)["ScalingLimited"] == (
        "True",
        "TooFewReplicas",
        "the desired replica count is less than the minimum replica count",
    )
    assert cond_map(out.status_raw)["AbleToScale"][1] == "SucceededRescale"
    # The old entry was overwritten in place by the proposal.
    assert out.history.recommendations == (Recommendation(1, NOW),)


def test_within_tolerance_keeps_current() -> None:
    ps = pods(4)
    out = reconcile(inputs(hpa(), 4, [samples(ps, 540)], ps))  # 108% of 100%... ratio 1.08
    assert not out.rescaled and out.desired_replicas == 4
    assert out.explanation.limited_by == ("tolerance",)
    assert cond_map(out.status_raw)["AbleToScale"] == (
        "True",
        "ReadyForNewScale",
        "recommended size matches current size",
    )


@pytest.mark.parametrize(
    ("gate", "expected"),
    [(True, 4), (False, 6)],
    ids=["configurable-tolerance-on", "gate-off-global-tolerance"],
)
def test_per_hpa_tolerance(gate: bool, expected: int) -> None:
    ps = pods(4)
    h = hpa(behavior={"scaleUp": {"tolerance": "0.5"}})
    # ratio 1.3: within the HPA's 50% scale-up tolerance, outside the global 10%.
    out = reconcile(
        inputs(h, 4, [samples(ps, 650)], ps, config=CoreConfig(configurable_tolerance=gate))
    )
    assert out.desired_replicas == expected


def test_memory_average_value_status_is_binary_si() -> None:
    ps = pods(2)
    gi = 1024**3 * 1000
    out = reconcile(inputs(hpa(metrics=[memory_avg("1Gi")]), 2, [samples(ps, 2 * gi)], ps))
    assert out.desired_replicas == 4
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {"averageValue": "2Gi"}
    assert ev(out)[0][2] == "New size: 4; reason: memory resource above target"


# --------------------------------------------------------------- pre-checks (§2, §5)


def test_above_max_precheck_skips_metrics() -> None:
    h = hpa(max_replicas=10)
    inp = inputs(h, 12, [], pods(12))
    assert not needs_metrics(inp)
    out = reconcile(inp)
    assert out.desired_replicas == 10
    assert ev(out) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 10; reason: Current number of replicas above Spec.MaxReplicas",
        )
    ]
    assert "currentMetrics" not in out.status_raw
    assert [c[0] for c in conds(out.status_raw)] == ["AbleToScale", "ScaledToZero"]
    assert out.explanation.limited_by == ("pre-check-max",)
    # The first successful scale read seeds the history even on this path.
    assert out.history.recommendations == (Recommendation(12, NOW),)


def test_below_min_precheck() -> None:
    out = reconcile(inputs(hpa(min_replicas=3), 1, [], pods(1)))
    assert out.desired_replicas == 3
    assert ev(out)[0][2] == "New size: 3; reason: Current number of replicas below Spec.MinReplicas"


def test_precheck_keeps_scaling_active_and_limited() -> None:
    status = {
        "currentReplicas": 5,
        "desiredReplicas": 5,
        "conditions": [
            {
                "type": "ScalingActive",
                "status": "True",
                "reason": "ValidMetricFound",
                "message": "m",
                "lastTransitionTime": "2025-12-01T00:00:00Z",
            },
            {
                "type": "ScalingLimited",
                "status": "False",
                "reason": "DesiredWithinRange",
                "message": "n",
                "lastTransitionTime": "2025-12-01T00:00:00Z",
            },
        ],
    }
    out = reconcile(inputs(hpa(max_replicas=4, status=status), 5))
    c = out.status_raw["conditions"]
    assert [x["type"] for x in c] == [
        "ScalingActive",
        "ScalingLimited",
        "AbleToScale",
        "ScaledToZero",
    ]
    assert c[0]["message"] == "m" and c[0]["lastTransitionTime"] == "2025-12-01T00:00:00Z"


def test_zero_replicas_disables_scaling() -> None:
    out = reconcile(inputs(hpa(), 0))
    assert not out.rescaled and out.desired_replicas == 0
    assert out.events == ()
    raw = out.status_raw
    assert "currentReplicas" not in raw and raw["desiredReplicas"] == 0
    assert cond_map(raw) == {
        "AbleToScale": GOT_SCALE,
        "ScalingActive": (
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        ),
    }


def test_scale_to_zero_sets_condition() -> None:
    ps = pods(2)
    h = hpa(metrics=[external()], min_replicas=0, behavior=BEHAVIOR_FAST_DOWN)
    out = reconcile(inputs(h, 2, [ext_value(0)], ps))
    assert out.desired_replicas == 0 and out.rescaled
    assert ev(out) == [
        ("Normal", "SuccessfulRescale", "New size: 0; reason: All metrics below target")
    ]
    assert cond_map(out.status_raw)["ScaledToZero"] == (
        "True",
        "ScaledToZero",
        "the HPA controller scaled the workload to zero",
    )
    assert out.history.scale_down_events == (ScaleEvent(2, NOW),)


def _scaled_to_zero_status() -> dict[str, object]:
    return {
        "desiredReplicas": 0,
        "conditions": [
            {
                "type": "ScaledToZero",
                "status": "True",
                "reason": "ScaledToZero",
                "message": "the HPA controller scaled the workload to zero",
                "lastTransitionTime": "2025-12-31T00:00:00Z",
            }
        ],
    }


def test_scale_from_zero_with_external_metric() -> None:
    h = hpa(metrics=[external()], min_replicas=0, behavior={}, status=_scaled_to_zero_status())
    inp = inputs(h, 0, [ext_value(350_000)], ())
    assert needs_metrics(inp)
    out = reconcile(inp)
    # ceil(350 / 100) = 4 with no tolerance and no pod count at zero replicas.
    assert out.desired_replicas == 4
    assert ev(out) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: external metric queue(nil) above target",
        )
    ]
    assert cond_map(out.status_raw)["ScaledToZero"] == NOT_SCALED_TO_ZERO
    assert out.status_raw["currentMetrics"] == [
        {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": "350"}}}
    ]


def test_scale_from_zero_raised_to_min_replicas() -> None:
    h = hpa(metrics=[external()], min_replicas=2, behavior={}, status=_scaled_to_zero_status())
    out = reconcile(inputs(h, 0, [ext_value(0)], ()))
    assert out.desired_replicas == 2
    assert ev(out)[0][2] == "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    assert "scale-from-zero-min" in out.explanation.limited_by


def test_zero_without_object_or_external_metric_stays_disabled() -> None:
    h = hpa(metrics=[cpu()], min_replicas=0, status=_scaled_to_zero_status())
    out = reconcile(inputs(h, 0))
    assert not out.rescaled
    assert cond_map(out.status_raw)["ScalingActive"][1] == "ScalingDisabled"


def test_scale_to_zero_gate_off_removes_condition_and_disables() -> None:
    h = hpa(metrics=[external()], min_replicas=0, status=_scaled_to_zero_status())
    out = reconcile(inputs(h, 0, config=CoreConfig(scale_to_zero=False)))
    assert not out.rescaled
    c = cond_map(out.status_raw)
    assert "ScaledToZero" not in c and c["ScalingActive"][1] == "ScalingDisabled"


def test_gate_off_rescale_sets_no_scaled_to_zero_condition() -> None:
    ps = pods(3)
    out = reconcile(
        inputs(hpa(), 3, [samples(ps, 900)], ps, config=CoreConfig(scale_to_zero=False))
    )
    assert out.rescaled and "ScaledToZero" not in cond_map(out.status_raw)


# ------------------------------------------------------------------ scale target (§3)


def test_failed_get_scale() -> None:
    prev = {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": 40, "averageValue": "400m"},
                },
            }
        ],
    }
    h = hpa(status=prev)
    inp = inputs(h, None, scale_error='deployments.apps "web" not found')
    assert not needs_metrics(inp)
    plan = decide(inp)
    assert not plan.rescale
    out = finalize(plan)
    assert ev(out) == [("Warning", "FailedGetScale", 'deployments.apps "web" not found')]
    raw = out.status_raw
    assert raw["currentReplicas"] == 3 and raw["desiredReplicas"] == 4
    assert raw["currentMetrics"] == prev["currentMetrics"]
    assert conds(raw) == [
        (
            "AbleToScale",
            "False",
            "FailedGetScale",
            'the HPA controller was unable to get the target\'s current scale: deployments.apps "web" not found',
        )
    ]
    assert out.history == History()  # no recommendation recorded
    assert (
        out.error
        == 'failed to query scale subresource for Deployment/ns/web: deployments.apps "web" not found'
    )


# --------------------------------------------------------------------- selectors (§4)


def test_selector_required() -> None:
    out = reconcile(inputs(hpa(), 3, selector=""))
    assert ev(out) == [
        ("Warning", "SelectorRequired", "selector is required"),
        ("Warning", "FailedComputeMetricsReplicas", "selector is required"),
    ]
    assert cond_map(out.status_raw) == {
        "AbleToScale": GOT_SCALE,
        "ScalingActive": (
            "False",
            "InvalidSelector",
            "the HPA target's scale is missing a selector",
        ),
    }
    assert out.status_raw["currentReplicas"] == 3 and out.status_raw["desiredReplicas"] == 0
    assert not out.rescaled


def test_invalid_selector() -> None:
    bad = "app in (web"
    with pytest.raises(ValueError) as e:
        parse_selector(bad)
    msg = f"couldn't convert selector into a corresponding internal selector object: {e.value}"
    out = reconcile(inputs(hpa(), 3, selector=bad))
    assert ev(out) == [
        ("Warning", "InvalidSelector", msg),
        ("Warning", "FailedComputeMetricsReplicas", msg),
    ]
    assert cond_map(out.status_raw)["ScalingActive"] == ("False", "InvalidSelector", msg)


def test_ambiguous_selector() -> None:
    ps = pods(2)
    store = {KEY: Selector.nothing(), "ns/other": parse_selector("app=web")}
    inp = inputs(hpa(), 2, [samples(ps, 500)], ps, hpa_selectors=store)
    assert not needs_metrics(inp)
    plan = decide(inp)
    msg = "pods by selector app=web are controlled by multiple HPAs: [ns/other ns/web]"
    assert [(e.reason, e.message) for e in plan.events] == [
        ("AmbiguousSelector", msg),
        ("FailedComputeMetricsReplicas", msg),
    ]
    assert plan.selector == parse_selector("app=web")  # stored for this registered HPA
    out = finalize(plan)
    assert cond_map(out.status_raw)["ScalingActive"] == ("False", "AmbiguousSelector", msg)


def test_with_selector_validates_once_and_decides_alike() -> None:
    ps = pods(2)
    store = {KEY: Selector.nothing(), "ns/other": parse_selector("app=web")}
    ambiguous = inputs(hpa(), 2, [samples(ps, 500)], ps, hpa_selectors=store)
    fine = inputs(hpa(), 2, [samples(ps, 900)], ps)
    for inp in (ambiguous, fine):
        done = with_selector(inp)
        assert done.selector_result is not None
        assert with_selector(done) is done  # not validated again
        assert needs_metrics(done) == needs_metrics(inp)
        assert reconcile(done) == reconcile(inp)
    # Nothing to validate before §4: a failed scale read or a pre-check path.
    assert with_selector(inputs(hpa(), None)).selector_result is None
    assert with_selector(inputs(hpa(), 0)).selector_result is None


def test_not_yet_reconciled_hpa_does_not_make_ambiguity() -> None:
    ps = pods(2)
    store = {KEY: Selector.nothing(), "ns/other": Selector.nothing()}
    out = reconcile(inputs(hpa(), 2, [samples(ps, 500)], ps, hpa_selectors=store))
    assert cond_map(out.status_raw)["ScalingActive"][1] == "ValidMetricFound"


def test_pods_outside_selector_are_ignored() -> None:
    mine = pods(2)
    foreign = tuple(replace(p, name=f"x-{p.name}", labels={"app": "db"}) for p in pods(4))
    metrics = samples(mine, 500)
    out = reconcile(inputs(hpa(), 2, [metrics], (*mine, *foreign)))
    assert out.desired_replicas == 2 and not out.rescaled


# ----------------------------------------------------------------- metric failures (§6)

CPU_EMPTY = (
    "failed to get cpu utilization: unable to get metrics for resource cpu: "
    "no metrics returned from resource metrics API"
)


def test_all_metrics_invalid_is_whole_sync_failure() -> None:
    prev = {"currentReplicas": 3, "desiredReplicas": 5, "lastScaleTime": "2025-12-31T10:00:00Z"}
    out = reconcile(
        inputs(
            hpa(status=prev),
            3,
            [MetricFetchError("no metrics returned from resource metrics API")],
            pods(3),
        )
    )
    assert not out.rescaled
    assert ev(out) == [
        ("Warning", "FailedGetResourceMetric", CPU_EMPTY),
        (
            "Warning",
            "FailedComputeMetricsReplicas",
            "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: "
            + CPU_EMPTY,
        ),
    ]
    raw = out.status_raw
    assert raw["desiredReplicas"] == 5 and raw["currentReplicas"] == 3
    assert raw["lastScaleTime"] == "2025-12-31T10:00:00Z"
    assert raw["currentMetrics"] == [{"type": ""}]
    assert cond_map(raw)["ScalingActive"] == (
        "False",
        "FailedGetResourceMetric",
        "the HPA was unable to compute the replica count: " + CPU_EMPTY,
    )
    assert "ScalingLimited" not in cond_map(raw)
    # Only the seeded entry: no normalization ran.
    assert out.history.recommendations == (Recommendation(3, NOW),)


def test_one_metric_invalid_scale_up_proceeds() -> None:
    ps = pods(3)
    err = MetricFetchError("unable to fetch metrics from external metrics API: boom")
    out = reconcile(inputs(hpa(metrics=[cpu(), external()]), 3, [samples(ps, 900), err], ps))
    assert out.desired_replicas == 6
    ext_err = "unable to get external metric ns/queue/nil: unable to fetch metrics from external metrics API: boom"
    assert ev(out) == [
        ("Warning", "FailedGetExternalMetric", ext_err),
        ("Normal", "SuccessfulRescale", f"New size: 6; reason: {CPU_NAME} above target"),
    ]
    assert cond_map(out.status_raw)["ScalingActive"] == VALID_CPU
    assert out.status_raw["currentMetrics"][1] == {"type": ""}
    assert out.error == (
        "invalid metrics (1 invalid out of 2), first error is: failed to get queue external metric value: "
        "failed to get external metric queue: " + ext_err
    )


def test_one_metric_invalid_no_scale_down() -> None:
    ps = pods(3)
    err = MetricFetchError("unable to fetch metrics from external metrics API: boom")
    out = reconcile(inputs(hpa(metrics=[cpu(), external()]), 3, [samples(ps, 100), err], ps))
    assert not out.rescaled
    assert [e[1] for e in ev(out)] == ["FailedGetExternalMetric", "FailedComputeMetricsReplicas"]
    assert cond_map(out.status_raw)["ScalingActive"][1] == "FailedGetExternalMetric"


def test_first_of_equal_proposals_names_the_reason() -> None:
    ps = pods(2)
    h = hpa(metrics=[pods_metric("a", "10"), pods_metric("b", "10")])
    out = reconcile(inputs(h, 2, [samples(ps, 20_000), samples(ps, 20_000)], ps))
    assert ev(out)[0][2] == "New size: 4; reason: pods metric a above target"


def test_object_metric_status_and_name() -> None:
    ps = pods(2)
    out = reconcile(inputs(hpa(metrics=[obj()]), 2, [obj_value(40_000)], ps))
    # ratio 4 x 2 ready pods = 8
    assert out.desired_replicas == 4  # legacy cap max(2x2, 4)
    assert ev(out)[0][2] == "New size: 4; reason: Ingress metric rps above target"
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "Object",
            "object": {
                "metric": {"name": "rps"},
                "current": {"value": "40"},
                "describedObject": {
                    "kind": "Ingress",
                    "name": "main",
                    "apiVersion": "networking.k8s.io/v1",
                },
            },
        }
    ]


def test_external_name_prints_go_selector() -> None:
    ps = pods(2)
    m = external(selector={"matchLabels": {"queue": "jobs"}})
    out = reconcile(inputs(hpa(metrics=[m]), 2, [ext_value(400_000)], ps))
    assert cond_map(out.status_raw)["ScalingActive"][2] == (
        "the HPA was able to successfully calculate a replica count from external metric "
        "queue(&LabelSelector{MatchLabels:map[string]string{queue: jobs,},"
        "MatchExpressions:[]LabelSelectorRequirement{},})"
    )


def test_unknown_metric_type() -> None:
    h = hpa_from_raw(raw_hpa(metrics=[{"type": "Weird"}]))
    out = reconcile(inputs(h, 2, [None], pods(2)))
    assert ev(out)[0] == (
        "Warning",
        "InvalidMetricSourceType",
        'unknown metric source type "Weird"',
    )
    assert out.error_label == "spec"


# ------------------------------------------------------------------ rescale write (§9)


def test_failed_rescale() -> None:
    ps = pods(3)
    prev = {"currentReplicas": 3, "desiredReplicas": 3, "lastScaleTime": "2025-12-31T10:00:00Z"}
    plan = decide(inputs(hpa(status=prev), 3, [samples(ps, 900)], ps))
    assert plan.rescale and plan.desired_replicas == 6
    out = finalize(plan, ScaleWriteResult.failed("conflict"))
    assert ev(out) == [
        (
            "Warning",
            "FailedRescale",
            f"New size: 6; reason: {CPU_NAME} above target; error: conflict",
        )
    ]
    raw = out.status_raw
    assert raw["desiredReplicas"] == 3 and raw["lastScaleTime"] == "2025-12-31T10:00:00Z"
    assert cond_map(raw)["AbleToScale"] == (
        "False",
        "FailedUpdateScale",
        "the HPA controller was unable to update the target scale: conflict",
    )
    assert "ScaledToZero" not in cond_map(raw)
    assert out.history.scale_up_events == ()
    assert out.error == "failed to rescale Deployment/ns/web: conflict"


def test_finalize_requires_result_when_rescaling() -> None:
    ps = pods(3)
    plan = decide(inputs(hpa(), 3, [samples(ps, 900)], ps))
    with pytest.raises(ValueError):
        finalize(plan, None)


# ----------------------------------------------------------- status and conditions (§10)


def test_condition_transition_time_only_moves_on_status_change() -> None:
    t0 = "2025-12-01T00:00:00Z"
    prev = {
        "currentReplicas": 4,
        "desiredReplicas": 4,
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "reason": "ReadyForNewScale",
                "message": "x",
                "lastTransitionTime": t0,
            },
            {
                "type": "ScalingActive",
                "status": "False",
                "reason": "FailedGetResourceMetric",
                "message": "y",
                "lastTransitionTime": t0,
            },
        ],
    }
    ps = pods(4)
    out = reconcile(inputs(hpa(status=prev), 4, [samples(ps, 500)], ps))
    c = {x["type"]: x for x in out.status_raw["conditions"]}
    assert c["AbleToScale"]["lastTransitionTime"] == t0
    assert c["ScalingActive"]["lastTransitionTime"] == "2026-01-01T12:00:00Z"
    assert [x["type"] for x in out.status_raw["conditions"]] == [
        "AbleToScale",
        "ScalingActive",
        "ScalingLimited",
    ]


@pytest.mark.parametrize(("gate", "present"), [(True, True), (False, False)])
def test_observed_generation_behind_gate(gate: bool, present: bool) -> None:
    ps = pods(2)
    out = reconcile(
        inputs(hpa(generation=7), 2, [samples(ps, 500)], ps, config=CoreConfig(hpa_generation=gate))
    )
    assert ("observedGeneration" in out.status_raw) is present
    if present:
        assert out.status_raw["observedGeneration"] == 7


def test_equilibrium_is_idempotent_and_needs_no_write() -> None:
    ps = pods(4)
    first = reconcile(inputs(hpa(), 4, [samples(ps, 500)], ps))
    assert first.status_changed and not first.rescaled
    again_hpa = hpa(status=status_to_raw(first.status))
    later = NOW + timedelta(seconds=15)
    second = reconcile(
        inputs(again_hpa, 4, [samples(ps, 500, later)], ps, history=first.history, now=later)
    )
    assert not second.status_changed
    assert second.status_raw == first.status_raw


# ---------------------------------------------------------- behavior path and §16 ties


def test_behavior_scale_up_rate_limited_by_pods_policy() -> None:
    ps = pods(10)
    b = {"scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}
    hist = History(scale_up_events=(ScaleEvent(1, NOW - timedelta(seconds=30)),))
    out = reconcile(
        inputs(hpa(behavior=b, max_replicas=50), 10, [samples(ps, 1000)], ps, history=hist)
    )
    # period start 10 - 1 = 9, + 2 pods → 11.
    assert out.desired_replicas == 11
    assert cond_map(out.status_raw)["ScalingLimited"][1] == "ScaleUpLimit"
    assert out.explanation.policy == "scaleUp Pods 2 per 60s"
    assert out.history.scale_up_events == (
        ScaleEvent(1, NOW - timedelta(seconds=30)),
        ScaleEvent(1, NOW),
    )


def test_behavior_select_policy_disabled_blocks_scale_up() -> None:
    ps = pods(3)
    out = reconcile(
        inputs(hpa(behavior={"scaleUp": {"selectPolicy": "Disabled"}}), 3, [samples(ps, 900)], ps)
    )
    assert not out.rescaled
    assert cond_map(out.status_raw)["ScalingLimited"] == (
        "True",
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
    )


def test_behavior_scale_up_stabilized() -> None:
    ps = pods(3)
    b = {"scaleUp": {"stabilizationWindowSeconds": 120}}
    hist = History((Recommendation(3, NOW - timedelta(seconds=60)),))
    out = reconcile(inputs(hpa(behavior=b), 3, [samples(ps, 900)], ps, history=hist))
    assert not out.rescaled
    assert cond_map(out.status_raw)["AbleToScale"] == (
        "True",
        "ScaleUpStabilized",
        "recent recommendations were lower than current one, applying the lowest recent recommendation",
    )


@pytest.mark.parametrize(
    ("age", "expected"),
    [(timedelta(seconds=60), 1), (timedelta(seconds=59), 10)],
    ids=["entry-exactly-one-window-old-is-outside", "entry-inside-window"],
)
def test_stabilization_window_tie_counts_as_outside(age: timedelta, expected: int) -> None:
    ps = pods(10)
    b = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    hist = History((Recommendation(10, NOW - age),))
    out = reconcile(inputs(hpa(behavior=b), 10, [samples(ps, 10)], ps, history=hist))
    assert out.desired_replicas == expected


@pytest.mark.parametrize("behavior", [None, BEHAVIOR_FAST_DOWN], ids=["legacy", "behavior"])
def test_zero_window_means_no_stabilization_on_first_sync(
    behavior: dict[str, object] | None,
) -> None:
    ps = pods(5)
    cfg = CoreConfig(downscale_stabilization=timedelta(0))
    out = reconcile(inputs(hpa(behavior=behavior), 5, [samples(ps, 100)], ps, config=cfg))
    assert out.desired_replicas == 1  # the seeded (5, now) entry is strictly older


def test_scale_event_exactly_one_period_old_is_not_counted() -> None:
    ps = pods(4)
    b = {
        "scaleUp": {
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
        }
    }
    for age, expected in ((timedelta(seconds=60), 5), (timedelta(seconds=59), 4)):
        hist = History(scale_up_events=(ScaleEvent(1, NOW - age),))
        out = reconcile(inputs(hpa(behavior=b), 4, [samples(ps, 900)], ps, history=hist))
        assert out.desired_replicas == expected, age


# ------------------------------------------------------------------- metrics_to_fetch


def test_metrics_to_fetch_per_type() -> None:
    m = [
        cpu(),
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        },
        pods_metric("qps"),
        obj(),
        external(selector={"matchLabels": {"q": "a"}}),
        {"type": "External", "external": {"metric": {"name": "x"}, "target": {"type": "Value"}}},
    ]
    reqs = metrics_to_fetch(hpa(metrics=m))
    assert [r.kind for r in reqs] == ["resource", "resource", "pods", "object", "external", "none"]
    assert (reqs[1].resource, reqs[1].container) == ("cpu", "app")
    assert reqs[3].described_object is not None and reqs[3].described_object.kind == "Ingress"
    assert reqs[4].metric_selector == {"matchLabels": {"q": "a"}}


# ---------------------------------------------------------------- error chains (§6, §12)

BOOM_CM = "unable to fetch metrics from custom metrics API: boom"
BOOM_EM = "unable to fetch metrics from external metrics API: boom"
NO_RM = "no metrics returned from resource metrics API"
OBJ_ERR = f"unable to get metric rps: Ingress on ns main/{BOOM_CM}"
EXT_ERR = f"unable to get external metric ns/queue/nil: {BOOM_EM}"
NEITHER_RES = (
    "invalid resource metric source: neither an average utilization target nor an "
    "average value (usage) target was set"
)
NEITHER_OBJ = (
    "invalid object metric source: neither a value target nor an average value target was set"
)
NEITHER_EXT = (
    "invalid external metric source: neither a value target nor an average value target was set"
)
OBJ_AVG = {
    "type": "Object",
    "object": {
        "describedObject": {"kind": "Ingress", "name": "main"},
        "metric": {"name": "rps"},
        "target": {"type": "AverageValue", "averageValue": "10"},
    },
}
CONTAINER_CPU = {
    "type": "ContainerResource",
    "containerResource": {
        "name": "cpu",
        "container": "app",
        "target": {"type": "Utilization", "averageUtilization": 50},
    },
}


@pytest.mark.parametrize(
    ("spec", "data", "reason", "event_msg", "aggregate"),
    [
        (
            pods_metric("qps"),
            MetricFetchError(BOOM_CM),
            "FailedGetPodsMetric",
            f"unable to get metric qps: {BOOM_CM}",
            f"failed to get pods metric value: unable to get metric qps: {BOOM_CM}",
        ),
        (
            obj(),
            MetricFetchError(BOOM_CM),
            "FailedGetObjectMetric",
            OBJ_ERR,
            f"failed to get object metric value: {OBJ_ERR}",
        ),
        (
            OBJ_AVG,
            MetricFetchError(BOOM_CM),
            "FailedGetObjectMetric",
            OBJ_ERR,
            f"failed to get object metric value: failed to get rps object metric: {OBJ_ERR}",
        ),
        (
            external(value=None, average="5"),
            MetricFetchError(BOOM_EM),
            "FailedGetExternalMetric",
            EXT_ERR,
            f"failed to get queue external metric value: failed to get queue external metric: {EXT_ERR}",
        ),
        (
            CONTAINER_CPU,
            MetricFetchError(NO_RM),
            "FailedGetContainerResourceMetric",
            f"failed to get cpu utilization: unable to get metrics for resource cpu: {NO_RM}",
            "failed to get app container metric value: failed to get cpu utilization: "
            f"unable to get metrics for resource cpu: {NO_RM}",
        ),
        (
            memory_avg("1Gi"),
            MetricFetchError(NO_RM),
            "FailedGetResourceMetric",
            f"failed to get memory usage: unable to get metrics for resource memory: {NO_RM}",
            "failed to get memory resource metric value: failed to get memory usage: "
            f"unable to get metrics for resource memory: {NO_RM}",
        ),
        (
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
            None,
            "FailedGetResourceMetric",
            NEITHER_RES,
            f"failed to get cpu resource metric value: {NEITHER_RES}",
        ),
        (
            {
                "type": "Object",
                "object": {
                    "describedObject": {"kind": "Ingress", "name": "main"},
                    "metric": {"name": "rps"},
                    "target": {"type": "Value"},
                },
            },
            None,
            "FailedGetObjectMetric",
            NEITHER_OBJ,
            f"failed to get object metric value: {NEITHER_OBJ}",
        ),
        (
            {
                "type": "External",
                "external": {"metric": {"name": "queue"}, "target": {"type": "Value"}},
            },
            None,
            "FailedGetExternalMetric",
            NEITHER_EXT,
            f"failed to get queue external metric value: {NEITHER_EXT}",
        ),
    ],
    ids=[
        "pods",
        "object-value",
        "object-average",
        "external-average",
        "container-resource",
        "resource-average-value",
        "resource-no-target",
        "object-no-target",
        "external-no-target",
    ],
)
def test_single_metric_failure_texts(
    spec: dict[str, object], data: object, reason: str, event_msg: str, aggregate: str
) -> None:
    ps = pods(2)
    out = reconcile(inputs(hpa(metrics=[spec]), 2, [data], ps))  # type: ignore[list-item]
    assert ev(out) == [
        ("Warning", reason, event_msg),
        (
            "Warning",
            "FailedComputeMetricsReplicas",
            f"invalid metrics (1 invalid out of 1), first error is: {aggregate}",
        ),
    ]
    assert cond_map(out.status_raw)["ScalingActive"] == (
        "False",
        reason,
        f"the HPA was unable to compute the replica count: {event_msg}",
    )


def test_invalid_metric_selector_fails_the_metric() -> None:
    from hpactl.model.selectors import selector_from_label_selector

    sel = {"matchExpressions": [{"key": "a", "operator": "Bogus", "values": ["x"]}]}
    with pytest.raises(ValueError) as e:
        selector_from_label_selector(sel)
    spec = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "qps", "selector": sel},
            "target": {"type": "AverageValue", "averageValue": "1"},
        },
    }
    ps = pods(2)
    out = reconcile(inputs(hpa(metrics=[spec]), 2, [samples(ps, 1000)], ps))
    assert ev(out)[0] == ("Warning", "FailedGetPodsMetric", str(e.value))
    assert ev(out)[1][2].endswith(f"first error is: failed to get pods metric value: {e.value}")


def test_object_average_value_status_and_name() -> None:
    ps = pods(2)
    out = reconcile(inputs(hpa(metrics=[OBJ_AVG]), 2, [obj_value(60_000)], ps))
    # ratio 60 / (10 x 2) = 3 -> ceil(60 / 10) = 6, legacy cap 4. describedObject is
    # copied from the spec (kubernetes PR #124555, "Fix empty describedObject in hpa status").
    assert out.desired_replicas == 4
    assert ev(out)[0][2] == "New size: 4; reason: external metric rps(nil) above target"
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "Object",
            "object": {
                "metric": {"name": "rps"},
                "current": {"averageValue": "30"},
                "describedObject": {"kind": "Ingress", "name": "main"},
            },
        }
    ]


def test_explanation_lists_set_aside_pods() -> None:
    ps = (*pods(3), *pods(1, phase="Pending"))
    ps = (*ps[:3], replace(ps[3], name="web-pending"))
    out = reconcile(inputs(hpa(), 4, [samples(ps[:3], 900)], ps))
    m = out.explanation.metrics[0]
    assert m.proposal is not None and ("web-pending", "unready-pending") in m.set_aside


@pytest.mark.parametrize(
    ("stage", "error", "label"),
    [
        ("version", "invalid API version in scale target reference: bad", "spec"),
        ("mapping", "unable to determine resource for scale target reference: bad", "internal"),
        ("get", "failed to query scale subresource for Deployment/ns/web: bad", "internal"),
    ],
)
def test_scale_error_stage_sets_returned_error(stage: str, error: str, label: str) -> None:
    inp = replace(inputs(hpa(), None, scale_error="bad"), scale_error_stage=stage)
    out = reconcile(inp)
    assert (out.error, out.error_label) == (error, label)
    assert ev(out) == [("Warning", "FailedGetScale", "bad")]


def test_explanation_to_dict_is_json_ready() -> None:
    import json

    ps = (*pods(3), replace(pods(1, phase="Pending")[0], name="web-pending"))
    out = reconcile(inputs(hpa(max_replicas=100, metrics=[cpu(10)]), 4, [samples(ps[:3], 300)], ps))
    d = json.loads(json.dumps(out.explanation.to_dict()))
    assert d["path"] == "metrics" and d["limitedBy"] == ["scale-up-limit"]
    assert d["metrics"][0]["setAside"] == [{"pod": "web-pending", "reason": "unready-pending"}]
    assert d["policy"] == "max(2 x current, 4)"


def test_core_config_from_feature_gates() -> None:
    from hpactl.model.featuregates import FeatureGates, parse_feature_gates

    assert CoreConfig.from_flags(FeatureGates.defaults()) == CoreConfig()
    cfg = CoreConfig.from_flags(
        parse_feature_gates("HPAScaleToZero=false,HPAGeneration=true"),
        tolerance=0.2,
        downscale_stabilization=timedelta(minutes=1),
    )
    assert (cfg.scale_to_zero, cfg.hpa_generation, cfg.configurable_tolerance) == (
        False,
        True,
        True,
    )
    assert (cfg.tolerance, cfg.downscale_stabilization) == (0.2, timedelta(minutes=1))
