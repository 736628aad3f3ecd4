"""The shared metrics fetch with HPAs of one namespace at different sync periods.

KEP-6003: an HPA synced every 5 s must never decide on an answer another HPA (synced
every 60 s) fetched long ago, while the slow one may reuse the fast one's answers.
The CPU usage served encodes the second it was set, so each answer tells its age.
"""

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


async def ask(shared: SharedMetricsFetcher, period: float | None) -> int:
    """The second the answer was set: its age is now minus that."""
    token = ASKER_PERIOD.set(period)
    try:
        got = await shared.fetch(CPU, WEB)
    finally:
        ASKER_PERIOD.reset(token)
    assert isinstance(got, Mapping)
    return int(got["web-1"].value) - 1000


async def test_no_asker_gets_an_answer_older_than_its_own_period(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0)
    ages: dict[float | None, list[float]] = {5.0: [], 60.0: [], None: []}
    for _ in range(240):
        now = clock.monotonic()  # starts at 0
        populated.metrics.set_pod_metrics(
            [pod_metrics("web-1", {"app": {"cpu": f"{1000 + int(now)}m"}})]
        )
        # The fast HPA syncs every 5 s, the slow one every 60 s, a default one every 15 s.
        for period in ages:
            p = 15.0 if period is None else period
            if int(now) % int(p) == 0:
                ages[period].append(now - await ask(shared, period))
        clock.advance(1.0)
    assert max(ages[5.0]) < 5.0
    assert max(ages[60.0]) < 60.0
    assert max(ages[None]) < 15.0
    assert len(ages[5.0]) == 48 and len(ages[60.0]) == 4
    # And they share: fewer lists than asks.
    asks = sum(len(v) for v in ages.values())
    assert counter.count("pods.metrics.k8s.io") < asks


async def test_the_slow_hpa_reuses_the_fast_hpas_fresher_answer(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1000m"}})])
    assert await ask(shared, 60.0) == 0
    clock.advance(20.0)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1020m"}})])
    # 20 s later: too old for the 5 s HPA, which lists again ...
    assert await ask(shared, 5.0) == 20
    # ... and the 60 s HPA, asking now, is served that fresher list without a request.
    assert await ask(shared, 60.0) == 20
    assert counter.count("pods.metrics.k8s.io") == 2


async def test_an_hpa_with_a_period_shorter_than_the_window_is_bounded_by_its_period(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0)
    assert shared.share_window > 2.0
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1000m"}})])
    assert await ask(shared, 2.0) == 0
    clock.advance(2.0)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1002m"}})])
    # Two seconds old: within the window, but too old for an HPA synced every 2 s ...
    assert await ask(shared, 2.0) == 2
    clock.advance(1.0)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1003m"}})])
    # ... while a default HPA takes the 1 s old answer.
    assert await ask(shared, None) == 2
    assert counter.count("pods.metrics.k8s.io") == 2


async def test_the_next_slot_lists_again_even_a_little_early(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    """At 1 s periods a slot's HPAs share one answer, but the next slot (one period
    later, ticking a few ms early) never decides on it: a list 0.99 s old, paired with a
    pod cache that followed a scale since, was a false divergence in shadow mode."""
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1000m"}})])
    assert await ask(shared, 1.0) == 0
    clock.advance(0.01)
    assert await ask(shared, 1.0) == 0  # the same slot: shared
    assert counter.count("pods.metrics.k8s.io") == 1
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "1001m"}})])
    clock.advance(0.98)  # the next slot's tick, 10 ms early
    assert await ask(shared, 1.0) == 1
    assert counter.count("pods.metrics.k8s.io") == 2
