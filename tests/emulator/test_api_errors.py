"""Error paths of the emulator's HTTP API, each with the status kube-apiserver answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from hpactl.emulator import Emulator

from .helpers import DEPLOYMENTS, PODS, Http, deployment, pod


@pytest.fixture
async def http(emulator: Emulator) -> AsyncIterator[Http]:
    h = Http(emulator)
    yield h
    await h.close()


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "ctype", "code", "reason"),
    [
        pytest.param(
            "GET",
            "/apis/apps/v1/namespaces/default/gizmos",
            None,
            None,
            "application/json",
            404,
            "NotFound",
            id="unknown-resource",
        ),
        pytest.param(
            "GET",
            "/apis/apps/v9/deployments",
            None,
            None,
            "application/json",
            404,
            "NotFound",
            id="unknown-version",
        ),
        pytest.param(
            "GET",
            "/nonsense",
            None,
            None,
            "application/json",
            404,
            "NotFound",
            id="non-resource-path",
        ),
        pytest.param(
            "GET",
            "/api/v1/pods/x",
            None,
            None,
            "application/json",
            404,
            "NotFound",
            id="namespaced-get-without-namespace",
        ),
        pytest.param(
            "GET",
            DEPLOYMENTS + "/web/frobnicate",
            None,
            None,
            "application/json",
            404,
            "NotFound",
            id="unknown-subresource",
        ),
        pytest.param(
            "POST",
            DEPLOYMENTS + "/web",
            None,
            deployment("web"),
            "application/json",
            405,
            "MethodNotAllowed",
            id="post-to-name",
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces",
            None,
            None,
            "application/json",
            405,
            "MethodNotAllowed",
            id="namespaces-no-deletecollection",
        ),
        pytest.param(
            "GET",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            None,
            None,
            "application/json",
            405,
            "MethodNotAllowed",
            id="ssar-is-create-only",
        ),
        pytest.param(
            "DELETE",
            DEPLOYMENTS + "/web/status",
            None,
            None,
            "application/json",
            405,
            "MethodNotAllowed",
            id="delete-status",
        ),
        pytest.param(
            "POST",
            DEPLOYMENTS,
            None,
            b"{not json",
            "application/json",
            400,
            "BadRequest",
            id="garbage-body",
        ),
        pytest.param(
            "POST", DEPLOYMENTS, None, b"", "application/json", 400, "BadRequest", id="empty-body"
        ),
        pytest.param(
            "POST",
            DEPLOYMENTS,
            None,
            b"\x00",
            "application/cbor",
            415,
            "UnsupportedMediaType",
            id="cbor-body",
        ),
        pytest.param(
            "POST",
            DEPLOYMENTS,
            None,
            b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap",
            "application/vnd.kubernetes.protobuf",
            415,
            "UnsupportedMediaType",
            id="protobuf-unknown-kind",
        ),
        pytest.param(
            "POST",
            DEPLOYMENTS,
            None,
            {**deployment("x"), "apiVersion": "apps/v1beta1"},
            "application/json",
            400,
            "BadRequest",
            id="wrong-apiversion",
        ),
        pytest.param(
            "POST",
            DEPLOYMENTS,
            None,
            {**deployment("x"), "kind": "StatefulSet"},
            "application/json",
            400,
            "BadRequest",
            id="wrong-kind",
        ),
        pytest.param(
            "GET",
            PODS,
            {"limit": "many"},
            None,
            "application/json",
            400,
            "BadRequest",
            id="bad-limit",
        ),
        pytest.param(
            "GET",
            PODS,
            {"resourceVersion": "abc"},
            None,
            "application/json",
            400,
            "BadRequest",
            id="bad-resource-version",
        ),
        pytest.param(
            "GET",
            PODS,
            {"resourceVersion": "1", "resourceVersionMatch": "Sometimes"},
            None,
            "application/json",
            400,
            "BadRequest",
            id="bad-rv-match",
        ),
        pytest.param(
            "GET",
            PODS,
            {"watch": "true", "timeoutSeconds": "soon"},
            None,
            "application/json",
            400,
            "BadRequest",
            id="bad-timeout",
        ),
        pytest.param(
            "GET",
            PODS,
            {"watch": "true", "allowWatchBookmarks": "maybe"},
            None,
            "application/json",
            400,
            "BadRequest",
            id="bad-bookmark-bool",
        ),
        pytest.param(
            "GET",
            PODS,
            {"fieldSelector": "metadata.name"},
            None,
            "application/json",
            400,
            "BadRequest",
            id="field-selector-without-operator",
        ),
        pytest.param(
            "PATCH",
            DEPLOYMENTS + "/web",
            None,
            b"{",
            "application/merge-patch+json",
            400,
            "BadRequest",
            id="garbage-patch",
        ),
        pytest.param(
            "PATCH",
            DEPLOYMENTS + "/web",
            None,
            {"op": "add"},
            "application/json-patch+json",
            400,
            "BadRequest",
            id="json-patch-not-a-list",
        ),
        pytest.param(
            "PUT",
            DEPLOYMENTS + "/web/scale",
            None,
            {"spec": {"replicas": "3"}},
            "application/json",
            400,
            "BadRequest",
            id="scale-replicas-not-int",
        ),
        pytest.param(
            "PUT",
            "/api/v1/namespaces/default",
            None,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
            "application/json",
            400,
            "BadRequest",
            id="namespace-name-mismatch",
        ),
    ],
)
async def test_error_statuses(
    http: Http,
    emulator: Emulator,
    method: str,
    path: str,
    params: dict[str, str] | None,
    body: object,
    ctype: str,
    code: int,
    reason: str,
) -> None:
    emulator.store.create(deployment("web"))
    got, status = await http.req(method, path, body, ctype=ctype, params=params)
    assert got == code, status
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert status["reason"] == reason and status["code"] == code


async def test_delete_collection_with_selector(http: Http, emulator: Emulator) -> None:
    for name, app in (("a", "web"), ("b", "web"), ("c", "db")):
        emulator.store.create(pod(name, {"app": app}))
    code, lst = await http.delete(PODS, params={"labelSelector": "app=web"})
    assert code == 200 and lst["kind"] == "PodList"
    assert sorted(p["metadata"]["name"] for p in lst["items"]) == ["a", "b"]
    assert [p["metadata"]["name"] for p in emulator.store.list("", "pods", "default")] == ["c"]


async def test_watch_single_object_paths(http: Http, emulator: Emulator) -> None:
    emulator.store.create(pod("a", {}))
    emulator.store.create(pod("b", {}))
    events = await http.watch(PODS + "/b", {"watch": "true", "timeoutSeconds": "1"})
    assert [e["object"]["metadata"]["name"] for e in events] == ["b"]
    events = await http.watch("/api/v1/watch/namespaces/default/pods", {"timeoutSeconds": "1"})
    assert [e["object"]["metadata"]["name"] for e in events] == ["a", "b"]


async def test_dry_run_writes_nothing(http: Http, emulator: Emulator) -> None:
    rv = emulator.store.current_resource_version()
    code, obj = await http.post(DEPLOYMENTS, deployment("web"), params={"dryRun": "All"})
    assert code == 201 and obj["metadata"]["name"] == "web"
    assert emulator.store.get("apps", "deployments", "default", "web") is None
    assert emulator.store.current_resource_version() == rv


async def test_watch_of_a_vanished_client_is_released(emulator: Emulator) -> None:
    emulator.server.config.disconnect_check = 0.05
    http = Http(emulator)
    try:
        resp = await http.session.get(emulator.url + PODS, params={"watch": "true"})
        for _ in range(100):
            if emulator.store.watcher_count() == 1:
                break
            await asyncio.sleep(0.01)
        assert emulator.store.watcher_count() == 1
        resp.close()
    finally:
        await http.close()
    for _ in range(200):
        if emulator.store.watcher_count() == 0:
            break
        await asyncio.sleep(0.01)
    assert emulator.store.watcher_count() == 0


async def test_wrong_json_types_are_decode_errors(http: Http, emulator: Emulator) -> None:
    from .helpers import HPAS, hpa_v2

    body = hpa_v2("web", "web")
    body["spec"]["maxReplicas"] = "10"
    code, err = await http.post(HPAS, body)
    assert code == 400 and err["reason"] == "BadRequest"
    assert err["message"] == (
        'HorizontalPodAutoscaler in version "v2" cannot be handled as a HorizontalPodAutoscaler: '
        "json: cannot unmarshal string into Go struct field HorizontalPodAutoscalerSpec.spec.maxReplicas of type int32"
    )
    # the in-process store is privileged: tests may plant what the API would refuse
    emulator.store.create(body)
