"""Table tests for hpactl.core.replica_calculator, ported as data from upstream's
pkg/controller/podautoscaler/replica_calculator_test.go (TestReplicaCalc*, TestGroupPods,
TestCalculateRequests), plus error texts upstream produces.

The upstream harness builds pods with two containers ("container1", "container2") that
both request ``requests[i]``, and PodMetrics whose containers each use ``levels[i][j]``;
metric timestamps are Go's zero time with a one-minute window, pod start times are the
zero time unless "hot" (now) or "cool" (now - 3m), and the calculator runs with a 2m
cpu-initialization period and a 10s initial-readiness delay. The helpers below rebuild
exactly those inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from hpactl.core.replica_calculator import (
    GO_ZERO_TIME,
    MAX_INT32,
    MAX_INT64,
    ReplicaCalcError,
    ReplicaCalculator,
    Tolerances,
    calculate_requests,
    format_label_selector_go,
    group_pods,
)
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetric,
    PodMetricsInfo,
)
from hpactl.model.pod import ContainerView, PodView

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
ZERO = GO_ZERO_TIME
HOT = NOW
COOL = NOW - timedelta(minutes=3)
T, F = True, False
RUN, PEND, FAIL = "Running", "Pending", "Failed"
NS = "test-namespace"
CALC = ReplicaCalculator(
    cpu_initialization_period=timedelta(minutes=2),
    delay_of_initial_readiness_status=timedelta(seconds=10),
    pod_level_resources=True,
)
DEFAULT_TOL = Tolerances(0.1, 0.1)
SELECTOR = {"matchLabels": {"label": "value"}}


# --- fixture builders (the upstream harness, as data) ------------------------------


@dataclass
class Fixture:
    current: int
    readiness: Sequence[bool] | None = None
    start_times: Sequence[datetime] | None = None
    phases: Sequence[str] | None = None
    deleting: Sequence[bool] | None = None
    requests: Sequence[int] | None = None  # milli, per container, per pod
    resource: str = "cpu"


def build_pods(fx: Fixture) -> list[PodView]:
    count = max(fx.current, len(fx.phases or ()))
    pods = []
    for i in range(count):
        req = (
            {fx.resource: fx.requests[i]}
            if fx.requests is not None and i < len(fx.requests)
            else {}
        )
        pods.append(
            PodView(
                namespace=NS,
                name=f"test-pod-{i}",
                labels={"name": "test-pod"},
                phase=fx.phases[i] if fx.phases else RUN,
                deleting=bool(fx.deleting and fx.deleting[i]),
                ready=fx.readiness[i] if fx.readiness and i < len(fx.readiness) else True,
                ready_transition=None,
                start_time=fx.start_times[i] if fx.start_times else ZERO,
                containers=(ContainerView("container1", req), ContainerView("container2", req)),
                sidecars=(),
                pod_requests=None,
            )
        )
    return pods


def resource_metrics(
    levels: Sequence[Sequence[int]], container: str = "", pod_names: Sequence[str] = ()
) -> dict[str, PodMetric]:
    """What upstream's resource metrics client hands the calculator for the fake API.

    Every PodMetrics item has two container slots; a slot without a level has no name and
    no usage. A pod lacking usage in any container (whole-pod) or lacking the named
    container gets no sample.
    """
    out: dict[str, PodMetric] = {}
    for i, pod_levels in enumerate(levels):
        name = pod_names[i] if i < len(pod_names) else f"test-pod-{i}"
        slots: list[tuple[str, int | None]] = [
            (f"container{j + 1}", v) for j, v in enumerate(pod_levels)
        ]
        slots += [("", None)] * (2 - len(slots))
        if container:
            value = next((v for n, v in slots if n == container), None)
        elif any(v is None for _, v in slots):
            value = None
        else:
            value = sum(v for _, v in slots if v is not None)
        if value is not None:
            out[name] = PodMetric(ZERO, timedelta(minutes=1), value)
    return out


def even(*per_pod: int) -> list[list[int]]:
    """Upstream makePodMetricLevels: both containers of pod i use per_pod[i]."""
    return [[v, v] for v in per_pod]


def pod_metrics(levels: Sequence[int]) -> dict[str, PodMetric]:
    return {f"test-pod-{i}": PodMetric(ZERO, timedelta(minutes=1), v) for i, v in enumerate(levels)}


# --- Resource (Utilization) ---------------------------------------------------------


@dataclass
class ResourceCase:
    name: str
    fx: Fixture
    levels: list[list[int]]
    target: int
    replicas: int
    utilization: int
    raw: int
    container: str = ""
    pod_names: Sequence[str] = ()
    tol: Tolerances = field(default_factory=lambda: DEFAULT_TOL)


R1 = [1000, 1000, 1000]
R5 = [1000] * 5
R7 = [1000] * 7
R4 = [1000] * 4
TOLREQ = [900, 1000, 1100]

RESOURCE_CASES = [
    # TestReplicaCalcResourceScale
    ResourceCase("scale up", Fixture(3, requests=R1), even(300, 500, 700), 30, 5, 50, 1000),
    ResourceCase(
        "scale up: container metric",
        Fixture(3, requests=R1),
        [[1000, 300], [1000, 500], [1000, 700]],
        30,
        5,
        50,
        500,
        container="container2",
    ),
    ResourceCase(
        "scale up: unready pod scales less",
        Fixture(3, readiness=[F, T, T], requests=R1),
        even(300, 500, 700),
        30,
        4,
        60,
        1200,
    ),
    ResourceCase(
        "scale up: hot-CPU container scales less",
        Fixture(3, start_times=[HOT, COOL, COOL], requests=R1),
        [[0, 300], [0, 500], [0, 700]],
        30,
        4,
        60,
        600,
        container="container2",
    ),
    ResourceCase(
        "scale up: hot-CPU pod scales less",
        Fixture(3, start_times=[HOT, COOL, COOL], requests=R1),
        even(300, 500, 700),
        30,
        4,
        60,
        1200,
    ),
    ResourceCase(
        "no scale: unready pods ignored",
        Fixture(3, readiness=[T, F, F], requests=R1),
        even(400, 500, 700),
        30,
        3,
        40,
        800,
    ),
    ResourceCase(
        "no scale: hot-CPU pods ignored",
        Fixture(3, readiness=[T, F, F], start_times=[COOL, HOT, HOT], requests=R1),
        even(400, 500, 700),
        30,
        3,
        40,
        800,
    ),
    ResourceCase(
        "scale up: failed pods ignored",
        Fixture(2, readiness=[T, T, F, F], phases=[RUN, RUN, FAIL, FAIL], requests=R4),
        even(500, 700),
        30,
        4,
        60,
        1200,
    ),
    ResourceCase(
        "scale up: failed pods ignored with missing container metric",
        Fixture(2, readiness=[T, T, F, F], phases=[RUN, RUN, FAIL, FAIL], requests=R4),
        [[1000, 500], [9000, 700], [1000], [9000]],
        30,
        4,
        60,
        600,
        container="container2",
    ),
    ResourceCase(
        "scale up: container metrics with failed pods ignored",
        Fixture(2, readiness=[T, T, F, F], phases=[RUN, RUN, FAIL, FAIL], requests=R4),
        [[1000, 500], [9000, 700]],
        30,
        4,
        60,
        600,
        container="container2",
    ),
    ResourceCase(
        "scale up: pods being deleted are ignored",
        Fixture(2, readiness=[T, T, F, F], phases=[RUN] * 4, deleting=[F, F, T, T], requests=R4),
        even(500, 700),
        30,
        4,
        60,
        1200,
    ),
    ResourceCase(
        "scale up: container metrics with pods being deleted ignored",
        Fixture(2, readiness=[T, T, F, F], phases=[RUN] * 4, deleting=[F, F, T, T], requests=R4),
        even(500, 700),
        30,
        4,
        60,
        600,
        container="container1",
    ),
    ResourceCase(
        "scale down", Fixture(5, requests=R5), even(100, 300, 500, 250, 250), 50, 3, 28, 560
    ),
    ResourceCase(
        "scale down: container metric",
        Fixture(5, requests=R5),
        [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        50,
        3,
        28,
        280,
        container="container2",
    ),
    ResourceCase(
        "scale down: exclude unready pods",
        Fixture(5, readiness=[T, T, T, F, F], requests=R5),
        even(100, 300, 500, 250, 250),
        50,
        2,
        30,
        600,
    ),
    ResourceCase(
        "scale down: container metric excludes unready pods",
        Fixture(5, readiness=[T, T, T, F, F], requests=R5),
        [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        50,
        2,
        30,
        300,
        container="container2",
    ),
    ResourceCase(
        "scale down: exclude unscheduled pods",
        Fixture(5, readiness=[T, F, F, F, F], phases=[RUN, PEND, PEND, PEND, PEND], requests=R5),
        even(100),
        50,
        1,
        10,
        200,
    ),
    ResourceCase(
        "scale down: container metric excludes unscheduled pods",
        Fixture(5, readiness=[T, F, F, F, F], phases=[RUN, PEND, PEND, PEND, PEND], requests=R5),
        [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        50,
        1,
        10,
        100,
        container="container2",
    ),
    ResourceCase(
        "scale down: ignore hot-CPU pods",
        Fixture(5, start_times=[COOL, COOL, COOL, HOT, HOT], requests=R5),
        even(100, 300, 500, 250, 250),
        50,
        2,
        30,
        600,
    ),
    ResourceCase(
        "scale down: container metric ignores hot-CPU pods",
        Fixture(5, start_times=[COOL, COOL, COOL, HOT, HOT], requests=R5),
        [[1000, 100], [1000, 300], [1000, 500], [1000, 1000], [1000, 1000]],
        50,
        2,
        30,
        300,
        container="container2",
    ),
    ResourceCase(
        "scale down: failed pods ignored",
        Fixture(5, readiness=[T] * 5 + [F, F], phases=[RUN] * 5 + [FAIL, FAIL], requests=R7),
        even(100, 300, 500, 250, 250),
        50,
        3,
        28,
        560,
    ),
    ResourceCase(
        "scale down: container metric with failed pods ignored",
        Fixture(5, readiness=[T] * 5 + [F, F], phases=[RUN] * 5 + [FAIL, FAIL], requests=R7),
        [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        50,
        3,
        28,
        280,
        container="container2",
    ),
    ResourceCase(
        "scale down: pods being deleted are ignored",
        Fixture(
            5, readiness=[T] * 5 + [F, F], phases=[RUN] * 7, deleting=[F] * 5 + [T, T], requests=R7
        ),
        even(100, 300, 500, 250, 250),
        50,
        3,
        28,
        560,
    ),
    ResourceCase(
        "scale down: still-running pods being deleted are ignored",
        Fixture(
            5, readiness=[T] * 5 + [F, F], phases=[RUN] * 7, deleting=[F] * 5 + [T, T], requests=R7
        ),
        [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        50,
        3,
        28,
        280,
        container="container2",
    ),
    # TestReplicaCalcTolerance and TestReplicaCalcConfigurableTolerance
    ResourceCase(
        "tolerance", Fixture(3, requests=TOLREQ), even(1010, 1030, 1020), 100, 3, 102, 2040
    ),
    ResourceCase(
        "outside of a 0% tolerance",
        Fixture(3, requests=TOLREQ),
        even(909, 1010, 1111),
        100,
        4,
        101,
        2020,
        tol=Tolerances(0.0, 0.0),
    ),
    ResourceCase(
        "within a 200% scale-up tolerance",
        Fixture(3, requests=TOLREQ),
        even(1890, 1910, 1900),
        100,
        3,
        190,
        3800,
        tol=Tolerances(0.1, 2.0),
    ),
    ResourceCase(
        "outside 8% scale-up tolerance",
        Fixture(3, requests=TOLREQ),
        even(1100, 1080, 1090),
        100,
        4,
        109,
        2180,
        tol=Tolerances(2.0, 0.08),
    ),
    ResourceCase(
        "within a 36% scale-down tolerance",
        Fixture(3, requests=TOLREQ),
        even(660, 640, 650),
        100,
        3,
        65,
        1300,
        tol=Tolerances(0.36, 0.1),
    ),
    ResourceCase(
        "outside a 34% scale-down tolerance",
        Fixture(3, requests=TOLREQ),
        even(660, 640, 650),
        100,
        2,
        65,
        1300,
        tol=Tolerances(0.34, 0.1),
    ),
    # TestReplicaCalcSuperfluousMetrics: samples of pods outside the list are skipped
    ResourceCase(
        "superfluous metrics",
        Fixture(4, requests=R4),
        even(4000, 9500, 3000, 7000, 3200, 2000),
        100,
        24,
        587,
        11750,
    ),
    # TestReplicaCalcMissingMetrics*
    ResourceCase("missing metrics", Fixture(4, requests=R4), even(400, 95), 100, 3, 24, 495),
    ResourceCase(
        "missing metrics, no change (eq)",
        Fixture(2, requests=[1000, 1000]),
        even(1000),
        100,
        2,
        100,
        2000,
    ),
    ResourceCase(
        "missing metrics, no change (gt)",
        Fixture(2, requests=[1000, 1000]),
        even(1900),
        100,
        2,
        190,
        3800,
    ),
    ResourceCase(
        "missing metrics, no change (lt)",
        Fixture(2, requests=[1000, 1000]),
        even(600),
        100,
        2,
        60,
        1200,
    ),
    ResourceCase(
        "missing metrics, unready, change",
        Fixture(3, readiness=[F, T, T], requests=R1),
        even(100, 450),
        50,
        3,
        45,
        900,
    ),
    ResourceCase(
        "missing metrics, hot cpu, no change",
        Fixture(3, start_times=[HOT, COOL, COOL], requests=R1),
        even(100, 450),
        50,
        3,
        45,
        900,
    ),
    ResourceCase(
        "missing metrics, unready, scale up",
        Fixture(3, readiness=[F, T, T], requests=R1),
        even(100, 2000),
        50,
        4,
        200,
        4000,
    ),
    ResourceCase(
        "missing metrics, hot cpu, scale up",
        Fixture(3, readiness=[F, T, T], start_times=[HOT, COOL, COOL], requests=R1),
        even(100, 2000),
        50,
        4,
        200,
        4000,
    ),
    ResourceCase(
        "missing metrics, unready, scale down",
        Fixture(4, readiness=[F, T, T, T], requests=R4),
        even(100, 100, 100),
        50,
        3,
        10,
        200,
    ),
    ResourceCase(
        "missing metrics, scale down, target over 100",
        Fixture(4, readiness=[F, T, T, T], requests=[1000, 1000, 2000, 2000]),
        even(200, 100, 100),
        300,
        2,
        6,
        200,
    ),
    # TestReplicaCalcDuringRollingUpdateWithMaxSurge
    ResourceCase(
        "rolling update with max surge",
        Fixture(2, phases=[RUN] * 3, requests=R1),
        even(100, 100),
        50,
        2,
        10,
        200,
    ),
    # TestReplicaCalcComputedToleranceAlgImplementation (target 56: breach; 55: within)
    ResourceCase(
        "computed tolerance: minimal scale down",
        Fixture(10, requests=[400, 200, 310, 290, 302, 298, 301, 299, 300, 300]),
        even(*[150] * 10),
        56,
        9,
        50,
        300,
    ),
    ResourceCase(
        "computed tolerance: no scale just inside tolerance",
        Fixture(10, requests=[400, 200, 310, 290, 302, 298, 301, 299, 300, 300]),
        even(*[150] * 10),
        55,
        10,
        50,
        300,
    ),
]


@pytest.mark.parametrize("case", RESOURCE_CASES, ids=lambda c: c.name)
def test_get_resource_replicas(case: ResourceCase) -> None:
    pods = build_pods(case.fx)
    metrics = resource_metrics(case.levels, case.container, case.pod_names)
    res = CALC.get_resource_replicas(
        case.fx.current, case.target, "cpu", case.tol, pods, metrics, NOW, case.container
    )
    assert (res.replicas, res.utilization, res.raw_average) == (
        case.replicas,
        case.utilization,
        case.raw,
    )
    assert res.timestamp == ZERO


def test_resource_set_aside_and_tolerance_flags() -> None:
    fx = Fixture(
        2, readiness=[T, T, F, F, F], phases=[RUN, RUN, FAIL, RUN, PEND], requests=[1000] * 5
    )
    pods = build_pods(fx)
    pods[3] = replace(pods[3], deleting=True)
    res = CALC.get_resource_replicas(
        2, 30, "cpu", DEFAULT_TOL, pods, resource_metrics(even(500)), NOW
    )
    assert res.set_aside == (
        ("test-pod-1", "missing-metrics"),
        ("test-pod-2", "ignored-failed"),
        ("test-pod-3", "ignored-deleting"),
        ("test-pod-4", "unready-pending"),
    )
    assert not res.limited_by_tolerance
    within = CALC.get_resource_replicas(
        3,
        100,
        "cpu",
        DEFAULT_TOL,
        build_pods(Fixture(3, requests=TOLREQ)),
        resource_metrics(even(1010, 1030, 1020)),
        NOW,
    )
    assert within.limited_by_tolerance and within.set_aside == ()


# --- errors --------------------------------------------------------------------------


def test_resource_errors() -> None:
    pods = build_pods(Fixture(1, requests=[1000]))
    tol = DEFAULT_TOL
    # TestReplicaCalcDisjointResourcesMetrics
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_resource_replicas(
            1,
            100,
            "cpu",
            tol,
            pods,
            resource_metrics(even(100), pod_names=["an-older-pod-name"]),
            NOW,
        )
    assert err.value.message == "no metrics returned matched known pods"
    # TestReplicaCalcEmptyMetrics (the client's error, wrapped)
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_resource_replicas(
            4,
            100,
            "cpu",
            tol,
            pods,
            MetricFetchError("no metrics returned from resource metrics API"),
            NOW,
        )
    assert err.value.message == (
        "unable to get metrics for resource cpu: no metrics returned from resource metrics API"
    )
    # TestReplicaCalcEmptyCPURequest
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_resource_replicas(
            1,
            100,
            "cpu",
            tol,
            build_pods(Fixture(1, requests=[])),
            resource_metrics(even(200)),
            NOW,
        )
    assert err.value.message == "missing request for cpu in container container1 of Pod test-pod-0"
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_resource_replicas(1, 100, "cpu", tol, [], resource_metrics(even(200)), NOW)
    assert err.value.message == "no pods returned by selector while calculating replica count"
    # Every sample belongs to an unready pod.
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_resource_replicas(
            1,
            100,
            "cpu",
            tol,
            build_pods(Fixture(1, readiness=[F], requests=[1000])),
            resource_metrics(even(200)),
            NOW,
        )
    assert err.value.message == "did not receive metrics for targeted pods (pods might be unready)"
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_resource_replicas(
            1, 100, "cpu", tol, pods, resource_metrics(even(200)), NOW, container="sidecar"
        )
    assert err.value.message == "container sidecar not found in Pod test-pod-0"


def test_metric_fetch_error_wrapping() -> None:
    pods = build_pods(Fixture(3))
    cause = MetricFetchError("unable to fetch metrics from custom metrics API: boom")
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_metric_replicas(3, 1000, "qps", DEFAULT_TOL, pods, cause, NOW)
    assert err.value.message == (
        "unable to get metric qps: unable to fetch metrics from custom metrics API: boom"
    )
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_raw_resource_replicas(
            3, 1000, "memory", DEFAULT_TOL, pods, MetricFetchError("x: y"), NOW
        )
    assert err.value.message == "unable to get metrics for resource memory: x: y"
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_object_metric_replicas(
            3, 1000, "qps", DEFAULT_TOL, NS, "Deployment", "some-deployment", pods, cause
        )
    assert err.value.message == (
        "unable to get metric qps: Deployment on test-namespace some-deployment/"
        "unable to fetch metrics from custom metrics API: boom"
    )
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_object_per_pod_metric_replicas(
            3, 1000, "qps", DEFAULT_TOL, NS, "Service", "frontend", cause
        )
    assert err.value.message == (
        "unable to get metric qps: Service on test-namespace frontend/"
        "unable to fetch metrics from custom metrics API: boom"
    )
    ext_cause = MetricFetchError("no metrics returned from external metrics API")
    expected_ext = (
        "unable to get external metric test-namespace/qps/"
        "&LabelSelector{MatchLabels:map[string]string{label: value,},"
        "MatchExpressions:[]LabelSelectorRequirement{},}: "
        "no metrics returned from external metrics API"
    )
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_external_metric_replicas(
            3, 1000, "qps", DEFAULT_TOL, NS, SELECTOR, pods, ext_cause
        )
    assert err.value.message == expected_ext
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_external_per_pod_metric_replicas(
            3, 1000, "qps", DEFAULT_TOL, NS, SELECTOR, ext_cause
        )
    assert err.value.message == expected_ext
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_external_per_pod_metric_replicas(3, 1000, "qps", DEFAULT_TOL, NS, None, ext_cause)
    assert err.value.message == (
        "unable to get external metric test-namespace/qps/nil: "
        "no metrics returned from external metrics API"
    )


def test_ready_pod_count_errors_are_wrapped() -> None:
    value = ObjectMetricValue(50000, NOW)
    with pytest.raises(ReplicaCalcError) as err:
        CALC.get_object_metric_replicas(
            3, 10000, "qps", DEFAULT_TOL, NS, "Deployment", "d", [], value
        )
    assert err.value.message == (
        "unable to calculate ready pods: no pods returned by selector while calculating replica count"
    )
    # At zero replicas pods are not consulted: ceil(usage / target).
    res = CALC.get_object_metric_replicas(
        0, 10000, "qps", DEFAULT_TOL, NS, "Deployment", "d", [], value
    )
    assert res.replicas == 5


# --- Pods metric (plain average) ------------------------------------------------------


@dataclass
class PlainCase:
    name: str
    fx: Fixture
    levels: list[int]
    target: int
    replicas: int
    usage: int
    tol: Tolerances = field(default_factory=lambda: DEFAULT_TOL)


PLAIN_CASES = [
    PlainCase("scale up", Fixture(3), [20000, 10000, 30000], 15000, 4, 20000),
    PlainCase(
        "unready hot cpu, no less scale (no readiness for pods metrics)",
        Fixture(3, readiness=[T, T, F], start_times=[COOL, COOL, HOT]),
        [50000, 10000, 30000],
        15000,
        6,
        30000,
    ),
    PlainCase(
        "unready hot cpu, scale would scale down",
        Fixture(3, readiness=[F, T, F], start_times=[HOT, COOL, HOT]),
        [50000, 15000, 30000],
        15000,
        7,
        31666,
    ),
    PlainCase("scale down", Fixture(5), [12000] * 5, 20000, 3, 12000),
    PlainCase("tolerance", Fixture(3), [20000, 21000, 21000], 20000, 3, 20666),
    PlainCase(
        "configurable tolerance",
        Fixture(3),
        [20000, 21000, 21000],
        20000,
        4,
        20666,
        tol=Tolerances(0.1, 0.01),
    ),
    PlainCase("missing metrics, no change", Fixture(5), [20000, 19000, 21000], 20000, 5, 20000),
    PlainCase(
        "rolling update with max surge",
        Fixture(2, phases=[RUN] * 3),
        [10000, 10000],
        17000,
        2,
        10000,
    ),
    # Missing pods on a scale down are given exactly the target: (3*5000 + 2*10000)/5 = 7000.
    PlainCase(
        "missing pods count as target on scale down", Fixture(5), [5000, 5000, 5000], 10000, 4, 5000
    ),
    # Missing pods on a scale up count as 0: (3*30000)/5 = 18000 -> ceil(1.8*5) = 9.
    PlainCase(
        "missing pods count as zero on scale up", Fixture(5), [30000, 30000, 30000], 10000, 9, 30000
    ),
]


@pytest.mark.parametrize("case", PLAIN_CASES, ids=lambda c: c.name)
def test_get_metric_replicas(case: PlainCase) -> None:
    res = CALC.get_metric_replicas(
        case.fx.current,
        case.target,
        "qps",
        case.tol,
        build_pods(case.fx),
        pod_metrics(case.levels),
        NOW,
    )
    assert (res.replicas, res.usage) == (case.replicas, case.usage)
    assert res.timestamp == ZERO


def test_raw_resource_uses_cpu_readiness() -> None:
    """AverageValue on cpu: hot pods are set aside (classification runs with the resource)."""
    fx = Fixture(3, start_times=[HOT, COOL, COOL], requests=R1)
    metrics = resource_metrics(even(300, 500, 700))
    res = CALC.get_raw_resource_replicas(3, 400, "cpu", DEFAULT_TOL, build_pods(fx), metrics, NOW)
    # ready average 1200 milli vs 400 -> ratio 3 with one unready pod given 0:
    # (1000 + 1400 + 0) / 3 = 800 -> ratio 2 -> ceil(2 * 3) = 6.
    assert (res.replicas, res.usage) == (6, 1200)
    assert res.set_aside == (("test-pod-0", "unready-cpu-initializing"),)
    mem = CALC.get_raw_resource_replicas(
        3, 400, "memory", DEFAULT_TOL, build_pods(fx), metrics, NOW
    )
    # memory ignores readiness: average (600 + 1000 + 1400) / 3 = 1000 -> ceil(2.5 * 3) = 8.
    assert (mem.replicas, mem.usage) == (8, 1000)


# --- Object and External ----------------------------------------------------------------

DEPLOY = ("Deployment", "some-deployment")


@pytest.mark.parametrize(
    ("name", "fx", "value", "target", "tol", "replicas"),
    [
        ("scale up", Fixture(3), 20000, 15000, DEFAULT_TOL, 4),
        ("ignores unready pods", Fixture(3, readiness=[F, T, F]), 50000, 10000, DEFAULT_TOL, 5),
        ("scale down", Fixture(5), 12000, 20000, DEFAULT_TOL, 3),
        ("tolerance", Fixture(3), 20666, 20000, DEFAULT_TOL, 3),
        ("configurable tolerance", Fixture(3), 20666, 20000, Tolerances(0.1, 0.01), 4),
        ("scale up overflow caps at MaxInt32", Fixture(3), MAX_INT64, 1, DEFAULT_TOL, MAX_INT32),
    ],
)
def test_get_object_metric_replicas(
    name: str, fx: Fixture, value: int, target: int, tol: Tolerances, replicas: int
) -> None:
    res = CALC.get_object_metric_replicas(
        fx.current, target, "qps", tol, NS, *DEPLOY, build_pods(fx), ObjectMetricValue(value, NOW)
    )
    assert (res.replicas, res.usage) == (replicas, value)
    # Upstream returns the zero time for Object Value metrics.
    assert res.timestamp is None


@pytest.mark.parametrize(
    ("status", "value", "target", "tol", "replicas", "usage"),
    [
        (3, 20000, 5000, DEFAULT_TOL, 4, 6667),
        (5, 6000, 2000, DEFAULT_TOL, 3, 1200),
        (4, 20166, 5000, DEFAULT_TOL, 4, 5042),
        (4, 20208, 5000, Tolerances(0.1, 0.01), 5, 5052),
    ],
)
def test_get_object_per_pod_metric_replicas(
    status: int, value: int, target: int, tol: Tolerances, replicas: int, usage: int
) -> None:
    res = CALC.get_object_per_pod_metric_replicas(
        status, target, "qps", tol, NS, *DEPLOY, ObjectMetricValue(value, ZERO)
    )
    assert (res.replicas, res.usage, res.timestamp) == (replicas, usage, ZERO)


@pytest.mark.parametrize(
    ("fx", "values", "target", "tol", "replicas", "usage"),
    [
        (Fixture(3, readiness=[F, T, F]), [8600], 4400, DEFAULT_TOL, 2, 8600),
        (Fixture(5), [8600], 14334, DEFAULT_TOL, 3, 8600),
        (Fixture(3), [8600], 8888, DEFAULT_TOL, 3, 8600),
        (Fixture(3), [8900], 8800, Tolerances(0.1, 0.01), 4, 8900),
        # Sum saturates at MaxInt64: ratio 1 -> within tolerance.
        (
            Fixture(3),
            [MAX_INT64 // 2 + 1, MAX_INT64 // 2 + 1],
            MAX_INT64,
            DEFAULT_TOL,
            3,
            MAX_INT64,
        ),
        # Several series are summed.
        (Fixture(2), [1000, 2000, 3000], 2000, DEFAULT_TOL, 6, 6000),
    ],
)
def test_get_external_metric_replicas(
    fx: Fixture, values: list[int], target: int, tol: Tolerances, replicas: int, usage: int
) -> None:
    res = CALC.get_external_metric_replicas(
        fx.current,
        target,
        "qps",
        tol,
        NS,
        SELECTOR,
        build_pods(fx),
        ExternalMetricValues(tuple(values), NOW),
    )
    assert (res.replicas, res.usage, res.timestamp) == (replicas, usage, None)


@pytest.mark.parametrize(
    ("status", "values", "target", "tol", "replicas", "usage"),
    [
        (3, [8600], 2150, DEFAULT_TOL, 4, 2867),
        (5, [8600], 2867, DEFAULT_TOL, 3, 1720),
        (3, [8600], 2900, DEFAULT_TOL, 3, 2867),
        (3, [8600], 2800, Tolerances(0.1, 0.01), 4, 2867),
        (1, [MAX_INT64], 1, DEFAULT_TOL, MAX_INT32, MAX_INT64),
        (1, [MAX_INT64], MAX_INT64, DEFAULT_TOL, 1, MAX_INT64),
    ],
)
def test_get_external_per_pod_metric_replicas(
    status: int, values: list[int], target: int, tol: Tolerances, replicas: int, usage: int
) -> None:
    res = CALC.get_external_per_pod_metric_replicas(
        status, target, "qps", tol, NS, SELECTOR, ExternalMetricValues(tuple(values), ZERO)
    )
    assert (res.replicas, res.usage, res.timestamp) == (replicas, usage, ZERO)


def test_value_metrics_at_zero_replicas_skip_tolerance() -> None:
    # ratio 1.05 would be within tolerance, but at zero replicas it is ceil(ratio) = 2.
    ext = CALC.get_external_metric_replicas(
        0, 1000, "qps", DEFAULT_TOL, NS, None, [], ExternalMetricValues((1050,), NOW)
    )
    assert ext.replicas == 2
    zero = CALC.get_external_metric_replicas(
        0, 1000, "qps", DEFAULT_TOL, NS, None, [], ExternalMetricValues((0,), NOW)
    )
    assert zero.replicas == 0


# --- groupPods ---------------------------------------------------------------------------


def _pod(
    name: str,
    phase: str = "Succeeded",
    start: datetime | None = None,
    ready: bool | None = None,
    transition: datetime | None = None,
    deleting: bool = False,
) -> PodView:
    return PodView(NS, name, {}, phase, deleting, ready, transition, start, (), (), None)


def _m(ts: datetime = ZERO, window: timedelta = timedelta(0)) -> PodMetric:
    return PodMetric(ts, window, 1)


GROUP_CASES = [
    ("void", [], {}, "cpu", 0, set(), set(), set()),
    (
        "count in a ready pod - memory",
        [_pod("bentham")],
        {"bentham": _m(NOW, timedelta(minutes=1))},
        "memory",
        1,
        set(),
        set(),
        set(),
    ),
    (
        "unready a pod without ready condition - CPU",
        [_pod("lucretius", start=NOW)],
        {"lucretius": _m()},
        "cpu",
        0,
        {"lucretius"},
        set(),
        set(),
    ),
    (
        "count in a ready pod with fresh metrics during initialization period - CPU",
        [
            _pod(
                "bentham",
                start=NOW - timedelta(minutes=1),
                ready=True,
                transition=NOW - timedelta(seconds=30),
            )
        ],
        {"bentham": _m(NOW, timedelta(seconds=30))},
        "cpu",
        1,
        set(),
        set(),
        set(),
    ),
    (
        "unready a ready pod without fresh metrics during initialization period - CPU",
        [
            _pod(
                "bentham",
                start=NOW - timedelta(minutes=1),
                ready=True,
                transition=NOW - timedelta(seconds=30),
            )
        ],
        {"bentham": _m(NOW, timedelta(seconds=60))},
        "cpu",
        0,
        {"bentham"},
        set(),
        set(),
    ),
    (
        "unready an unready pod during initialization period - CPU",
        [
            _pod(
                "lucretius",
                start=NOW - timedelta(minutes=10),
                ready=False,
                transition=NOW - timedelta(minutes=9, seconds=54),
            )
        ],
        {"lucretius": _m()},
        "cpu",
        0,
        {"lucretius"},
        set(),
        set(),
    ),
    (
        "count in a ready pod without fresh metrics after initialization period - CPU",
        [
            _pod(
                "bentham",
                start=NOW - timedelta(minutes=3),
                ready=True,
                transition=NOW - timedelta(minutes=3),
            )
        ],
        {"bentham": _m(NOW - timedelta(minutes=2), timedelta(minutes=1))},
        "cpu",
        1,
        set(),
        set(),
        set(),
    ),
    (
        "count in an unready pod that was ready after initialization period - CPU",
        [
            _pod(
                "lucretius",
                start=NOW - timedelta(minutes=10),
                ready=False,
                transition=NOW - timedelta(minutes=9),
            )
        ],
        {"lucretius": _m()},
        "cpu",
        1,
        set(),
        set(),
        set(),
    ),
    (
        "unready pod that has never been ready after initialization period - CPU",
        [
            _pod(
                "lucretius",
                start=NOW - timedelta(minutes=10),
                ready=False,
                transition=NOW - timedelta(minutes=9, seconds=50),
            )
        ],
        {"lucretius": _m()},
        "cpu",
        1,
        set(),
        set(),
        set(),
    ),
    (
        "a missing pod",
        [_pod("epicurus", start=NOW - timedelta(minutes=3))],
        {},
        "cpu",
        0,
        set(),
        {"epicurus"},
        set(),
    ),
    (
        "several pods",
        [
            _pod("lucretius", start=NOW),
            _pod(
                "niccolo",
                start=NOW - timedelta(minutes=3),
                ready=True,
                transition=NOW - timedelta(minutes=3),
            ),
            _pod("epicurus", start=NOW - timedelta(minutes=3)),
        ],
        {"lucretius": _m(), "niccolo": _m()},
        "cpu",
        1,
        {"lucretius"},
        {"epicurus"},
        set(),
    ),
    (
        "pending pods are unreadied",
        [_pod("unscheduled", phase="Pending")],
        {},
        "cpu",
        0,
        {"unscheduled"},
        set(),
        set(),
    ),
    (
        "ignore pods with deletion timestamps",
        [_pod("deleted", phase="Pending", deleting=True)],
        {"deleted": _m()},
        "cpu",
        0,
        set(),
        set(),
        {"deleted"},
    ),
    (
        "ignore pods in a failed state",
        [_pod("failed", phase="Failed")],
        {"failed": _m()},
        "cpu",
        0,
        set(),
        set(),
        {"failed"},
    ),
]


@pytest.mark.parametrize(
    ("name", "pods", "metrics", "resource", "ready", "unready", "missing", "ignored"),
    GROUP_CASES,
    ids=[c[0] for c in GROUP_CASES],
)
def test_group_pods(
    name: str,
    pods: list[PodView],
    metrics: PodMetricsInfo,
    resource: str,
    ready: int,
    unready: set[str],
    missing: set[str],
    ignored: set[str],
) -> None:
    groups = group_pods(pods, metrics, resource, timedelta(minutes=2), timedelta(seconds=10), NOW)
    assert groups.ready_pod_count == ready
    assert groups.unready_pods == unready
    assert groups.missing_pods == missing
    assert groups.ignored_pods == ignored


def test_group_pods_ready_unknown_is_not_false() -> None:
    """Go compares Status == False: an Unknown Ready condition is not treated as unready."""
    pod = PodView(
        NS,
        "p",
        {},
        "Running",
        False,
        False,
        NOW - timedelta(minutes=9),
        NOW - timedelta(minutes=10),
        (),
        (),
        None,
        ready_unknown=True,
    )
    groups = group_pods([pod], {"p": _m()}, "cpu", timedelta(minutes=2), timedelta(seconds=10), NOW)
    assert groups.ready_pod_count == 1


# --- calculateRequests -------------------------------------------------------------------


def _req_pod(
    containers: list[tuple[str, int | None]],
    sidecars: Sequence[tuple[str, int | None]] = (),
    pod_requests: dict[str, int] | None = None,
) -> PodView:
    def cv(name: str, cpu: int | None) -> ContainerView:
        return ContainerView(name, {} if cpu is None else {"cpu": cpu})

    return PodView(
        NS,
        "test-pod",
        {},
        "Running",
        False,
        True,
        None,
        ZERO,
        tuple(cv(n, c) for n, c in containers),
        tuple(cv(n, c) for n, c in sidecars),
        pod_requests,
    )


@pytest.mark.parametrize(
    ("name", "pods", "container", "pod_level", "expected"),
    [
        ("void", [], "", False, {}),
        (
            "sum container requests, gate off",
            [_req_pod([("container1", 100), ("container2", 50)])],
            "",
            False,
            {"test-pod": 150},
        ),
        (
            "gate on, pod-level not set",
            [_req_pod([("container1", 100), ("container2", 50)])],
            "",
            True,
            {"test-pod": 150},
        ),
        (
            "pod-level overrides containers",
            [_req_pod([("container1", 100), ("container2", 50)], pod_requests={"cpu": 800})],
            "",
            True,
            {"test-pod": 800},
        ),
        (
            "pod-level overrides missing container requests",
            [_req_pod([("container1", None), ("container2", 50)], pod_requests={"cpu": 800})],
            "",
            True,
            {"test-pod": 800},
        ),
        (
            "gate off ignores pod-level",
            [_req_pod([("container1", 100), ("container2", 50)], pod_requests={"cpu": 800})],
            "",
            False,
            {"test-pod": 150},
        ),
        (
            "named container",
            [_req_pod([("container1", 100), ("container2", 50)])],
            "container1",
            False,
            {"test-pod": 100},
        ),
        (
            "named container ignores pod-level",
            [_req_pod([("container1", 100), ("container2", 50)], pod_requests={"cpu": 800})],
            "container1",
            True,
            {"test-pod": 100},
        ),
        (
            "restartable init containers count",
            [_req_pod([("container1", 100)], sidecars=[("restartable-container1", 50)])],
            "",
            False,
            {"test-pod": 150},
        ),
    ],
)
def test_calculate_requests(
    name: str, pods: list[PodView], container: str, pod_level: bool, expected: dict[str, int]
) -> None:
    assert calculate_requests(pods, container, "cpu", pod_level) == expected


def test_calculate_requests_errors() -> None:
    with pytest.raises(ReplicaCalcError) as err:
        calculate_requests([_req_pod([("container1", None), ("container2", 50)])], "", "cpu", False)
    assert err.value.message == "missing request for cpu in container container1 of Pod test-pod"
    with pytest.raises(ReplicaCalcError) as err:
        calculate_requests(
            [_req_pod([("container1", 100)])], "non-existent-container", "cpu", False
        )
    assert err.value.message == "container non-existent-container not found in Pod test-pod"
    with pytest.raises(ReplicaCalcError) as err:
        calculate_requests([_req_pod([("c", 100)], pod_requests={"memory": 5})], "", "cpu", True)
    assert err.value.message == "missing pod-level request for cpu in Pod test-pod"


# --- Tolerances and the %+v selector formatter -----------------------------------------------


def test_tolerances() -> None:
    tol = Tolerances(0.1, 0.1)
    assert tol.is_within(0.9) and tol.is_within(1.1) and tol.is_within(1.0)
    assert not tol.is_within(0.8999) and not tol.is_within(1.1001)
    assert str(Tolerances(0.1, 0.025)) == "[down:10.0%, up:2.5%]"


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (None, "nil"),
        (
            {},
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}",
        ),
        (
            {"matchLabels": {"zone": "b", "app": "web"}},
            "&LabelSelector{MatchLabels:map[string]string{app: web,zone: b,},"
            "MatchExpressions:[]LabelSelectorRequirement{},}",
        ),
        (
            {
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["a", "b"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                ]
            },
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{"
            "LabelSelectorRequirement{Key:tier,Operator:In,Values:[a b],},"
            "LabelSelectorRequirement{Key:canary,Operator:DoesNotExist,Values:[],},},}",
        ),
    ],
)
def test_format_label_selector_go(raw: dict[str, object] | None, text: str) -> None:
    assert format_label_selector_go(raw) == text
