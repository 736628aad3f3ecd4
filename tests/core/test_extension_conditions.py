"""One convention for every malformed extension annotation (docs/extensions.md,
"Malformed annotations"): ``AnnotationsValid=False`` with reason ``Invalid<Feature>``,
several problems in one condition (reasons joined by ``,``, messages by ``; ``, in
annotation-name order), a Warning each, the HPA synced as if unset, and no condition
at all once every annotation is valid (the status then upstream's byte for byte)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from core_builders import NOW, cond_map, inputs, pods, raw_hpa, samples

from hpactl.core.decide import CoreConfig, Outcome, reconcile
from hpactl.core.extension_conditions import ANNOTATIONS_VALID, annotation_problems
from hpactl.core.history import History
from hpactl.model.hpa import hpa_from_raw

ALL_ON = CoreConfig(
    configurable_sync_period=True,
    suspend=True,
    selection_strategy=True,
    metric_source=True,
    metric_fallback=True,
)
OFF = CoreConfig()

MALFORMED = {
    "hpactl.dev/sync-period-seconds": "0",
    "autoscaling.kubernetes.io/suspend": "maybe",
    "hpactl.dev/selection-strategy": "Owners",
    "hpactl.dev/metric-sources": "{",
    "hpactl.dev/metric-fallback": '{"memory": {"replicas": 3}}',
}
VALID = {
    "hpactl.dev/sync-period-seconds": "30",
    "autoscaling.kubernetes.io/suspend": "false",
    "hpactl.dev/selection-strategy": "LabelSelector",
    "hpactl.dev/metric-sources": '{"queue": "keda.sh"}',
}
#: Sorted by annotation name: autoscaling.kubernetes.io/ first, then hpactl.dev/.
REASONS = [
    "InvalidSuspend",
    "InvalidMetricFallback",
    "InvalidMetricSources",
    "InvalidSelectionStrategy",
    "InvalidSyncPeriod",
]


def _sync(
    annotations: dict[str, str],
    config: CoreConfig,
    *,
    status: dict[str, Any] | None = None,
    at: float = 0,
    current: int | None = 2,
) -> Outcome:
    raw = raw_hpa(status=status)
    raw["metadata"]["annotations"] = annotations
    ps = pods(2)
    now = NOW + timedelta(seconds=at)
    metrics = [samples(ps, 2000, now)] if current is not None else []
    return reconcile(
        inputs(hpa_from_raw(raw), current, metrics, ps, history=History(), config=config, now=now)
    )


def _events(o: Outcome) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in o.events]


def test_every_malformed_annotation_in_one_condition_and_a_warning_each() -> None:
    plain = _sync({}, ALL_ON)
    got = _sync(MALFORMED, ALL_ON)
    problems = annotation_problems(
        hpa_from_raw({**raw_hpa(), "metadata": {"name": "web", "annotations": MALFORMED}}),
        sync_period=True,
        suspend=True,
        selection_strategy=True,
        metric_sources=True,
        metric_fallback=True,
    )
    assert [p.reason for p in problems] == REASONS
    for p in problems:
        assert p.message.startswith(f"annotation {p.annotation}")
        assert "\n" not in p.message
    # Decided as the unannotated HPA (scaled up: not suspended, no fallback).
    assert got.rescaled and got.desired_replicas == plain.desired_replicas == 4
    assert got.history == plain.history
    cm = cond_map(got.status_raw)
    assert cm.pop(ANNOTATIONS_VALID) == (
        "False",
        ",".join(REASONS),
        "; ".join(p.message for p in problems),
    )
    assert cm == cond_map(plain.status_raw)
    assert _events(got) == [
        *_events(plain),
        *(("Warning", p.reason, p.message) for p in problems),
    ]
    # The condition is the last one: upstream's three keep their places.
    assert [c["type"] for c in got.status_raw["conditions"]][-1] == ANNOTATIONS_VALID


def test_the_same_text_at_every_sync_and_the_transition_time_kept() -> None:
    first = _sync(MALFORMED, ALL_ON)
    again = _sync(MALFORMED, ALL_ON, status=first.status_raw, at=15)
    (a,) = [c for c in first.status_raw["conditions"] if c["type"] == ANNOTATIONS_VALID]
    (b,) = [c for c in again.status_raw["conditions"] if c["type"] == ANNOTATIONS_VALID]
    assert a == b
    assert [e for e in _events(again) if e[0] == "Warning"] == [
        e for e in _events(first) if e[0] == "Warning"
    ]


def test_one_problem_gives_its_own_reason() -> None:
    got = _sync({**VALID, "hpactl.dev/selection-strategy": "owner"}, ALL_ON)
    status, reason, message = cond_map(got.status_raw)[ANNOTATIONS_VALID]
    assert (status, reason) == ("False", "InvalidSelectionStrategy")
    assert message.startswith("annotation hpactl.dev/selection-strategy='owner' ")
    assert [e[1] for e in _events(got) if e[0] == "Warning"] == ["InvalidSelectionStrategy"]


def test_valid_annotations_give_no_condition_and_fixing_removes_it() -> None:
    plain = _sync({}, ALL_ON)
    valid = _sync(VALID, ALL_ON)
    assert valid.status_raw == plain.status_raw
    assert _events(valid) == _events(plain)
    bad = _sync(MALFORMED, ALL_ON)
    fixed = _sync(VALID, ALL_ON, status=bad.status_raw, at=15)
    assert ANNOTATIONS_VALID not in cond_map(fixed.status_raw)
    assert not [e for e in _events(fixed) if e[1].startswith("Invalid")]


def test_gates_off_ignore_every_annotation() -> None:
    plain = _sync({}, OFF)
    got = _sync(MALFORMED, OFF)
    assert got.status_raw == plain.status_raw
    assert _events(got) == _events(plain)
    # Each gate alone reports only its own annotation.
    for config, reason in [
        (replace(OFF, configurable_sync_period=True), "InvalidSyncPeriod"),
        (replace(OFF, suspend=True), "InvalidSuspend"),
        (replace(OFF, selection_strategy=True), "InvalidSelectionStrategy"),
        (replace(OFF, metric_source=True), "InvalidMetricSources"),
        (replace(OFF, metric_fallback=True), "InvalidMetricFallback"),
    ]:
        one = _sync(MALFORMED, config)
        assert cond_map(one.status_raw)[ANNOTATIONS_VALID][1] == reason


def test_reported_when_the_scale_cannot_be_read() -> None:
    got = _sync(MALFORMED, ALL_ON, current=None)
    assert cond_map(got.status_raw)[ANNOTATIONS_VALID][1] == ",".join(REASONS)
    assert [e[1] for e in _events(got)] == ["FailedGetScale", *REASONS]
