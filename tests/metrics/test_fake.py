"""The in-memory FakeMetricsClient answers exactly as RestMetricsClient does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from hpactl.emulator import Emulator
from hpactl.kube.restmapper import RestMapper
from hpactl.kube.session import KubeSession
from hpactl.metrics import RestMetricsClient
from hpactl.metrics.fake import FakeMetricsClient
from hpactl.model.hpa import CrossVersionObjectReference
from hpactl.model.selectors import Selector, parse_selector

from .test_metrics_client import custom, pod, pod_metrics

LABELS: Mapping[str, Mapping[str, str]] = {
    "web-1": {"app": "web"},
    "web-2": {"app": "web"},
    "api-1": {"app": "api"},
}


def with_labels(item: dict[str, Any]) -> dict[str, Any]:
    out = dict(item)
    out["metadata"] = {**item["metadata"], "labels": dict(LABELS[item["metadata"]["name"]])}
    return out


@pytest.mark.parametrize("down", [False, True])
async def test_fake_matches_rest(emulator: Emulator, down: bool) -> None:
    pms = [
        pod_metrics("web-1", {"a": {"cpu": "100m"}}),
        pod_metrics("web-2", {"a": {"cpu": "250m"}}),
        pod_metrics("api-1", {"a": {"cpu": "1"}, "b": {"memory": "1Mi"}}),
    ]
    pods_custom = [
        custom("Pod", "web-1", "qps", "10"),
        custom("Pod", "api-1", "qps", "3", window=20),
    ]
    obj = custom("Deployment", "web", "hits", "42", api_version="apps/v1")
    ext = [
        {
            "namespace": "default",
            "metricName": "q",
            "metricLabels": {"k": "a"},
            "timestamp": "2026-01-01T00:00:00Z",
            "value": "5",
        }
    ]
    for name, labels in LABELS.items():
        emulator.store.create(pod(name, labels))
    emulator.metrics.set_pod_metrics(pms)
    emulator.metrics.set_custom([*pods_custom, obj])
    emulator.metrics.set_external(ext)
    fake = FakeMetricsClient()
    fake.set_pod_metrics("default", [with_labels(p) for p in pms])
    fake.set_pod_custom("default", "qps", pods_custom, LABELS)
    fake.set_object(
        "default", "Deployment", "web", "hits", {**obj, "timestamp": "2026-01-01T00:00:00Z"}
    )
    fake.set_external("default", "q", ext)
    if down:
        emulator.metrics.set_unavailable(
            ["metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"]
        )
        fake.unavailable = {"resource", "custom", "external"}
    dep = CrossVersionObjectReference("Deployment", "web", "apps/v1")
    nothing = Selector.nothing()
    async with KubeSession(master=emulator.url) as s:
        rest = RestMetricsClient(s, mapper=RestMapper(s))
        for client_call in (
            lambda c: c.get_resource_metric("cpu", "default", parse_selector("app=web")),
            lambda c: c.get_resource_metric("cpu", "default", parse_selector("app=api"), "a"),
            lambda c: c.get_resource_metric("memory", "default", parse_selector("app=api")),
            lambda c: c.get_resource_metric("cpu", "default", parse_selector("app=none")),
            lambda c: c.get_raw_metric(
                "qps", "default", parse_selector("app in (web,api)"), nothing
            ),
            lambda c: c.get_raw_metric("qps", "default", parse_selector("app=none"), nothing),
            lambda c: c.get_object_metric("hits", "default", dep, nothing),
            lambda c: c.get_external_metric("q", "default", parse_selector("k=a")),
            lambda c: c.get_external_metric("q", "default", parse_selector("k=b")),
        ):
            assert await client_call(fake) == await client_call(rest)
