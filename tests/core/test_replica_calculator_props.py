"""Property tests for hpactl.core.replica_calculator over arbitrary valid inputs.

Invariants: the only exception is ReplicaCalcError; with non-negative metric values a
proposal is a valid replica count (0..MaxInt32); a tolerance band that contains every
ratio always keeps the current count.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st

from hpactl.core.replica_calculator import (
    MAX_INT32,
    MAX_INT64,
    MetricReplicas,
    ReplicaCalcError,
    ReplicaCalculator,
    ResourceReplicas,
    Tolerances,
    group_pods,
)
from hpactl.model.metrics import ExternalMetricValues, ObjectMetricValue, PodMetric
from hpactl.model.pod import ContainerView, PodView

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CALC = ReplicaCalculator(timedelta(minutes=5), timedelta(seconds=30), pod_level_resources=True)
# Contains every non-negative ratio: 1 - 1.0 <= ratio <= 1 + 1e300.
EVERYTHING = Tolerances(1.0, 1e300)

offsets = st.integers(min_value=-3600, max_value=3600).map(lambda s: NOW + timedelta(seconds=s))
maybe_time = st.none() | offsets
milli = st.integers(min_value=0, max_value=10**15)
requests = st.dictionaries(st.sampled_from(["cpu", "memory"]), milli, max_size=2)
# Usage samples stay small enough that Σusage·100 fits int32 however tiny the
# requests: beyond that upstream's int32 utilization wraps negative (faithfully
# reproduced on purpose), which these totality
# properties do not describe.
usage = st.integers(min_value=0, max_value=10**6)


@st.composite
def pod_lists(draw: st.DrawFn) -> list[PodView]:
    count = draw(st.integers(min_value=0, max_value=8))
    pods = []
    for i in range(count):
        containers = tuple(
            ContainerView(f"c{j}", draw(requests))
            for j in range(draw(st.integers(min_value=0, max_value=3)))
        )
        sidecars = tuple(
            ContainerView(f"s{j}", draw(requests))
            for j in range(draw(st.integers(min_value=0, max_value=1)))
        )
        ready = draw(st.sampled_from([True, False, None]))
        pods.append(
            PodView(
                namespace="ns",
                name=f"p{i}",
                labels={},
                phase=draw(st.sampled_from(["Running", "Pending", "Failed", "Succeeded", ""])),
                deleting=draw(st.booleans()),
                ready=ready,
                ready_transition=draw(maybe_time),
                start_time=draw(maybe_time),
                containers=containers,
                sidecars=sidecars,
                pod_requests=draw(st.none() | requests),
                ready_unknown=ready is False and draw(st.booleans()),
            )
        )
    return pods


@st.composite
def metrics_for(draw: st.DrawFn, pods: list[PodView]) -> dict[str, PodMetric]:
    names = [p.name for p in pods] + ["stranger-0", "stranger-1"]
    chosen = draw(st.lists(st.sampled_from(names), unique=True))
    return {
        name: PodMetric(
            draw(offsets),
            timedelta(seconds=draw(st.integers(min_value=0, max_value=120))),
            draw(usage),
        )
        for name in chosen
    }


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[PodView], dict[str, PodMetric]]:
    pods = draw(pod_lists())
    return pods, draw(metrics_for(pods))


tolerances = st.builds(
    Tolerances,
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=10.0),
)
currents = st.integers(min_value=1, max_value=1000)


def _valid(res: ResourceReplicas | MetricReplicas) -> None:
    assert 0 <= res.replicas <= MAX_INT32


@settings(max_examples=300, deadline=None)
@given(
    scenarios(),
    currents,
    st.integers(min_value=1, max_value=10**6),
    st.sampled_from(["cpu", "memory"]),
    st.sampled_from(["", "c0", "s0"]),
    tolerances,
)
def test_resource_replicas_total(
    scenario: tuple[list[PodView], dict[str, PodMetric]],
    current: int,
    target: int,
    resource: str,
    container: str,
    tol: Tolerances,
) -> None:
    pods, metrics = scenario
    for t in (tol, EVERYTHING):
        try:
            res = CALC.get_resource_replicas(
                current, target, resource, t, pods, metrics, NOW, container
            )
        except ReplicaCalcError:
            continue
        _valid(res)
        if t is EVERYTHING:
            assert res.replicas == current
        # The status values are computed over ready samples only.
        assert res.raw_average >= 0 and res.utilization >= 0


def _attempt(call: Callable[[], MetricReplicas]) -> MetricReplicas | None:
    try:
        return call()
    except ReplicaCalcError as err:
        assert err.message  # every failure carries upstream's text
        return None


@settings(max_examples=300, deadline=None)
@given(scenarios(), currents, st.integers(min_value=1, max_value=10**12), tolerances)
def test_plain_replicas_total(
    scenario: tuple[list[PodView], dict[str, PodMetric]], current: int, target: int, tol: Tolerances
) -> None:
    pods, metrics = scenario
    for t in (tol, EVERYTHING):
        results = (
            _attempt(
                partial(CALC.get_metric_replicas, current, target, "qps", t, pods, metrics, NOW)
            ),
            _attempt(
                partial(
                    CALC.get_raw_resource_replicas, current, target, "cpu", t, pods, metrics, NOW
                )
            ),
        )
        for res in results:
            if res is None:
                continue
            _valid(res)
            if t is EVERYTHING:
                assert res.replicas == current


@settings(max_examples=300, deadline=None)
@given(
    pod_lists(),
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=1, max_value=MAX_INT64),
    st.lists(st.integers(min_value=0, max_value=MAX_INT64), max_size=4),
    tolerances,
)
def test_object_and_external_replicas_total(
    pods: list[PodView],
    current: int,
    status: int,
    target: int,
    values: list[int],
    tol: Tolerances,
) -> None:
    obj = ObjectMetricValue(values[0] if values else 0, NOW)
    ext = ExternalMetricValues(tuple(values), NOW)
    for t in (tol, EVERYTHING):
        # These fail only when no pod matches (the ready-pod count needs pods).
        results = (
            _attempt(
                partial(
                    CALC.get_object_metric_replicas,
                    current,
                    target,
                    "m",
                    t,
                    "ns",
                    "K",
                    "o",
                    pods,
                    obj,
                )
            ),
            _attempt(
                partial(
                    CALC.get_external_metric_replicas,
                    current,
                    target,
                    "m",
                    t,
                    "ns",
                    None,
                    pods,
                    ext,
                )
            ),
        )
        for res in results:
            if res is None:
                assert current != 0 and not pods
                continue
            _valid(res)
            if t is EVERYTHING and current != 0:
                assert res.replicas == current
        for per_pod in (
            CALC.get_object_per_pod_metric_replicas(status, target, "m", t, "ns", "K", "o", obj),
            CALC.get_external_per_pod_metric_replicas(status, target, "m", t, "ns", None, ext),
        ):
            _valid(per_pod)
            if t is EVERYTHING and status != 0:
                assert per_pod.replicas == status


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.sampled_from(["cpu", "memory", ""]))
def test_group_pods_partitions(
    scenario: tuple[list[PodView], dict[str, PodMetric]], resource: str
) -> None:
    pods, metrics = scenario
    groups = group_pods(pods, metrics, resource, timedelta(minutes=5), timedelta(seconds=30), NOW)
    aside = {name for name, _ in groups.set_aside}
    assert aside == groups.unready_pods | groups.missing_pods | groups.ignored_pods
    assert groups.ready_pod_count + len(aside) == len(pods)
    assert not (groups.unready_pods & groups.missing_pods)
    if resource != "cpu":
        # Readiness only matters for cpu: only Pending pods are unready otherwise.
        assert all(p.phase == "Pending" for p in pods if p.name in groups.unready_pods)
