"""examples/recorded-day: a recorded weekday against two HPA specs, and what the
comparison must show (docs/simulate.md)."""

from __future__ import annotations

import asyncio
import csv
import math
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from hpactl.model.times import parse_time
from hpactl.simulate.compare import demand_differences, hpa_stats, run_variant
from hpactl.simulate.runner import StepResult
from hpactl.simulate.scenario import Scenario, load_scenario

pytestmark = pytest.mark.timeout(300)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "recorded-day"
TARGET = "Deployment/default/web"
HPA = "default/web"
# The HPA of both variants: 500m requested per pod, 70% target, 2 to 20 replicas,
# the default tolerance of 10%.
PER_POD_AT_TARGET = 0.5 * 0.70
MIN, MAX, TOLERANCE = 2, 20, 0.1


@pytest.fixture(scope="module")
def scenarios() -> dict[str, Scenario]:
    return {n: load_scenario(EXAMPLE / f"{n}.yaml") for n in ("reactive", "stabilized")}


@pytest.fixture(scope="module")
def runs(scenarios: dict[str, Scenario]) -> dict[str, list[StepResult]]:
    return {n: asyncio.run(run_variant(sc)) for n, sc in scenarios.items()}


def samples() -> list[tuple[float, float]]:
    """(seconds since the first sample, cores) from the recording."""
    with open(EXAMPLE / "traffic.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    t0 = parse_time(rows[0]["time"])
    return [((parse_time(r["time"]) - t0).total_seconds(), float(r["cpu"])) for r in rows]


def replicas(results: list[StepResult]) -> list[tuple[float, int]]:
    start = results[0].time
    return [((r.time - start).total_seconds(), r.targets[TARGET]["replicas"]) for r in results]


def test_the_recording_is_what_the_generator_writes(tmp_path: Path) -> None:
    out = tmp_path / "traffic.csv"
    subprocess.run(
        [sys.executable, str(EXAMPLE / "generate.py"), "--out", str(out)], check=True, timeout=60
    )
    assert out.read_bytes() == (EXAMPLE / "traffic.csv").read_bytes()


def test_the_recording_is_a_day_of_minutes(scenarios: dict[str, Scenario]) -> None:
    s = samples()
    assert len(s) == 1440
    assert [t for t, _ in s] == [60.0 * i for i in range(1440)]
    with open(EXAMPLE / "traffic.csv", encoding="utf-8") as f:
        f.readline()
        first = parse_time(f.readline().split(",")[0])
    for sc in scenarios.values():
        assert sc.start == first  # the first sample falls on start
        assert [p.milli for p in sc.workload[0].demand["cpu"]] == [round(v * 1000) for _, v in s]
    a, b = scenarios.values()
    assert demand_differences(a, b) == []


def test_both_run_the_whole_day(runs: dict[str, list[StepResult]]) -> None:
    for results in runs.values():
        assert len(results) == 5760
        assert results[-1].time - results[0].time == timedelta(hours=24) - timedelta(seconds=15)
        counts = [n for _, n in replicas(results)]
        assert min(counts) >= MIN
        assert max(counts) <= MAX


def test_pod_hours_are_replicas_times_time(
    runs: dict[str, list[StepResult]], scenarios: dict[str, Scenario]
) -> None:
    for name, results in runs.items():
        stats = hpa_stats(results, period=scenarios[name].sync_period)[HPA]
        # Every step holds 15 s, so pod-hours are the sum of the counts / 240.
        assert stats.pod_hours == pytest.approx(sum(n for _, n in replicas(results)) / 240)
        assert stats.max_replicas == max(n for _, n in replicas(results))


def test_quiet_hours_stay_at_min_replicas(runs: dict[str, list[StepResult]]) -> None:
    s = samples()
    # Night (before 06:00): the load never asks for more than 2 pods within the
    # tolerance, so neither HPA scales.
    night = max(v for t, v in s if t < 6 * 3600)
    assert night / (MIN * PER_POD_AT_TARGET) <= 1 + TOLERANCE
    # The last half hour: at most 2 pods' worth, so both are back at min by the end.
    late = max(v for t, v in s if t >= 23.5 * 3600)
    assert math.ceil(late / PER_POD_AT_TARGET) <= MIN
    for results in runs.values():
        series = replicas(results)
        assert {n for t, n in series if t < 6 * 3600} == {MIN}
        assert series[-1][1] == MIN


def scale_times(results: list[StepResult]) -> list[tuple[float, str]]:
    start = results[0].time
    out = []
    for r in results:
        if HPA in r.rescales:
            before, after = r.rescales[HPA]
            assert before is not None and after is not None
            out.append(((r.time - start).total_seconds(), "up" if after > before else "down"))
    return out


def quick_downs(results: list[StepResult], window: float) -> int:
    """Scale-downs less than `window` seconds after the last scale-up."""
    last_up = -math.inf
    n = 0
    for t, d in scale_times(results):
        if d == "up":
            last_up = t
        elif t - last_up < window:
            n += 1
    return n


def test_the_stabilization_window_holds_and_costs_pods(
    runs: dict[str, list[StepResult]], scenarios: dict[str, Scenario]
) -> None:
    reactive = hpa_stats(runs["reactive"], period=15)[HPA]
    stabilized = hpa_stats(runs["stabilized"], period=15)[HPA]
    # The 5-minute window: a scale-up's recommendation stays in the window for 300 s,
    # so no scale-down comes sooner after one. Without a window they do.
    assert quick_downs(runs["stabilized"], 300) == 0
    assert quick_downs(runs["reactive"], 300) > 0
    # Fewer rescales (both ways), fewer minutes above target, for more pod-hours.
    assert stabilized.scale_ups + stabilized.scale_downs < reactive.scale_ups + reactive.scale_downs
    assert stabilized.scale_downs < reactive.scale_downs
    assert stabilized.above_target["cpu"] < reactive.above_target["cpu"]
    assert stabilized.pod_hours > reactive.pod_hours
    # The day needs more than the floor: the business hours and the flash crowd.
    for s in (reactive, stabilized):
        assert s.pod_hours > MIN * 24
