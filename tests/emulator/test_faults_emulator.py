"""Fault rules acting inside the full emulator, seen by kubernetes_asyncio and raw HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(faults=FaultInjector(seed=3)) as emu:
        yield emu


async def _watch_lines(
    emu: Emulator, query: dict[str, str], on_open: Any = None
) -> list[dict[str, Any]]:
    events = []
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.get(
            f"{emu.url}/api/v1/namespaces/default/pods", params={"watch": "true", **query}
        ) as resp,
    ):
        assert resp.status == 200
        if on_open is not None:
            on_open()
        async for line in resp.content:
            if line.strip():
                events.append(json.loads(line))
    return events


async def test_error_rule_reaches_kubernetes_asyncio(emu: Emulator) -> None:
    emu.faults.add("path=/api/v1/namespaces/*/pods,verb=list,status=500,count=1")
    async with ApiClient(Configuration(host=emu.url)) as api:
        core = CoreV1Api(api)
        with pytest.raises(ApiException) as exc:
            await core.list_namespaced_pod("default", _request_timeout=10)
        assert exc.value.status == 500
        assert json.loads(exc.value.body)["reason"] == "InternalError"
        # count=1: the next request goes through.
        pods = await core.list_namespaced_pod("default", _request_timeout=10)
        assert pods.items == []


async def test_watch_drop_ends_the_stream_after_n_events(emu: Emulator) -> None:
    emu.store.create(pod("a"))
    emu.store.create(pod("b"))
    emu.store.create(pod("c"))
    rule = emu.faults.add("watch-drop=/api/v1/namespaces/default/pods,events=2,count=1")
    # Without the fault this watch would run for 30 s; the drop ends it after two events.
    events = await _watch_lines(emu, {"resourceVersion": "0", "timeoutSeconds": "30"})
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]
    assert emu.faults.hits(rule) == 1


async def test_gone_rule_answers_410_in_the_watch(emu: Emulator) -> None:
    emu.store.create(pod("a"))
    emu.faults.add("gone=/api/v1/namespaces/default/pods,count=1")
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{emu.url}/api/v1/namespaces/default/pods") as resp,
    ):
        rv = (await resp.json())["metadata"]["resourceVersion"]
    events = await _watch_lines(emu, {"resourceVersion": rv, "timeoutSeconds": "30"})
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")


async def test_metrics_group_unavailable_through_the_emulator(emu: Emulator) -> None:
    emu.store.create(pod("a"))
    emu.metrics.set_pod_metrics(
        [
            {
                "metadata": {"namespace": "default", "name": "a"},
                "containers": [{"name": "app", "usage": {"cpu": "1"}}],
            }
        ]
    )
    emu.faults.add("unavailable=metrics.k8s.io,after=1,count=1")
    url = f"{emu.url}/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"
    codes = []
    async with aiohttp.ClientSession() as http:
        for _ in range(3):
            async with http.get(url) as resp:
                codes.append(resp.status)
                if resp.status == 503:
                    assert await resp.text() == "service unavailable\n"
    assert codes == [200, 503, 200]
