"""kubernetes_asyncio (typed and raw) against the emulator: what hpactl's adapters use."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.api_client import ApiClient

from hpactl.emulator import Emulator

from .helpers import deployment, hpa_v2, pod


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[ApiClient]:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    async with ApiClient(cfg) as c:
        yield c


async def test_typed_crud_scale_and_status(api: ApiClient) -> None:
    apps = client.AppsV1Api(api)
    created = await apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    assert created.metadata.generation == 1 and created.spec.replicas == 2
    scale = await apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    scale.spec.replicas = 4
    scale = await apps.replace_namespaced_deployment_scale("web", "default", scale)
    assert scale.spec.replicas == 4
    patched = await apps.patch_namespaced_deployment_scale(
        "web", "default", {"spec": {"replicas": 3}}, _content_type="application/merge-patch+json"
    )
    assert patched.spec.replicas == 3
    auto = client.AutoscalingV2Api(api)
    hpa = await auto.create_namespaced_horizontal_pod_autoscaler("default", hpa_v2("web", "web"))
    hpa.status = client.V2HorizontalPodAutoscalerStatus(current_replicas=3, desired_replicas=4)
    out = await auto.replace_namespaced_horizontal_pod_autoscaler_status("web", "default", hpa)
    assert out.status.desired_replicas == 4
    with pytest.raises(client.ApiException) as ei:
        await auto.replace_namespaced_horizontal_pod_autoscaler_status("web", "default", hpa)
    assert ei.value.status == 409
    v1 = await client.AutoscalingV1Api(api).read_namespaced_horizontal_pod_autoscaler(
        "web", "default"
    )
    assert v1.spec.target_cpu_utilization_percentage == 60
    assert v1.status.desired_replicas == 4
    with pytest.raises(client.ApiException) as ei:
        await apps.read_namespaced_deployment("nope", "default")
    assert ei.value.status == 404
    assert json.loads(ei.value.body)["message"] == 'deployments.apps "nope" not found'


async def test_raw_list_and_watch_like_a_reflector(api: ApiClient, emulator: Emulator) -> None:
    core = client.CoreV1Api(api)
    emulator.store.create(pod("a", {"app": "web"}))
    resp = await core.list_pod_for_all_namespaces(resource_version="0", _preload_content=False)
    body = json.loads(await resp.read())
    assert resp.status == 200 and [p["metadata"]["name"] for p in body["items"]] == ["a"]
    rv = body["metadata"]["resourceVersion"]

    async def writer() -> None:
        await asyncio.sleep(0.05)
        emulator.store.create(pod("b", {"app": "web"}))
        emulator.store.delete("", "pods", "default", "a")

    task = asyncio.create_task(writer())
    seen: list[tuple[str, str]] = []
    async with watch.Watch() as w:
        async for ev in w.stream(
            core.list_pod_for_all_namespaces,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=5,
        ):
            if ev["type"] == "BOOKMARK":
                continue
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 2:
                w.stop()
    await task
    assert seen == [("ADDED", "b"), ("DELETED", "a")]


async def test_watch_410_surfaces_as_api_exception() -> None:
    async with Emulator(history_size=2) as emu:
        for i in range(4):
            emu.store.create(pod(f"p{i}", {}))
        cfg = client.Configuration()
        cfg.host = emu.url
        async with ApiClient(cfg) as c:
            core = client.CoreV1Api(c)
            with pytest.raises(client.ApiException) as ei:
                async with watch.Watch() as w:
                    async for _ in w.stream(
                        core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=5
                    ):
                        pass
            assert ei.value.status == 410


async def test_custom_objects_and_call_api(api: ApiClient, emulator: Emulator) -> None:
    from .test_api import CRD

    ext = client.ApiextensionsV1Api(api)
    await ext.create_custom_resource_definition(CRD)
    co = client.CustomObjectsApi(api)
    await co.create_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "workers",
        {
            "apiVersion": "example.com/v1",
            "kind": "Worker",
            "metadata": {"name": "w"},
            "spec": {"size": 2},
        },
    )
    scale = await co.get_namespaced_custom_object_scale(
        "example.com", "v1", "default", "workers", "w"
    )
    assert scale["spec"]["replicas"] == 2
    await co.patch_namespaced_custom_object_scale(
        "example.com",
        "v1",
        "default",
        "workers",
        "w",
        {"spec": {"replicas": 5}},
        _content_type="application/merge-patch+json",
    )
    obj = emulator.store.get("example.com", "workers", "default", "w")
    assert obj is not None and obj["spec"]["size"] == 5
    resp = await api.call_api(
        "/apis/{group}/{version}",
        "GET",
        path_params={"group": "example.com", "version": "v1"},
        _preload_content=False,
        auth_settings=["BearerToken"],
    )
    body = json.loads(await resp.read())
    assert {r["name"] for r in body["resources"]} == {"workers", "workers/status", "workers/scale"}


async def test_typed_models_for_leases_events_and_rbac(api: ApiClient) -> None:
    from datetime import UTC, datetime

    coord = client.CoordinationV1Api(api)
    now = datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    lease = await coord.create_namespaced_lease(
        "kube-system",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="hpactl"),
            spec=client.V1LeaseSpec(
                holder_identity="a", lease_duration_seconds=15, renew_time=now, acquire_time=now
            ),
        ),
    )
    assert lease.spec.renew_time == now
    lease.spec.holder_identity = "b"
    lease = await coord.replace_namespaced_lease("hpactl", "kube-system", lease)
    assert lease.spec.holder_identity == "b"
    stale = client.V1Lease(
        metadata=client.V1ObjectMeta(name="hpactl", resource_version="1"), spec=lease.spec
    )
    with pytest.raises(client.ApiException) as ei:
        await coord.replace_namespaced_lease("hpactl", "kube-system", stale)
    assert ei.value.status == 409

    core = client.CoreV1Api(api)
    ev = await core.create_namespaced_event(
        "default",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name="web."),
            involved_object=client.V1ObjectReference(
                kind="HorizontalPodAutoscaler", name="web", namespace="default"
            ),
            reason="SuccessfulRescale",
            message="New size: 2; reason: All metrics below target",
            type="Normal",
            count=1,
            first_timestamp=now,
            last_timestamp=now,
            source=client.V1EventSource(component="horizontal-pod-autoscaler"),
        ),
    )
    await core.patch_namespaced_event(
        ev.metadata.name, "default", {"count": 2, "lastTimestamp": "2026-01-01T00:01:00Z"}
    )
    # As with a real server, events written through core/v1 have eventTime null, which
    # kubernetes_asyncio's EventsV1Event model rejects: read them raw.
    resp = await client.EventsV1Api(api).read_namespaced_event(
        ev.metadata.name, "default", _preload_content=False
    )
    v1 = json.loads(await resp.read())
    assert v1["regarding"]["name"] == "web" and v1["deprecatedCount"] == 2
    assert v1["eventTime"] is None and v1["reportingController"] == ""

    rbac = client.RbacAuthorizationV1Api(api)
    await rbac.create_cluster_role(
        client.V1ClusterRole(
            metadata=client.V1ObjectMeta(name="hpactl"),
            rules=[
                client.V1PolicyRule(
                    api_groups=["autoscaling"],
                    resources=["horizontalpodautoscalers"],
                    verbs=["list"],
                )
            ],
        )
    )
    roles = await rbac.list_cluster_role(label_selector="")
    assert [r.metadata.name for r in roles.items] == ["hpactl"]
