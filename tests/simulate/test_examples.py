"""Every example in examples/ runs, and does what docs/simulate.md says it shows."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import load_scenario

pytestmark = pytest.mark.timeout(90)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def run(name: str) -> list[StepResult]:
    async with Simulation(load_scenario(EXAMPLES / f"{name}.yaml")) as sim:
        return await sim.run()


def replicas(results: list[StepResult], target: str) -> list[int]:
    return [r.targets[target]["replicas"] for r in results]


def at(results: list[StepResult], hhmmss: str) -> StepResult:
    return next(r for r in results if r.time.strftime("%H:%M:%S") == hhmmss)


def changes(series: list[int]) -> list[int]:
    out = [series[0]]
    for v in series[1:]:
        if v != out[-1]:
            out.append(v)
    return out


def test_every_example_is_tested() -> None:
    tested = {
        "flash-crowd",
        "flash-crowd-rate-limited",
        "noisy-no-stabilization",
        "noisy-stabilized",
        "multiple-metrics",
        "external-queue",
        "unready-startup",
        "ingress-object-metric",
        "zones-spread",
        "zones-spread-anyway",
        "per-hpa-period",  # tests/simulate/test_extension_examples.py
        "suspend",  # tests/simulate/test_extension_examples.py
        "owned-pods",  # tests/simulate/test_owned_pods_example.py
        "metrics-fallback",  # tests/simulate/test_metrics_fallback_example.py
    }
    assert {p.stem for p in EXAMPLES.glob("*.yaml")} == tested


async def test_flash_crowd_default_behavior() -> None:
    results = await run("flash-crowd")
    series = replicas(results, "Deployment/shop/checkout")
    # Legacy scale-up limit (no behavior): at most max(2x, 4) per sync.
    assert changes(series) == [2, 4, 8, 16, 18, 2]
    assert at(results, "00:03:00").targets["Deployment/shop/checkout"]["replicas"] == 18
    # The crowd leaves at 10m15s; the 5-minute scale-down window holds 18 until 15m.
    assert at(results, "00:14:45").targets["Deployment/shop/checkout"]["replicas"] == 18
    down = at(results, "00:15:00")
    assert down.targets["Deployment/shop/checkout"]["replicas"] == 2
    assert down.events[0]["reason"] == "SuccessfulRescale"
    assert down.events[0]["message"] == "New size: 2; reason: All metrics below target"


async def test_flash_crowd_rate_limited() -> None:
    results = await run("flash-crowd-rate-limited")
    series = replicas(results, "Deployment/shop/checkout")
    assert changes(series) == [2, 4, 6, 8, 10, 12, 14, 16, 2]
    # Two pods per minute: never more than +2 within any 60 s.
    for i, r in enumerate(results):
        window = [x for x in results[: i + 1] if (r.time - x.time).total_seconds() < 60]
        grown = r.targets["Deployment/shop/checkout"]["replicas"] - min(
            x.targets["Deployment/shop/checkout"]["replicas"] for x in window
        )
        assert grown <= 2
    limited = next(
        c
        for c in at(results, "00:03:00").hpas["shop/checkout"]["conditions"]
        if c["type"] == "ScalingLimited"
    )
    assert (limited["status"], limited["reason"]) == ("True", "ScaleUpLimit")


async def test_noisy_metric_without_and_with_stabilization() -> None:
    flappy = await run("noisy-no-stabilization")
    steady = await run("noisy-stabilized")
    f = changes(replicas(flappy, "Deployment/default/api"))
    s = changes(replicas(steady, "Deployment/default/api"))
    downs = sum(1 for a, b in itertools.pairwise(f) if b < a)
    assert downs >= 15
    # With the 5-minute window: up once, held through the noise, down once after it.
    assert s == [5, 7, 2]
    assert at(steady, "00:19:45").targets["Deployment/default/api"]["replicas"] == 7
    assert at(steady, "00:20:00").targets["Deployment/default/api"]["replicas"] == 2


async def test_multiple_metrics_takes_the_largest() -> None:
    results = await run("multiple-metrics")
    assert changes(replicas(results, "StatefulSet/default/api")) == [3, 6, 10]
    r = at(results, "00:03:00")
    assert r.events[0]["message"] == (
        "New size: 6; reason: pods metric requests_per_second above target"
    )
    final = results[-1].hpas["default/api"]
    cpu, rps = final["currentMetrics"]
    assert cpu["type"] == "Resource" and cpu["resource"]["current"]["averageUtilization"] < 60
    assert rps["pods"]["current"]["averageValue"] == "10"
    assert final["desiredReplicas"] == 10


async def test_external_queue() -> None:
    results = await run("external-queue")
    assert changes(replicas(results, "Deployment/default/worker")) == [1, 4, 8, 14, 5, 1]
    # Per-replica value = total / status.replicas: 420 messages (orders only) over
    # the 8 workers running when it was read, then over 14.
    scaled = at(results, "00:02:00").hpas["default/worker"]
    assert scaled["currentMetrics"][0]["external"]["current"]["averageValue"] == "52500m"
    peak = at(results, "00:02:15").hpas["default/worker"]
    assert peak["currentMetrics"][0]["external"]["current"]["averageValue"] == "30"
    last = results[-1]
    active = next(
        c for c in last.hpas["default/worker"]["conditions"] if c["type"] == "ScalingActive"
    )
    assert (active["status"], active["reason"]) == ("False", "FailedGetExternalMetric")
    assert last.targets["Deployment/default/worker"]["replicas"] == 1


async def test_unready_pods_at_startup() -> None:
    results = await run("unready-startup")
    series = replicas(results, "Deployment/default/billing")
    assert changes(series) == [3, 6, 12]
    # While every pod is starting the HPA has no usable CPU sample.
    first = results[0].hpas["default/billing"]
    active = next(c for c in first["conditions"] if c["type"] == "ScalingActive")
    assert active["reason"] == "FailedGetResourceMetric"
    assert "pods might be unready" in active["message"]
    assert at(results, "00:02:15").targets["Deployment/default/billing"]["replicas"] == 3
    # 6 cores over 12 Ready pods of 1 core is exactly the 50% target: it stays there.
    final = results[-1].hpas["default/billing"]
    assert final["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 50
    assert series[-1] == 12


async def test_ingress_object_metric() -> None:
    results = await run("ingress-object-metric")
    series = replicas(results, "Deployment/shop/web")
    assert changes(series) == [2, 4, 8, 3]
    up = at(results, "00:02:00")
    # Upstream names an Object metric with an AverageValue target this way.
    assert up.events[0]["message"] == (
        "New size: 4; reason: external metric requests_per_second(nil) above target"
    )
    (current,) = at(results, "00:02:15").hpas["shop/web"]["currentMetrics"]
    assert current["object"]["describedObject"] == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "name": "shop",
    }
    # 4000 rps over the 4 pods running when it was read, target 500 per pod.
    assert current["object"]["current"]["averageValue"] == "1k"
    # Traffic falls at 10m; the last 8-pod recommendation (9m45s) leaves the
    # 5-minute window at 14m45s.
    assert at(results, "00:14:30").targets["Deployment/shop/web"]["replicas"] == 8
    assert at(results, "00:14:45").targets["Deployment/shop/web"]["replicas"] == 3


def zone_counts(results: list[StepResult]) -> list[tuple[dict[str, int], dict[str, int]]]:
    """(pods by phase, pods per zone) at every change."""
    out: list[tuple[dict[str, int], dict[str, int]]] = []
    for r in results:
        t = r.targets["Deployment/default/web"]
        now = (t["pods"], t["topology"]["topology.kubernetes.io/zone"])
        if not out or out[-1] != now:
            out.append(now)
    return out


async def test_zones_spread_do_not_schedule() -> None:
    results = await run("zones-spread")
    assert changes(replicas(results, "Deployment/default/web")) == [3, 6, 12, 15, 3]
    # Up: every pod to a zone with the fewest; zone c (room for 4) fills, then a and
    # b may hold one more each (maxSkew 1): the 15th pod stays Pending.
    assert zone_counts(results) == [
        ({"Running": 3}, {"a": 1, "b": 1, "c": 1}),
        ({"Running": 6}, {"a": 2, "b": 2, "c": 2}),
        ({"Running": 12}, {"a": 4, "b": 4, "c": 4}),
        ({"Pending": 1, "Running": 14}, {"a": 5, "b": 5, "c": 4}),
        # Down to 3: the Pending pod first, then the pods of the most crowded node
        # (c-1 holds 4, more than any node of a or b): zone c is emptied.
        ({"Running": 3}, {"a": 1, "b": 2, "c": 0}),
    ]
    web = [r.targets["Deployment/default/web"] for r in results]
    down = next(i for i, t in enumerate(web) if i and t["replicas"] < web[i - 1]["replicas"])
    skew = [t["skew"]["topology.kubernetes.io/zone"] for t in web]
    assert max(skew[:down]) == 1  # never above maxSkew until the scale-down
    assert skew[down:] == [2] * (len(web) - down)  # above it after


async def test_zones_spread_schedule_anyway() -> None:
    results = await run("zones-spread-anyway")
    assert changes(replicas(results, "Deployment/default/web")) == [3, 6, 12, 15, 3]
    assert zone_counts(results) == [
        ({"Running": 3}, {"a": 1, "b": 1, "c": 1}),
        ({"Running": 6}, {"a": 2, "b": 2, "c": 2}),
        ({"Running": 12}, {"a": 4, "b": 4, "c": 4}),
        # Zone c full: a and b take the overflow, nothing is Pending.
        ({"Running": 15}, {"a": 6, "b": 5, "c": 4}),
        ({"Running": 3}, {"a": 0, "b": 3, "c": 0}),
    ]
    assert results[-1].targets["Deployment/default/web"]["skew"] == {
        "topology.kubernetes.io/zone": 3
    }
