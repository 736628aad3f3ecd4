"""The shared metrics fetch at short sync periods: a slot's HPAs share one answer, the
next slot (one period later) never decides on it. At 1 s periods a list requested
0.99 s before was served again, so a decision could pair that period-old list with a
pod cache that had followed a scale since (seen as a false divergence in shadow mode).
The CPU usage served encodes the moment it was set, so each answer tells its age."""

from __future__ import annotations

from collections.abc import Mapping

from hpactl.clock import VirtualClock
from hpactl.core.decide import MetricRequest
from hpactl.emulator import Emulator
from hpactl.kube.session import KubeSession
from hpactl.metrics import RestMetricsClient, SharedMetricsFetcher
from hpactl.metrics.shared import ASKER_PERIOD

from .test_metrics_client import (  # noqa: F401 (fixtures)
    WEB,
    Counter,
    counted,
    pod_metrics,
    populated,
)

CPU = MetricRequest(0, "resource", "default", resource="cpu")


async def _ask(shared: SharedMetricsFetcher, period: float) -> int:
    token = ASKER_PERIOD.set(period)
    try:
        got = await shared.fetch(CPU, WEB)
    finally:
        ASKER_PERIOD.reset(token)
    assert isinstance(got, Mapping)
    return int(got["web-1"].value)


async def test_the_next_slot_lists_again_even_a_little_early(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1000m"}})])
    assert await _ask(shared, 1.0) == 1000
    clock.advance(0.01)
    assert await _ask(shared, 1.0) == 1000  # the same slot: shared
    assert counter.count("pods.metrics.k8s.io") == 1
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1001m"}})])
    clock.advance(0.98)  # the next slot's tick, 10 ms early
    assert await _ask(shared, 1.0) == 1001
    assert counter.count("pods.metrics.k8s.io") == 2
