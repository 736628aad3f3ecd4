"""examples/metrics-fallback.yaml (KEP-5679): every metrics API down for ten minutes.

The HPAs that opted in fall back after their failureDuration (rate-limited on the way
up, stabilized on the way down), the one that did not stays frozen as upstream; with
the gate off, or without the annotations, the whole output is upstream's byte for byte;
a malformed annotation leaves that HPA upstream's, with a Warning and the condition.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hpactl.simulate.runner import StepResult

from .example_runs import gate_off, jsonl, load, run, without

pytestmark = pytest.mark.timeout(120)

ANNOTATION = "hpactl.dev/metric-fallback"
CONDITION = "ExternalMetricFallbackActive"


def changes(results: list[StepResult], target: str) -> list[tuple[float, int]]:
    t0 = results[0].time
    out: list[tuple[float, int]] = []
    for r in results:
        v = r.targets[target]["replicas"]
        if not out or out[-1][1] != v:
            out.append(((r.time - t0).total_seconds(), v))
    return out


def events(results: list[StepResult], hpa: str, reason: str) -> list[tuple[float, str]]:
    t0 = results[0].time
    return [
        ((r.time - t0).total_seconds(), e["message"])
        for r in results
        for e in r.events
        if e["object"] == f"HorizontalPodAutoscaler/{hpa}" and e["reason"] == reason
    ]


def condition(r: StepResult, hpa: str, type_: str = CONDITION) -> dict[str, Any] | None:
    return next((c for c in r.hpas[hpa].get("conditions", []) if c["type"] == type_), None)


async def test_outage_opted_in_hpas_fall_back_others_stay_frozen() -> None:
    results = await run(load("metrics-fallback"))
    # web: 2m of failures from 4m, then 6 through the legacy scale-up limit (4, then 6);
    # back at 14m, the 5-minute window holds the last fallback recommendation (13m45s).
    assert changes(results, "Deployment/shop/web") == [(0, 2), (360, 4), (375, 6), (1125, 2)]
    # worker: the KEP's default 3m, then 8 (6, then 8).
    assert changes(results, "Deployment/shop/worker") == [(0, 3), (420, 6), (435, 8), (1125, 3)]
    # reports has no fallback: frozen through the outage, as upstream.
    assert changes(results, "Deployment/shop/reports") == [(0, 2)]
    assert events(results, "shop/web", "ExternalMetricFallbackActivated") == [
        (
            360,
            "Fallback activated for resource metric 'cpu' after 2m0s of consecutive "
            "failures, using fallback replica count: 6",
        )
    ]
    assert events(results, "shop/worker", "ExternalMetricFallbackActivated") == [
        (
            420,
            "Fallback activated for external metric 'queue_length' after 3m0s of "
            "consecutive failures, using fallback replica count: 8",
        )
    ]
    assert events(results, "shop/worker", "ExternalMetricFallbackDeactivated") == [
        (
            840,
            "Fallback deactivated for external metric 'queue_length': the metric was "
            "retrieved again after 10m0s of failures",
        )
    ]
    by_time = {(r.time - results[0].time).total_seconds(): r for r in results}
    before, pending, active, after = by_time[225], by_time[405], by_time[600], by_time[840]
    assert condition(before, "shop/worker")["reason"] == "NoMetricFailing"  # type: ignore[index]
    assert condition(pending, "shop/worker")["reason"] == "FallbackPending"  # type: ignore[index]
    c = condition(active, "shop/worker")
    assert c is not None and c["status"] == "True" and c["reason"] == "FallbackActive"
    assert c["lastTransitionTime"] == "2026-01-01T00:07:00Z"
    assert c["message"] == (
        "external metric 'queue_length' uses its fallback replica count 8 "
        "(failing since 2026-01-01T00:04:00Z)"
    )
    assert condition(after, "shop/worker")["status"] == "False"  # type: ignore[index]
    # Upstream's conditions meanwhile: the fallback is a valid metric, so ScalingActive.
    assert condition(active, "shop/worker", "ScalingActive")["status"] == "True"  # type: ignore[index]
    assert condition(active, "shop/reports", "ScalingActive")["reason"] == (  # type: ignore[index]
        "FailedGetExternalMetric"
    )
    assert all(condition(r, "shop/reports") is None for r in results)


async def test_gate_off_and_unset_are_upstream_byte_for_byte() -> None:
    data = load("metrics-fallback")
    upstream = jsonl(await run(gate_off(without(data, ANNOTATION))))
    assert jsonl(await run(gate_off(data))) == upstream
    assert jsonl(await run(without(data, ANNOTATION))) == upstream


async def test_malformed_annotation_is_reported_and_otherwise_upstream() -> None:
    data = load("metrics-fallback")
    bad = copy.deepcopy(data)
    bad["objects"][3]["metadata"]["annotations"][ANNOTATION] = '{"memory": {"replicas": 6}}'
    results = await run(bad)
    plain = await run(without(data, ANNOTATION))
    assert changes(results, "Deployment/shop/web") == changes(plain, "Deployment/shop/web")
    assert changes(results, "Deployment/shop/web") == [(0, 2)]
    message = (
        f'annotation {ANNOTATION}: "memory": no such metric in spec.metrics (metrics: cpu); '
        "no metric falls back"
    )
    warnings = events(results, "shop/web", "InvalidMetricFallback")
    # Each sync emits it; the event recorder's spam filter lets some through.
    assert warnings[0][0] == 0 and {m for _, m in warnings} == {message}
    # Reported as every malformed annotation is; the KEP's condition is not set.
    c = condition(results[-1], "shop/web", "AnnotationsValid")
    assert c is not None and (c["status"], c["reason"], c["message"]) == (
        "False",
        "InvalidMetricFallback",
        message,
    )
    assert condition(results[-1], "shop/web") is None
    # The other HPAs are unaffected.
    assert changes(results, "Deployment/shop/worker") == changes(
        await run(data), "Deployment/shop/worker"
    )
