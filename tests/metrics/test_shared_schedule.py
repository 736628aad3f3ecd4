"""The shared fetch under the sync schedule: one list per namespace and period, fresh.

The schedule places a namespace's HPAs in a short slot; the fetcher serves a list for
a short window. Together: the first sync of a slot lists the namespace and the others
reuse it, so each HPA decides on metrics at most a slot old (not up to a period, as
when every HPA ticked anywhere in the period and a list was kept for a period).
"""

from __future__ import annotations

from typing import Any

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SyncSupervisor, slot_width
from hpactl.core.decide import MetricRequest
from hpactl.emulator import Emulator
from hpactl.kube.session import KubeSession
from hpactl.metrics import RestMetricsClient, SharedMetricsFetcher

from .test_metrics_client import (  # noqa: F401 (fixtures)
    WEB,
    Counter,
    counted,
    populated,
)

PERIOD = 15.0
PER_NS = 50


class Timed(RestMetricsClient):
    """Notes when each namespace was last listed."""

    def __init__(self, s: KubeSession, clock: VirtualClock) -> None:
        super().__init__(s)
        self.clock = clock
        self.listed: dict[str, float] = {}

    async def list_pod_metrics(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        self.listed[namespace] = self.clock.monotonic()
        return await super().list_pod_metrics(namespace, selector)


async def test_one_list_per_namespace_and_period_and_no_decision_on_old_metrics(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    s, counter = counted
    clock = VirtualClock()
    client = Timed(s, clock)
    shared = SharedMetricsFetcher(client, clock=clock, period=PERIOD)
    ages: list[float] = []

    async def sync(key: str) -> None:
        ns = key.partition("/")[0]
        await shared.fetch(MetricRequest(0, "resource", ns, resource="cpu"), WEB)
        ages.append(clock.monotonic() - client.listed[ns])

    sup = SyncSupervisor(clock, PERIOD, 5, sync)
    keys = [f"{ns}/hpa-{i}" for ns in ("default", "other") for i in range(PER_NS)]
    sup.start(keys)
    await clock.settle()
    await clock.run_for(3 * PERIOD - 0.001)
    await sup.stop()
    assert len(ages) == 3 * len(keys)
    assert counter.count("pods.metrics.k8s.io") == 2 * 3  # namespaces x periods
    # Every decision rests on a list made within its namespace's slot.
    assert max(ages) < slot_width(PER_NS, PERIOD) < shared.share_window


async def test_answers_past_the_window_are_not_kept(
    populated: Emulator,  # noqa: F811
    counted: tuple[KubeSession, Counter],  # noqa: F811
) -> None:
    s, _ = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=PERIOD)
    await shared.fetch(MetricRequest(0, "resource", "default", resource="cpu"), WEB)
    clock.advance(1.0)
    await shared.fetch(MetricRequest(0, "resource", "other", resource="cpu"), WEB)
    assert shared.cached_keys() == [("resource", "default"), ("resource", "other")]
    clock.advance(shared.share_window - 0.5)
    await shared.fetch(MetricRequest(0, "resource", "other", resource="cpu"), WEB)
    # "default"'s list is past the window: dropped, not kept until its next list.
    assert shared.cached_keys() == [("resource", "other")]
