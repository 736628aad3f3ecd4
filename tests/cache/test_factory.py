"""SharedInformers and listers with the real projections, over in-memory APIs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from hpactl.cache.factory import HPAS, PODS, SharedInformers
from hpactl.cache.reflector import ListerWatcher
from hpactl.model.hpa import HPA

from .fake_api import FakeAPI


class MultiAPI:
    """One FakeAPI per (group, version, resource), handed out by the factory hook."""

    def __init__(self) -> None:
        self.apis: dict[tuple[str, str, str], FakeAPI] = {}
        self.requested: list[tuple[str, str, str]] = []

    def factory(self, group: str, version: str, resource: str) -> ListerWatcher:
        self.requested.append((group, version, resource))
        return self.api(group, version, resource)

    def api(self, group: str, version: str, resource: str) -> FakeAPI:
        return self.apis.setdefault((group, version, resource), FakeAPI(page_size=3))


def put_raw(api: FakeAPI, obj: dict[str, Any]) -> int:
    """Store a full raw object (FakeAPI.put only builds spec-only objects)."""
    meta = obj["metadata"]
    rv = api.put(meta["namespace"], meta["name"])
    stored = api.objects[f"{meta['namespace']}/{meta['name']}"]
    stored.update({k: v for k, v in obj.items() if k != "metadata"})
    stored["metadata"].update({k: v for k, v in meta.items() if k != "resourceVersion"})
    # keep the emitted event consistent with the stored object
    api.history[-1][1]["object"] = dict(stored)
    return rv


def hpa(ns: str, name: str, kind: str, target: str, max_replicas: Any = 5) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
        },
    }


def pod(ns: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]},
        "status": {"phase": "Running"},
    }


def deploy(ns: str, name: str, replicas: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}},
        "status": {"replicas": replicas},
    }


class Labels:
    """A minimal selector: equality on all given labels."""

    def __init__(self, **want: str) -> None:
        self.want = want

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.want.items())


@pytest.fixture
async def world() -> AsyncIterator[tuple[MultiAPI, SharedInformers]]:
    multi = MultiAPI()
    hpas = multi.api("autoscaling", "v2", "horizontalpodautoscalers")
    put_raw(hpas, hpa("a", "web", "Deployment", "web"))
    put_raw(hpas, hpa("a", "db", "ReplicationController", "db"))
    put_raw(hpas, hpa("b", "broken", "Deployment", "x", max_replicas="many"))
    pods = multi.api("", "v1", "pods")
    put_raw(pods, pod("a", "web-1", {"app": "web"}))
    put_raw(pods, pod("a", "web-2", {"app": "web"}))
    put_raw(pods, pod("a", "db-1", {"app": "db"}))
    put_raw(pods, pod("b", "web-1", {"app": "web"}))
    put_raw(multi.api("apps", "v1", "deployments"), deploy("a", "web", 2, {"app": "web"}))
    informers = SharedInformers(lister_watcher_factory=multi.factory)
    yield multi, informers
    await informers.stop()


async def test_listers_answer_from_synced_caches(world: tuple[MultiAPI, SharedInformers]) -> None:
    multi, informers = world
    hpas = informers.hpa_lister()
    pods = informers.pod_lister()
    workloads = informers.workload_lister()
    assert set(informers.informers) == {
        HPAS,
        PODS,
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "ReplicationController",
    }
    informers.start()
    assert await informers.wait_for_cache_sync(timeout=5)
    assert informers.has_synced
    # one list per resource type, whatever the number of listers asked for
    informers.hpa_lister()
    assert len(multi.requested) == len(set(multi.requested)) == 6

    web = hpas.get("a", "web")
    assert isinstance(web, HPA) and web.spec.max_replicas == 5
    assert [h.name for h in hpas.by_target("Deployment", "a", "web")] == ["web"]
    assert [h.name for h in hpas.by_target("ReplicationController", "a", "db")] == ["db"]
    assert hpas.by_target("Deployment", "b", "web") == []
    assert [h.key for h in hpas.list()] == ["a/db", "a/web"]
    assert hpas.keys() == ["a/db", "a/web", "b/broken"]

    # the malformed HPA is visible as an error the controller can report
    assert hpas.get("b", "broken") is None
    assert hpas.exists("b", "broken")
    err = hpas.get_error("b", "broken")
    assert err is not None and err.error_type == "InvalidHPA"
    assert err.message == "spec.maxReplicas: expected an integer, got 'many'"

    assert [p.name for p in pods.list("a")] == ["db-1", "web-1", "web-2"]
    assert [p.name for p in pods.list("a", Labels(app="web"))] == ["web-1", "web-2"]
    assert pods.list("c") == []
    assert pods.get("a", "web-1") is not None

    scale = workloads.get("Deployment", "a", "web")
    assert scale is not None and (scale.spec_replicas, scale.selector) == (2, "app=web")
    assert workloads.get("Deployment", "a", "nope") is None
    assert workloads.get("CronJob", "a", "web") is None
    assert workloads.supports("StatefulSet") and not workloads.supports("CronJob")


async def test_changes_reach_the_listers_and_the_barrier(
    world: tuple[MultiAPI, SharedInformers],
) -> None:
    multi, informers = world
    hpas = informers.hpa_lister()
    informers.start()
    assert await informers.wait_for_cache_sync(timeout=5)
    api = multi.api("autoscaling", "v2", "horizontalpodautoscalers")
    rv = put_raw(api, hpa("a", "web", "StatefulSet", "web-sts"))
    await informers.wait_for_rv(rv, timeout=5, names=[HPAS])
    assert hpas.by_target("Deployment", "a", "web") == []
    assert [h.name for h in hpas.by_target("StatefulSet", "a", "web-sts")] == ["web"]
    assert hpas.resource_version("a", "web") == str(rv)


async def test_informers_created_after_start_are_started(
    world: tuple[MultiAPI, SharedInformers],
) -> None:
    _, informers = world
    informers.start()
    pods = informers.pod_lister()
    await asyncio.wait_for(pods.informer.wait_synced(), 5)
    assert [p.name for p in pods.list("b")] == ["web-1"]


async def test_sync_timeout_reports_false() -> None:
    class Never:
        async def list_pages(self, resource_version: str) -> AsyncIterator[Any]:
            await asyncio.Event().wait()
            yield None  # pragma: no cover

        async def watch(self, resource_version: str) -> AsyncIterator[Mapping[str, Any]]:
            yield {}  # pragma: no cover

    informers = SharedInformers(lister_watcher_factory=lambda g, v, r: Never())
    informers.pods()
    informers.start()
    assert not await informers.wait_for_cache_sync(timeout=0.05)
    await informers.stop()


def test_needs_a_source() -> None:
    with pytest.raises(ValueError):
        SharedInformers()


@pytest.mark.parametrize(
    "text",
    [
        "app=web",
        "app==web",
        "app in (web)",
        "app in (web,db)",
        "app!=web",
        "app",
        "!app",
        "app=web,tier=fe",
        "tier=fe,app=web",
        "app=nope",
        "tier notin (be),app=web",
        "",
    ],
)
async def test_pod_selection_by_label_index_equals_a_namespace_scan(text: str) -> None:
    from hpactl.model.selectors import parse_selector

    multi = MultiAPI()
    pods = multi.api("", "v1", "pods")
    for i, labels in enumerate(
        [
            {"app": "web", "tier": "fe"},
            {"app": "web", "tier": "be"},
            {"app": "db"},
            {},
            {"tier": "fe"},
        ]
    ):
        put_raw(pods, pod("a", f"p{i}", labels))
        put_raw(pods, pod("b", f"p{i}", labels))
    informers = SharedInformers(lister_watcher_factory=multi.factory)
    lister = informers.pod_lister()
    informers.start()
    assert await informers.wait_for_cache_sync(timeout=5)
    selector = parse_selector(text)
    everything_in_a = lister.list("a")
    expected = [p.name for p in everything_in_a if selector.matches(p.labels)]
    assert [p.name for p in lister.list("a", selector)] == expected
    assert all(p.namespace == "a" for p in lister.list("a", selector))
    await informers.stop()


async def test_nothing_selector_selects_no_pods(world: tuple[MultiAPI, SharedInformers]) -> None:
    from hpactl.model.selectors import Selector

    _, informers = world
    pods = informers.pod_lister()
    informers.start()
    assert await informers.wait_for_cache_sync(timeout=5)
    assert pods.list("a", Selector.nothing()) == []
    assert len(pods.list("a", Selector.everything())) == 3
