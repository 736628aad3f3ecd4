"""Hypothesis properties of the decision core (architecture.md C4)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from core_builders import (
    NOW,
    cpu,
    ext_value,
    external,
    hpa,
    inputs,
    obj,
    obj_value,
    pods,
    raw_hpa,
    samples,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpactl.core.behavior import stabilize_recommendation, stabilize_recommendation_with_behaviors
from hpactl.core.decide import CoreConfig, ScaleWriteResult, decide, finalize, reconcile
from hpactl.core.history import History, Recommendation, ScaleEvent
from hpactl.model.hpa import InvalidHPA, hpa_from_raw, status_to_raw
from hpactl.model.metrics import MetricFetchError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

policy = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Pods", "Percent"]),
        "value": st.integers(1, 1000),
        "periodSeconds": st.integers(1, 1800),
    }
)


def rules_st() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "stabilizationWindowSeconds": st.integers(0, 3600),
            "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
            "policies": st.lists(policy, min_size=1, max_size=3),
            "tolerance": st.sampled_from(["0", "50m", "0.1", "0.5", "1"]),
        },
    )


behavior_st = st.one_of(
    st.none(),
    st.fixed_dictionaries({}, optional={"scaleUp": rules_st(), "scaleDown": rules_st()}),
)

_recent_st = st.integers(0, 900).map(lambda s: NOW - timedelta(seconds=s))
_scale_events_st = st.lists(st.builds(ScaleEvent, st.integers(1, 20), _recent_st), max_size=4).map(
    tuple
)
history_st = st.builds(
    History,
    st.lists(st.builds(Recommendation, st.integers(0, 100), _recent_st), max_size=8).map(tuple),
    _scale_events_st,
    _scale_events_st,
)


@st.composite
def cpu_case(draw: st.DrawFn) -> tuple[Any, ...]:
    lo = draw(st.integers(1, 20))
    hi = draw(st.integers(lo, 40))
    current = draw(st.integers(lo, hi))
    usage = draw(st.lists(st.integers(0, 5000), min_size=current, max_size=current))
    target = draw(st.integers(1, 200))
    behavior = draw(behavior_st)
    history = draw(history_st)
    window = draw(st.integers(0, 600))
    return lo, hi, current, usage, target, behavior, history, window


@SETTINGS
@given(cpu_case())
def test_desired_within_min_max(case: tuple[Any, ...]) -> None:
    lo, hi, current, usage, target, behavior, history, window = case
    ps = pods(current)
    h = hpa(metrics=[cpu(target)], min_replicas=lo, max_replicas=hi, behavior=behavior)
    cfg = CoreConfig(downscale_stabilization=timedelta(seconds=window))
    plan = decide(inputs(h, current, [samples(ps, usage)], ps, history=history, config=cfg))
    assert lo <= plan.desired_replicas <= hi
    out = finalize(plan, ScaleWriteResult.succeeded() if plan.rescale else None)
    assert lo <= out.desired_replicas <= hi
    assert out.rescaled == (out.desired_replicas != current)


metric_kind = st.sampled_from(["cpu", "external", "external-avg", "object", "error"])


@st.composite
def any_case(draw: st.DrawFn) -> tuple[Any, ...]:
    kinds = draw(st.lists(metric_kind, min_size=1, max_size=3))
    specs: list[dict[str, Any]] = []
    data: list[Any] = []
    n_pods = draw(st.integers(0, 6))
    ps = pods(n_pods)
    for k in kinds:
        v = draw(st.integers(0, 10**9))
        if k == "cpu":
            specs.append(cpu(draw(st.integers(1, 300))))
            data.append(samples(ps, v % 10_000))
        elif k == "external":
            specs.append(external(value=str(draw(st.integers(1, 10**6)))))
            data.append(ext_value(v))
        elif k == "external-avg":
            specs.append(external(value=None, average=str(draw(st.integers(1, 10**6)))))
            data.append(ext_value(v, v // 3))
        elif k == "object":
            specs.append(obj(value=str(draw(st.integers(1, 10**6)))))
            data.append(obj_value(v))
        else:
            specs.append(cpu())
            data.append(MetricFetchError("unable to fetch metrics from resource metrics API: down"))
    lo = draw(st.integers(0, 10))
    hi = draw(st.integers(max(lo, 1), 60))
    current = draw(st.integers(0, 80))
    status = draw(
        st.one_of(
            st.none(),
            st.just(
                {
                    "desiredReplicas": 0,
                    "conditions": [
                        {
                            "type": "ScaledToZero",
                            "status": "True",
                            "lastTransitionTime": "2025-01-01T00:00:00Z",
                        }
                    ],
                }
            ),
        )
    )
    raw = raw_hpa(
        specs, min_replicas=lo, max_replicas=hi, behavior=draw(behavior_st), status=status
    )
    selector = draw(st.sampled_from(["app=web", "", "app in (web", "app!=web"]))
    cfg = CoreConfig(
        scale_to_zero=draw(st.booleans()),
        configurable_tolerance=draw(st.booleans()),
        hpa_generation=draw(st.booleans()),
        downscale_stabilization=timedelta(seconds=draw(st.integers(0, 600))),
    )
    write_ok = draw(st.booleans())
    return raw, current, data, ps, selector, cfg, draw(history_st), write_ok


@SETTINGS
@given(any_case())
def test_no_exception_on_valid_inputs(case: tuple[Any, ...]) -> None:
    raw, current, data, ps, selector, cfg, history, write_ok = case
    h = hpa_from_raw(raw)
    plan = decide(inputs(h, current, data, ps, selector=selector, config=cfg, history=history))
    result = (
        (ScaleWriteResult.succeeded() if write_ok else ScaleWriteResult.failed("x"))
        if plan.rescale
        else None
    )
    out = finalize(plan, result)
    assert out.status_raw == status_to_raw(out.status)
    assert out.desired_replicas >= 0
    assert len(out.status.current_metrics) in (0, len(h.spec.metrics))


@SETTINGS
@given(history_st, st.integers(0, 100), st.integers(0, 900))
def test_legacy_stabilization_never_below_window_max(
    history: History, proposal: int, window: int
) -> None:
    cutoff = NOW - timedelta(seconds=window)
    got, new = stabilize_recommendation(history, proposal, timedelta(seconds=window), NOW)
    in_window = [r.recommendation for r in history.recommendations if r.timestamp > cutoff]
    assert got == max([proposal, *in_window])
    assert Recommendation(proposal, NOW) in new.recommendations
    assert len(new.recommendations) in (
        len(history.recommendations),
        len(history.recommendations) + 1,
    )


@SETTINGS
@given(
    history_st, st.integers(0, 100), st.integers(1, 100), st.integers(0, 900), st.integers(0, 900)
)
def test_behavior_scale_down_never_below_window_max(
    history: History, proposal: int, current: int, up_w: int, down_w: int
) -> None:
    got, *_ = stabilize_recommendation_with_behaviors(history, current, proposal, up_w, down_w, NOW)
    cutoff = NOW - timedelta(seconds=down_w)
    window_max = max(
        [proposal, *(r.recommendation for r in history.recommendations if r.timestamp > cutoff)]
    )
    if proposal < current:
        assert got >= min(current, window_max)
    assert got <= max(current, window_max)


@SETTINGS
@given(st.integers(1, 20), st.integers(1, 150), st.sampled_from([None, {}]))
def test_idempotent_at_equilibrium(n: int, target: int, behavior: dict[str, Any] | None) -> None:
    ps = pods(n)
    usage = 10 * target  # request 1 cpu = 1000m → utilization exactly `target` percent
    h = hpa(metrics=[cpu(target)], min_replicas=1, max_replicas=40, behavior=behavior)
    first = reconcile(inputs(h, n, [samples(ps, usage)], ps))
    assert not first.rescaled and first.desired_replicas == n
    later = NOW + timedelta(seconds=15)
    h2 = hpa_from_raw(
        raw_hpa(
            [cpu(target)],
            min_replicas=1,
            max_replicas=40,
            behavior=behavior,
            status=first.status_raw,
        )
    )
    second = reconcile(
        inputs(h2, n, [samples(ps, usage, later)], ps, history=first.history, now=later)
    )
    assert not second.rescaled and not second.status_changed


quantity_st = st.sampled_from(["0", "1", "-1", "500m", "1e3", "2Ki", "1n", "9223372036854775807"])


@st.composite
def wild_metric(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["Resource", "ContainerResource", "Pods", "Object", "External", "Odd"])
    )
    ttype = draw(st.sampled_from(["Utilization", "Value", "AverageValue", ""]))
    target: dict[str, Any] = {"type": ttype}
    if draw(st.booleans()):
        target["averageUtilization"] = draw(st.integers(-5, 500))
    if draw(st.booleans()):
        target["value"] = draw(quantity_st)
    if draw(st.booleans()):
        target["averageValue"] = draw(quantity_st)
    ident = {"name": "m"}
    if kind == "Resource":
        return {
            "type": kind,
            "resource": {"name": draw(st.sampled_from(["cpu", "memory"])), "target": target},
        }
    if kind == "ContainerResource":
        return {
            "type": kind,
            "containerResource": {"name": "cpu", "container": "c", "target": target},
        }
    if kind == "Pods":
        return {"type": kind, "pods": {"metric": ident, "target": target}}
    if kind == "Object":
        return {
            "type": kind,
            "object": {
                "describedObject": {"kind": "K", "name": "n"},
                "metric": ident,
                "target": target,
            },
        }
    if kind == "External":
        return {"type": kind, "external": {"metric": ident, "target": target}}
    return {"type": kind}


def wild_data(draw: st.DrawFn, ps: Any) -> Any:
    choice = draw(st.integers(0, 4))
    v = draw(st.integers(-(2**63), 2**63 - 1))
    if choice == 0:
        return samples(ps, [v % 10**7 for _ in ps]) if ps else {}
    if choice == 1:
        return obj_value(v)
    if choice == 2:
        return ext_value(*draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3)))
    if choice == 3:
        return MetricFetchError("down")
    return None


@SETTINGS
@given(st.data())
def test_no_exception_on_anything_the_projection_accepts(data: st.DataObject) -> None:
    specs = data.draw(st.lists(wild_metric(), min_size=1, max_size=3))
    lo = data.draw(st.integers(-3, 50))
    hi = data.draw(st.integers(-3, 50))
    ps = pods(data.draw(st.integers(0, 5)))
    metrics = [wild_data(data.draw, ps) for _ in specs]
    raw = raw_hpa(specs, min_replicas=lo, max_replicas=hi, behavior=data.draw(behavior_st))
    try:
        h = hpa_from_raw(raw)
    except InvalidHPA:
        return  # refused as the API server refuses it (e.g. min > max, a target <= 0)
    current = data.draw(st.integers(0, 2**31 - 1))
    status_replicas = data.draw(st.integers(0, 100))
    out = reconcile(
        inputs(
            h, current, metrics, ps, status_replicas=status_replicas, history=data.draw(history_st)
        )
    )
    assert isinstance(out.status_raw, dict)
