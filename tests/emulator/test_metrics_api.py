"""The metrics APIs over real HTTP, read the way a controller reads them
(kubernetes_asyncio ``call_api`` with literal paths, ``CustomObjectsApi``) and
written the way tests and users script them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio.client import ApiClient, Configuration, CustomObjectsApi
from kubernetes_asyncio.client.exceptions import ApiException

from hpactl.emulator.metrics_api import (
    MetricsState,
    metrics_api_group_discovery,
    metrics_api_resource_lists,
    register_metrics_routes,
)

from .helpers import api_json

START = datetime(2026, 1, 1, tzinfo=UTC)
M = "/apis/metrics.k8s.io/v1beta1"
C = "/apis/custom.metrics.k8s.io/v1beta2"
E = "/apis/external.metrics.k8s.io/v1beta1"


@dataclass
class Served:
    state: MetricsState
    pods: dict[tuple[str, str], dict[str, str]]
    clock: list[datetime]
    api: ApiClient
    http: aiohttp.ClientSession
    base: str

    async def call(
        self, path: str, method: str = "GET", query: dict[str, str] | None = None, body: Any = None
    ) -> tuple[int, Any]:
        """A request through kubernetes_asyncio, as the controller's metrics client does."""
        return await api_json(self.api, path, method, query=query, body=body)

    async def raw(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        **params: str,
    ) -> tuple[int, Any, str]:
        data = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
        async with self.http.request(
            method,
            self.base + path,
            data=data,
            params=params,
            headers={"Content-Type": content_type},
        ) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text), resp.content_type
            except ValueError:
                return resp.status, text, resp.content_type


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    pods = {
        ("default", "web-1"): {"app": "web", "tier": "front"},
        ("default", "web-2"): {"app": "web", "tier": "back"},
        ("default", "db-1"): {"app": "db"},
        ("other", "web-1"): {"app": "web"},
    }
    clock = [START]
    state = MetricsState(lambda ns, name: pods.get((ns, name)), lambda: clock[0])
    app = web.Application()
    register_metrics_routes(app, state)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    try:
        async with ApiClient(Configuration(host=base)) as api, aiohttp.ClientSession() as http:
            yield Served(state, pods, clock, api, http, base)
    finally:
        await server.close()


def pod_metrics(
    ns: str, name: str, cpu: str = "250m", memory: str = "64Mi", **extra: Any
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, **extra.pop("meta", {})},
        "containers": [{"name": "app", "usage": {"cpu": cpu, "memory": memory}}],
        **extra,
    }


# ------------------------------------------------------------------ metrics.k8s.io


async def test_pod_metrics_list_has_metrics_server_shape(served: Served) -> None:
    served.state.set_pod_metrics(
        [
            pod_metrics("default", "web-2", cpu="0.5", memory="134217728"),
            pod_metrics("default", "web-1", timestamp="2025-12-31T23:59:45Z", window="15s"),
            pod_metrics("other", "web-1"),
        ]
    )
    status, body = await served.call(f"{M}/namespaces/default/pods")
    assert status == 200
    now = "2026-01-01T00:00:00Z"
    assert body == {
        "kind": "PodMetricsList",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": [
            {
                "metadata": {
                    "namespace": "default",
                    "name": "web-1",
                    "creationTimestamp": now,
                    "labels": {"app": "web", "tier": "front"},
                },
                "timestamp": "2025-12-31T23:59:45Z",
                "window": "15s",
                "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}}],
            },
            {
                "metadata": {
                    "namespace": "default",
                    "name": "web-2",
                    "creationTimestamp": now,
                    "labels": {"app": "web", "tier": "back"},
                },
                "timestamp": now,
                "window": "30s",
                # Quantities come back in canonical form (the format of the input kept, as Go does).
                "containers": [{"name": "app", "usage": {"cpu": "500m", "memory": "134217728"}}],
            },
        ],
    }


async def test_pod_metrics_timestamp_follows_the_clock(served: Served) -> None:
    served.state.set_pod_metrics([pod_metrics("default", "web-1")])
    served.clock[0] = START + timedelta(minutes=5)
    _, body = await served.call(f"{M}/namespaces/default/pods/web-1")
    assert body["timestamp"] == "2026-01-01T00:05:00Z"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["web-1", "web-2"]),
        ("app=web,tier=back", ["web-2"]),
        ("app in (db,cache)", ["db-1"]),
        ("app!=web", ["db-1"]),
        ("tier", ["web-1", "web-2"]),
        ("!tier", ["db-1"]),
        ("app=nothing", []),
        ("", ["db-1", "web-1", "web-2"]),
    ],
)
async def test_pod_metrics_label_selector(
    served: Served, selector: str, expected: list[str]
) -> None:
    served.state.set_pod_metrics([pod_metrics("default", n) for n in ("web-1", "web-2", "db-1")])
    status, body = await served.call(
        f"{M}/namespaces/default/pods", query={"labelSelector": selector}
    )
    assert status == 200
    assert [i["metadata"]["name"] for i in body["items"]] == expected


async def test_pod_metrics_through_custom_objects_api(served: Served) -> None:
    served.state.set_pod_metrics([pod_metrics("default", "web-1"), pod_metrics("default", "db-1")])
    objs = CustomObjectsApi(served.api)
    listed = await objs.list_namespaced_custom_object(
        "metrics.k8s.io", "v1beta1", "default", "pods", label_selector="app=web"
    )
    assert [i["metadata"]["name"] for i in listed["items"]] == ["web-1"]
    one = await objs.get_namespaced_custom_object(
        "metrics.k8s.io", "v1beta1", "default", "pods", "db-1"
    )
    assert one["kind"] == "PodMetrics"
    assert one["containers"][0]["usage"]["cpu"] == "250m"
    with pytest.raises(ApiException) as exc:
        await objs.get_namespaced_custom_object(
            "metrics.k8s.io", "v1beta1", "default", "pods", "nope"
        )
    assert exc.value.status == 404
    assert (
        json.loads(exc.value.body)["message"]
        == 'podmetrics.metrics.k8s.io "default/nope" not found'
    )


async def test_pod_metrics_all_namespaces_and_field_selector(served: Served) -> None:
    served.state.set_pod_metrics([pod_metrics("default", "web-1"), pod_metrics("other", "web-1")])
    _, body = await served.call(f"{M}/pods")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [
        ("default", "web-1"),
        ("other", "web-1"),
    ]
    _, body = await served.call(f"{M}/pods", query={"fieldSelector": "metadata.namespace=other"})
    assert [i["metadata"]["namespace"] for i in body["items"]] == ["other"]
    status, body = await served.call(f"{M}/pods", query={"fieldSelector": "spec.nodeName=x"})
    assert status == 400


async def test_pod_metrics_follow_pod_existence_and_labels(served: Served) -> None:
    served.state.set_pod_metrics(
        [
            pod_metrics("default", "ghost"),  # no such pod: metrics-server would not serve it
            pod_metrics("default", "labelled-ghost", meta={"labels": {"app": "web"}}),
            pod_metrics("default", "web-1"),
        ]
    )
    _, body = await served.call(f"{M}/namespaces/default/pods", query={"labelSelector": "app=web"})
    assert [i["metadata"]["name"] for i in body["items"]] == ["labelled-ghost", "web-1"]
    status, _ = await served.call(f"{M}/namespaces/default/pods/ghost")
    assert status == 404
    # Labels are read live from the pod.
    served.pods[("default", "web-1")] = {"app": "api"}
    _, body = await served.call(f"{M}/namespaces/default/pods", query={"labelSelector": "app=web"})
    assert [i["metadata"]["name"] for i in body["items"]] == ["labelled-ghost"]


async def test_put_and_delete_pod_metrics_from_python(served: Served) -> None:
    served.state.put_pod_metrics(pod_metrics("default", "web-1", cpu="1"))
    served.state.put_pod_metrics(pod_metrics("default", "web-1", cpu="2"))
    _, body = await served.call(f"{M}/namespaces/default/pods/web-1")
    assert body["containers"][0]["usage"]["cpu"] == "2"
    served.state.delete_pod_metrics("default", "web-1")
    status, _ = await served.call(f"{M}/namespaces/default/pods/web-1")
    assert status == 404


async def test_bad_scripted_values_raise_value_error(served: Served) -> None:
    with pytest.raises(ValueError, match="cpu"):
        served.state.set_pod_metrics([pod_metrics("default", "web-1", cpu="lots")])
    with pytest.raises(ValueError, match=r"metadata\.name"):
        served.state.set_pod_metrics([{"metadata": {"namespace": "default"}, "containers": []}])
    with pytest.raises(ValueError, match="value"):
        served.state.set_external([{"namespace": "default", "metricName": "q", "value": "x1"}])


async def test_node_metrics_are_empty(served: Served) -> None:
    status, body = await served.call(f"{M}/nodes")
    assert (status, body["kind"], body["items"]) == (200, "NodeMetricsList", [])
    status, body = await served.call(f"{M}/nodes/n1")
    assert status == 404
    assert body["message"] == 'nodemetrics.metrics.k8s.io "n1" not found'


async def test_invalid_label_selector_is_400(served: Served) -> None:
    status, body = await served.call(
        f"{M}/namespaces/default/pods", query={"labelSelector": "app in (web"}
    )
    assert status == 400
    assert body["reason"] == "BadRequest"


# ------------------------------------------------------------------ custom.metrics.k8s.io

CUSTOM = [
    {
        "describedObject": {"kind": "Service", "namespace": "default", "name": "web"},
        "metric": {"name": "requests"},
        "value": "100",
    },
    {
        "describedObject": {"kind": "Deployment", "namespace": "default", "name": "web"},
        "metric": {"name": "queue"},
        "timestamp": "2025-12-31T23:59:00Z",
        "windowSeconds": 60,
        "value": 1500,
    },
    {
        "describedObject": {"kind": "Namespace", "name": "default"},
        "metric": {"name": "qps"},
        "value": "7",
    },
    {
        "describedObject": {"kind": "Pod", "namespace": "default", "name": "web-1"},
        "metric": {"name": "rps"},
        "value": "10",
    },
    {
        "describedObject": {"kind": "Pod", "namespace": "default", "name": "web-2"},
        "metric": {"name": "rps"},
        "value": "30",
    },
    {
        "describedObject": {"kind": "Pod", "namespace": "default", "name": "db-1"},
        "metric": {"name": "rps"},
        "value": "5",
    },
    {
        "describedObject": {"kind": "Pod", "namespace": "default", "name": "gone-1"},
        "metric": {"name": "rps"},
        "value": "99",
    },
    {
        "describedObject": {"kind": "Pod", "namespace": "default", "name": "web-1"},
        "metric": {"name": "latency", "selector": {"matchLabels": {"quantile": "0.9"}}},
        "value": "300m",
    },
    {
        "describedObject": {"kind": "Pod", "namespace": "default", "name": "web-1"},
        "metric": {"name": "latency", "selector": {"matchLabels": {"quantile": "0.5"}}},
        "value": "100m",
    },
]


async def test_object_metric_service(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    status, body = await served.call(f"{C}/namespaces/default/services/web/requests")
    assert status == 200
    assert body == {
        "kind": "MetricValueList",
        "apiVersion": "custom.metrics.k8s.io/v1beta2",
        "metadata": {},
        "items": [
            {
                "describedObject": {
                    "kind": "Service",
                    "name": "web",
                    "namespace": "default",
                    "apiVersion": "/v1",
                },
                "metric": {"name": "requests"},
                "timestamp": "2026-01-01T00:00:00Z",
                "value": "100",
            }
        ],
    }


async def test_object_metric_qualified_resource(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    status, body = await served.call(f"{C}/namespaces/default/deployments.apps/web/queue")
    assert status == 200
    (item,) = body["items"]
    assert item == {
        "describedObject": {
            "kind": "Deployment",
            "name": "web",
            "namespace": "default",
            "apiVersion": "apps/v1",
        },
        "metric": {"name": "queue"},
        "timestamp": "2025-12-31T23:59:00Z",
        "windowSeconds": 60,
        "value": "1500",
    }
    # The same object in another group is a different object.
    status, body = await served.call(f"{C}/namespaces/default/deployments.extensions/web/queue")
    assert status == 404


async def test_namespace_metric_path(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    status, body = await served.call(f"{C}/namespaces/default/metrics/qps")
    assert status == 200
    assert [i["value"] for i in body["items"]] == ["7"]
    assert body["items"][0]["describedObject"] == {
        "kind": "Namespace",
        "name": "default",
        "apiVersion": "/v1",
    }
    status, _ = await served.call(f"{C}/namespaces/other/metrics/qps")
    assert status == 404


async def test_object_metric_not_found_messages(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    status, body = await served.call(f"{C}/namespaces/default/services/api/requests")
    assert (status, body["reason"]) == (404, "NotFound")
    assert body["message"] == "the server could not find the metric requests for services api"
    status, body = await served.call(f"{C}/namespaces/default/pods/*/nothing")
    assert status == 404
    assert body["message"] == "the server could not find the metric nothing for pods"


async def test_per_pod_metrics_with_label_selector(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    status, body = await served.call(
        f"{C}/namespaces/default/pods/*/rps", query={"labelSelector": "app=web"}
    )
    assert status == 200
    assert [(i["describedObject"]["name"], i["value"]) for i in body["items"]] == [
        ("web-1", "10"),
        ("web-2", "30"),
    ]
    # Without a selector: every existing pod with the metric (gone-1 has no pod).
    _, body = await served.call(f"{C}/namespaces/default/pods/*/rps")
    assert [i["describedObject"]["name"] for i in body["items"]] == ["db-1", "web-1", "web-2"]
    # Known metric, no pod matching: an empty list.
    status, body = await served.call(
        f"{C}/namespaces/default/pods/*/rps", query={"labelSelector": "app=none"}
    )
    assert (status, body["items"]) == (200, [])


@pytest.mark.parametrize(
    ("metric_selector", "expected"),
    [
        ("quantile=0.9", ["300m"]),
        ("quantile in (0.5,0.9)", ["100m", "300m"]),
        ("quantile=0.99", []),
        ("", ["100m", "300m"]),
    ],
)
async def test_per_pod_metrics_with_metric_selector(
    served: Served, metric_selector: str, expected: list[str]
) -> None:
    served.state.set_custom(CUSTOM)
    status, body = await served.call(
        f"{C}/namespaces/default/pods/*/latency",
        query={"labelSelector": "app=web", "metricLabelSelector": metric_selector},
    )
    assert status == 200
    assert sorted(i["value"] for i in body["items"]) == expected


async def test_object_metric_with_metric_selector(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    _, body = await served.call(
        f"{C}/namespaces/default/pods/web-1/latency", query={"metricLabelSelector": "quantile=0.5"}
    )
    assert [i["value"] for i in body["items"]] == ["100m"]
    assert body["items"][0]["metric"] == {
        "name": "latency",
        "selector": {"matchLabels": {"quantile": "0.5"}},
    }


async def test_custom_discovery_lists_metrics(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    _, body = await served.call(C)
    names = {r["name"]: r for r in body["resources"]}
    assert body["groupVersion"] == "custom.metrics.k8s.io/v1beta2"
    assert {
        "services/requests",
        "deployments.apps/queue",
        "namespaces/qps",
        "pods/rps",
        "pods/latency",
    } <= set(names)
    assert names["namespaces/qps"]["namespaced"] is False
    assert names["pods/rps"] == {
        "name": "pods/rps",
        "singularName": "",
        "namespaced": True,
        "kind": "MetricValueList",
        "verbs": ["get"],
    }
    assert names["metricvalues"]["kind"] == "MetricValue"


# ------------------------------------------------------------------ external.metrics.k8s.io

EXTERNAL = [
    {
        "namespace": "default",
        "metricName": "queue_length",
        "metricLabels": {"queue": "a"},
        "value": "10",
    },
    {
        "namespace": "default",
        "metricName": "queue_length",
        "metricLabels": {"queue": "b"},
        "value": "20",
        "window": 60,
    },
    {
        "namespace": "default",
        "metricName": "queue_length",
        "metricLabels": {"queue": "c", "env": "dev"},
        "value": "5",
    },
    {
        "namespace": "other",
        "metricName": "queue_length",
        "metricLabels": {"queue": "a"},
        "value": "1000",
    },
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", ["10", "20", "5"]),
        ("queue=a", ["10"]),
        ("queue in (a,b)", ["10", "20"]),
        ("env", ["5"]),
        ("!env", ["10", "20"]),
        ("queue=z", []),
    ],
)
async def test_external_metrics_selector(
    served: Served, selector: str, expected: list[str]
) -> None:
    served.state.set_external(EXTERNAL)
    status, body = await served.call(
        f"{E}/namespaces/default/queue_length", query={"labelSelector": selector}
    )
    assert status == 200
    assert body["kind"] == "ExternalMetricValueList"
    assert [i["value"] for i in body["items"]] == expected


async def test_external_metric_item_shape(served: Served) -> None:
    served.state.set_external(EXTERNAL)
    _, body = await served.call(
        f"{E}/namespaces/default/queue_length", query={"labelSelector": "queue=b"}
    )
    assert body == {
        "kind": "ExternalMetricValueList",
        "apiVersion": "external.metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": [
            {
                "metricName": "queue_length",
                "metricLabels": {"queue": "b"},
                "timestamp": "2026-01-01T00:00:00Z",
                "window": 60,
                "value": "20",
            }
        ],
    }
    status, body = await served.call(f"{E}/namespaces/default/unknown_metric")
    assert (status, body["items"]) == (200, [])


# ------------------------------------------------------------------ discovery, 503


async def test_discovery_documents(served: Served) -> None:
    groups = {g["name"]: g for g in metrics_api_group_discovery()}
    assert groups["custom.metrics.k8s.io"]["preferredVersion"] == {
        "groupVersion": "custom.metrics.k8s.io/v1beta2",
        "version": "v1beta2",
    }
    status, body = await served.call("/apis/metrics.k8s.io")
    assert status == 200
    assert body["kind"] == "APIGroup" and body["name"] == "metrics.k8s.io"
    _, body = await served.call(M)
    assert body["kind"] == "APIResourceList"
    kinds = {r["name"]: r["kind"] for r in body["resources"]}
    assert kinds == {"pods": "PodMetrics", "nodes": "NodeMetrics"}
    _, body = await served.call(E)
    assert "externalmetricvalues" in {r["name"] for r in body["resources"]}
    status, _ = await served.call("/apis/metrics.k8s.io/v1")
    assert status == 404


@pytest.mark.parametrize(
    ("group", "path"),
    [
        ("metrics.k8s.io", f"{M}/namespaces/default/pods"),
        ("metrics.k8s.io", M),
        ("custom.metrics.k8s.io", f"{C}/namespaces/default/pods/*/rps"),
        ("external.metrics.k8s.io", f"{E}/namespaces/default/queue_length"),
    ],
)
async def test_unavailable_group_answers_503_and_comes_back(
    served: Served, group: str, path: str
) -> None:
    served.state.set_pod_metrics([pod_metrics("default", "web-1")])
    served.state.set_custom(CUSTOM)
    served.state.set_external(EXTERNAL)
    served.state.set_unavailable([group])
    status, body = await served.call(path)
    assert (status, body) == (503, "service unavailable\n")
    # The group document and the other groups stay.
    status, _ = await served.call(f"/apis/{group}")
    assert status == 200
    assert f"{group}/" + path.split("/")[3] not in metrics_api_resource_lists(served.state)
    for other in {M, C, E} - {f"/apis/{group}/" + path.split("/")[3]}:
        assert (await served.call(other))[0] == 200
    served.state.set_unavailable([])
    assert (await served.call(path))[0] == 200


async def test_unavailable_resource_metrics_through_custom_objects_api(served: Served) -> None:
    served.state.set_unavailable(["metrics.k8s.io"])
    with pytest.raises(ApiException) as exc:
        await CustomObjectsApi(served.api).list_namespaced_custom_object(
            "metrics.k8s.io", "v1beta1", "default", "pods"
        )
    assert (exc.value.status, exc.value.body) == (503, "service unavailable\n")


def test_set_unavailable_rejects_unknown_group(served: Served) -> None:
    with pytest.raises(ValueError, match="unknown metrics API group"):
        served.state.set_unavailable(["metrics.example.com"])


# ------------------------------------------------------------------ writes


POD_METRICS_MANIFEST = {
    "apiVersion": "metrics.k8s.io/v1beta1",
    "kind": "PodMetrics",
    "metadata": {"name": "web-1", "namespace": "default"},
    "containers": [{"name": "app", "usage": {"cpu": "300m", "memory": "100Mi"}}],
}


async def test_pod_metrics_create_get_update_delete(served: Served) -> None:
    status, created = await served.call(
        f"{M}/namespaces/default/pods", "POST", body=POD_METRICS_MANIFEST
    )
    assert status == 201
    rv1 = created["metadata"]["resourceVersion"]
    assert created["metadata"]["uid"]
    status, again = await served.call(
        f"{M}/namespaces/default/pods", "POST", body=POD_METRICS_MANIFEST
    )
    assert (status, again["reason"]) == (409, "AlreadyExists")
    assert again["message"] == 'pods.metrics.k8s.io "web-1" already exists'
    _, got = await served.call(f"{M}/namespaces/default/pods/web-1")
    assert got["containers"][0]["usage"]["cpu"] == "300m"
    assert got["metadata"]["labels"] == {"app": "web", "tier": "front"}

    # PUT with a stale resourceVersion conflicts, with the current one succeeds.
    update = json.loads(json.dumps(POD_METRICS_MANIFEST))
    update["containers"][0]["usage"]["cpu"] = "900m"
    update["metadata"]["resourceVersion"] = "999"
    status, body = await served.call(f"{M}/namespaces/default/pods/web-1", "PUT", body=update)
    assert (status, body["reason"]) == (409, "Conflict")
    update["metadata"]["resourceVersion"] = rv1
    status, body = await served.call(f"{M}/namespaces/default/pods/web-1", "PUT", body=update)
    assert status == 200
    assert body["metadata"]["resourceVersion"] != rv1
    assert body["metadata"]["uid"] == created["metadata"]["uid"]
    _, body = await served.call(
        f"{M}/namespaces/default/pods", query={"labelSelector": "tier=front"}
    )
    assert body["items"][0]["containers"][0]["usage"]["cpu"] == "900m"

    status, body = await served.call(f"{M}/namespaces/default/pods/web-1", "DELETE")
    assert (status, body["status"]) == (200, "Success")
    assert (await served.call(f"{M}/namespaces/default/pods/web-1"))[0] == 404
    assert (await served.call(f"{M}/namespaces/default/pods/web-1", "DELETE"))[0] == 404


@pytest.mark.parametrize(
    ("content_type", "patch", "cpu"),
    [
        (
            "application/merge-patch+json",
            {"containers": [{"name": "app", "usage": {"cpu": "1"}}]},
            "1",
        ),
        (
            "application/strategic-merge-patch+json",
            {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"name": "app", "usage": {"cpu": "2"}}],
            },
            "2",
        ),
        (
            "application/json-patch+json",
            [{"op": "replace", "path": "/containers/0/usage/cpu", "value": "3"}],
            "3",
        ),
    ],
)
async def test_pod_metrics_patch(served: Served, content_type: str, patch: Any, cpu: str) -> None:
    await served.raw("POST", f"{M}/namespaces/default/pods", POD_METRICS_MANIFEST)
    status, body, _ = await served.raw(
        "PATCH", f"{M}/namespaces/default/pods/web-1", patch, content_type
    )
    assert status == 200, body
    assert body["containers"][0]["usage"]["cpu"] == cpu
    _, got = await served.call(f"{M}/namespaces/default/pods/web-1")
    assert got["containers"][0]["usage"]["cpu"] == cpu


async def test_pod_metrics_patch_annotations_and_errors(served: Served) -> None:
    status, _, _ = await served.raw(
        "PATCH", f"{M}/namespaces/default/pods/web-1", {"a": 1}, "application/merge-patch+json"
    )
    assert status == 404
    await served.raw("POST", f"{M}/namespaces/default/pods", POD_METRICS_MANIFEST)
    ann = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}}
    status, body, _ = await served.raw(
        "PATCH", f"{M}/namespaces/default/pods/web-1", ann, "application/merge-patch+json"
    )
    assert status == 200
    _, got = await served.call(f"{M}/namespaces/default/pods/web-1")
    assert got["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "{}"
    }
    status, body, _ = await served.raw(
        "PATCH", f"{M}/namespaces/default/pods/web-1", "{}", "text/plain"
    )
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    bad = [{"op": "replace", "path": "/nope/x", "value": 1}]
    status, body, _ = await served.raw(
        "PATCH", f"{M}/namespaces/default/pods/web-1", bad, "application/json-patch+json"
    )
    assert status == 422
    bad_q = {"containers": [{"name": "app", "usage": {"cpu": "many"}}]}
    status, body, _ = await served.raw(
        "PATCH", f"{M}/namespaces/default/pods/web-1", bad_q, "application/merge-patch+json"
    )
    assert (status, body["reason"]) == (400, "BadRequest")


async def test_server_side_apply_creates_and_updates(served: Served) -> None:
    manifest = "\n".join(
        [
            "apiVersion: metrics.k8s.io/v1beta1",
            "kind: PodMetrics",
            "metadata: {name: web-2, namespace: default}",
            "containers: [{name: app, usage: {cpu: 700m}}]",
        ]
    )
    path = f"{M}/namespaces/default/pods/web-2"
    status, body, _ = await served.raw(
        "PATCH", path, manifest, "application/apply-patch+yaml", fieldManager="t"
    )
    assert status == 201
    status, body, _ = await served.raw(
        "PATCH",
        path,
        manifest.replace("700m", "800m"),
        "application/apply-patch+yaml",
        fieldManager="t",
    )
    assert status == 200
    assert body["containers"][0]["usage"]["cpu"] == "800m"


async def test_write_validation(served: Served) -> None:
    wrong_ns = {**POD_METRICS_MANIFEST, "metadata": {"name": "x", "namespace": "other"}}
    status, body = await served.call(f"{M}/namespaces/default/pods", "POST", body=wrong_ns)
    assert (status, body["reason"]) == (400, "BadRequest")
    wrong_kind = {**POD_METRICS_MANIFEST, "kind": "NodeMetrics"}
    status, body = await served.call(f"{M}/namespaces/default/pods", "POST", body=wrong_kind)
    assert status == 400
    nameless = {**POD_METRICS_MANIFEST, "metadata": {"namespace": "default"}}
    status, body = await served.call(f"{M}/namespaces/default/pods", "POST", body=nameless)
    assert (status, body["reason"]) == (422, "Invalid")
    status, body = await served.call(
        f"{M}/namespaces/default/pods", "POST", body=POD_METRICS_MANIFEST, query={"dryRun": "All"}
    )
    assert status == 201
    assert (await served.call(f"{M}/namespaces/default/pods/web-1"))[0] == 404
    status, body = await served.call(
        f"{C}/namespaces/default/services/web/requests", "POST", body={}
    )
    assert (status, body["reason"]) == (405, "MethodNotAllowed")
    status, body = await served.call(f"{M}/namespaces/default/pods/web-1/extra/x")
    assert status == 404


async def test_metric_value_writes_drive_custom_reads(served: Served) -> None:
    mv = {
        "apiVersion": "custom.metrics.k8s.io/v1beta2",
        "kind": "MetricValue",
        "metadata": {"name": "web-requests", "namespace": "default"},
        "describedObject": {"kind": "Service", "name": "web"},
        "metric": {"name": "requests"},
        "value": "42",
    }
    status, created = await served.call(f"{C}/namespaces/default/metricvalues", "POST", body=mv)
    assert status == 201, created
    assert created["describedObject"] == {"kind": "Service", "name": "web", "namespace": "default"}
    _, body = await served.call(f"{C}/namespaces/default/services/web/requests")
    assert [i["value"] for i in body["items"]] == ["42"]
    status, body, _ = await served.raw(
        "PATCH",
        f"{C}/namespaces/default/metricvalues/web-requests",
        {"value": "43"},
        "application/merge-patch+json",
    )
    assert status == 200
    _, body = await served.call(f"{C}/namespaces/default/services/web/requests")
    assert [i["value"] for i in body["items"]] == ["43"]
    _, listed = await served.call(f"{C}/namespaces/default/metricvalues")
    assert listed["kind"] == "MetricValueList" and [
        i["metadata"]["name"] for i in listed["items"]
    ] == ["web-requests"]
    assert (await served.call(f"{C}/namespaces/default/metricvalues/web-requests", "DELETE"))[
        0
    ] == 200
    assert (await served.call(f"{C}/namespaces/default/services/web/requests"))[0] == 404


async def test_external_metric_value_writes_drive_external_reads(served: Served) -> None:
    ev = {
        "apiVersion": "external.metrics.k8s.io/v1beta1",
        "kind": "ExternalMetricValue",
        "metadata": {"name": "queue-a", "namespace": "default"},
        "metricName": "queue_length",
        "metricLabels": {"queue": "a"},
        "value": "12",
    }
    status, _ = await served.call(f"{E}/namespaces/default/externalmetricvalues", "POST", body=ev)
    assert status == 201
    _, body = await served.call(
        f"{E}/namespaces/default/queue_length", query={"labelSelector": "queue=a"}
    )
    assert [i["value"] for i in body["items"]] == ["12"]
    ev["value"] = "13"
    status, _ = await served.call(
        f"{E}/namespaces/default/externalmetricvalues/queue-a", "PUT", body=ev
    )
    assert status == 200
    _, body = await served.call(f"{E}/namespaces/default/queue_length")
    assert [i["value"] for i in body["items"]] == ["13"]
    _, body = await served.call(E)
    assert "queue_length" in {r["name"] for r in body["resources"]}


async def test_scripted_values_are_readable_as_writable_objects(served: Served) -> None:
    served.state.set_custom(CUSTOM[:1])
    served.state.set_external(EXTERNAL[:1])
    _, body = await served.call(f"{C}/metricvalues")
    assert [i["metadata"]["name"] for i in body["items"]] == ["service-web-requests"]
    _, body = await served.call(f"{E}/externalmetricvalues")
    assert [i["metadata"]["name"] for i in body["items"]] == ["queue-length-queue-a"]


async def test_put_and_delete_one_custom_and_external_value(served: Served) -> None:
    served.state.set_custom(CUSTOM[:1])
    served.state.put_custom(
        {
            "kind": "MetricValueList",
            "items": [
                {
                    "describedObject": {"kind": "Service", "namespace": "default", "name": "api"},
                    "metric": {"name": "requests"},
                    "value": "5",
                }
            ],
        }
    )
    _, body = await served.call(f"{C}/namespaces/default/services/web/requests")
    assert [i["value"] for i in body["items"]] == ["100"]  # put keeps the others
    _, body = await served.call(f"{C}/namespaces/default/services/api/requests")
    assert [i["value"] for i in body["items"]] == ["5"]
    served.state.delete_custom("default", "service-api-requests")
    assert (await served.call(f"{C}/namespaces/default/services/api/requests"))[0] == 404

    served.state.put_external({"namespace": "default", "metricName": "q", "value": "1"})
    served.state.put_external({"namespace": "default", "metricName": "q", "value": "2"})
    _, body = await served.call(f"{E}/namespaces/default/q")
    assert [i["value"] for i in body["items"]] == ["2"]
    served.state.delete_external("default", "q")
    _, body = await served.call(f"{E}/namespaces/default/q")
    assert body["items"] == []
    with pytest.raises(ValueError, match="cpu"):
        served.state.put_pod_metrics(pod_metrics("default", "web-1", cpu="lots"))


@pytest.mark.parametrize(
    ("group_version", "path", "kind"),
    [
        (
            "metrics.k8s.io/v1beta1",
            "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}",
            "PodMetrics",
        ),
        (
            "custom.metrics.k8s.io/v1beta2",
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/metricvalues/{name}",
            "MetricValue",
        ),
        (
            "external.metrics.k8s.io/v1beta1",
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/externalmetricvalues/{name}",
            "ExternalMetricValue",
        ),
    ],
)
async def test_openapi_v3_describes_writable_kinds(
    served: Served, group_version: str, path: str, kind: str
) -> None:
    status, doc = await served.call(f"/openapi/v3/apis/{group_version}")
    assert status == 200
    assert list(doc["paths"]) == [path]
    patch = doc["paths"][path]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == kind
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    # No strategic merge: kubectl apply falls back to JSON merge patches.
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]


async def test_metric_value_must_describe_an_object_of_its_namespace(served: Served) -> None:
    mv = {
        "metadata": {"name": "x", "namespace": "default"},
        "describedObject": {"kind": "Service", "namespace": "other", "name": "web"},
        "metric": {"name": "requests"},
        "value": "1",
    }
    status, body = await served.call(f"{C}/namespaces/default/metricvalues", "POST", body=mv)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert "describedObject.namespace (other)" in body["message"]
    # A root-scoped object's value may live in any namespace.
    node = {**mv, "describedObject": {"kind": "Node", "name": "n1"}}
    status, _ = await served.call(f"{C}/namespaces/default/metricvalues", "POST", body=node)
    assert status == 201
    _, body = await served.call(f"{C}/nodes/n1/requests")
    assert [i["describedObject"] for i in body["items"]] == [
        {"kind": "Node", "name": "n1", "apiVersion": "/v1"}
    ]


TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


async def test_pod_metrics_table_as_metrics_server_prints_it(served: Served) -> None:
    served.state.set_pod_metrics(
        [
            {
                "metadata": {"namespace": "default", "name": "web-1"},
                "containers": [
                    {"name": "app", "usage": {"cpu": "250m", "memory": "64Mi"}},
                    {"name": "sidecar", "usage": {"cpu": "50m", "memory": "16Mi"}},
                ],
            }
        ]
    )
    async with served.http.get(
        f"{served.base}{M}/namespaces/default/pods", headers={"Accept": TABLE_ACCEPT}
    ) as resp:
        table = await resp.json()
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [(c["name"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "name"),
        ("cpu", "quantity"),
        ("memory", "quantity"),
        ("Window", "duration"),
    ]
    (row,) = table["rows"]
    assert row["cells"] == ["web-1", "300m", "80Mi", "30s"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "web-1"
    # Plain JSON when the client does not ask for a Table.
    _, body = await served.call(f"{M}/namespaces/default/pods")
    assert body["kind"] == "PodMetricsList"


async def test_writable_kinds_tables(served: Served) -> None:
    served.state.set_custom(CUSTOM[:1])
    served.state.set_external(EXTERNAL[:1])
    async with served.http.get(
        f"{served.base}{C}/namespaces/default/metricvalues", headers={"Accept": TABLE_ACCEPT}
    ) as resp:
        table = await resp.json()
    assert [r["cells"] for r in table["rows"]] == [
        ["service-web-requests", "Service/web", "requests", "100"]
    ]
    async with served.http.get(
        f"{served.base}{E}/namespaces/default/externalmetricvalues/queue-length-queue-a",
        params={"includeObject": "Object"},
        headers={"Accept": TABLE_ACCEPT},
    ) as resp:
        table = await resp.json()
    (row,) = table["rows"]
    assert row["cells"] == ["queue-length-queue-a", "queue_length", "queue=a", "10"]
    assert row["object"]["kind"] == "ExternalMetricValue"


async def test_percent_encoded_wildcard(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    status, body, _ = await served.raw(
        "GET", f"{C}/namespaces/default/pods/%2A/rps", labelSelector="app=web"
    )
    assert status == 200
    assert [i["describedObject"]["name"] for i in body["items"]] == ["web-1", "web-2"]


async def test_generated_names_and_duplicates(served: Served) -> None:
    served.state.set_custom(CUSTOM)
    _, body = await served.call(
        f"{C}/namespaces/default/metricvalues", query={"fieldSelector": "metadata.name!=x"}
    )
    names = [i["metadata"]["name"] for i in body["items"]]
    assert "pod-web-1-latency-quantile-0.9" in names and "pod-web-1-latency-quantile-0.5" in names
    # A PodMetrics named twice: the last one wins (no renaming).
    served.state.set_pod_metrics(
        [pod_metrics("default", "web-1", cpu="1"), pod_metrics("default", "web-1", cpu="2")]
    )
    _, body = await served.call(f"{M}/namespaces/default/pods")
    assert [(i["metadata"]["name"], i["containers"][0]["usage"]["cpu"]) for i in body["items"]] == [
        ("web-1", "2")
    ]
    # Unnamed values that only differ by selector expressions are numbered.
    same = {
        "describedObject": {"kind": "Service", "namespace": "default", "name": "web"},
        "metric": {
            "name": "m",
            "selector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
        },
        "value": "1",
    }
    served.state.set_custom([same, {**same, "value": "2"}])
    _, body = await served.call(f"{C}/namespaces/default/metricvalues")
    assert [i["metadata"]["name"] for i in body["items"]] == ["service-web-m", "service-web-m-2"]


async def test_watch_is_not_supported(served: Served) -> None:
    status, body = await served.call(f"{M}/namespaces/default/pods", query={"watch": "true"})
    assert (status, body["reason"]) == (405, "MethodNotAllowed")
    assert body["message"] == 'watch is not supported on resources of kind "pods.metrics.k8s.io"'
    status, _ = await served.call(f"{M}/namespaces/default/pods", query={"watch": "false"})
    assert status == 200
