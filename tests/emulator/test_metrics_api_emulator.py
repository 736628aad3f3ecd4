"""The metrics APIs inside the full emulator: labels of stored objects, the shared
resourceVersion sequence, and manifests loaded with the emulator's loader."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from hpactl.emulator import Emulator

C = "/apis/custom.metrics.k8s.io/v1beta2"


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator() as emu:
        yield emu


async def _get(
    emu: Emulator, path: str, method: str = "GET", body: Any = None, **query: str
) -> tuple[int, Any]:
    async with ApiClient(Configuration(host=emu.url)) as api:
        resp = await api.call_api(
            path,
            method,
            query_params=list(query.items()),
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body,
            _preload_content=False,
            _request_timeout=10,
        )
        return resp.status, json.loads(await resp.text())


def deployment(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": "default", "name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


async def test_wildcard_over_deployments_uses_their_labels(emu: Emulator) -> None:
    emu.store.create(deployment("web", {"tier": "front"}))
    emu.store.create(deployment("api", {"tier": "back"}))
    emu.metrics.set_custom(
        [
            {
                "describedObject": {"kind": "Deployment", "namespace": "default", "name": n},
                "metric": {"name": "qps"},
                "value": v,
            }
            for n, v in (("web", "10"), ("api", "20"), ("deleted", "30"))
        ]
    )
    status, body = await _get(
        emu, f"{C}/namespaces/default/deployments.apps/*/qps", labelSelector="tier=front"
    )
    assert status == 200
    assert [(i["describedObject"]["name"], i["value"]) for i in body["items"]] == [("web", "10")]
    _, body = await _get(emu, f"{C}/namespaces/default/deployments.apps/*/qps")
    assert [i["describedObject"]["name"] for i in body["items"]] == ["api", "web"]
    # The object metric of a deployment that does not exist is still answered.
    _, body = await _get(emu, f"{C}/namespaces/default/deployments.apps/deleted/qps")
    assert [i["value"] for i in body["items"]] == ["30"]


async def test_writes_take_resource_versions_from_the_emulator(emu: Emulator) -> None:
    before = emu.store.rv
    pm = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"namespace": "default", "name": "p", "labels": {"app": "web"}},
        "containers": [{"name": "app", "usage": {"cpu": "1"}}],
    }
    status, created = await _get(
        emu, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", "POST", pm
    )
    assert status == 201
    assert int(created["metadata"]["resourceVersion"]) > before
    emu.store.create(deployment("web", {}))
    assert emu.store.rv > int(created["metadata"]["resourceVersion"])


async def test_manifests_loaded_by_the_emulator(emu: Emulator) -> None:
    emu.load_manifests(
        [
            """\
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web}}
spec: {containers: [{name: app, image: nginx}]}
---
apiVersion: metrics.k8s.io/v1beta1
kind: PodMetrics
metadata: {name: web-1, namespace: default}
containers: [{name: app, usage: {cpu: 400m}}]
---
apiVersion: custom.metrics.k8s.io/v1beta2
kind: MetricValue
describedObject: {kind: Pod, namespace: default, name: web-1}
metric: {name: rps}
value: "5"
---
apiVersion: custom.metrics.k8s.io/v1beta2
kind: MetricValue
describedObject: {kind: Service, namespace: default, name: web}
metric: {name: requests}
value: "50"
---
apiVersion: external.metrics.k8s.io/v1beta1
kind: ExternalMetricValue
metadata: {namespace: default}
metricName: queue_length
value: "7"
"""
        ]
    )
    _, body = await _get(
        emu, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", labelSelector="app=web"
    )
    assert [i["containers"][0]["usage"]["cpu"] for i in body["items"]] == ["400m"]
    _, body = await _get(emu, f"{C}/namespaces/default/pods/*/rps", labelSelector="app=web")
    assert [i["value"] for i in body["items"]] == ["5"]
    # Loading one MetricValue does not replace the others.
    _, body = await _get(emu, f"{C}/namespaces/default/services/web/requests")
    assert [i["value"] for i in body["items"]] == ["50"]
    _, body = await _get(
        emu, "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_length"
    )
    assert [i["value"] for i in body["items"]] == ["7"]
