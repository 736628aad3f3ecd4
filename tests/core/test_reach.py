"""The pre-checks computed once per sync (``SyncInputs.reach``) are used only for the
inputs they were computed from: an input changed after :func:`with_selector`
(``dataclasses.replace``, as ``explain`` does) is checked again."""

from __future__ import annotations

from dataclasses import replace

from hpactl.core.decide import ScaleView, decide, needs_metrics, with_selector
from tests.core.core_builders import cpu, hpa, inputs, pods, samples


def test_with_selector_stores_the_pre_checks_once() -> None:
    ps = pods(3)
    inp = with_selector(inputs(hpa([cpu(50)]), 3, [samples(ps, 500)], ps))
    assert inp.reach is not None and inp.reach.precheck.needs_metrics
    assert with_selector(inp) is inp  # nothing left to compute


def test_stored_pre_checks_are_not_used_for_another_hpa_or_scale() -> None:
    ps = pods(3)
    inp = with_selector(inputs(hpa([cpu(50)], max_replicas=10), 3, [samples(ps, 500)], ps))
    assert needs_metrics(inp)
    # Another HPA whose maxReplicas the current replicas exceed: the pre-check path.
    capped = replace(inp, hpa=hpa([cpu(50)], max_replicas=2))
    assert not needs_metrics(capped)
    plan = decide(capped)
    assert plan.desired_replicas == 2 and plan.explanation.path == "pre-check-max"
    # Another scale: zero replicas (scaling disabled).
    low = replace(inp, scale=ScaleView(0, 0, "app=web"))
    assert not needs_metrics(low)
    assert decide(low).explanation.path == "scaling-disabled"
    # A conflict set after the fact.
    assert not needs_metrics(replace(inp, conflict="also scaled by a built-in HPA"))
