"""KEP-5679 metric fallback (hpactl.dev/metric-fallback, gate HPAExternalMetricFallback):
the annotation's grammar, the failure streak, the replica count it proposes, and how
it meets the upstream rules (max over metrics, stabilization, rate limits)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from core_builders import (
    NOW,
    conds,
    cpu,
    ext_value,
    external,
    inputs,
    obj,
    pods,
    pods_metric,
    raw_hpa,
    samples,
)

from hpactl.core import metric_fallback as FB
from hpactl.core.decide import CoreConfig, Outcome, reconcile
from hpactl.core.extension_conditions import ANNOTATIONS_VALID, annotation_problems
from hpactl.core.history import History
from hpactl.core.metrics_eval import MetricInput
from hpactl.model.hpa import HPA, hpa_from_raw
from hpactl.model.metrics import MetricFetchError

ON = CoreConfig(metric_fallback=True)
OFF = CoreConfig()
DOWN = MetricFetchError("unable to fetch metrics from external metrics API: the server is down")
EXT_FAIL = (
    "FailedGetExternalMetric",
    "unable to get external metric ns/queue/nil: unable to fetch metrics from external "
    "metrics API: the server is down",
)


def with_annotation(raw: dict[str, Any], value: str | None) -> dict[str, Any]:
    if value is not None:
        raw["metadata"]["annotations"] = {FB.ANNOTATION: value, "other": "kept out"}
    return raw


def fb(**entries: Any) -> str:
    return json.dumps(entries)


# -------------------------------------------------------------------------- the grammar


def specs(*metrics: dict[str, Any]) -> HPA:
    return hpa_from_raw(raw_hpa(list(metrics)))


def test_keys_by_label_or_index_and_the_kep_default_duration() -> None:
    h = specs(cpu(), external("queue"), pods_metric("rps"), obj("hits"))
    cfg = FB.parse_fallback(
        '{"external:queue": {"replicas": 10, "failureDuration": "90s"}, "0": {"replicas": 4},'
        ' "pods:rps": {"replicas": 2}, "object:hits": {"replicas": 3, "failureDuration": "1h"}}',
        h.spec.metrics,
    )
    assert [(f.index, f.label, f.replicas, f.failure_duration) for f in cfg.fallbacks] == [
        (0, "cpu", 4, timedelta(minutes=3)),
        (1, "external:queue", 10, timedelta(seconds=90)),
        (2, "pods:rps", 2, timedelta(minutes=3)),
        (3, "object:hits", 3, timedelta(hours=1)),
    ]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ("[1]", 'expected a JSON object of metric -> {"replicas": N, "failureDuration": "3m"}'),
        ("{}", "names no metric"),
        (
            '{"memory": {"replicas": 2}}',
            '"memory": no such metric in spec.metrics '
            "(metrics: cpu, external:queue, external:queue)",
        ),
        ('{"3": {"replicas": 2}}', '"3": no metric at index 3 (spec.metrics has 3)'),
        (
            '{"external:queue": {"replicas": 2}}',
            '"external:queue": names metrics 1, 2: use the index',
        ),
        ('{"0": {"replicas": 2}, "cpu": {"replicas": 3}}', '"cpu" and "0" name the same metric'),
        ('{"0": {"replicas": 2}, "0": {"replicas": 3}}', 'key "0" given twice'),
        ('{"0": 5}', '"0": expected an object like {"replicas": 10}'),
        ('{"0": {}}', '"0".replicas: required'),
        ('{"0": {"replicas": 0}}', '"0".replicas: must be between 1 and 2147483647, got 0'),
        (
            '{"0": {"replicas": 2147483648}}',
            '"0".replicas: must be between 1 and 2147483647, got 2147483648',
        ),
        ('{"0": {"replicas": 2.5}}', '"0".replicas: must be an integer, got 2.5'),
        ('{"0": {"replicas": true}}', '"0".replicas: must be an integer, got true'),
        ('{"0": {"replicas": "3"}}', '"0".replicas: must be an integer, got "3"'),
        (
            '{"0": {"replicas": 3, "failureThreshold": 3}}',
            '"0": unknown field "failureThreshold" (expected replicas, failureDuration)',
        ),
        (
            '{"0": {"replicas": 3, "failureDuration": 180}}',
            '"0".failureDuration: must be a duration string like "3m", got 180',
        ),
        (
            '{"0": {"replicas": 3, "failureDuration": "3 minutes"}}',
            '"0".failureDuration: time: unknown unit " minutes" in duration "3 minutes"',
        ),
        (
            '{"0": {"replicas": 3, "failureDuration": "0s"}}',
            '"0".failureDuration: must be more than 0s and at most 24h0m0s, got "0s"',
        ),
        (
            '{"0": {"replicas": 3, "failureDuration": "-1m"}}',
            '"0".failureDuration: must be more than 0s and at most 24h0m0s, got "-1m"',
        ),
        (
            '{"0": {"replicas": 3, "failureDuration": "25h"}}',
            '"0".failureDuration: must be more than 0s and at most 24h0m0s, got "25h"',
        ),
        ("[" * 100_000, "not JSON: nested too deeply"),
    ],
)
def test_malformed_values_are_refused_with_one_line(value: str, problem: str) -> None:
    metrics = [cpu(), external("queue"), external("queue", selector={"matchLabels": {"q": "b"}})]
    with pytest.raises(ValueError) as e:
        FB.parse_fallback(value, specs(*metrics).spec.metrics)
    assert str(e.value) == problem
    h = hpa_from_raw(with_annotation(raw_hpa(metrics), value))
    line = f"annotation {FB.ANNOTATION}: {problem}; no metric falls back"
    assert FB.fallback_problem(h, True) == line
    assert FB.fallback_problem(h, False) == ""
    # Synced as if unset: no fallback, and the KEP's condition is not set for it.
    got = FB.setup(h, True, History(), (), NOW)
    assert (got.config, got.events, got.conditions) == (None, (), ())
    (problem_,) = annotation_problems(h, metric_fallback=True)
    assert (problem_.reason, problem_.message) == ("InvalidMetricFallback", line)
    assert annotation_problems(h, metric_fallback=False) == ()


# ------------------------------------------------------------------ running the syncs


@dataclass
class Run:
    """Consecutive syncs of one HPA, status and history carried over as the controller does."""

    raw: dict[str, Any]
    config: CoreConfig
    current: int
    history: History = field(default_factory=History)
    status: dict[str, Any] | None = None
    outcomes: list[Outcome] = field(default_factory=list)

    def sync(
        self, at: float, metrics: Sequence[MetricInput | int], n_pods: int | None = None
    ) -> Outcome:
        raw = dict(self.raw)
        if self.status is not None:
            raw["status"] = self.status
        h = hpa_from_raw(raw)
        now = NOW + timedelta(seconds=at)
        ps = pods(self.current if n_pods is None else n_pods)
        ms = [samples(ps, m, now) if isinstance(m, int) else m for m in metrics]
        out = reconcile(
            inputs(h, self.current, ms, ps, history=self.history, now=now, config=self.config)
        )
        self.history = out.history
        self.status = out.status_raw
        if out.rescaled:
            self.current = out.desired_replicas
        self.outcomes.append(out)
        return out


def cond(out: Outcome, type_: str = FB.CONDITION) -> tuple[str, str, str] | None:
    for t, s, r, m in conds(out.status_raw):
        if t == type_:
            return s, r, m
    return None


def events(out: Outcome) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in out.events]


def without_annotations_valid(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    out["conditions"] = [c for c in raw.get("conditions", []) if c["type"] != ANNOTATIONS_VALID]
    return out


def without_fallback_condition(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    out["conditions"] = [c for c in raw.get("conditions", []) if c["type"] != FB.CONDITION]
    return out


QUEUE_FB = fb(**{"external:queue": {"replicas": 6}})


def queue_hpa(annotation: str | None = QUEUE_FB, **kwargs: Any) -> dict[str, Any]:
    return with_annotation(raw_hpa([external("queue", value="100")], **kwargs), annotation)


def test_external_metric_falls_back_after_failure_duration_and_recovers() -> None:
    r = Run(queue_hpa(), ON, current=2)
    r.sync(0, [ext_value(200_000)])  # 100 target, 200 now: 4 replicas
    assert r.current == 4
    assert cond(r.outcomes[-1]) == (
        "False",
        "NoMetricFailing",
        "no metric with a fallback is failing",
    )
    # Failing from 15s: before 3m have passed nothing changes, the condition says when.
    for t in range(15, 195, 15):
        out = r.sync(t, [DOWN])
        assert not out.rescaled and r.current == 4
        assert cond(out) == (
            "False",
            "FallbackPending",
            "external metric 'queue' failing since 2026-01-01T12:00:15Z; fallback after 3m0s",
        )
        assert events(out) == [
            ("Warning", *EXT_FAIL),
            ("Warning", "FailedComputeMetricsReplicas", events(out)[1][2]),
        ]
    # 15s + 3m = 3m15s: the fallback proposes 6, combined (alone) and applied.
    out = r.sync(195, [DOWN])
    assert out.rescaled and r.current == 6
    assert events(out) == [
        ("Warning", *EXT_FAIL),
        (
            "Normal",
            "ExternalMetricFallbackActivated",
            "Fallback activated for external metric 'queue' after 3m0s of consecutive failures, "
            "using fallback replica count: 6",
        ),
        (
            "Normal",
            "SuccessfulRescale",
            "New size: 6; reason: external metric 'queue' (fallback) above target",
        ),
    ]
    assert cond(out) == (
        "True",
        "FallbackActive",
        "external metric 'queue' uses its fallback replica count 6 (failing since 2026-01-01T12:00:15Z)",
    )
    assert cond(out, "ScalingActive") == (
        "True",
        "ValidMetricFound",
        "the HPA was able to successfully calculate a replica count from external metric "
        "'queue' (fallback)",
    )
    assert out.explanation.metrics[0].proposal == 6 and out.explanation.metrics[0].error
    # Still failing: no second activation event, the condition keeps its transition time.
    again = r.sync(210, [DOWN])
    assert [e[1] for e in events(again)] == ["FailedGetExternalMetric"]
    assert again.status_raw["conditions"][-1] == out.status_raw["conditions"][-1]
    # The metric is back: deactivated, and the streak is forgotten.
    back = r.sync(225, [ext_value(100_000)])
    assert (
        "Normal",
        "ExternalMetricFallbackDeactivated",
        "Fallback deactivated for external metric 'queue': the metric was retrieved again "
        "after 3m30s of failures",
    ) in events(back)
    assert cond(back) == ("False", "NoMetricFailing", "no metric with a fallback is failing")
    assert back.history.failing_metrics == ()
    # A new failure waits the whole duration again.
    assert r.sync(240, [DOWN]).history.failing_metrics[0].since == NOW + timedelta(seconds=240)
    assert not r.sync(240 + 165, [DOWN]).history.failing_metrics[0].active
    assert r.sync(240 + 180, [DOWN]).history.failing_metrics[0].active


def test_before_the_duration_everything_but_the_condition_is_upstreams() -> None:
    opted = Run(queue_hpa(), ON, current=4)
    plain = Run(queue_hpa(None), ON, current=4)
    steps: list[tuple[int, MetricInput]] = [
        (0, ext_value(400_000)),
        (15, DOWN),
        (30, DOWN),
        (45, ext_value(100_000)),
    ]
    for t, m in steps:
        a, b = opted.sync(t, [m]), plain.sync(t, [m])
        assert without_fallback_condition(a.status_raw) == b.status_raw
        assert events(a) == events(b)
        assert a.desired_replicas == b.desired_replicas
        assert cond(b) is None


def test_gate_off_ignores_the_annotation_completely() -> None:
    gated = Run(queue_hpa(), OFF, current=4)
    plain = Run(queue_hpa(None), OFF, current=4)
    for t in range(0, 600, 15):
        m: MetricInput = ext_value(100_000) if t == 0 else DOWN
        a, b = gated.sync(t, [m]), plain.sync(t, [m])
        assert a.status_raw == b.status_raw
        assert events(a) == events(b)
        assert a.history == b.history
    assert gated.current == 4


def test_malformed_annotation_syncs_as_if_unset() -> None:
    bad = Run(queue_hpa('{"external:queue": {"replicas": 0}}'), ON, current=4)
    plain = Run(queue_hpa(None), ON, current=4)
    line = (
        f'annotation {FB.ANNOTATION}: "external:queue".replicas: must be between 1 '
        "and 2147483647, got 0; no metric falls back"
    )
    for t in range(0, 600, 15):
        m: MetricInput = ext_value(100_000) if t == 0 else DOWN
        a, b = bad.sync(t, [m]), plain.sync(t, [m])
        # Upstream's events, then the Warning; upstream's conditions, then ours.
        assert events(a) == [*events(b), ("Warning", "InvalidMetricFallback", line)]
        assert without_annotations_valid(a.status_raw) == b.status_raw
        assert cond(a) is None
        assert cond(a, ANNOTATIONS_VALID) == ("False", "InvalidMetricFallback", line)
        assert a.history == b.history
    assert bad.current == 4
    # Fixed: AnnotationsValid goes, the KEP's condition comes.
    bad.raw = queue_hpa()
    fixed = bad.sync(600, [DOWN])
    assert cond(fixed)[1] == "FallbackPending"  # type: ignore[index]
    assert cond(fixed, ANNOTATIONS_VALID) is None


def test_malformed_after_a_valid_one_deactivates_and_drops_the_condition() -> None:
    run = Run(queue_hpa(fb(**{"external:queue": {"replicas": 6, "failureDuration": "30s"}})), ON, 2)
    for t in range(0, 60, 15):
        run.sync(t, [DOWN])
    assert cond(run.outcomes[-1])[:2] == ("True", "FallbackActive")  # type: ignore[index]
    run.raw = queue_hpa("{")
    out = run.sync(60, [DOWN])
    assert cond(out) is None
    assert cond(out, ANNOTATIONS_VALID)[:2] == ("False", "InvalidMetricFallback")  # type: ignore[index]
    # The fallback ends (as if the annotation were removed), the metric freezes the
    # HPA as upstream, and the Warning comes last.
    assert [e[1] for e in events(out)] == [
        FB.EVENT_DEACTIVATED,
        "FailedGetExternalMetric",
        "FailedComputeMetricsReplicas",
        "InvalidMetricFallback",
    ]
    assert out.history.failing_metrics == ()


def test_fixing_or_removing_the_annotation_drops_streak_and_condition() -> None:
    r = Run(queue_hpa(), ON, current=2)
    for t in range(0, 200, 15):
        r.sync(t, [DOWN])
    assert r.current == 6 and r.history.failing_metrics
    r.raw = queue_hpa(None)
    out = r.sync(200, [DOWN])
    assert cond(out) is None and out.history.failing_metrics == ()
    assert (
        "Normal",
        "ExternalMetricFallbackDeactivated",
        "Fallback deactivated for metric external:queue: the fallback configuration was removed",
    ) in events(out)


def test_fallback_and_working_metrics_combine_by_max() -> None:
    two = [cpu(50), external("queue", value="100")]
    raw = with_annotation(raw_hpa(two, max_replicas=20), QUEUE_FB)
    r = Run(raw, ON, current=4)
    for t in range(0, 180, 15):
        r.sync(t, [500, DOWN])  # cpu at 50%: 4 wanted; the external metric is down
    assert r.current == 4
    out = r.sync(180, [500, DOWN])  # the fallback (6) is more than cpu's 4
    assert out.rescaled and r.current == 6
    out = r.sync(195, [1500, DOWN])  # cpu now wants 18: more than the fallback
    assert r.current == 12  # legacy scale-up limit: max(2 x 6, 4)
    assert out.explanation.metric_name.startswith("cpu resource utilization")


def test_failing_metric_without_fallback_still_blocks_scale_down() -> None:
    """Upstream: a missing metric forbids a scale-down; the fallback lifts that only for
    the metrics it covers."""
    two = [cpu(50), external("queue", value="100")]
    raw = with_annotation(raw_hpa(two, max_replicas=20), QUEUE_FB)
    r = Run(raw, ON, current=9)
    for t in range(0, 400, 15):
        out = r.sync(t, [MetricFetchError("no metrics returned from resource metrics API"), DOWN])
    assert r.current == 9
    assert cond(out, "ScalingActive")[1] == "FailedGetResourceMetric"  # type: ignore[index]
    assert cond(out)[0] == "True"  # type: ignore[index]
    # From below the fallback it does scale up, as upstream scales up on the metrics it has.
    low = Run(raw, ON, current=2)
    for t in range(0, 400, 15):
        low.sync(t, [MetricFetchError("no metrics returned from resource metrics API"), DOWN])
    assert low.current == 6


def test_every_metric_type_falls_back() -> None:
    every = [
        cpu(50),
        pods_metric("rps"),
        obj("hits"),
        external("queue"),
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "c",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        },
    ]
    value = fb(
        **{
            "cpu": {"replicas": 3},
            "pods:rps": {"replicas": 5},
            "object:hits": {"replicas": 4},
            "external:queue": {"replicas": 2},
            "cpu(c)": {"replicas": 7, "failureDuration": "1m"},
        }
    )
    r = Run(with_annotation(raw_hpa(every, max_replicas=20), value), ON, current=2)
    failing = [MetricFetchError("no metrics returned from resource metrics API")] * 5
    for t in range(0, 60, 15):
        r.sync(t, failing)
    assert r.current == 2
    out = r.sync(60, failing)  # only the container metric's 1m has passed
    assert r.current == 4  # max(2 x 2, 4): the legacy scale-up limit on the way to 7
    assert [e[1] for e in events(out)].count("ExternalMetricFallbackActivated") == 1
    assert "container resource metric 'cpu' of container 'c'" in cond(out)[2]  # type: ignore[index]
    for t in range(75, 180, 15):
        r.sync(t, failing)
    out = r.sync(180, failing)
    assert [e[2].split(" after ")[0] for e in events(out) if e[1].endswith("Activated")] == [
        "Fallback activated for resource metric 'cpu'",
        "Fallback activated for pods metric 'rps'",
        "Fallback activated for object metric 'hits'",
        "Fallback activated for external metric 'queue'",
    ]
    assert r.current == 7


def test_spec_errors_do_not_count_as_failures() -> None:
    raw = with_annotation(
        raw_hpa([{"type": "Bogus"}, external("queue", average="100")]),
        fb(**{"0": {"replicas": 9}}),
    )
    r = Run(raw, ON, current=2)
    for t in range(0, 600, 15):
        out = r.sync(t, [None, ext_value(400_000)])
    assert r.current == 4 and out.history.failing_metrics == ()


def test_scale_down_through_the_fallback_waits_for_the_stabilization_window() -> None:
    r = Run(queue_hpa(fb(**{"external:queue": {"replicas": 2}}), max_replicas=20), ON, current=10)
    r.sync(0, [ext_value(1_000_000)])  # 10 wanted: the window holds a 10 from 0s
    for t in range(15, 195, 15):
        r.sync(t, [DOWN])
    out = r.sync(195, [DOWN])  # fallback active (2), but 10 was recommended at 0s
    assert cond(out)[0] == "True" and not out.rescaled  # type: ignore[index]
    assert "stabilization" in out.explanation.limited_by
    assert cond(out, "AbleToScale")[1] == "ScaleDownStabilized"  # type: ignore[index]
    rescaled = [t for t in range(210, 330, 15) if r.sync(t, [DOWN]).rescaled]
    # The 10 leaves the default 5-minute window at 300s; fallback recommendations
    # are recorded like any other.
    assert rescaled == [300]
    assert r.current == 2


def test_scale_up_through_the_fallback_is_rate_limited() -> None:
    behavior = {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}],
        }
    }
    raw = queue_hpa(fb(**{"external:queue": {"replicas": 9}}), max_replicas=20, behavior=behavior)
    r = Run(raw, ON, current=2)
    sizes = []
    for t in range(0, 600, 15):
        r.sync(t, [DOWN])
        sizes.append(r.current)
    # Active from 180s; then 2 pods per minute: 4, 6, 8, 9.
    assert sizes[12] == 4 and sizes[11] == 2
    assert sorted(set(sizes)) == [2, 4, 6, 8, 9]
    assert sizes.index(6) == 16 and sizes.index(8) == 20 and sizes.index(9) == 24
    limited = [o for o in r.outcomes if "scale-up-limit" in o.explanation.limited_by]
    assert limited and cond(limited[0], "ScalingLimited")[1] == "ScaleUpLimit"  # type: ignore[index]


def test_fallback_respects_min_and_max() -> None:
    r = Run(queue_hpa(fb(**{"external:queue": {"replicas": 50}}), max_replicas=8), ON, current=8)
    for t in range(0, 400, 15):
        out = r.sync(t, [DOWN])
    assert r.current == 8 and cond(out, "ScalingLimited")[1] == "TooManyReplicas"  # type: ignore[index]


def test_a_moved_metric_starts_a_new_streak() -> None:
    r = Run(queue_hpa(), ON, current=2)
    for t in range(0, 120, 15):
        r.sync(t, [DOWN])
    assert r.history.failing_metrics[0].metric == "0/external:queue"
    r.raw = with_annotation(raw_hpa([cpu(), external("queue", value="100")]), QUEUE_FB)
    out = r.sync(120, [500, DOWN], n_pods=2)
    assert out.history.failing_metrics[0].metric == "1/external:queue"
    assert out.history.failing_metrics[0].since == NOW + timedelta(seconds=120)


def test_history_without_fallback_is_untouched() -> None:
    r = Run(queue_hpa(None), ON, current=2)
    for t in range(0, 300, 15):
        r.sync(t, [DOWN])
    assert r.history == replace(r.history, failing_metrics=()) and not r.history.failing_metrics
