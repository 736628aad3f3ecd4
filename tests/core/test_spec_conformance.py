"""Conformance audit of the decision core against hpa-behavior.md, section by section.

Every test drives the public API the way the controller does: HPAs and pods are raw
JSON dicts turned into models with ``hpa_from_raw`` / ``pod_view_from_raw``, each sync
is ``decide`` + ``finalize``, the written ``status_raw`` goes back into the raw object
(only when ``status_changed``, like ``updateStatusIfNeeded``), a successful rescale
changes the target's replicas, and ``outcome.history`` is fed to the next sync. Syncs
run at exact multiples of the sync period (hpa-behavior.md §16 ties).

Expected numbers, strings and condition texts come from hpa-behavior.md and from
upstream's horizontal.go / replica_calculator.go, never from the code under test.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from core_builders import cpu as cpu_util
from core_builders import external, pods_metric, raw_hpa
from core_builders import obj as object_metric

from hpactl.core.decide import (
    CoreConfig,
    Outcome,
    ScaleView,
    ScaleWriteResult,
    SyncInputs,
    decide,
    finalize,
    needs_metrics,
)
from hpactl.core.history import History
from hpactl.core.metrics_eval import MetricInput
from hpactl.model.hpa import hpa_from_raw
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetric,
)
from hpactl.model.pod import PodView, pod_view_from_raw
from hpactl.model.selectors import Selector, parse_selector

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NS = "ns"


def ts(t: float) -> str:
    """RFC 3339 text of T0 + t seconds (what the status JSON carries)."""
    return (T0 + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------- raw objects


def ext_avg(name: str = "q", average: str = "1") -> dict[str, Any]:
    """External AverageValue: proposal = ceil(sum / average) when outside tolerance."""
    return external(name, value=None, average=average)


def ext_value_metric(name: str = "q", value: str = "10") -> dict[str, Any]:
    return external(name, value)


def raw_pod(
    name: str,
    *,
    cpu_request: str = "1",
    phase: str = "Running",
    ready: str = "True",
    labels: Mapping[str, str] | None = None,
    started: str = "2025-12-31T00:00:00Z",
    ready_since: str = "2025-12-31T00:01:00Z",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": NS, "name": name, "labels": dict(labels or {"app": "web"})},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu_request}}}],
        },
        "status": {
            "phase": phase,
            "startTime": started,
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": ready_since}],
        },
    }


def pods(n: int, **kw: Any) -> tuple[PodView, ...]:
    return tuple(pod_view_from_raw(raw_pod(f"web-{i}", **kw)) for i in range(n))


def cpu_samples(
    ps: Sequence[PodView], milli: int | Sequence[int], t: float
) -> dict[str, PodMetric]:
    vals = [milli] * len(ps) if isinstance(milli, int) else list(milli)
    at = T0 + timedelta(seconds=t) - timedelta(seconds=10)
    return {p.name: PodMetric(at, timedelta(seconds=30), v) for p, v in zip(ps, vals, strict=True)}


def ext(*milli: int, t: float = 0) -> ExternalMetricValues:
    return ExternalMetricValues(tuple(milli), T0 + timedelta(seconds=t))


# ------------------------------------------------------------------------ simulator


class Sim:
    """One HPA and its target, reconciled the way the controller shell will."""

    def __init__(
        self,
        raw: Mapping[str, Any],
        replicas: int,
        *,
        config: CoreConfig | None = None,
        selector: str = "app=web",
    ) -> None:
        self.raw = copy.deepcopy(dict(raw))
        self.replicas = replicas
        self.config = config or CoreConfig()
        self.selector = selector
        self.history = History()
        self.writes = 0
        self.events: list[tuple[float, str, str, str]] = []

    @property
    def status(self) -> dict[str, Any]:
        s: dict[str, Any] = self.raw.get("status", {})
        return s

    def inputs(
        self,
        t: float,
        metrics: Sequence[MetricInput],
        ps: Sequence[PodView] = (),
        *,
        status_replicas: int | None = None,
        hpa_selectors: Mapping[str, Selector] | None = None,
    ) -> SyncInputs:
        h = hpa_from_raw(self.raw)
        return SyncInputs(
            hpa=h,
            scale=ScaleView(
                self.replicas,
                self.replicas if status_replicas is None else status_replicas,
                self.selector,
            ),
            pods=tuple(ps),
            metrics=tuple(metrics),
            history=self.history,
            config=self.config,
            now=T0 + timedelta(seconds=t),
            hpa_selectors=dict(hpa_selectors)
            if hpa_selectors is not None
            else {h.key: Selector.nothing()},
        )

    def apply(self, t: float, out: Outcome) -> Outcome:
        self.history = out.history
        if out.status_changed:
            self.writes += 1
            # What the API server stores and the informer serves back.
            self.raw["status"] = json.loads(json.dumps(out.status_raw))
        self.events.extend((t, e.type, e.reason, e.message) for e in out.events)
        return out

    def sync(
        self,
        t: float,
        metrics: Sequence[MetricInput],
        ps: Sequence[PodView] = (),
        *,
        write: ScaleWriteResult | None = None,
        status_replicas: int | None = None,
        hpa_selectors: Mapping[str, Selector] | None = None,
    ) -> Outcome:
        plan = decide(
            self.inputs(
                t, metrics, ps, status_replicas=status_replicas, hpa_selectors=hpa_selectors
            )
        )
        result = None
        if plan.rescale:
            result = write or ScaleWriteResult.succeeded()
            if result.ok:
                self.replicas = plan.desired_replicas
        return self.apply(t, finalize(plan, result))

    def sync_failed_scale(self, t: float, error: str) -> Outcome:
        h = hpa_from_raw(self.raw)
        inp = SyncInputs(
            hpa=h,
            scale=None,
            pods=(),
            metrics=(),
            history=self.history,
            config=self.config,
            now=T0 + timedelta(seconds=t),
            hpa_selectors={h.key: Selector.nothing()},
            scale_error=error,
        )
        return self.apply(t, finalize(decide(inp), None))


def evs(out: Outcome) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in out.events]


def conds(status: Mapping[str, Any]) -> list[tuple[str, str, str, str, str | None]]:
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""), c["lastTransitionTime"])
        for c in status.get("conditions", [])
    ]


def cond(status: Mapping[str, Any], type_: str) -> tuple[str, str, str, str | None]:
    for c in status.get("conditions", []):
        if c["type"] == type_:
            return (c["status"], c.get("reason", ""), c.get("message", ""), c["lastTransitionTime"])
    raise AssertionError(f"no {type_} condition in {status}")


# Condition texts (hpa-behavior.md §11).
GOT_SCALE = "the HPA controller was able to get the target's current scale"
READY = "recommended size matches current size"
DOWN_STAB = "recent recommendations were higher than current one, applying the highest recent recommendation"
UP_STAB = (
    "recent recommendations were lower than current one, applying the lowest recent recommendation"
)
WITHIN = "the desired count is within the acceptable range"
TOO_MANY = "the desired replica count is more than the maximum replica count"
TOO_FEW = "the desired replica count is less than the minimum replica count"
UP_LIMIT = "the desired replica count is increasing faster than the maximum scale rate"
DOWN_LIMIT = "the desired replica count is decreasing faster than the maximum scale rate"
CPU_NAME = "cpu resource utilization (percentage of request)"
Q_NAME = "external metric q(nil)"
NOT_ZERO = "the HPA controller did not scale the workload to zero"
ZERO = "the HPA controller scaled the workload to zero"


def valid(name: str) -> str:
    return f"the HPA was able to successfully calculate a replica count from {name}"


def rescaled(n: int) -> str:
    return f"the HPA controller was able to update the target scale to {n}"


def q_status(value_milli_text: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "External",
            "external": {"metric": {"name": "q"}, "current": {"averageValue": value_milli_text}},
        }
    ]


# ============================================================== §2 one reconcile


def test_s2_4_5_first_sync_seeds_history_and_sets_able_to_scale() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3)
    out = sim.sync(0, [ext(3000)])
    # proposal 3 == current (ratio 1, within tolerance) → nothing to do.
    assert [(r.recommendation, r.timestamp) for r in out.history.recommendations] == [
        (3, T0),
        (3, T0),
    ]
    assert out.status_raw == {
        "currentReplicas": 3,
        "desiredReplicas": 3,
        "currentMetrics": q_status("1"),
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": ts(0),
                "reason": "ReadyForNewScale",
                "message": READY,
            },
            {
                "type": "ScalingActive",
                "status": "True",
                "lastTransitionTime": ts(0),
                "reason": "ValidMetricFound",
                "message": valid(Q_NAME),
            },
            {
                "type": "ScalingLimited",
                "status": "False",
                "lastTransitionTime": ts(0),
                "reason": "DesiredWithinRange",
                "message": WITHIN,
            },
        ],
    }
    assert out.events == ()
    assert out.rescaled is False and out.error is None


def test_s2_5_history_seeded_even_when_pre_check_path_taken() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=5), 8)
    assert needs_metrics(sim.inputs(0, [])) is False
    out = sim.sync(0, [])
    assert [(r.recommendation, r.timestamp) for r in out.history.recommendations] == [(8, T0)]


def test_s2_7_above_max_pre_check_no_metrics_no_rate_limit() -> None:
    # 20 → 5 in one step: no stabilization, no scale-down policy applies in pre-checks.
    sim = Sim(
        raw_hpa(
            [ext_avg()],
            max_replicas=5,
            behavior={
                "scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}
            },
        ),
        20,
    )
    out = sim.sync(0, [])
    assert sim.replicas == 5
    assert evs(out) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 5; reason: Current number of replicas above Spec.MaxReplicas",
        )
    ]
    assert out.status_raw == {
        "lastScaleTime": ts(0),
        "currentReplicas": 20,
        "desiredReplicas": 5,
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": ts(0),
                "reason": "SucceededRescale",
                "message": rescaled(5),
            },
            {
                "type": "ScaledToZero",
                "status": "False",
                "lastTransitionTime": ts(0),
                "reason": "NotScaledToZero",
                "message": NOT_ZERO,
            },
        ],
    }


def test_s2_7_below_min_pre_check() -> None:
    sim = Sim(raw_hpa([ext_avg()], min_replicas=4), 1)
    out = sim.sync(0, [])
    assert sim.replicas == 4
    assert evs(out) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: Current number of replicas below Spec.MinReplicas",
        )
    ]
    assert out.status_raw["desiredReplicas"] == 4
    assert out.status_raw["currentReplicas"] == 1
    assert "currentMetrics" not in out.status_raw


def test_s2_pre_check_keeps_scaling_active_and_limited_clears_metrics() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=10), 4)
    sim.sync(0, [ext(12000)])  # 4 → 8 (legacy cap max(2x4, 4) = 8)
    assert sim.replicas == 8
    before_active = cond(sim.status, "ScalingActive")
    before_limited = cond(sim.status, "ScalingLimited")
    # The user lowers maxReplicas below current.
    sim.raw["spec"]["maxReplicas"] = 6
    out = sim.sync(15, [])
    assert sim.replicas == 6
    assert "currentMetrics" not in out.status_raw
    assert cond(out.status_raw, "ScalingActive") == before_active
    assert cond(out.status_raw, "ScalingLimited") == before_limited
    assert cond(out.status_raw, "AbleToScale") == ("True", "SucceededRescale", rescaled(6), ts(0))
    assert out.status_raw["lastScaleTime"] == ts(15)


def test_s2_8_no_change_keeps_desired_equal_current_and_skips_write() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3)
    first = sim.sync(0, [ext(3000)])
    assert first.status_changed is True
    second = sim.sync(15, [ext(3000)])
    # Same status → no UpdateStatus (updateStatusIfNeeded).
    assert second.status_changed is False
    assert second.status_raw == first.status_raw
    assert sim.writes == 1


# ============================================================== §3 scale-target failures


def test_s3_failed_get_scale_keeps_status_and_records_nothing() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3)
    sim.sync(0, [ext(6000)])  # 3 → 6
    history = sim.history
    status_before = copy.deepcopy(sim.status)
    out = sim.sync_failed_scale(15, 'deployments.apps "web" not found')
    assert evs(out) == [("Warning", "FailedGetScale", 'deployments.apps "web" not found')]
    assert out.history == history  # no recommendation recorded
    expected = copy.deepcopy(status_before)
    expected["conditions"][0] = {
        "type": "AbleToScale",
        "status": "False",
        "lastTransitionTime": ts(15),
        "reason": "FailedGetScale",
        "message": "the HPA controller was unable to get the target's current scale: "
        'deployments.apps "web" not found',
    }
    assert out.status_raw == expected
    assert (
        out.error
        == 'failed to query scale subresource for Deployment/ns/web: deployments.apps "web" not found'
    )


def test_s3_failed_get_scale_on_new_hpa_does_not_seed_history() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3)
    out = sim.sync_failed_scale(0, "unrecognized resource")
    assert out.history == History()
    assert out.status_raw == {
        "desiredReplicas": 0,
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "False",
                "lastTransitionTime": ts(0),
                "reason": "FailedGetScale",
                "message": "the HPA controller was unable to get the target's current scale: "
                "unrecognized resource",
            }
        ],
    }
    # The next successful read seeds the history at that sync.
    out2 = sim.sync(15, [ext(3000)])
    assert out2.history.recommendations[0].timestamp == T0 + timedelta(seconds=15)
    assert cond(out2.status_raw, "AbleToScale") == ("True", "ReadyForNewScale", READY, ts(15))


# ============================================================== §4 selectors


def test_s4_empty_selector_is_whole_sync_failure() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3, selector="")
    sim.raw["status"] = {"currentReplicas": 3, "desiredReplicas": 5}
    assert needs_metrics(sim.inputs(0, [])) is False
    out = sim.sync(0, [])
    assert evs(out) == [
        ("Warning", "SelectorRequired", "selector is required"),
        ("Warning", "FailedComputeMetricsReplicas", "selector is required"),
    ]
    assert out.status_raw["desiredReplicas"] == 5
    assert "currentMetrics" not in out.status_raw
    assert cond(out.status_raw, "ScalingActive") == (
        "False",
        "InvalidSelector",
        "the HPA target's scale is missing a selector",
        ts(0),
    )
    assert cond(out.status_raw, "AbleToScale") == ("True", "SucceededGetScale", GOT_SCALE, ts(0))
    assert [c[0] for c in conds(out.status_raw)] == ["AbleToScale", "ScalingActive"]
    # Seeded, but no recommendation recorded for this sync.
    assert len(out.history.recommendations) == 1


def test_s4_unparsable_selector() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3, selector="app in (web")
    out = sim.sync(0, [])
    (t1, r1, m1), (_t2, r2, m2) = evs(out)
    assert (t1, r1) == ("Warning", "InvalidSelector")
    assert m1.startswith(
        "couldn't convert selector into a corresponding internal selector object: "
    )
    assert (r2, m2) == ("FailedComputeMetricsReplicas", m1)
    assert cond(out.status_raw, "ScalingActive")[:3] == ("False", "InvalidSelector", m1)


def test_s4_ambiguous_selector_between_two_reconciled_hpas() -> None:
    ps = pods(2)
    sim = Sim(raw_hpa([ext_avg()]), 2)
    sels = {"ns/web": Selector.nothing(), "ns/other": parse_selector("app=web")}
    assert needs_metrics(sim.inputs(0, [], ps, hpa_selectors=sels)) is False
    out = sim.sync(0, [], ps, hpa_selectors=sels)
    msg = "pods by selector app=web are controlled by multiple HPAs: [ns/other ns/web]"
    assert evs(out) == [
        ("Warning", "AmbiguousSelector", msg),
        ("Warning", "FailedComputeMetricsReplicas", msg),
    ]
    assert cond(out.status_raw, "ScalingActive") == ("False", "AmbiguousSelector", msg, ts(0))
    assert sim.replicas == 2


def test_s4_new_overlapping_hpa_still_has_nothing_selector() -> None:
    ps = pods(2)
    sim = Sim(raw_hpa([ext_avg()]), 2)
    sels = {"ns/web": Selector.nothing(), "ns/other": Selector.nothing()}
    out = sim.sync(0, [ext(4000)], ps, hpa_selectors=sels)
    assert sim.replicas == 4
    assert cond(out.status_raw, "ScalingActive")[1] == "ValidMetricFound"


# ============================================================== §5 zero replicas


def test_s5_target_at_zero_scaling_disabled() -> None:
    sim = Sim(raw_hpa([ext_value_metric()]), 0)
    assert needs_metrics(sim.inputs(0, [])) is False
    out = sim.sync(0, [])
    assert out.rescaled is False and out.events == ()
    assert out.status_raw == {
        "desiredReplicas": 0,
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": ts(0),
                "reason": "SucceededGetScale",
                "message": GOT_SCALE,
            },
            {
                "type": "ScalingActive",
                "status": "False",
                "lastTransitionTime": ts(0),
                "reason": "ScalingDisabled",
                "message": "scaling is disabled since the replica count of the target is zero",
            },
        ],
    }


def test_s5_min_zero_without_scaled_to_zero_condition_is_disabled() -> None:
    # Manually scaled to zero: the HPA never scaled it there → ScalingDisabled.
    sim = Sim(raw_hpa([ext_value_metric()], min_replicas=0), 0)
    assert needs_metrics(sim.inputs(0, [])) is False
    out = sim.sync(0, [])
    assert cond(out.status_raw, "ScalingActive")[1] == "ScalingDisabled"


def test_s5_scale_to_zero_and_back() -> None:
    ps = pods(2)
    sim = Sim(
        raw_hpa(
            [ext_value_metric("q", "10")],
            min_replicas=0,
            behavior={"scaleDown": {"stabilizationWindowSeconds": 0}},
        ),
        2,
    )
    # t=0: usage 0 → ceil(0 x 2 ready pods) = 0 → scale to zero.
    out = sim.sync(0, [ext(0)], ps)
    assert sim.replicas == 0
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 0; reason: All metrics below target")
    ]
    assert cond(out.status_raw, "ScaledToZero") == ("True", "ScaledToZero", ZERO, ts(0))
    assert out.status_raw["currentReplicas"] == 2
    assert out.status_raw["desiredReplicas"] == 0
    assert out.status_raw["currentMetrics"] == [
        {"type": "External", "external": {"metric": {"name": "q"}, "current": {"value": "0"}}}
    ]

    # t=15: at zero with ScaledToZero=True and an External metric → metrics computed.
    assert needs_metrics(sim.inputs(15, [])) is True
    out = sim.sync(15, [ext(0, t=15)])
    assert sim.replicas == 0 and out.rescaled is False
    assert "currentReplicas" not in out.status_raw
    assert out.status_raw["desiredReplicas"] == 0
    assert cond(out.status_raw, "ScalingActive")[1] == "ValidMetricFound"
    assert cond(out.status_raw, "ScaledToZero") == ("True", "ScaledToZero", ZERO, ts(0))

    # t=30: usage 25 vs target 10 → ceil(2.5) = 3 with no tolerance and no pods.
    out = sim.sync(30, [ext(25000, t=30)])
    assert sim.replicas == 3
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 3; reason: {Q_NAME} above target")
    ]
    assert cond(out.status_raw, "ScaledToZero") == ("False", "NotScaledToZero", NOT_ZERO, ts(30))
    assert "currentReplicas" not in out.status_raw  # 0, omitempty
    assert out.status_raw["lastScaleTime"] == ts(30)

    # t=45: back to normal operation; ScaledToZero=False now.
    out = sim.sync(45, [ext(30000, t=45)], pods(3))
    assert cond(out.status_raw, "ScaledToZero")[:2] == ("False", "NotScaledToZero")


def test_s5_scale_from_zero_exact_ratio_no_tolerance() -> None:
    status = {
        "desiredReplicas": 0,
        "conditions": [
            {
                "type": "ScaledToZero",
                "status": "True",
                "lastTransitionTime": ts(-600),
                "reason": "ScaledToZero",
                "message": ZERO,
            }
        ],
    }
    sim = Sim(raw_hpa([ext_value_metric("q", "10")], min_replicas=0, status=status), 0)
    # usage == target: ratio exactly 1 → ceil(1) = 1 (no tolerance at zero).
    out = sim.sync(0, [ext(10000)])
    assert sim.replicas == 1
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 1; reason: {Q_NAME} above target")
    ]


def test_s5_scale_from_zero_raised_to_new_min_replicas() -> None:
    status = {
        "desiredReplicas": 0,
        "conditions": [
            {
                "type": "ScaledToZero",
                "status": "True",
                "lastTransitionTime": ts(-600),
                "reason": "ScaledToZero",
                "message": ZERO,
            }
        ],
    }
    # The user raised minReplicas to 2 while the workload was at zero (behavior path).
    sim = Sim(
        raw_hpa(
            [ext_value_metric("q", "10")],
            min_replicas=2,
            behavior={"scaleDown": {"stabilizationWindowSeconds": 0}},
            status=status,
        ),
        0,
    )
    assert needs_metrics(sim.inputs(0, [])) is True
    out = sim.sync(0, [ext(0)])
    assert sim.replicas == 2
    assert evs(out) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 2; reason: Current number of replicas below Spec.MinReplicas",
        )
    ]
    assert cond(out.status_raw, "ScaledToZero")[:2] == ("False", "NotScaledToZero")


def test_s5_scaled_to_zero_with_min_nonzero_and_only_resource_metrics_computes() -> None:
    # (minReplicas != 0 and ScaledToZero) suffices even without Object/External metrics.
    status = {
        "conditions": [
            {
                "type": "ScaledToZero",
                "status": "True",
                "lastTransitionTime": ts(-600),
                "reason": "ScaledToZero",
                "message": ZERO,
            }
        ],
    }
    sim = Sim(raw_hpa([cpu_util()], min_replicas=1, status=status), 0)
    assert needs_metrics(sim.inputs(0, [])) is True


def test_s5_gate_off_drops_scaled_to_zero_condition() -> None:
    status = {
        "desiredReplicas": 3,
        "currentReplicas": 3,
        "conditions": [
            {
                "type": "ScaledToZero",
                "status": "False",
                "lastTransitionTime": ts(-600),
                "reason": "NotScaledToZero",
                "message": NOT_ZERO,
            }
        ],
    }
    sim = Sim(raw_hpa([ext_avg()], status=status), 3, config=CoreConfig(scale_to_zero=False))
    out = sim.sync(0, [ext(6000)])
    assert sim.replicas == 6
    assert [c[0] for c in conds(out.status_raw)] == [
        "AbleToScale",
        "ScalingActive",
        "ScalingLimited",
    ]


# ============================================================== §6 metrics


def test_s6_1_tie_first_metric_names_reason() -> None:
    sim = Sim(raw_hpa([ext_avg("a"), ext_avg("b")]), 2)
    out = sim.sync(0, [ext(4000), ext(4000)])
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 4; reason: external metric a(nil) above target")
    ]
    assert cond(out.status_raw, "ScalingActive")[2] == valid("external metric a(nil)")


def test_s6_1_later_strictly_greater_metric_wins() -> None:
    sim = Sim(raw_hpa([ext_avg("a"), ext_avg("b")]), 2)
    out = sim.sync(0, [ext(3000), ext(4000)])
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 4; reason: external metric b(nil) above target")
    ]


def test_s6_1_partial_failure_with_scale_up_proceeds() -> None:
    sim = Sim(raw_hpa([ext_avg("a"), ext_avg("b")]), 2)
    err = MetricFetchError("unable to fetch metrics from external metrics API: boom")
    out = sim.sync(0, [err, ext(4000)])
    assert sim.replicas == 4
    first = "unable to get external metric ns/a/nil: unable to fetch metrics from external metrics API: boom"
    assert evs(out) == [
        ("Warning", "FailedGetExternalMetric", first),
        ("Normal", "SuccessfulRescale", "New size: 4; reason: external metric b(nil) above target"),
    ]
    assert out.status_raw["currentMetrics"][0] == {"type": ""}
    assert cond(out.status_raw, "ScalingActive")[:2] == ("True", "ValidMetricFound")
    assert (
        out.error is not None
        and "invalid metrics (1 invalid out of 2), first error is: " in out.error
    )


def test_s6_1_partial_failure_below_current_fails_whole_sync() -> None:
    sim = Sim(raw_hpa([ext_avg("a"), ext_avg("b")]), 4)
    sim.raw["status"] = {"currentReplicas": 4, "desiredReplicas": 4}
    err = MetricFetchError("no metrics returned from external metrics API")
    out = sim.sync(0, [ext(1000), err])
    assert sim.replicas == 4
    e = "unable to get external metric ns/b/nil: no metrics returned from external metrics API"
    agg = f"invalid metrics (1 invalid out of 2), first error is: failed to get b external metric value: failed to get b external metric: {e}"
    assert evs(out) == [
        ("Warning", "FailedGetExternalMetric", e),
        ("Warning", "FailedComputeMetricsReplicas", agg),
    ]
    assert cond(out.status_raw, "ScalingActive") == (
        "False",
        "FailedGetExternalMetric",
        f"the HPA was unable to compute the replica count: {e}",
        ts(0),
    )
    assert out.status_raw["desiredReplicas"] == 4
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "External",
            "external": {"metric": {"name": "a"}, "current": {"averageValue": "250m"}},
        },
        {"type": ""},
    ]


def test_s6_2_whole_sync_failure_keeps_previous_desired_and_records_nothing() -> None:
    ps = pods(4)
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    sim.sync(0, [cpu_samples(ps[:2], 900, 0)], ps[:2])  # 90% → ceil(1.8 x 2) = 4
    assert sim.replicas == 4
    assert sim.status["desiredReplicas"] == 4
    hist = sim.history
    out = sim.sync(15, [MetricFetchError("no metrics returned from resource metrics API")], ps)
    chain = (
        "failed to get cpu utilization: unable to get metrics for resource cpu: "
        "no metrics returned from resource metrics API"
    )
    agg = f"invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: {chain}"
    assert evs(out) == [
        ("Warning", "FailedGetResourceMetric", chain),
        ("Warning", "FailedComputeMetricsReplicas", agg),
    ]
    assert out.history == hist
    assert out.status_raw["currentReplicas"] == 4
    assert out.status_raw["desiredReplicas"] == 4
    assert out.status_raw["lastScaleTime"] == ts(0)
    assert out.status_raw["currentMetrics"] == [{"type": ""}]
    assert cond(out.status_raw, "ScalingActive") == (
        "False",
        "FailedGetResourceMetric",
        f"the HPA was unable to compute the replica count: {chain}",
        ts(15),
    )
    # ScalingLimited and the AbleToScale reason stay from the previous sync except
    # that AbleToScale is reset to SucceededGetScale.
    assert cond(out.status_raw, "AbleToScale") == ("True", "SucceededGetScale", GOT_SCALE, ts(0))
    assert out.error == (
        "failed to compute desired number of replicas based on listed metrics for "
        f"Deployment/ns/web: {agg}"
    )


def test_s6_2_failure_after_manual_change_reports_old_desired() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3)
    sim.sync(0, [ext(6000)])
    assert sim.status["desiredReplicas"] == 6
    sim.replicas = 2  # someone scaled the deployment by hand
    out = sim.sync(15, [MetricFetchError("no metrics returned from external metrics API")])
    assert out.status_raw["currentReplicas"] == 2
    assert out.status_raw["desiredReplicas"] == 6


def test_s6_4_utilization_status_and_missing_pods_scale_up() -> None:
    # 3 pods report 90% usage, 1 is missing: ratio 1.8 → missing pod counts as 0 usage
    # → new ratio (2700/4000) = 67% / 50% = 1.35 → ceil(1.35 x 4) = 6.
    ps = pods(4)
    sim = Sim(raw_hpa([cpu_util(50)]), 4)
    out = sim.sync(0, [cpu_samples(ps[:3], 900, 0)], ps)
    assert sim.replicas == 6
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "current": {"averageValue": "900m", "averageUtilization": 90},
            },
        }
    ]


def test_s6_4_pending_pod_unready_counts_zero_on_scale_up() -> None:
    ps = (*pods(2), pod_view_from_raw(raw_pod("web-p", phase="Pending")))
    sim = Sim(raw_hpa([cpu_util(50)]), 3)
    # ready: 2 x 100% → ratio 2; the pending pod gets usage 0 → 2000/3000 = 66% → 1.32
    # → ceil(1.32 x 3) = 4.
    out = sim.sync(0, [cpu_samples(ps[:2], 1000, 0)], ps)
    assert sim.replicas == 4
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {
        "averageValue": "1",
        "averageUtilization": 100,
    }


def test_s6_4_no_pods_error_chain() -> None:
    sim = Sim(raw_hpa([cpu_util(50)]), 3)
    stray = pods(1)
    out = sim.sync(0, [cpu_samples(stray, 500, 0)], [])
    chain = "failed to get cpu utilization: no pods returned by selector while calculating replica count"
    assert evs(out)[0] == ("Warning", "FailedGetResourceMetric", chain)
    assert cond(out.status_raw, "ScalingActive")[2] == (
        f"the HPA was unable to compute the replica count: {chain}"
    )


def test_s6_6_pods_metric_status_and_name() -> None:
    ps = pods(2)
    sim = Sim(raw_hpa([pods_metric("qps", "10")]), 2)
    vals = {p.name: PodMetric(T0, timedelta(minutes=1), 25000) for p in ps}
    out = sim.sync(0, [vals], ps)
    # average 25 vs 10 → ceil(2.5 x 2) = 5, legacy cap max(2 x 2, 4) = 4.
    assert sim.replicas == 4
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 4; reason: pods metric qps above target")
    ]
    assert out.status_raw["currentMetrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "25"}}}
    ]


def test_s6_6_pods_metric_api_down_chain() -> None:
    sim = Sim(raw_hpa([pods_metric("qps", "10")]), 2)
    err = MetricFetchError("unable to fetch metrics from custom metrics API: boom")
    out = sim.sync(0, [err], pods(2))
    assert evs(out)[0] == (
        "Warning",
        "FailedGetPodsMetric",
        "unable to get metric qps: unable to fetch metrics from custom metrics API: boom",
    )


def test_s6_7_object_value_uses_ready_running_pods() -> None:
    ps = (*pods(2), pod_view_from_raw(raw_pod("web-x", ready="False")))
    sim = Sim(raw_hpa([object_metric("rps", "10")]), 3)
    # ratio 30/10 = 3 x 2 ready pods = 6 (not 3 x 3).
    out = sim.sync(0, [ObjectMetricValue(30000, T0)], ps)
    assert sim.replicas == 6
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 6; reason: Ingress metric rps above target")
    ]
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "Object",
            "object": {
                "metric": {"name": "rps"},
                "current": {"value": "30"},
                "describedObject": {
                    "kind": "Ingress",
                    "name": "main",
                    "apiVersion": "networking.k8s.io/v1",
                },
            },
        }
    ]


def test_s6_7_object_api_down_chain() -> None:
    sim = Sim(raw_hpa([object_metric("rps", "10")]), 3)
    err = MetricFetchError("unable to fetch metrics from custom metrics API: boom")
    out = sim.sync(0, [err], pods(3))
    assert evs(out)[0] == (
        "Warning",
        "FailedGetObjectMetric",
        "unable to get metric rps: Ingress on ns main/unable to fetch metrics from custom metrics API: boom",
    )


def test_s6_7_external_average_uses_status_replicas() -> None:
    sim = Sim(raw_hpa([ext_avg("q", "1")]), 4)
    # statusReplicas 2: ratio 4/(1x2) = 2 → ceil(4/1) = 4 == spec → no change.
    out = sim.sync(0, [ext(4000)], status_replicas=2)
    assert out.rescaled is False
    assert out.status_raw["currentMetrics"] == q_status("2")


def test_s6_8_configurable_tolerance_scale_up() -> None:
    behavior = {"scaleUp": {"tolerance": "0.01"}}
    sim = Sim(raw_hpa([ext_avg("q", "1")], behavior=behavior, max_replicas=200), 100)
    # ratio 1.05: inside the default 10% but outside the configured 1%.
    out = sim.sync(0, [ext(105000)])
    assert sim.replicas == 105
    assert out.rescaled
    sim2 = Sim(raw_hpa([ext_avg("q", "1")], max_replicas=200), 100)
    assert sim2.sync(0, [ext(105000)]).rescaled is False
    sim3 = Sim(
        raw_hpa([ext_avg("q", "1")], behavior=behavior, max_replicas=200),
        100,
        config=CoreConfig(configurable_tolerance=False),
    )
    assert sim3.sync(0, [ext(105000)]).rescaled is False


def test_s6_8_tolerance_bound_inclusive() -> None:
    sim = Sim(raw_hpa([ext_avg("q", "1")], max_replicas=20), 10)
    # ratio exactly 1.1 → within tolerance → keeps statusReplicas.
    assert sim.sync(0, [ext(11000)]).rescaled is False
    sim = Sim(raw_hpa([ext_avg("q", "1")], max_replicas=20), 10)
    # ratio 0.9 exactly → within (scale-down side inclusive as well).
    out = sim.sync(0, [ext(9000)])
    assert cond(out.status_raw, "AbleToScale")[1] == "ReadyForNewScale"


# ============================================================== §7 legacy normalization


def legacy_cpu_sim(current: int = 4, **cfg: Any) -> tuple[Sim, tuple[PodView, ...]]:
    ps = pods(current)
    return Sim(raw_hpa([cpu_util(50)]), current, config=CoreConfig(**cfg)), ps


def test_s7_1_first_sync_scale_down_blocked_for_legacy_window() -> None:
    sim, ps = legacy_cpu_sim(4)
    # usage 10% vs 50% → ratio 0.2 → ceil(0.2 x 4) = 1.
    for t in range(0, 300, 15):
        out = sim.sync(t, [cpu_samples(ps, 100, t)], ps)
        assert sim.replicas == 4, t
        assert out.status_raw["desiredReplicas"] == 4
        assert cond(out.status_raw, "AbleToScale") == (
            "True",
            "ScaleDownStabilized",
            DOWN_STAB,
            ts(0),
        )
        assert cond(out.status_raw, "ScalingLimited") == (
            "False",
            "DesiredWithinRange",
            WITHIN,
            ts(0),
        )
    # Exactly one window after the first sync the seeded entry is outside it (§16).
    out = sim.sync(300, [cpu_samples(ps, 100, 300)], ps)
    assert sim.replicas == 1
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 1; reason: All metrics below target")
    ]
    assert out.status_raw["lastScaleTime"] == ts(300)
    assert cond(out.status_raw, "AbleToScale") == ("True", "SucceededRescale", rescaled(1), ts(0))
    assert cond(out.status_raw, "ScalingActive") == (
        "True",
        "ValidMetricFound",
        valid(CPU_NAME),
        ts(0),
    )
    # Status was written only when something changed (first sync and the rescale).
    assert sim.writes == 2


def test_s7_1_scale_up_not_delayed_on_first_sync() -> None:
    sim, ps = legacy_cpu_sim(2)
    out = sim.sync(0, [cpu_samples(ps, 900, 0)], ps)
    # 90% vs 50% → ceil(1.8 x 2) = 4; cap max(2x2, 4) = 4.
    assert sim.replicas == 4
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 4; reason: {CPU_NAME} above target")
    ]


def test_s16_zero_legacy_window_no_stabilization_on_first_sync() -> None:
    sim, ps = legacy_cpu_sim(4, downscale_stabilization=timedelta(0))
    out = sim.sync(0, [cpu_samples(ps, 100, 0)], ps)
    assert sim.replicas == 1
    assert cond(out.status_raw, "AbleToScale")[1] == "SucceededRescale"


def test_s7_2_stabilization_uses_max_of_window_over_syncs() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=20), 10)
    seq = [(0, 10000), (15, 8000), (30, 6000), (45, 4000)]
    for t, usage in seq:
        sim.sync(t, [ext(usage, t=t)])
        assert sim.replicas == 10
    # At 300 the entries of t=0 (10, 10) fall out; max of the rest is 8 (t=15).
    out = sim.sync(300, [ext(4000, t=300)])
    assert sim.replicas == 8
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 8; reason: All metrics below target")
    ]
    # At 315 (still current 8): window keeps 30→6, 45→4, 300→4 → 6.
    sim.sync(315, [ext(4000, t=315)])
    assert sim.replicas == 6


def test_s7_2_legacy_scale_up_limit_and_too_many() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=20), 3)
    out = sim.sync(0, [ext(15000)])
    # proposal 15, cap max(2x3, 4) = 6 < max 20 → ScaleUpLimit; reason still "above target".
    assert sim.replicas == 6
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(0))
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 6; reason: {Q_NAME} above target")
    ]
    out = sim.sync(15, [ext(15000, t=15)])
    # cap 12 < 20 → 12 (ScaleUpLimit stays True: LTT unchanged).
    assert sim.replicas == 12
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(0))
    out = sim.sync(30, [ext(30000, t=30)])
    # cap 24 ≥ max 20 → TooManyReplicas.
    assert sim.replicas == 20
    assert cond(out.status_raw, "ScalingLimited") == ("True", "TooManyReplicas", TOO_MANY, ts(0))


def test_s7_2_legacy_too_few_replicas() -> None:
    sim = Sim(
        raw_hpa([ext_avg()], min_replicas=3),
        5,
        config=CoreConfig(downscale_stabilization=timedelta(0)),
    )
    out = sim.sync(0, [ext(1000)])
    assert sim.replicas == 3
    assert cond(out.status_raw, "ScalingLimited") == ("True", "TooFewReplicas", TOO_FEW, ts(0))
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 3; reason: All metrics below target")
    ]


def test_s7_legacy_records_no_scale_events() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 2)
    out = sim.sync(0, [ext(4000)])
    assert sim.replicas == 4
    assert out.history.scale_up_events == () and out.history.scale_down_events == ()


def test_s7_1_recorded_proposal_is_pre_normalization() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=50), 3)
    out = sim.sync(0, [ext(40000)])
    assert sim.replicas == 6
    assert [r.recommendation for r in out.history.recommendations] == [3, 40]


# ============================================================== §8 behavior


def test_s8_1_behavior_default_scale_down_window_blocks_first_sync() -> None:
    sim = Sim(raw_hpa([ext_avg()], behavior={}), 4)
    for t in range(0, 300, 15):
        out = sim.sync(t, [ext(1000, t=t)])
        assert sim.replicas == 4
        assert cond(out.status_raw, "AbleToScale") == (
            "True",
            "ScaleDownStabilized",
            DOWN_STAB,
            ts(0),
        )
    out = sim.sync(300, [ext(1000, t=300)])
    # Default scaleDown policy: 100% per 15s → straight to 1.
    assert sim.replicas == 1
    assert out.history.scale_down_events[0].replica_change == 3


def test_s16_behavior_zero_windows_no_stabilization_on_first_sync() -> None:
    sim = Sim(raw_hpa([ext_avg()], behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}), 4)
    out = sim.sync(0, [ext(1000)])
    assert sim.replicas == 1
    assert cond(out.status_raw, "ScalingLimited") == ("False", "DesiredWithinRange", WITHIN, ts(0))


def test_s8_2_scale_up_window_over_syncs() -> None:
    sim = Sim(raw_hpa([ext_avg()], behavior={"scaleUp": {"stabilizationWindowSeconds": 60}}), 2)
    for t in (0, 15, 30, 45):
        out = sim.sync(t, [ext(8000, t=t)])
        assert sim.replicas == 2, t
        assert cond(out.status_raw, "AbleToScale") == ("True", "ScaleUpStabilized", UP_STAB, ts(0))
    # At 60 the seeded (2, t0) entry is out of the 60s window: min of the window is 8;
    # default scale-up policies allow max(2+4, 2x2) = 6.
    out = sim.sync(60, [ext(8000, t=60)])
    assert sim.replicas == 6
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(60))
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 6; reason: {Q_NAME} above target")
    ]


def test_s8_3_pods_policy_rate_limit_across_syncs_exact_period() -> None:
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=20), 1)
    out = sim.sync(0, [ext(10000)])
    assert sim.replicas == 3
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(0))
    for t in (15, 30, 45):
        out = sim.sync(t, [ext(10000, t=t)])
        # 2 added in the last 60s → periodStart 1 → limit 3 == current.
        assert sim.replicas == 3, t
        assert out.rescaled is False
        assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(0))
        assert out.status_raw["desiredReplicas"] == 3
    # The event of t=0 is exactly one period old at t=60: outside the period (§16).
    out = sim.sync(60, [ext(10000, t=60)])
    assert sim.replicas == 5
    # The outdated event is overwritten in place (§8.4).
    assert [(e.replica_change, e.timestamp) for e in out.history.scale_up_events] == [
        (2, T0 + timedelta(seconds=60))
    ]


def test_s8_3_percent_scale_down_truncates_float64() -> None:
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Percent", "value": 90, "periodSeconds": 15}],
        }
    }
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=30, min_replicas=1), 20)
    out = sim.sync(0, [ext(1000)])
    # 20 x (1 - 0.9) = 1.9999999999999996 → 1: nothing limits the scale down to 1.
    assert sim.replicas == 1
    assert cond(out.status_raw, "ScalingLimited") == ("False", "DesiredWithinRange", WITHIN, ts(0))


def test_s8_3_percent_scale_down_over_successive_syncs() -> None:
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
        }
    }
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=20), 10)
    out = sim.sync(0, [ext(1000)])
    assert sim.replicas == 5
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleDownLimit", DOWN_LIMIT, ts(0))
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 5; reason: All metrics below target")
    ]
    for t in (15, 30, 45):
        out = sim.sync(t, [ext(1000, t=t)])
        # periodStart = 5 + 5 removed = 10 → limit 5 == current.
        assert sim.replicas == 5, t
        assert cond(out.status_raw, "ScalingLimited")[1] == "ScaleDownLimit"
    out = sim.sync(60, [ext(1000, t=60)])
    # Event of t=0 out of the period: periodStart 5 → trunc(2.5) = 2.
    assert sim.replicas == 2
    out = sim.sync(75, [ext(1000, t=75)])
    # periodStart 2 + 3 = 5 → 2 → limit 2 == current.
    assert sim.replicas == 2


def test_s8_3_percent_scale_up_ceil_and_mixed_events() -> None:
    behavior = {
        "scaleUp": {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}]},
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
        },
    }
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=50), 5)
    sim.sync(0, [ext(1000)])
    assert sim.replicas == 4  # Pods 1 per 60s
    out = sim.sync(15, [ext(40000, t=15)])
    # periodStart = 4 - 0 + 1 = 5 → ceil(5 x 1.5) = 8.
    assert sim.replicas == 8
    assert cond(out.status_raw, "ScalingLimited")[1] == "ScaleUpLimit"


def test_s8_3_select_policy_min_and_disabled() -> None:
    behavior = {
        "scaleUp": {
            "selectPolicy": "Min",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {"selectPolicy": "Disabled", "stabilizationWindowSeconds": 0},
    }
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=50), 2)
    sim.sync(0, [ext(10000)])
    assert sim.replicas == 4  # min(2+4, 2x2)
    out = sim.sync(15, [ext(1000, t=15)])
    assert sim.replicas == 4
    # ScalingLimited stayed True (ScaleUpLimit at t=0): the transition time is kept.
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleDownLimit", DOWN_LIMIT, ts(0))
    assert out.rescaled is False


def test_s8_3_scale_up_too_many_and_scale_down_too_few() -> None:
    sim = Sim(
        raw_hpa(
            [ext_avg()],
            behavior={"scaleDown": {"stabilizationWindowSeconds": 0}},
            max_replicas=5,
            min_replicas=3,
        ),
        3,
    )
    out = sim.sync(0, [ext(10000)])
    # limit max(3+4, 6) = 7 ≥ max 5 → TooManyReplicas.
    assert sim.replicas == 5
    assert cond(out.status_raw, "ScalingLimited") == ("True", "TooManyReplicas", TOO_MANY, ts(0))
    out = sim.sync(15, [ext(1000, t=15)])
    # 100% per 15s → 0 ≤ min 3 → TooFewReplicas.
    assert sim.replicas == 3
    assert cond(out.status_raw, "ScalingLimited") == ("True", "TooFewReplicas", TOO_FEW, ts(0))


def test_s8_3_scale_up_events_count_in_scale_down_period() -> None:
    # Scale-up events of the period lower periodStart for a scale down
    # (periodStart = current - added + removed).
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
        }
    }
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=20), 2)
    sim.sync(0, [ext(6000)])
    assert sim.replicas == 6
    out = sim.sync(15, [ext(3000, t=15)])
    # periodStart = 6 - 4 added + 0 removed = 2 → Pods 1 → limit 1 ≤ min 1 → the bound is
    # minReplicas, so the proposal 3 goes through. Ignoring the scale-up event would give
    # periodStart 6 → limit 5 (ScaleDownLimit).
    assert sim.replicas == 3
    assert cond(out.status_raw, "ScalingLimited")[1] == "DesiredWithinRange"


def test_s8_4_events_only_after_successful_rescale() -> None:
    sim = Sim(raw_hpa([ext_avg()], behavior={}, max_replicas=20), 2)
    out = sim.sync(0, [ext(6000)], write=ScaleWriteResult.failed("conflict"))
    assert out.history.scale_up_events == ()
    assert sim.replicas == 2
    out = sim.sync(15, [ext(6000, t=15)])
    assert sim.replicas == 6
    assert [(e.replica_change, e.timestamp) for e in out.history.scale_up_events] == [
        (4, T0 + timedelta(seconds=15))
    ]


# ============================================================== §9 rescale


def test_s9_failed_rescale() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=20), 2)
    sim.raw["status"] = {
        "currentReplicas": 2,
        "desiredReplicas": 2,
        "lastScaleTime": ts(-100),
    }
    out = sim.sync(0, [ext(10000)], write=ScaleWriteResult.failed("the server is down"))
    assert sim.replicas == 2
    assert evs(out) == [
        (
            "Warning",
            "FailedRescale",
            f"New size: 4; reason: {Q_NAME} above target; error: the server is down",
        )
    ]
    assert out.status_raw["desiredReplicas"] == 2
    assert out.status_raw["currentReplicas"] == 2
    assert out.status_raw["lastScaleTime"] == ts(-100)
    assert out.status_raw["currentMetrics"] == q_status("5")
    assert cond(out.status_raw, "AbleToScale") == (
        "False",
        "FailedUpdateScale",
        "the HPA controller was unable to update the target scale: the server is down",
        ts(0),
    )
    # ScalingLimited was computed before the write (legacy cap 4).
    assert cond(out.status_raw, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(0))
    assert "ScaledToZero" not in [c[0] for c in conds(out.status_raw)]
    assert out.error == "failed to rescale Deployment/ns/web: the server is down"
    # The proposal was recorded anyway (normalization ran).
    assert [r.recommendation for r in out.history.recommendations] == [2, 10]
    # Next sync succeeds: AbleToScale goes back to True with a new transition time.
    out = sim.sync(15, [ext(10000, t=15)])
    assert sim.replicas == 4
    assert cond(out.status_raw, "AbleToScale") == ("True", "SucceededRescale", rescaled(4), ts(15))


def test_s9_rescale_reason_decided_before_min_clamp() -> None:
    sim = Sim(
        raw_hpa(
            [ext_avg()], min_replicas=3, behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}
        ),
        5,
    )
    out = sim.sync(0, [ext(1000)])
    assert sim.replicas == 3
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 3; reason: All metrics below target")
    ]


# ============================================================== §10 status


def test_s10_condition_ltt_changes_only_with_status() -> None:
    sim = Sim(raw_hpa([ext_avg()], max_replicas=20), 3)
    sim.sync(0, [ext(3000)])
    assert cond(sim.status, "ScalingLimited") == ("False", "DesiredWithinRange", WITHIN, ts(0))
    sim.sync(15, [ext(12000, t=15)])  # cap 6 → ScalingLimited True at 15
    assert cond(sim.status, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(15))
    sim.sync(30, [ext(60000, t=30)])  # cap 12 → still True/ScaleUpLimit, LTT kept
    assert cond(sim.status, "ScalingLimited") == ("True", "ScaleUpLimit", UP_LIMIT, ts(15))
    sim.sync(45, [ext(60000, t=45)])  # cap 24 > max 20 → True/TooManyReplicas, LTT kept
    assert cond(sim.status, "ScalingLimited") == ("True", "TooManyReplicas", TOO_MANY, ts(15))
    # AbleToScale reason changed many times but stayed True since t=0.
    assert cond(sim.status, "AbleToScale") == ("True", "SucceededRescale", rescaled(20), ts(0))


def test_s10_condition_order_of_first_appearance_kept() -> None:
    status = {
        "currentReplicas": 3,
        "desiredReplicas": 3,
        "conditions": [
            {
                "type": "ScalingLimited",
                "status": "False",
                "lastTransitionTime": ts(-60),
                "reason": "DesiredWithinRange",
                "message": WITHIN,
            },
            {
                "type": "Custom",
                "status": "True",
                "lastTransitionTime": ts(-60),
                "reason": "X",
                "message": "y",
            },
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": ts(-60),
                "reason": "ReadyForNewScale",
                "message": READY,
            },
        ],
    }
    sim = Sim(raw_hpa([ext_avg()], status=status), 3)
    out = sim.sync(0, [ext(3000)])
    assert [c[0] for c in conds(out.status_raw)] == [
        "ScalingLimited",
        "Custom",
        "AbleToScale",
        "ScalingActive",
    ]
    assert cond(out.status_raw, "Custom") == ("True", "X", "y", ts(-60))
    assert cond(out.status_raw, "AbleToScale") == ("True", "ReadyForNewScale", READY, ts(-60))
    assert cond(out.status_raw, "ScalingActive")[3] == ts(0)


def test_s10_observed_generation_behind_gate() -> None:
    sim = Sim(raw_hpa([ext_avg()], generation=7), 3, config=CoreConfig(hpa_generation=True))
    out = sim.sync(0, [ext(3000)])
    assert out.status_raw["observedGeneration"] == 7
    assert next(iter(out.status_raw)) == "observedGeneration"
    # Generation bump alone makes the status differ → written.
    sim.raw["metadata"]["generation"] = 8
    out = sim.sync(15, [ext(3000, t=15)])
    assert out.status_changed and out.status_raw["observedGeneration"] == 8
    sim_off = Sim(raw_hpa([ext_avg()], generation=7), 3)
    assert "observedGeneration" not in sim_off.sync(0, [ext(3000)]).status_raw


def test_s10_observed_generation_in_failure_paths() -> None:
    sim = Sim(raw_hpa([ext_avg()], generation=4), 3, config=CoreConfig(hpa_generation=True))
    out = sim.sync(0, [MetricFetchError("no metrics returned from external metrics API")])
    assert out.status_raw["observedGeneration"] == 4


def test_s10_last_scale_time_kept_when_not_rescaled() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 2)
    sim.sync(0, [ext(4000)])
    assert sim.status["lastScaleTime"] == ts(0)
    out = sim.sync(15, [ext(4000, t=15)])
    assert out.status_raw["lastScaleTime"] == ts(0)


# ============================================================== history quirks (§7.1)


def test_s7_1_seed_from_pre_check_sync_holds_value_at_max() -> None:
    # The seed is the replica count read at the first sync (20), even though the
    # pre-check then scaled to max: for one window the legacy stabilization keeps
    # recommending 20, clamped to max (TooManyReplicas), so no scale down happens.
    sim = Sim(raw_hpa([ext_avg()], max_replicas=10), 20)
    sim.sync(0, [])
    assert sim.replicas == 10
    for t in range(15, 300, 15):
        out = sim.sync(t, [ext(2000, t=t)])
        assert sim.replicas == 10, t
        assert cond(out.status_raw, "AbleToScale")[1] == "ScaleDownStabilized"
        assert cond(out.status_raw, "ScalingLimited") == (
            "True",
            "TooManyReplicas",
            TOO_MANY,
            ts(15),
        )
    out = sim.sync(300, [ext(2000, t=300)])
    assert sim.replicas == 2


def test_s7_1_seed_at_zero_does_not_block_later_scale_down() -> None:
    # Seeded with 0 while scaling was disabled; after a manual scale to 5 the window
    # holds only low recommendations, so the first metric sync scales down at once.
    sim = Sim(raw_hpa([ext_avg()]), 0)
    sim.sync(0, [])
    sim.replicas = 5
    out = sim.sync(15, [ext(2000, t=15)])
    assert sim.replicas == 2
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 2; reason: All metrics below target")
    ]


def test_s7_1_pre_check_syncs_record_no_recommendation() -> None:
    sim = Sim(raw_hpa([ext_avg()], min_replicas=3), 1)
    sim.sync(0, [])
    assert [(r.recommendation, r.timestamp) for r in sim.history.recommendations] == [(1, T0)]


def test_s8_4_pre_check_rescale_stores_scale_event() -> None:
    behavior = {"scaleUp": {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 60}]}}
    sim = Sim(raw_hpa([ext_avg()], min_replicas=5, max_replicas=30, behavior=behavior), 2)
    sim.sync(0, [])
    assert sim.replicas == 5
    assert [(e.replica_change, e.timestamp) for e in sim.history.scale_up_events] == [(3, T0)]
    out = sim.sync(15, [ext(20000, t=15)])
    # periodStart = 5 - 3 = 2 → limit 6.
    assert sim.replicas == 6
    assert cond(out.status_raw, "ScalingLimited")[1] == "ScaleUpLimit"


def test_s8_2_up_and_down_windows_together() -> None:
    behavior = {
        "scaleUp": {"stabilizationWindowSeconds": 30},
        "scaleDown": {"stabilizationWindowSeconds": 30},
    }
    sim = Sim(raw_hpa([ext_avg()], behavior=behavior, max_replicas=20), 5)
    usages = {0: 5000, 15: 9000, 30: 3000, 45: 9000, 60: 9000, 75: 9000}
    seen = {}
    for t, u in usages.items():
        sim.sync(t, [ext(u, t=t)])
        seen[t] = sim.replicas
    # t=15: up window holds the seed 5 → stays 5 (ScaleUpStabilized).
    # t=30: proposal 3, down window holds 9 (t=15) → max 9 caps, min 3 → current 5 kept.
    # t=45: window (15, 45] holds 3 and 9 → min 3 → current 5 kept.
    # t=60: window (30, 60] holds 9 (t=45) and proposal 9 → 9 (policies allow +4 → 9).
    # t=75: current 9, everything 9 → stays.
    assert seen == {0: 5, 15: 5, 30: 5, 45: 5, 60: 9, 75: 9}


# ============================================================== §6.3 pod classification


def test_s6_3_cpu_initializing_pod_sample_before_ready_window_is_unready() -> None:
    ready_pods = pods(2)
    fresh = pod_view_from_raw(raw_pod("web-new", started=ts(-60), ready_since=ts(-20)))
    ps = (*ready_pods, fresh)
    sim = Sim(raw_hpa([cpu_util(50)]), 3)
    # Sample at t-10 with a 30s window: before readyTransition + window → unready.
    # Ready: 2 x 100% → ratio 2; the unready pod counts 0 → 2000/3000 = 66% → ceil(1.32 x 3) = 4.
    out = sim.sync(0, [cpu_samples(ps, 1000, 0)], ps)
    assert sim.replicas == 4
    assert out.status_raw["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 100


def test_s6_3_cpu_never_ready_pod_is_unready_but_once_ready_pod_counts() -> None:
    never = pod_view_from_raw(
        raw_pod(
            "web-n",
            ready="False",
            started="2025-12-31T00:00:00Z",
            ready_since="2025-12-31T00:00:10Z",
        )
    )
    sim = Sim(raw_hpa([cpu_util(50)]), 3)
    ps = (*pods(2), never)
    sim.sync(0, [cpu_samples(ps, 1000, 0)], ps)
    assert sim.replicas == 4  # same as an unready pod
    once = pod_view_from_raw(
        raw_pod(
            "web-o",
            ready="False",
            started="2025-12-31T00:00:00Z",
            ready_since="2025-12-31T00:10:00Z",
        )
    )
    sim = Sim(raw_hpa([cpu_util(50)]), 3)
    ps = (*pods(2), once)
    sim.sync(0, [cpu_samples(ps, 1000, 0)], ps)
    # Counted ready: 3 x 100% → ceil(2 x 3) = 6 (legacy cap 6).
    assert sim.replicas == 6


def test_s6_3_memory_ignores_readiness() -> None:
    mem = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
    }
    notready = pod_view_from_raw(
        raw_pod("web-n", ready="False", started=ts(-10), ready_since=ts(-5))
    )
    ps = (*pods(1), notready)
    mib = 1024 * 1024 * 1000  # one MiB in milli-units
    samples = {
        ps[0].name: PodMetric(T0 - timedelta(seconds=10), timedelta(seconds=30), 300 * mib),
        ps[1].name: PodMetric(T0 - timedelta(seconds=10), timedelta(seconds=30), 100 * mib),
    }
    sim = Sim(raw_hpa([mem]), 2)
    out = sim.sync(0, [samples], ps)
    # Both samples count: average 200Mi vs 100Mi → ceil(2 x 2) = 4.
    assert sim.replicas == 4
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 4; reason: memory resource above target")
    ]


def test_s6_3_deleting_and_failed_pods_ignored_but_need_requests() -> None:
    deleting_raw = raw_pod("web-d")
    deleting_raw["metadata"]["deletionTimestamp"] = ts(-5)
    failed_raw = raw_pod("web-f", phase="Failed")
    ps = (*pods(2), pod_view_from_raw(deleting_raw), pod_view_from_raw(failed_raw))
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    # The deleting pod reports 0 usage; ignored, it must not drag the average down.
    vals = cpu_samples(ps[:3], [1000, 1000, 0], 0)
    out = sim.sync(0, [vals], ps)
    assert sim.replicas == 4
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {
        "averageValue": "1",
        "averageUtilization": 100,
    }
    # A failed pod without a cpu request still fails the metric.
    failed_raw["spec"]["containers"][0]["resources"] = {}
    ps = (*pods(2), pod_view_from_raw(failed_raw))
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    out = sim.sync(0, [cpu_samples(ps[:2], 1000, 0)], ps)
    assert evs(out)[0] == (
        "Warning",
        "FailedGetResourceMetric",
        "failed to get cpu utilization: missing request for cpu in container app of Pod web-f",
    )


def test_s6_4_sidecar_requests_count() -> None:
    raws = [raw_pod(f"web-{i}") for i in range(2)]
    for r in raws:
        r["spec"]["initContainers"] = [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "init", "resources": {"requests": {"cpu": "5"}}},
        ]
    ps = tuple(pod_view_from_raw(r) for r in raws)
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    # request 2 cpu per pod (app + sidecar); usage 1.5 → 75% → ratio 1.5 → 3.
    out = sim.sync(0, [cpu_samples(ps, 1500, 0)], ps)
    assert sim.replicas == 3
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {
        "averageValue": "1500m",
        "averageUtilization": 75,
    }


def test_s6_5_container_resource_status_name_and_errors() -> None:
    cr = {
        "type": "ContainerResource",
        "containerResource": {
            "name": "cpu",
            "container": "app",
            "target": {"type": "Utilization", "averageUtilization": 50},
        },
    }
    ps = pods(2)
    sim = Sim(raw_hpa([cr]), 2)
    out = sim.sync(0, [cpu_samples(ps, 900, 0)], ps)
    name = "cpu container resource utilization (percentage of request)"
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 4; reason: {name} above target")
    ]
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "current": {"averageValue": "900m", "averageUtilization": 90},
                "container": "app",
            },
        }
    ]
    cr["containerResource"]["container"] = "sidecar"
    sim = Sim(raw_hpa([cr]), 2)
    out = sim.sync(0, [cpu_samples(ps, 900, 0)], ps)
    e = "failed to get cpu utilization: container sidecar not found in Pod web-0"
    assert evs(out)[0] == ("Warning", "FailedGetContainerResourceMetric", e)
    assert evs(out)[1][2] == (
        "invalid metrics (1 invalid out of 1), first error is: "
        f"failed to get sidecar container metric value: {e}"
    )


def test_s6_7_external_selector_in_metric_name() -> None:
    m = ext_avg("q", "1")
    m["external"]["metric"]["selector"] = {"matchLabels": {"queue": "jobs"}}
    sim = Sim(raw_hpa([m]), 2)
    out = sim.sync(0, [ext(4000)])
    name = (
        "external metric q(&LabelSelector{MatchLabels:map[string]string{queue: jobs,},"
        "MatchExpressions:[]LabelSelectorRequirement{},})"
    )
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", f"New size: 4; reason: {name} above target")
    ]
    assert out.status_raw["currentMetrics"][0]["external"]["metric"] == {
        "name": "q",
        "selector": {"matchLabels": {"queue": "jobs"}},
    }


# ====================================================== §7/§8/§16 differential model
#
# A line-by-line model of horizontal.go's normalization state (recordInitialRecommendation,
# stabilizeRecommendation[WithBehaviors], convertDesiredReplicasWith{Rules,BehaviorRate},
# calculateScale{Up,Down}Limit*, getReplicasChangePerPeriod, storeScaleEvent,
# markScaleEventsOutdated) whose wall clock advances by 1µs at every time.Now() call,
# as a real controller's does. Syncs happen at exact multiples of 15s; hpa-behavior.md
# §16 says the core must decide ties the way this real clock does.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


class GoModel:
    def __init__(self, behavior: Mapping[str, Any] | None, lo: int, hi: int, flag: int) -> None:
        self.behavior = behavior
        self.lo, self.hi, self.flag = lo, hi, flag
        self.recs: list[list[Any]] = []
        self.up: list[list[Any]] = []
        self.down: list[list[Any]] = []
        self.clock = T0
        self.last_t = 0
        self.end = T0

    def now(self) -> datetime:
        self.clock += timedelta(microseconds=1)
        return self.clock

    def rules(self, side: str) -> tuple[int, str, list[Mapping[str, Any]]]:
        assert self.behavior is not None
        r = self.behavior.get(side) or {}
        if side == "scaleUp":
            window = r.get("stabilizationWindowSeconds", 0)
            pols = r.get(
                "policies",
                [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15},
                ],
            )
        else:
            window = r.get("stabilizationWindowSeconds", self.flag)
            pols = r.get("policies", [{"type": "Percent", "value": 100, "periodSeconds": 15}])
        return window, r.get("selectPolicy", "Max"), pols

    def change(self, period: int, events: list[list[Any]]) -> int:
        cutoff = self.now() - timedelta(seconds=period)
        return sum(e[0] for e in events if e[1] > cutoff)

    def limit(self, current: int, up: bool) -> int:
        _, select, pols = self.rules("scaleUp" if up else "scaleDown")
        if select == "Disabled":
            return current
        picks = []
        for p in pols:
            start = (
                current
                - self.change(p["periodSeconds"], self.up)
                + self.change(p["periodSeconds"], self.down)
            )
            if p["type"] == "Pods":
                picks.append(start + p["value"] if up else start - p["value"])
            elif up:
                picks.append(math.ceil(float(start) * (1 + float(p["value"]) / 100)))
            else:
                picks.append(int(float(start) * (1 - float(p["value"]) / 100)))
        if up:
            return min(picks) if select == "Min" else max(picks)
        return max(picks) if select == "Min" else min(picks)

    def reconcile(self, t: int, current: int, proposal: int) -> tuple[int, str, str]:
        """Returns (desired, AbleToScale reason, ScalingLimited reason).

        A reconcile starts one period after the previous one *finished* (the work
        queue's rate-limited re-add), so it starts a few µs after ``T0 + t``.
        """
        self.clock = self.end + timedelta(seconds=t - self.last_t)
        self.last_t = t
        try:
            return self._reconcile(current, proposal)
        finally:
            self.end = self.clock

    def _reconcile(self, current: int, proposal: int) -> tuple[int, str, str]:
        if not self.recs:
            self.recs.append([current, self.now()])
        if self.behavior is None:
            cutoff = self.now() - timedelta(seconds=self.flag)
            best, old = proposal, None
            for i, (v, at) in enumerate(self.recs):
                if at < cutoff:
                    old = i
                elif v > best:
                    best = v
            entry = [proposal, self.now()]
            if old is None:
                self.recs.append(entry)
            else:
                self.recs[old] = entry
            able = "ScaleDownStabilized" if best != proposal else "ReadyForNewScale"
            cap = int(max(2.0 * current, 4.0))
            top, top_reason = (
                (cap, "ScaleUpLimit") if self.hi > cap else (self.hi, "TooManyReplicas")
            )
            if best < self.lo:
                return self.lo, able, "TooFewReplicas"
            if best > top:
                return top, able, top_reason
            return best, able, "DesiredWithinRange"
        up_w, _, _ = self.rules("scaleUp")
        down_w, _, _ = self.rules("scaleDown")
        at_now = self.now()
        up_cut = at_now - timedelta(seconds=up_w)
        down_cut = at_now - timedelta(seconds=down_w)
        up_rec = down_rec = proposal
        old = None
        for i, (v, at) in enumerate(self.recs):
            if at > up_cut:
                up_rec = min(v, up_rec)
            if at > down_cut:
                down_rec = max(v, down_rec)
            if at < up_cut and at < down_cut:
                old = i
        rec = current
        rec = max(rec, up_rec)
        rec = min(rec, down_rec)
        entry = [proposal, self.now()]
        if old is None:
            self.recs.append(entry)
        else:
            self.recs[old] = entry
        if rec == proposal:
            able = "ReadyForNewScale"
        else:
            able = "ScaleUpStabilized" if proposal >= current else "ScaleDownStabilized"
        if rec > current:
            lim = max(self.limit(current, True), current)
            bound, why = (lim, "ScaleUpLimit") if self.hi > lim else (self.hi, "TooManyReplicas")
            if rec > bound:
                return bound, able, why
        elif rec < current:
            lim = min(self.limit(current, False), current)
            bound, why = (lim, "ScaleDownLimit") if self.lo < lim else (self.lo, "TooFewReplicas")
            if rec < bound:
                return bound, able, why
        return rec, able, "DesiredWithinRange"

    def store(self, prev: int, new: int) -> None:
        if self.behavior is None:
            return
        up = new > prev
        _, _, pols = self.rules("scaleUp" if up else "scaleDown")
        longest = max([0, *(p["periodSeconds"] for p in pols)])
        events = self.up if up else self.down
        cutoff = self.now() - timedelta(seconds=longest)
        for e in events:
            if e[1] < cutoff:
                e[2] = True
        old = None
        for i, e in enumerate(events):
            if e[2]:
                old = i
        entry = [abs(new - prev), self.now(), False]
        if old is None:
            events.append(entry)
        else:
            events[old] = entry
        self.end = self.clock


_periods = st.sampled_from([15, 20, 30, 45, 60, 90, 100])
_policy = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Pods", "Percent"]),
        "value": st.integers(1, 150),
        "periodSeconds": _periods,
    }
)


def _rules() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "stabilizationWindowSeconds": st.sampled_from([0, 15, 20, 30, 45, 60, 100, 120, 300]),
            "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
            "policies": st.lists(_policy, min_size=1, max_size=3),
        },
    )


_behavior = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"scaleUp": _rules(), "scaleDown": _rules()}),
)
_steps = st.lists(
    st.tuples(
        st.sampled_from([15, 15, 15, 15, 30, 45, 60, 300]),
        st.integers(1, 60),
        st.booleans() | st.just(True),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    behavior=_behavior,
    lo=st.integers(1, 3),
    hi=st.integers(8, 40),
    start=st.integers(1, 40),
    flag=st.sampled_from([0, 15, 20, 60, 100, 300]),
    steps=_steps,
)
def test_s16_normalization_matches_go_with_real_clock(
    behavior: Mapping[str, Any] | None,
    lo: int,
    hi: int,
    start: int,
    flag: int,
    steps: list[tuple[int, int, bool]],
) -> None:
    start = min(max(start, lo), hi)
    sim = Sim(
        raw_hpa([ext_avg()], min_replicas=lo, max_replicas=hi, behavior=behavior),
        start,
        config=CoreConfig(downscale_stabilization=timedelta(seconds=flag)),
    )
    model = GoModel(behavior, lo, hi, flag)
    t = 0
    for gap, usage, write_ok in steps:
        current = sim.replicas
        ratio = float(usage * 1000) / (1000.0 * float(current))
        proposal = current if 0.9 <= ratio <= 1.1 else usage
        plan = decide(sim.inputs(t, [ext(usage * 1000, t=t)]))
        assert plan.explanation.metric_proposal == proposal
        want, able, limited = model.reconcile(t, current, proposal)
        assert plan.desired_replicas == want, (t, current, proposal)
        got = {c.type: c.reason for c in plan.conditions}
        assert got["AbleToScale"] == able, t
        assert got["ScalingLimited"] == limited, t
        result = None
        if plan.rescale:
            result = ScaleWriteResult.succeeded() if write_ok else ScaleWriteResult.failed("x")
            if write_ok:
                sim.replicas = want
                model.store(current, want)
        sim.apply(t, finalize(plan, result))
        t += gap


# ============================================================== more §6 / §12


def test_s6_1_all_failed_first_condition_and_error() -> None:
    sim = Sim(raw_hpa([ext_avg("a"), pods_metric("qps")]), 3)
    e1 = MetricFetchError("unable to fetch metrics from external metrics API: down")
    e2 = MetricFetchError("unable to fetch metrics from custom metrics API: down")
    out = sim.sync(0, [e1, e2], pods(3))
    first = "unable to get external metric ns/a/nil: unable to fetch metrics from external metrics API: down"
    second = "unable to get metric qps: unable to fetch metrics from custom metrics API: down"
    agg = (
        "invalid metrics (2 invalid out of 2), first error is: failed to get a external metric "
        f"value: failed to get a external metric: {first}"
    )
    assert evs(out) == [
        ("Warning", "FailedGetExternalMetric", first),
        ("Warning", "FailedGetPodsMetric", second),
        ("Warning", "FailedComputeMetricsReplicas", agg),
    ]
    assert cond(out.status_raw, "ScalingActive") == (
        "False",
        "FailedGetExternalMetric",
        f"the HPA was unable to compute the replica count: {first}",
        ts(0),
    )
    assert out.status_raw["currentMetrics"] == [{"type": ""}, {"type": ""}]
    assert out.error_label == "internal"


def test_s6_1_partial_failure_with_proposal_equal_current_proceeds() -> None:
    sim = Sim(raw_hpa([ext_avg("a"), ext_avg("b")]), 3)
    err = MetricFetchError("no metrics returned from external metrics API")
    out = sim.sync(0, [ext(3000), err])
    # max of the successful proposals (3) is not below specReplicas (3) → not a failure.
    assert cond(out.status_raw, "ScalingActive")[:2] == ("True", "ValidMetricFound")
    assert [e[1] for e in evs(out)] == ["FailedGetExternalMetric"]
    assert out.status_raw["desiredReplicas"] == 3
    assert out.rescaled is False
    assert out.error is not None and out.error.startswith("invalid metrics (1 invalid out of 2)")


def test_s6_1_invalid_metric_source_type_is_a_spec_error() -> None:
    raw = raw_hpa([{"type": "Bogus"}])
    sim = Sim(raw, 3)
    out = sim.sync(0, [None])
    msg = 'unknown metric source type "Bogus"'
    assert evs(out) == [
        ("Warning", "InvalidMetricSourceType", msg),
        (
            "Warning",
            "FailedComputeMetricsReplicas",
            f"invalid metrics (1 invalid out of 1), first error is: {msg}",
        ),
    ]
    assert cond(out.status_raw, "ScalingActive")[1] == "InvalidMetricSourceType"
    assert out.error_label == "spec"


def test_s6_5_1_plain_scale_down_missing_pod_gets_target() -> None:
    ps = pods(3)
    vals = {p.name: PodMetric(T0, timedelta(minutes=1), 5000) for p in ps[:2]}
    sim = Sim(
        raw_hpa(
            [pods_metric("qps", "10")], behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}
        ),
        3,
    )
    out = sim.sync(0, [vals], ps)
    # ratio 0.5; missing pod gets 10 → ⌊20000/3⌋ = 6666 → 0.6666 → ceil(1.9998) = 2.
    assert sim.replicas == 2
    assert out.status_raw["currentMetrics"][0]["pods"]["current"] == {"averageValue": "5"}


def test_s6_5_resource_average_value_name_and_wrap() -> None:
    cpu_avg = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "500m"}},
    }
    ps = pods(2)
    sim = Sim(raw_hpa([cpu_avg]), 2)
    out = sim.sync(0, [cpu_samples(ps, 1000, 0)], ps)
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 4; reason: cpu resource above target")
    ]
    assert out.status_raw["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "1"}}}
    ]
    sim = Sim(raw_hpa([cpu_avg]), 2)
    out = sim.sync(
        0, [MetricFetchError("unable to fetch metrics from resource metrics API: x")], ps
    )
    chain = (
        "failed to get cpu usage: unable to get metrics for resource cpu: "
        "unable to fetch metrics from resource metrics API: x"
    )
    assert evs(out)[0] == ("Warning", "FailedGetResourceMetric", chain)


def test_s6_7_object_average_value_status_and_name() -> None:
    m = object_metric("rps", "10")
    m["object"]["target"] = {"type": "AverageValue", "averageValue": "10"}
    sim = Sim(raw_hpa([m]), 2)
    out = sim.sync(0, [ObjectMetricValue(50000, T0)], pods(2))
    # ratio 50/(10 x 2) = 2.5 → ceil(50/10) = 5, legacy cap 4. The status copies
    # describedObject from the spec (kubernetes PR #124555, 1.31+).
    assert sim.replicas == 4
    assert evs(out) == [
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 4; reason: external metric rps(nil) above target",
        )
    ]
    assert out.status_raw["currentMetrics"] == [
        {
            "type": "Object",
            "object": {
                "metric": {"name": "rps"},
                "current": {"averageValue": "25"},
                "describedObject": {
                    "kind": "Ingress",
                    "name": "main",
                    "apiVersion": "networking.k8s.io/v1",
                },
            },
        }
    ]


def test_s6_7_external_value_counts_ready_pods_even_when_usage_is_high() -> None:
    ps = (*pods(1), *(pod_view_from_raw(raw_pod(f"web-u{i}", ready="False")) for i in range(3)))
    sim = Sim(
        raw_hpa(
            [ext_value_metric("q", "10")], behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}
        ),
        4,
    )
    # usage 20 vs 10: ratio 2 x 1 ready pod = 2 < current 4 → scale down although usage > target.
    out = sim.sync(0, [ext(20000)], ps)
    assert sim.replicas == 2
    assert evs(out) == [
        ("Normal", "SuccessfulRescale", "New size: 2; reason: All metrics below target")
    ]


def test_s6_7_external_value_no_pods_error() -> None:
    sim = Sim(raw_hpa([ext_value_metric("q", "10")]), 2)
    out = sim.sync(0, [ext(30000)], [])
    assert evs(out)[0] == (
        "Warning",
        "FailedGetExternalMetric",
        "unable to calculate ready pods: no pods returned by selector while calculating replica count",
    )


def test_s12_cpu_metrics_api_down_chain() -> None:
    ps = pods(2)
    sim = Sim(raw_hpa([cpu_util()]), 2)
    err = MetricFetchError(
        "unable to fetch metrics from resource metrics API: the server is currently unable to handle the request"
    )
    out = sim.sync(0, [err], ps)
    chain = (
        "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch "
        "metrics from resource metrics API: the server is currently unable to handle the request"
    )
    assert evs(out)[0] == ("Warning", "FailedGetResourceMetric", chain)
    assert cond(out.status_raw, "ScalingActive")[2] == (
        f"the HPA was unable to compute the replica count: {chain}"
    )


def test_s12_external_value_api_down_chain_with_selector() -> None:
    m = ext_value_metric("q", "10")
    m["external"]["metric"]["selector"] = {"matchLabels": {"queue": "jobs"}}
    sim = Sim(raw_hpa([m]), 2)
    err = MetricFetchError("unable to fetch metrics from external metrics API: boom")
    out = sim.sync(0, [err], pods(2))
    sel = "&LabelSelector{MatchLabels:map[string]string{queue: jobs,},MatchExpressions:[]LabelSelectorRequirement{},}"
    e = f"unable to get external metric ns/q/{sel}: unable to fetch metrics from external metrics API: boom"
    assert evs(out)[0] == ("Warning", "FailedGetExternalMetric", e)
    assert evs(out)[1][2] == (
        "invalid metrics (1 invalid out of 1), first error is: "
        f"failed to get q external metric value: failed to get external metric q: {e}"
    )


def test_s3_error_texts_per_stage() -> None:
    sim = Sim(raw_hpa([ext_avg()]), 3)
    h = hpa_from_raw(sim.raw)
    for stage, want in [
        ("version", "invalid API version in scale target reference: bad"),
        ("mapping", "unable to determine resource for scale target reference: bad"),
        ("get", "failed to query scale subresource for Deployment/ns/web: bad"),
    ]:
        inp = SyncInputs(
            hpa=h,
            scale=None,
            pods=(),
            metrics=(),
            history=History(),
            config=CoreConfig(),
            now=T0,
            scale_error="bad",
            scale_error_stage=stage,  # type: ignore[arg-type]
        )
        out = finalize(decide(inp), None)
        assert out.error == want
        assert evs(out) == [("Warning", "FailedGetScale", "bad")]
        assert out.error_label == ("spec" if stage == "version" else "internal")


def test_s4_unregistered_hpa_not_counted_for_ambiguity() -> None:
    ps = pods(2)
    sim = Sim(raw_hpa([ext_avg()]), 2)
    # This HPA is not in the store; exactly one other HPA selects the pods → not ambiguous.
    out = sim.sync(0, [ext(4000)], ps, hpa_selectors={"ns/other": parse_selector("app=web")})
    assert sim.replicas == 4
    assert cond(out.status_raw, "ScalingActive")[1] == "ValidMetricFound"


# ============================================================== §13 v1 objects


def test_s13_v1_hpa_is_legacy_cpu_target() -> None:
    from hpactl.model.conversion import hpa_v1_to_v2

    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": NS, "name": "web", "generation": 1},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 10,
            "targetCPUUtilizationPercentage": 50,
        },
    }
    h = hpa_from_raw(hpa_v1_to_v2(v1))
    assert h.spec.behavior is None
    assert h.spec.min_replicas in (None, 1)
    m = h.spec.metrics
    assert len(m) == 1 and m[0].resource is not None
    assert m[0].resource.name == "cpu" and m[0].resource.target.average_utilization == 50
    # No target and no metrics annotation → the default 80%.
    del v1["spec"]["targetCPUUtilizationPercentage"]
    h = hpa_from_raw(hpa_v1_to_v2(v1))
    assert [
        (x.resource.name, x.resource.target.average_utilization)
        for x in h.spec.metrics
        if x.resource
    ] == [("cpu", 80)]


def test_s13_v1_behavior_annotation_switches_to_behavior_path() -> None:
    from hpactl.model.conversion import hpa_v1_to_v2, hpa_v2_to_v1

    v2 = raw_hpa([cpu_util(50)], behavior={"scaleDown": {"stabilizationWindowSeconds": 0}})
    v1 = hpa_v2_to_v1(v2)
    assert "spec" in v1 and "behavior" not in v1["spec"]
    back = hpa_from_raw(hpa_v1_to_v2(v1))
    assert back.spec.behavior is not None
    assert back.spec.behavior.scale_down.stabilization_window_seconds == 0
    ps = pods(4)
    sim = Sim(hpa_v1_to_v2(v1), 4)
    sim.sync(0, [cpu_samples(ps, 100, 0)], ps)
    assert sim.replicas == 1  # no 5-minute legacy window


# ============================================================== remaining §6 points


def test_s6_3_succeeded_pods_not_special_cased() -> None:
    done = pod_view_from_raw(raw_pod("web-done", phase="Succeeded", ready="False"))
    ps = (*pods(2), done)
    vals = {
        ps[0].name: PodMetric(T0, timedelta(minutes=1), 10000),
        ps[1].name: PodMetric(T0, timedelta(minutes=1), 10000),
        done.name: PodMetric(T0, timedelta(minutes=1), 40000),
    }
    sim = Sim(raw_hpa([pods_metric("qps", "10")]), 3)
    out = sim.sync(0, [vals], ps)
    # average 20 over all three samples → ratio 2 → ceil(2 x 3) = 6.
    assert sim.replicas == 6
    assert out.status_raw["currentMetrics"][0]["pods"]["current"] == {"averageValue": "20"}


def test_s6_4_superfluous_samples_ignored() -> None:
    ps = pods(2)
    ghost = pod_view_from_raw(raw_pod("ghost"))
    vals = cpu_samples((*ps, ghost), [900, 900, 100], 0)
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    out = sim.sync(0, [vals], ps)
    assert sim.replicas == 4
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {
        "averageValue": "900m",
        "averageUtilization": 90,
    }


def test_s6_4_zero_requests_error() -> None:
    ps = pods(2, cpu_request="0")
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    out = sim.sync(0, [cpu_samples(ps, 500, 0)], ps)
    assert evs(out)[0] == (
        "Warning",
        "FailedGetResourceMetric",
        "failed to get cpu utilization: no metrics returned matched known pods",
    )


def test_s6_4_all_samples_unready_error() -> None:
    ps = tuple(pod_view_from_raw(raw_pod(f"web-{i}", phase="Pending")) for i in range(2))
    sim = Sim(raw_hpa([cpu_util(50)]), 2)
    out = sim.sync(0, [cpu_samples(ps, 500, 0)], ps)
    assert evs(out)[0][2] == (
        "failed to get cpu utilization: did not receive metrics for targeted pods (pods might be unready)"
    )


def test_s6_7_external_value_sums_series() -> None:
    sim = Sim(raw_hpa([ext_value_metric("q", "1")], max_replicas=20), 2)
    out = sim.sync(0, [ext(3000, 4000)], pods(2))
    # 7 / 1 x 2 ready pods = 14, legacy cap max(2 x 2, 4) = 4.
    assert sim.replicas == 4
    assert out.status_raw["currentMetrics"][0]["external"]["current"] == {"value": "7"}


def test_s6_2_failure_at_zero_keeps_zero_then_recovers() -> None:
    status = {
        "desiredReplicas": 0,
        "conditions": [
            {
                "type": "ScaledToZero",
                "status": "True",
                "lastTransitionTime": ts(-600),
                "reason": "ScaledToZero",
                "message": ZERO,
            }
        ],
    }
    sim = Sim(raw_hpa([ext_value_metric("q", "10")], min_replicas=0, status=status), 0)
    out = sim.sync(0, [MetricFetchError("unable to fetch metrics from external metrics API: down")])
    assert sim.replicas == 0 and out.rescaled is False
    assert out.status_raw["desiredReplicas"] == 0
    assert cond(out.status_raw, "ScalingActive")[:2] == ("False", "FailedGetExternalMetric")
    assert cond(out.status_raw, "ScaledToZero") == ("True", "ScaledToZero", ZERO, ts(-600))
    out = sim.sync(15, [ext(15000, t=15)])
    assert sim.replicas == 2
    assert cond(out.status_raw, "ScalingActive") == (
        "True",
        "ValidMetricFound",
        valid(Q_NAME),
        ts(15),
    )


# ============================================================== §6.4 step 8: memory quantities
# horizontal.go buildQuantity (kubernetes PR #132351, v1.34+): memory averages are
# rendered as whole bytes (milli-bytes / 1000, truncated) in BinarySI; others as milli DecimalSI.

MIB = 1024 * 1024


def mem_samples(ps: Sequence[PodView], byte_values: Sequence[int]) -> dict[str, PodMetric]:
    at = T0 - timedelta(seconds=10)
    return {
        p.name: PodMetric(at, timedelta(seconds=30), b * 1000)
        for p, b in zip(ps, byte_values, strict=True)
    }


def mem_pods(n: int) -> tuple[PodView, ...]:
    out = []
    for i in range(n):
        r = raw_pod(f"web-{i}")
        r["spec"]["containers"][0]["resources"]["requests"]["memory"] = "200Mi"
        out.append(pod_view_from_raw(r))
    return tuple(out)


def test_s6_4_memory_average_value_whole_mib() -> None:
    m = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
    }
    ps = mem_pods(2)
    sim = Sim(raw_hpa([m]), 2)
    out = sim.sync(0, [mem_samples(ps, [100 * MIB, 102 * MIB])], ps)
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {"averageValue": "101Mi"}


def test_s6_4_memory_fractional_average_truncated_to_bytes() -> None:
    m = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
    }
    ps = mem_pods(3)
    sim = Sim(raw_hpa([m]), 3)
    out = sim.sync(0, [mem_samples(ps, [100 * MIB, 100 * MIB, 101 * MIB])], ps)
    # Σ = 315621376000 milli-bytes / 3 = 105207125333 → 105207125 bytes (not "...333m").
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {
        "averageValue": "105207125"
    }


def test_s6_4_memory_utilization_status_small_average() -> None:
    m = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 50}},
    }
    ps = mem_pods(3)
    sim = Sim(raw_hpa([m]), 3)
    out = sim.sync(0, [mem_samples(ps, [1000, 1000, 1001])], ps)
    # 1000333 milli-bytes → 1000 bytes; below 1024 BinarySI prints as DecimalSI "1k".
    assert out.status_raw["currentMetrics"][0]["resource"]["current"] == {
        "averageValue": "1k",
        "averageUtilization": 0,
    }


def test_s6_4_cpu_average_keeps_milli() -> None:
    ps = pods(3)
    sim = Sim(raw_hpa([cpu_util(50)]), 3)
    out = sim.sync(0, [cpu_samples(ps, [250, 250, 251], 0)], ps)
    assert out.status_raw["currentMetrics"][0]["resource"]["current"]["averageValue"] == "250m"
