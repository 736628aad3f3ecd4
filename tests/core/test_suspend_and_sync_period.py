"""KEP-3428 suspend and KEP-6003 sync-period annotations in the decision core.

Gate off: the annotations change nothing (status, conditions, events byte for byte).
Malformed: a Warning event and AnnotationsValid=False, the HPA otherwise decided as if
the annotation were unset. Suspended: no rescale, ScalingActive=False/Suspended, no
metrics wanted, the history untouched so stabilization and rate limits still hold
after resuming.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from core_builders import NOW, cond_map, ext_value, external, inputs, pods, raw_hpa, samples

from hpactl.core.decide import CoreConfig, Outcome, SyncInputs, needs_metrics, reconcile
from hpactl.core.extension_conditions import ANNOTATIONS_VALID
from hpactl.core.history import History
from hpactl.core.suspend import SUSPEND_ANNOTATION, parse_suspension
from hpactl.core.sync_period import (
    SYNC_PERIOD_ANNOTATION,
    effective_sync_period,
    parse_sync_period,
)
from hpactl.model.hpa import HPA, hpa_from_raw
from hpactl.model.metrics import PodMetricsInfo

ON = CoreConfig(configurable_sync_period=True, suspend=True)
OFF = CoreConfig()


def annotated(annotations: dict[str, str], **kwargs: Any) -> HPA:
    raw = raw_hpa(**kwargs)
    raw["metadata"]["annotations"] = {**annotations, "unrelated.io/x": "y"}
    return hpa_from_raw(raw)


def sync(
    h: HPA, current: int, load: int, *, history: History, config: CoreConfig, at: timedelta
) -> tuple[Outcome, SyncInputs]:
    """One reconcile of ``current`` pods each at ``load`` % of a 1-CPU request."""
    ps = pods(current)
    metric: PodMetricsInfo = samples(ps, load * 10, NOW + at)
    inp = inputs(h, current, [metric], ps, history=history, config=config, now=NOW + at)
    return reconcile(inp), inp


def events(o: Outcome) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in o.events]


# -- parsing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds", "problem"),
    [
        ("30", 30, ""),
        ("1", 1, ""),
        ("3600", 3600, ""),
        ("0", None, "out of range (1-3600 seconds)"),
        ("3601", None, "out of range"),
        ("30s", None, "not a whole number of seconds"),
        ("-5", None, "not a whole number"),
        (" 30", None, "not a whole number"),
        ("", None, "not a whole number"),
    ],
)
def test_sync_period_annotation(value: str, seconds: int | None, problem: str) -> None:
    h = annotated({SYNC_PERIOD_ANNOTATION: value})
    got = parse_sync_period(h, True)
    assert got.seconds == seconds
    assert (problem in got.problem) and (bool(got.problem) == bool(problem))
    assert effective_sync_period(h, True, 15.0) == (seconds if seconds else 15.0)
    # Gate off: never read.
    assert parse_sync_period(h, False).seconds is None
    assert effective_sync_period(h, False, 15.0) == 15.0


@pytest.mark.parametrize(
    ("value", "suspended", "bad"),
    [
        ("true", True, False),
        ("True", True, False),
        ("1", True, False),
        ("false", False, False),
        ("yes", False, True),
        ("", False, True),
    ],
)
def test_suspend_annotation(value: str, suspended: bool, bad: bool) -> None:
    h = annotated({SUSPEND_ANNOTATION: value})
    got = parse_suspension(h, True)
    assert got.suspended is suspended
    assert bool(got.problem) is bad
    assert parse_suspension(h, False).suspended is False


# -- gate off / malformed: exactly as unset ------------------------------------------------


@pytest.mark.parametrize(
    "annotations",
    [
        {SUSPEND_ANNOTATION: "true", SYNC_PERIOD_ANNOTATION: "5"},
        {SUSPEND_ANNOTATION: "maybe", SYNC_PERIOD_ANNOTATION: "0"},
    ],
)
def test_gate_off_ignores_the_annotations_completely(annotations: dict[str, str]) -> None:
    plain, _ = sync(hpa_from_raw(raw_hpa()), 2, 200, history=History(), config=OFF, at=timedelta())
    got, _ = sync(annotated(annotations), 2, 200, history=History(), config=OFF, at=timedelta())
    assert got.status_raw == plain.status_raw
    assert events(got) == events(plain)
    assert got.history == plain.history
    assert got.rescaled and got.desired_replicas == 4


def test_malformed_annotations_are_reported_and_otherwise_ignored() -> None:
    bad = annotated({SUSPEND_ANNOTATION: "yes please", SYNC_PERIOD_ANNOTATION: "90s"})
    plain, _ = sync(hpa_from_raw(raw_hpa()), 2, 200, history=History(), config=ON, at=timedelta())
    got, _ = sync(bad, 2, 200, history=History(), config=ON, at=timedelta())
    # The decision is the unannotated one: scaled up (not suspended), same history.
    assert got.rescaled and got.desired_replicas == plain.desired_replicas == 4
    assert got.history == plain.history
    cm = cond_map(got.status_raw)
    status, reason, message = cm.pop(ANNOTATIONS_VALID)
    # Two problems, one condition: reasons and messages in annotation-name order.
    suspend_msg = (
        f'annotation {SUSPEND_ANNOTATION}="yes please" is not a boolean (true or false); '
        "the HPA is not suspended"
    )
    period_msg = (
        f'annotation {SYNC_PERIOD_ANNOTATION}="90s" is not a whole number of seconds; the '
        "default sync period is used"
    )
    assert (status, reason) == ("False", "InvalidSuspend,InvalidSyncPeriod")
    assert message == f"{suspend_msg}; {period_msg}"
    assert cm == cond_map(plain.status_raw)
    assert events(got) == [
        *events(plain),
        ("Warning", "InvalidSuspend", suspend_msg),
        ("Warning", "InvalidSyncPeriod", period_msg),
    ]
    # Fixed: the condition goes away, the status is the plain one again.
    fixed = replace(bad, annotations={SYNC_PERIOD_ANNOTATION: "30"})
    fixed = replace(fixed, status=got.status)
    again, _ = sync(fixed, 4, 100, history=got.history, config=ON, at=timedelta(seconds=15))
    assert ANNOTATIONS_VALID not in cond_map(again.status_raw)
    assert not any(e.type == "Warning" for e in again.events)


# -- suspended -------------------------------------------------------------------------------


def test_suspended_hpa_does_not_scale_and_says_so() -> None:
    h = annotated({SUSPEND_ANNOTATION: "true"}, max_replicas=3)
    # 5 replicas is above maxReplicas and the load is high: either would rescale.
    got, inp = sync(h, 5, 300, history=History(), config=ON, at=timedelta())
    assert not needs_metrics(inp)
    assert not got.rescaled
    assert got.events == ()
    assert got.status_raw["currentReplicas"] == 5
    assert got.status_raw["desiredReplicas"] == 5
    assert "currentMetrics" not in got.status_raw or not got.status_raw["currentMetrics"]
    cm = cond_map(got.status_raw)
    assert cm["ScalingActive"][:2] == ("False", "Suspended")
    assert SUSPEND_ANNOTATION in cm["ScalingActive"][2]
    assert cm["AbleToScale"][:2] == ("True", "SucceededGetScale")
    assert got.history == History()  # nothing recorded, not even the initial recommendation
    assert got.explanation.path == "suspended"


def test_suspended_with_a_missing_target_reports_both() -> None:
    h = annotated({SUSPEND_ANNOTATION: "true"})
    inp = inputs(h, None, config=ON, scale_error='deployments.apps "web" not found')
    got = reconcile(inp)
    cm = cond_map(got.status_raw)
    assert cm["AbleToScale"][:2] == ("False", "FailedGetScale")
    assert cm["ScalingActive"][:2] == ("False", "Suspended")
    assert [e.reason for e in got.events] == ["FailedGetScale"]


def test_suspended_at_zero_replicas_is_suspended_not_scaling_disabled() -> None:
    # minReplicas 1 and 0 replicas: upstream's ScalingDisabled; the suspension is what
    # the user asked for, so it is what the condition names. Resumed, ScalingDisabled.
    h = annotated({SUSPEND_ANNOTATION: "true"})
    got, _ = sync(h, 0, 0, history=History(), config=ON, at=timedelta())
    assert cond_map(got.status_raw)["ScalingActive"][1] == "Suspended"
    resumed = replace(h, annotations={SUSPEND_ANNOTATION: "false"}, status=got.status)
    again, _ = sync(resumed, 0, 0, history=got.history, config=ON, at=timedelta(seconds=15))
    assert cond_map(again.status_raw)["ScalingActive"][1] == "ScalingDisabled"
    assert not again.rescaled


SCALE_UP_2_PER_MIN = {
    "scaleUp": {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
    },
    "scaleDown": {"stabilizationWindowSeconds": 120},
}


def run_timeline(
    suspended_between: tuple[int, int] | None,
    steps: list[tuple[int, int]],
    forget_at: int | None = None,
) -> list[int]:
    """Replicas after each (seconds, load %) sync; suspended in [a, b) seconds;
    the history dropped at ``forget_at`` (what a suspension must not do)."""
    history = History()
    current = 2
    status_src: HPA | None = None
    out = []
    for at, load in steps:
        if at == forget_at:
            history = History()
        suspended = (
            suspended_between is not None and suspended_between[0] <= at < suspended_between[1]
        )
        h = annotated(
            {SUSPEND_ANNOTATION: "true" if suspended else "false"},
            behavior=SCALE_UP_2_PER_MIN,
            max_replicas=20,
        )
        if status_src is not None:
            h = replace(h, status=status_src.status)
        got, _ = sync(h, current, load, history=history, config=ON, at=timedelta(seconds=at))
        history = got.history
        current = got.desired_replicas if got.rescaled else current
        status_src = replace(h, status=got.status)
        out.append(current)
    return out


def test_resume_keeps_the_rate_limit_history() -> None:
    # t=0: 2 -> 4 (at most 2 pods per 60 s). Suspended 10-40 s. At 45 s the load is
    # still high: the scale event at t=0 is inside the 60 s policy period, so no more
    # pods until t=60 s, exactly as without the suspension.
    steps = [(0, 400), (15, 400), (30, 400), (45, 400), (60, 400), (75, 400)]
    assert run_timeline(None, steps) == [4, 4, 4, 4, 6, 6]
    assert run_timeline((10, 40), steps) == [4, 4, 4, 4, 6, 6]
    # Without the scale event the policy would have allowed 2 more pods at 45 s.
    assert run_timeline((10, 40), steps, forget_at=45)[3] == 6


def test_resume_keeps_the_stabilization_window() -> None:
    # High load until 15 s, then low load. The scale-down window (120 s) holds the
    # high recommendations recorded before the suspension (40-60 s): held at 4 after
    # resuming, down exactly when they leave the window (15 + 120 s), as without the
    # suspension.
    steps = [(0, 400), (15, 400), (30, 10), (45, 10), (60, 10), (75, 10), (150, 10)]
    with_pause = run_timeline((40, 60), steps)
    assert with_pause == [4, 4, 4, 4, 4, 4, 1]
    assert with_pause == run_timeline(None, steps)
    # Dropped at the suspension, the window would restart from the resume (upstream
    # records the current count as the first recommendation): still 4 at 150 s.
    assert run_timeline((40, 60), steps, forget_at=60)[-1] == 4


def test_suspended_at_zero_does_not_scale_from_zero_and_resumed_does() -> None:
    # HPAScaleToZero: minReplicas 0, an External metric, scaled to zero by the HPA
    # (ScaledToZero=True). Upstream scales up from 0 when the metric rises; suspended,
    # it must not.
    status = {
        "currentReplicas": 0,
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
    raw = raw_hpa([external(value="10")], min_replicas=0, status=status)
    queue = ext_value(50_000)  # 50 against a target of 10
    for suspended, rescaled in (("true", False), ("false", True)):
        raw["metadata"]["annotations"] = {SUSPEND_ANNOTATION: suspended}
        h = hpa_from_raw(raw)
        got = reconcile(inputs(h, 0, [queue], config=ON))
        assert got.rescaled is rescaled
        active = cond_map(got.status_raw)["ScalingActive"]
        assert active[1] == ("Suspended" if suspended == "true" else "ValidMetricFound")
