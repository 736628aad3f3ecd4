"""Client-side safety against the emulator: client-go's Retry-After retries, Events
retried on 5xx, and the write fence a replica without the lease is held behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultRule
from hpactl.kube.errors import NotLeader, TooManyRequests
from hpactl.kube.events import EventRecorder
from hpactl.kube.requests import get_json, put_json
from hpactl.kube.session import KubeSession


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    """The emulator with fault injection on."""
    async with Emulator(faults=True) as emu:
        yield emu


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
CM_PATH = "/api/v1/namespaces/default/configmaps/c"


class Sleeps:
    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def _hpa_ref() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1"},
    }


async def test_429_with_retry_after_is_sent_again_after_that_many_seconds(
    emulator: Emulator,
) -> None:
    emulator.store.create(CM)
    rule = emulator.faults.add(FaultRule.error(429, path=CM_PATH, count=3))
    sleeps = Sleeps()
    async with KubeSession(master=emulator.url, sleep=sleeps) as s:
        cm = await get_json(s, CM_PATH)
    assert cm["metadata"]["name"] == "c"
    assert emulator.faults.hits(rule) == 3
    assert sleeps.seconds == [1.0, 1.0, 1.0]  # the emulator says Retry-After: 1


async def test_429_retries_stop_after_ten_as_client_go(emulator: Emulator) -> None:
    emulator.store.create(CM)
    rule = emulator.faults.add(FaultRule.error(429, path=CM_PATH, verbs=frozenset({"PUT"})))
    sleeps = Sleeps()
    async with KubeSession(master=emulator.url, sleep=sleeps) as s:
        with pytest.raises(TooManyRequests):
            await put_json(s, CM_PATH, emulator.store.get("", "configmaps", "default", "c"))
    assert emulator.faults.hits(rule) == 11  # the first try and ten retries, writes too
    assert len(sleeps.seconds) == 10


async def test_5xx_without_retry_after_is_not_resent_by_the_session(emulator: Emulator) -> None:
    emulator.store.create(CM)
    rule = emulator.faults.add(FaultRule.error(503, path=CM_PATH, count=1))
    sleeps = Sleeps()
    async with KubeSession(master=emulator.url, sleep=sleeps) as s:
        resp = await s.send("GET", CM_PATH)
    assert resp.status == 503 and emulator.faults.hits(rule) == 1 and sleeps.seconds == []


async def test_events_are_retried_on_5xx_and_dropped_on_4xx(emulator: Emulator) -> None:
    path = "/api/v1/namespaces/default/events"
    flaky = emulator.faults.add(FaultRule.error(503, path=path, verbs=frozenset({"POST"}), count=2))
    drops: list[str] = []
    async with KubeSession(master=emulator.url) as s:
        r = EventRecorder(s, clock=VirtualClock(), retry_sleep=0.0, on_drop=drops.append)
        task = asyncio.create_task(r.run())
        r.event(_hpa_ref(), "Normal", "SuccessfulRescale", "New size: 3; reason: x")
        await r.flush()
        assert emulator.faults.hits(flaky) == 2
        assert [e["reason"] for e in emulator.store.list("", "events", "default")] == [
            "SuccessfulRescale"
        ]
        rejected = emulator.faults.add(FaultRule.error(422, path=path, verbs=frozenset({"POST"})))
        r.event(_hpa_ref(), "Normal", "Other", "m")
        await r.flush()
        assert emulator.faults.hits(rejected) == 1  # a rejection is final
        r.close()
        await task


async def test_the_write_fence_refuses_writes_but_not_reads_or_the_lease(
    emulator: Emulator,
) -> None:
    emulator.store.create(CM)
    open_ = [True]
    async with KubeSession(master=emulator.url) as s:
        s.write_fence = lambda: open_[0]
        body = await get_json(s, CM_PATH)
        body["data"] = {"k": "1"}
        await put_json(s, CM_PATH, body)
        open_[0] = False
        body = await get_json(s, CM_PATH)  # reads go on
        body["data"] = {"k": "2"}
        with pytest.raises(NotLeader):
            await put_json(s, CM_PATH, body)
        # Leader election itself is never fenced: it is how the lease is won back.
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l", "namespace": "default"},
            "spec": {"holderIdentity": "me"},
        }
        resp = await s.send(
            "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", body=lease
        )
        assert resp.status == 201
    stored = emulator.store.get("", "configmaps", "default", "c")
    assert stored is not None and stored["data"] == {"k": "1"}


async def test_a_fenced_event_is_dropped_not_retried(emulator: Emulator) -> None:
    drops: list[str] = []
    async with KubeSession(master=emulator.url) as s:
        s.write_fence = lambda: False
        r = EventRecorder(s, clock=VirtualClock(), retry_sleep=0.0, on_drop=drops.append)
        task = asyncio.create_task(r.run())
        r.event(_hpa_ref(), "Normal", "SuccessfulRescale", "New size: 3; reason: x")
        await r.flush()
        r.close()
        await task
    assert drops == ["not leader"]
    assert emulator.store.list("", "events", "default") == []
