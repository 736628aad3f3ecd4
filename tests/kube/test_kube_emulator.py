"""hpactl.kube against the API emulator: requests, errors, discovery, scale, status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.objects import cpu_hpa, scale_crd

from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector
from hpactl.kube import errors
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, get_json, list_json, patch_json, put_json
from hpactl.kube.restmapper import NoKindMatchError, RestMapper
from hpactl.kube.scaling import Backoff, get_scale, update_scale
from hpactl.kube.session import KubeSession
from hpactl.kube.status import update_hpa_status


def deployment(name: str = "web", replicas: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def hpa(name: str = "web") -> dict[str, Any]:
    return cpu_hpa(name)


@pytest.fixture
async def session(emulator: Emulator) -> AsyncIterator[KubeSession]:
    async with KubeSession(master=emulator.url) as s:
        yield s


async def test_kubeconfig_session(emulator: Emulator, kubeconfig: Path) -> None:
    emulator.store.create(deployment())
    async with KubeSession(kubeconfig=str(kubeconfig)) as s:
        obj = await get_json(
            s, resource_path("apps", "v1", "deployments", namespace="default", name="web")
        )
    assert obj["spec"]["replicas"] == 3


async def test_crud_and_not_found_text(session: KubeSession) -> None:
    dpath = resource_path("apps", "v1", "deployments", namespace="default")
    created = await create_json(session, dpath, deployment())
    assert created["metadata"]["resourceVersion"]
    with pytest.raises(errors.AlreadyExists):
        await create_json(session, dpath, deployment())
    with pytest.raises(errors.NotFound) as ei:
        await get_json(session, dpath + "/nope")
    assert ei.value.message == 'deployments.apps "nope" not found'
    stale = dict(created)
    await patch_json(session, dpath + "/web", {"spec": {"replicas": 4}})
    with pytest.raises(errors.Conflict):
        await put_json(session, dpath + "/web", stale)
    res = await list_json(session, dpath, limit=1)
    assert [i["metadata"]["name"] for i in res.items] == ["web"]


async def test_list_pages_against_emulator(emulator: Emulator, session: KubeSession) -> None:
    for i in range(7):
        emulator.store.create(deployment(f"d{i}"))
    res = await list_json(session, resource_path("apps", "v1", "deployments"), limit=2)
    assert sorted(i["metadata"]["name"] for i in res.items) == [f"d{i}" for i in range(7)]
    assert res.resource_version


async def test_restmapper_maps_and_fails_like_upstream(session: KubeSession) -> None:
    mapper = RestMapper(session)
    m = await mapper.mapping("apps", "Deployment")
    assert (m.resource, m.version, m.namespaced, m.has_scale) == ("deployments", "v1", True, True)
    assert m.group_resource == "deployments.apps"
    pod = await mapper.mapping("", "Pod")
    assert (pod.resource, pod.has_scale) == ("pods", False)
    with pytest.raises(NoKindMatchError) as ei:
        await mapper.mappings("example.com", "Foo")
    assert str(ei.value) == 'no matches for kind "Foo" in group "example.com"'


async def test_get_scale_and_missing_target(emulator: Emulator, session: KubeSession) -> None:
    emulator.store.create(deployment(replicas=3))
    mapper = RestMapper(session)
    res = await get_scale(session, mapper, "default", "apps/v1", "Deployment", "web")
    assert res.scale.spec_replicas == 3
    assert res.scale.selector == "app=web"
    assert res.mapping.resource == "deployments"
    with pytest.raises(errors.NotFound) as ei:
        await get_scale(session, mapper, "default", "apps/v1", "Deployment", "gone")
    assert str(ei.value) == 'deployments.apps "gone" not found'


async def test_update_scale_retries_on_conflict(emulator: Emulator, session: KubeSession) -> None:
    emulator.store.create(deployment(replicas=3))
    mapper = RestMapper(session)
    res = await get_scale(session, mapper, "default", "apps/v1", "Deployment", "web")
    # Someone else writes meanwhile: the scale read at sync start is now stale.
    d = emulator.store.get("apps", "deployments", "default", "web")
    assert d is not None
    d["metadata"]["labels"] = {"touched": "yes"}
    emulator.store.apply(d)
    slept: list[float] = []

    async def fake_sleep(s: float) -> None:
        slept.append(s)

    out = await update_scale(
        session, res.mapping, "default", "web", 7, current=res.scale, sleep=fake_sleep
    )
    assert out.spec_replicas == 7
    assert len(slept) == 1
    stored = emulator.store.get("apps", "deployments", "default", "web")
    assert stored is not None and stored["spec"]["replicas"] == 7


async def test_update_scale_gives_up_after_steps() -> None:
    faults = FaultInjector()
    async with Emulator(faults=faults) as emu:
        emu.store.create(deployment(replicas=3))
        async with KubeSession(master=emu.url) as s:
            mapper = RestMapper(s)
            res = await get_scale(s, mapper, "default", "apps/v1", "Deployment", "web")
            faults.add(
                "path=/apis/apps/v1/namespaces/default/deployments/web/scale,verb=PUT,status=409"
            )
            slept: list[float] = []

            async def fake_sleep(x: float) -> None:
                slept.append(x)

            with pytest.raises(errors.Conflict):
                await update_scale(
                    s,
                    res.mapping,
                    "default",
                    "web",
                    5,
                    current=res.scale,
                    sleep=fake_sleep,
                    backoff=Backoff(steps=3),
                )
    assert len(slept) == 2


async def test_status_write_and_conflict(emulator: Emulator, session: KubeSession) -> None:
    emulator.store.create(hpa())
    path = resource_path(
        "autoscaling", "v2", "horizontalpodautoscalers", namespace="default", name="web"
    )
    obj = await get_json(session, path)
    status = {"currentReplicas": 3, "desiredReplicas": 4}
    written = await update_hpa_status(session, obj, status)
    assert written["status"]["desiredReplicas"] == 4
    assert written["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]
    # writing again with the old resourceVersion conflicts
    with pytest.raises(errors.Conflict):
        await update_hpa_status(session, obj, {"currentReplicas": 3, "desiredReplicas": 5})
    again = await get_json(session, path)
    assert again["status"]["desiredReplicas"] == 4


async def test_metrics_api_503_text(emulator: Emulator, session: KubeSession) -> None:
    emulator.metrics.set_unavailable(["metrics.k8s.io"])
    with pytest.raises(errors.ServiceUnavailable) as ei:
        await list_json(
            session,
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            label_selector="app=web",
            limit=None,
        )
    assert (
        ei.value.message
        == "the server is currently unable to handle the request (get pods.metrics.k8s.io)"
    )


async def test_restmapper_refreshes_on_miss_and_scales_custom_resources(
    emulator: Emulator, session: KubeSession
) -> None:
    t = [0.0]
    mapper = RestMapper(session, ttl=60.0, monotonic=lambda: t[0])
    with pytest.raises(NoKindMatchError):
        await mapper.mappings("example.com", "Widget")
    emulator.store.create(scale_crd("widgets", "Widget", status_subresource=False))
    # a miss re-reads discovery at once, without waiting for the TTL
    m = await mapper.mapping("example.com", "Widget")
    assert (m.resource, m.version, m.has_scale) == ("widgets", "v1", True)
    emulator.store.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"replicas": 2},
            "status": {"replicas": 2, "selector": "app=w"},
        }
    )
    res = await get_scale(session, mapper, "default", "example.com/v1", "Widget", "w")
    assert (res.scale.spec_replicas, res.scale.status_replicas, res.scale.selector) == (
        2,
        2,
        "app=w",
    )
    out = await update_scale(session, res.mapping, "default", "w", 5, current=res.scale)
    assert out.spec_replicas == 5
    w = emulator.store.get("example.com", "widgets", "default", "w")
    assert w is not None and w["spec"]["replicas"] == 5


async def test_restmapper_ttl(emulator: Emulator) -> None:
    calls: list[str] = []
    t = [0.0]
    async with KubeSession(master=emulator.url, on_request=lambda v, r, c, s: calls.append(r)) as s:
        mapper = RestMapper(s, ttl=60.0, monotonic=lambda: t[0])
        await mapper.mapping("apps", "Deployment")
        n = len(calls)
        await mapper.mapping("apps", "Deployment")
        await mapper.mapping("apps", "StatefulSet")
        assert len(calls) == n  # cached
        t[0] = 61.0
        await mapper.mapping("apps", "Deployment")
        assert len(calls) > n  # expired: discovery read again


async def test_bad_api_version_text(session: KubeSession) -> None:
    with pytest.raises(errors.KubeError) as ei:
        await get_scale(session, RestMapper(session), "default", "a/b/c", "Deployment", "web")
    assert str(ei.value) == "unexpected GroupVersion string: a/b/c"


async def test_status_write_from_model_identity(emulator: Emulator, session: KubeSession) -> None:
    from hpactl.model.hpa import hpa_from_raw

    emulator.store.create(hpa())
    path = resource_path(
        "autoscaling", "v2", "horizontalpodautoscalers", namespace="default", name="web"
    )
    model = hpa_from_raw(await get_json(session, path))
    written = await update_hpa_status(session, model, {"currentReplicas": 2, "desiredReplicas": 2})
    assert written["status"]["desiredReplicas"] == 2
    assert written["spec"]["maxReplicas"] == 10  # the spec is untouched
    with pytest.raises(errors.Conflict):
        await update_hpa_status(session, model, {"currentReplicas": 2, "desiredReplicas": 3})
