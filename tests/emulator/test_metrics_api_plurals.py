"""custom.metrics.k8s.io serves a custom resource's values under the plural its CRD
declares (as the HPA controller's RESTMapper and real adapters do), looked up at each
request; kinds the emulator does not know fall back to Go's guessed plural."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration
from support.objects import scale_crd

from hpactl.emulator import Emulator
from hpactl.emulator.metrics_api import KindMapping, MetricsState

C = "/apis/custom.metrics.k8s.io/v1beta2"
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator() as emu:
        yield emu


async def _get(emu: Emulator, path: str, **query: str) -> tuple[int, Any]:
    async with ApiClient(Configuration(host=emu.url)) as api:
        resp = await api.call_api(
            path,
            "GET",
            query_params=list(query.items()),
            header_params={"Accept": "application/json"},
            _preload_content=False,
            _request_timeout=10,
        )
        return resp.status, json.loads(await resp.text())


def value(kind: str, name: str, metric: str, v: str, **described: str) -> dict[str, Any]:
    return {
        "describedObject": {
            "apiVersion": "example.com/v1",
            "kind": kind,
            "namespace": "default",
            "name": name,
            **described,
        },
        "metric": {"name": metric},
        "value": v,
    }


def delete_crd(emu: Emulator, plural: str) -> None:
    emu.store.delete(*CRD_KEY, "", f"{plural}.example.com")


@pytest.mark.parametrize(
    ("kind", "declared", "guessed"),
    [
        ("Elasticsearch", "elasticsearches", "elasticsearchs"),
        ("Proxy", "proxys", "proxies"),
    ],
)
async def test_served_under_the_declared_plural_not_the_guessed_one(
    emu: Emulator, kind: str, declared: str, guessed: str
) -> None:
    emu.store.create(scale_crd(declared, kind))
    emu.metrics.set_custom([value(kind, "es", "pending_writes", "40")])

    status, body = await _get(
        emu, f"{C}/namespaces/default/{declared}.example.com/es/pending_writes"
    )
    assert status == 200, body
    (item,) = body["items"]
    assert item["value"] == "40"
    assert item["describedObject"] == {
        "apiVersion": "example.com/v1",
        "kind": kind,
        "namespace": "default",
        "name": "es",
    }
    # Unqualified, as a client without the group would ask.
    assert (await _get(emu, f"{C}/namespaces/default/{declared}/es/pending_writes"))[0] == 200
    status, body = await _get(
        emu, f"{C}/namespaces/default/{guessed}.example.com/es/pending_writes"
    )
    assert status == 404, body
    _, doc = await _get(emu, C)
    names = {r["name"] for r in doc["resources"]}
    assert f"{declared}.example.com/pending_writes" in names
    assert f"{guessed}.example.com/pending_writes" not in names


async def test_wildcard_over_custom_resources_reads_their_labels(emu: Emulator) -> None:
    emu.store.create(scale_crd("elasticsearches", "Elasticsearch"))
    for name, tier in (("hot", "hot"), ("warm", "warm")):
        emu.store.create(
            {
                "apiVersion": "example.com/v1",
                "kind": "Elasticsearch",
                "metadata": {"namespace": "default", "name": name, "labels": {"tier": tier}},
                "spec": {"replicas": 1},
            }
        )
    emu.metrics.set_custom(
        [
            value("Elasticsearch", n, "heap", v)
            for n, v in (("hot", "7"), ("warm", "3"), ("gone", "9"))
        ]
    )
    path = f"{C}/namespaces/default/elasticsearches.example.com/*/heap"
    status, body = await _get(emu, path, labelSelector="tier=hot")
    assert status == 200, body
    assert [(i["describedObject"]["name"], i["value"]) for i in body["items"]] == [("hot", "7")]
    # Objects that do not exist have no series in a wildcard query.
    _, body = await _get(emu, path)
    assert [i["describedObject"]["name"] for i in body["items"]] == ["hot", "warm"]


async def test_plural_follows_crds_created_and_deleted_after_the_value(emu: Emulator) -> None:
    emu.metrics.set_custom([value("Elasticsearch", "es", "pending_writes", "40")])
    declared = f"{C}/namespaces/default/elasticsearches.example.com/es/pending_writes"
    guessed = f"{C}/namespaces/default/elasticsearchs.example.com/es/pending_writes"
    # No CRD yet: the documented fallback, Go's guess.
    assert (await _get(emu, guessed))[0] == 200
    assert (await _get(emu, declared))[0] == 404

    emu.store.create(scale_crd("elasticsearches", "Elasticsearch"))
    assert (await _get(emu, declared))[0] == 200
    assert (await _get(emu, guessed))[0] == 404
    _, doc = await _get(emu, C)
    assert "elasticsearches.example.com/pending_writes" in {r["name"] for r in doc["resources"]}

    delete_crd(emu, "elasticsearches")
    assert (await _get(emu, declared))[0] == 404
    assert (await _get(emu, guessed))[0] == 200


async def test_a_crd_in_another_group_does_not_rename_the_kind(emu: Emulator) -> None:
    emu.store.create(scale_crd("elasticsearches", "Elasticsearch", group="other.io"))
    emu.metrics.set_custom([value("Elasticsearch", "es", "heap", "5")])
    assert (await _get(emu, f"{C}/namespaces/default/elasticsearchs.example.com/es/heap"))[0] == 200


async def test_api_version_defaults_through_the_same_mapping(emu: Emulator) -> None:
    # ServiceAccount is served by the emulator but absent from the built-in table.
    emu.metrics.set_custom(
        [
            {
                "describedObject": {"kind": k, "namespace": "default", "name": "x"},
                "metric": {"name": "m"},
                "value": "1",
            }
            for k in ("ServiceAccount", "HorizontalPodAutoscaler", "Gadget")
        ]
    )
    cases = [
        ("serviceaccounts", "/v1"),
        ("horizontalpodautoscalers.autoscaling", "autoscaling/v2"),
        ("gadgets", None),
    ]
    for resource, api_version in cases:
        status, body = await _get(emu, f"{C}/namespaces/default/{resource}/x/m")
        assert status == 200, (resource, body)
        assert body["items"][0]["describedObject"].get("apiVersion") == api_version


def test_resolver_is_asked_at_query_time_and_falls_back_to_the_guess() -> None:
    table: dict[tuple[str, str], KindMapping] = {}
    asked: list[tuple[str, str]] = []

    def kinds(group: str, kind: str) -> KindMapping | None:
        asked.append((group, kind))
        return table.get((group, kind))

    state = MetricsState(lambda ns, n: None, lambda: datetime(2026, 1, 1, tzinfo=UTC), kinds=kinds)
    state.set_custom([value("Proxy", "p", "m", "1")])
    assert asked == []  # writing resolves nothing
    assert state.resource_list("custom.metrics.k8s.io")["resources"][0]["name"] == (
        "proxies.example.com/m"
    )
    table[("example.com", "Proxy")] = KindMapping("example.com", "v1", "proxys")
    assert state.resource_list("custom.metrics.k8s.io")["resources"][0]["name"] == (
        "proxys.example.com/m"
    )
    assert asked == [("example.com", "Proxy")] * 2
