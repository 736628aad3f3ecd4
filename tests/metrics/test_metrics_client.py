"""RestMetricsClient and SharedMetricsFetcher against the emulator's metrics APIs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.core.decide import MetricRequest
from hpactl.emulator import Emulator
from hpactl.kube.restmapper import RestMapper
from hpactl.kube.session import KubeSession
from hpactl.metrics import RestMetricsClient, SharedMetricsFetcher
from hpactl.model.hpa import CrossVersionObjectReference
from hpactl.model.metrics import (
    ExternalMetricValues,
    MetricFetchError,
    ObjectMetricValue,
    PodMetric,
)
from hpactl.model.selectors import Selector, parse_selector

TS = "2026-01-01T00:00:00Z"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def pod(name: str, labels: Mapping[str, str], ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {"containers": [{"name": "app", "image": "x"}, {"name": "side", "image": "y"}]},
    }


def pod_metrics(
    name: str, usage: Mapping[str, Mapping[str, str]], ns: str = "default", window: str = "30s"
) -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": ns},
        "timestamp": TS,
        "window": window,
        "containers": [{"name": c, "usage": dict(u)} for c, u in usage.items()],
    }


def custom(
    kind: str, name: str, metric: str, value: str, ns: str = "default", **kw: Any
) -> dict[str, Any]:
    return {
        "describedObject": {
            "kind": kind,
            "name": name,
            "namespace": ns,
            **({"apiVersion": kw["api_version"]} if "api_version" in kw else {}),
        },
        "metric": {"name": metric, **({"selector": kw["selector"]} if "selector" in kw else {})},
        "timestamp": TS,
        "value": value,
        **({"windowSeconds": kw["window"]} if "window" in kw else {}),
    }


@dataclass
class Counter:
    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def __call__(self, verb: str, resource: str, code: str, seconds: float) -> None:
        self.calls.append((verb, resource, code))

    def count(self, resource: str) -> int:
        return sum(1 for c in self.calls if c[1] == resource)


@pytest.fixture
def populated(emulator: Emulator) -> Emulator:
    for name, labels in [
        ("web-1", {"app": "web"}),
        ("web-2", {"app": "web"}),
        ("api-1", {"app": "api", "tier": "x"}),
        ("api-2", {"app": "api"}),
    ]:
        emulator.store.create(pod(name, labels))
    emulator.store.create(pod("web-1", {"app": "web"}, ns="other"))
    m = emulator.metrics
    m.set_pod_metrics(
        [
            pod_metrics(
                "web-1",
                {"app": {"cpu": "100m", "memory": "10Mi"}, "side": {"cpu": "50m", "memory": "1Mi"}},
            ),
            pod_metrics(
                "web-2", {"app": {"cpu": "300m", "memory": "20Mi"}, "side": {"memory": "1Mi"}}
            ),
            pod_metrics("api-1", {"app": {"cpu": "1", "memory": "1Gi"}}),
            pod_metrics("api-2", {"app": {"cpu": "2", "memory": "1Gi"}}),
            pod_metrics("web-1", {"app": {"cpu": "7m"}}, ns="other"),
        ]
    )
    m.set_custom(
        [
            custom("Pod", "web-1", "qps", "10"),
            custom("Pod", "web-2", "qps", "30", window=30),
            custom("Pod", "api-1", "qps", "500m"),
            custom("Deployment", "web", "hits", "42", api_version="apps/v1"),
            custom("Namespace", "default", "load", "3", ns=""),
        ]
    )
    m.set_external(
        [
            {
                "namespace": "default",
                "metricName": "queue_len",
                "metricLabels": {"q": "a"},
                "timestamp": TS,
                "value": "5",
            },
            {
                "namespace": "default",
                "metricName": "queue_len",
                "metricLabels": {"q": "b"},
                "timestamp": TS,
                "value": "7",
            },
        ]
    )
    return emulator


@pytest.fixture
async def counted(populated: Emulator) -> AsyncIterator[tuple[KubeSession, Counter]]:
    counter = Counter()
    async with KubeSession(master=populated.url, on_request=counter) as s:
        yield s, counter


WEB = parse_selector("app=web")
API = parse_selector("app=api")
TIER = parse_selector("tier=x")


async def test_resource_metric_sums_containers_per_pod(
    counted: tuple[KubeSession, Counter],
) -> None:
    s, _ = counted
    c = RestMetricsClient(s)
    res = await c.get_resource_metric("cpu", "default", WEB)
    # web-2's "side" container lacks cpu: no sample for web-2
    assert res == {"web-1": PodMetric(T0, timedelta(seconds=30), 150)}
    mem = await c.get_resource_metric("memory", "default", WEB)
    assert isinstance(mem, Mapping)
    assert mem["web-1"].value == 11 * 1024 * 1024 * 1000
    cont = await c.get_resource_metric("cpu", "default", API, container="app")
    assert cont == {
        "api-1": PodMetric(T0, timedelta(seconds=30), 1000),
        "api-2": PodMetric(T0, timedelta(seconds=30), 2000),
    }
    # a container missing from a pod's metrics: that pod has no sample, no error
    assert await c.get_resource_metric("cpu", "default", WEB, container="side") == {
        "web-1": PodMetric(T0, timedelta(seconds=30), 50)
    }
    assert await c.get_resource_metric("cpu", "default", API, container="side") == {}


async def test_resource_metric_errors(
    populated: Emulator, counted: tuple[KubeSession, Counter]
) -> None:
    s, _ = counted
    c = RestMetricsClient(s)
    assert await c.get_resource_metric(
        "cpu", "default", parse_selector("app=none")
    ) == MetricFetchError("no metrics returned from resource metrics API")
    populated.metrics.set_unavailable(["metrics.k8s.io"])
    assert await c.get_resource_metric("cpu", "default", WEB) == MetricFetchError(
        "unable to fetch metrics from resource metrics API: the server is currently unable to "
        "handle the request (get pods.metrics.k8s.io)"
    )


async def test_pods_custom_metric(
    populated: Emulator, counted: tuple[KubeSession, Counter]
) -> None:
    s, _ = counted
    c = RestMetricsClient(s)
    res = await c.get_raw_metric("qps", "default", WEB, Selector.nothing())
    assert res == {
        "web-1": PodMetric(T0, timedelta(minutes=1), 10_000),
        "web-2": PodMetric(T0, timedelta(seconds=30), 30_000),
    }
    assert await c.get_raw_metric(
        "qps", "default", parse_selector("app=none"), Selector.nothing()
    ) == (MetricFetchError("no metrics returned from custom metrics API"))
    populated.metrics.set_unavailable(["custom.metrics.k8s.io"])
    assert await c.get_raw_metric("qps", "default", WEB, Selector.nothing()) == MetricFetchError(
        "unable to fetch metrics from custom metrics API: the server is currently unable to "
        "handle the request (get pods.custom.metrics.k8s.io *)"
    )


async def test_object_metric(populated: Emulator, counted: tuple[KubeSession, Counter]) -> None:
    s, _ = counted
    c = RestMetricsClient(s, mapper=RestMapper(s))
    dep = CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1")
    assert await c.get_object_metric(
        "hits", "default", dep, Selector.nothing()
    ) == ObjectMetricValue(42_000, T0)
    ns = CrossVersionObjectReference(kind="Namespace", name="ignored", api_version="v1")
    assert await c.get_object_metric(
        "load", "default", ns, Selector.nothing()
    ) == ObjectMetricValue(3000, T0)
    foo = CrossVersionObjectReference(kind="Foo", name="x", api_version="example.com/v1")
    assert await c.get_object_metric(
        "hits", "default", foo, Selector.nothing()
    ) == MetricFetchError(
        "unable to fetch metrics from custom metrics API: unable to map kind Foo.example.com to "
        'resource: no matches for kind "Foo" in group "example.com"'
    )
    populated.metrics.set_unavailable(["custom.metrics.k8s.io"])
    assert await c.get_object_metric(
        "hits", "default", dep, Selector.nothing()
    ) == MetricFetchError(
        "unable to fetch metrics from custom metrics API: the server is currently unable to "
        "handle the request (get deployments.apps.custom.metrics.k8s.io web)"
    )


async def test_external_metric(populated: Emulator, counted: tuple[KubeSession, Counter]) -> None:
    s, _ = counted
    c = RestMetricsClient(s)
    assert await c.get_external_metric(
        "queue_len", "default", Selector.nothing()
    ) == ExternalMetricValues((5000, 7000), T0)
    assert await c.get_external_metric(
        "queue_len", "default", parse_selector("q=b")
    ) == ExternalMetricValues((7000,), T0)
    assert await c.get_external_metric(
        "queue_len", "default", parse_selector("q=zzz")
    ) == MetricFetchError("no metrics returned from external metrics API")
    populated.metrics.set_unavailable(["external.metrics.k8s.io"])
    assert await c.get_external_metric(
        "queue_len", "default", Selector.nothing()
    ) == MetricFetchError(
        "unable to fetch metrics from external metrics API: the server is currently unable to "
        "handle the request (get queue_len.external.metrics.k8s.io)"
    )


def _requests() -> list[tuple[MetricRequest, Selector]]:
    dep = CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1")
    return [
        (MetricRequest(0, "resource", "default", resource="cpu"), WEB),
        (MetricRequest(0, "resource", "default", resource="cpu"), API),
        (MetricRequest(0, "resource", "default", resource="memory"), TIER),
        (MetricRequest(1, "resource", "default", resource="cpu", container="app"), API),
        (MetricRequest(0, "resource", "default", resource="cpu"), parse_selector("app=none")),
        (MetricRequest(0, "resource", "other", resource="cpu"), WEB),
        (MetricRequest(0, "pods", "default", metric_name="qps"), WEB),
        (MetricRequest(0, "pods", "default", metric_name="qps"), API),
        (MetricRequest(0, "pods", "default", metric_name="qps"), parse_selector("app=none")),
        (MetricRequest(0, "object", "default", metric_name="hits", described_object=dep), WEB),
        (MetricRequest(0, "object", "default", metric_name="hits", described_object=dep), API),
        (
            MetricRequest(
                0,
                "external",
                "default",
                metric_name="queue_len",
                metric_selector={"matchLabels": {"q": "a"}},
            ),
            WEB,
        ),
        (
            MetricRequest(
                0,
                "external",
                "default",
                metric_name="queue_len",
                metric_selector={"matchLabels": {"q": "a"}},
            ),
            API,
        ),
        (MetricRequest(0, "none", "default"), WEB),
    ]


async def test_shared_fetcher_is_identical_with_fewer_requests(
    populated: Emulator, counted: tuple[KubeSession, Counter]
) -> None:
    s, counter = counted
    direct = RestMetricsClient(s, mapper=RestMapper(s))
    expected = [await direct.fetch(r, sel) for r, sel in _requests()]
    direct_calls = len(counter.calls)
    counter.calls.clear()

    def pod_labels(ns: str, name: str) -> Mapping[str, str] | None:
        p = populated.store.get("", "pods", ns, name)
        return None if p is None else p["metadata"].get("labels", {})

    shared = SharedMetricsFetcher(
        RestMetricsClient(s, mapper=RestMapper(s)), clock=VirtualClock(), pod_labels=pod_labels
    )
    got = await asyncio.gather(*(shared.fetch(r, sel) for r, sel in _requests()))
    assert list(got) == expected
    assert counter.count("pods.metrics.k8s.io") == 2  # one per namespace
    assert counter.count("pods.custom.metrics.k8s.io/qps") == 1
    assert counter.count("deployments.apps.custom.metrics.k8s.io/hits") == 1
    assert counter.count("queue_len.external.metrics.k8s.io") == 1
    metric_calls = [c for c in counter.calls if "metrics.k8s.io" in c[1]]
    assert len(metric_calls) == 5 < direct_calls
    assert shared.requests == 5
    assert shared.shared == 8


async def test_shared_fetcher_window_and_failures(
    populated: Emulator, counted: tuple[KubeSession, Counter]
) -> None:
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0, share_window=2.0)
    r = MetricRequest(0, "resource", "default", resource="cpu")
    first = await shared.fetch(r, WEB)
    clock.advance(1.999)
    populated.metrics.set_pod_metrics([pod_metrics("web-1", {"app": {"cpu": "900m"}})])
    assert await shared.fetch(r, WEB) == first  # within the window: the shared answer
    clock.advance(0.001)
    # As old as the window: listed again, the new usage is seen.
    assert await shared.fetch(r, WEB) == {"web-1": PodMetric(T0, timedelta(seconds=30), 900)}
    assert counter.count("pods.metrics.k8s.io") == 2
    # failures are not kept: the next asker in the same window tries again
    shared.new_period()
    populated.metrics.set_unavailable(["metrics.k8s.io"])
    err = await shared.fetch(r, WEB)
    assert isinstance(err, MetricFetchError)
    populated.metrics.set_unavailable([])
    assert isinstance(await shared.fetch(r, WEB), Mapping)
    assert counter.count("pods.metrics.k8s.io") == 4


async def test_a_shared_answer_is_never_older_than_the_window(
    populated: Emulator, counted: tuple[KubeSession, Counter]
) -> None:
    """Askers once a second: a list every ``share_window`` seconds, none served older."""
    s, counter = counted
    clock = VirtualClock()
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=clock, period=15.0)
    r = MetricRequest(0, "resource", "default", resource="cpu")
    for second in range(30):
        populated.metrics.set_pod_metrics(
            [pod_metrics("web-1", {"app": {"cpu": f"{1000 + second}m"}})]
        )
        got = await shared.fetch(r, WEB)
        assert isinstance(got, Mapping)
        assert second - (got["web-1"].value - 1000) < shared.share_window
        clock.advance(1.0)
    assert counter.count("pods.metrics.k8s.io") == 30 // int(shared.share_window)


async def test_shared_pods_metric_without_label_source_keys_on_selector(
    counted: tuple[KubeSession, Counter],
) -> None:
    s, counter = counted
    shared = SharedMetricsFetcher(RestMetricsClient(s), clock=VirtualClock())
    r = MetricRequest(0, "pods", "default", metric_name="qps")
    a = await asyncio.gather(shared.fetch(r, WEB), shared.fetch(r, WEB), shared.fetch(r, API))
    assert a[0] == a[1]
    assert a[2] == {"api-1": PodMetric(T0, timedelta(minutes=1), 500)}
    assert counter.count("pods.custom.metrics.k8s.io/qps") == 2
