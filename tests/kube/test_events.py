"""EventRecorder against the emulator: client-go correlation semantics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.kube.events import COMBINED_PREFIX, EventRecorder
from hpactl.kube.session import KubeSession


def hpa_obj(name: str = "web", uid: str = "u-1") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "7"},
    }


def events(emu: Emulator) -> list[dict[str, Any]]:
    return emu.store.list("", "events", "default")


@pytest.fixture
async def rec(emulator: Emulator) -> AsyncIterator[tuple[EventRecorder, VirtualClock]]:
    clock = VirtualClock()
    async with KubeSession(master=emulator.url) as s:
        r = EventRecorder(s, clock=clock)
        task = asyncio.create_task(r.run())
        try:
            yield r, clock
        finally:
            r.close()
            await task


async def test_identical_event_is_counted_not_duplicated(
    emulator: Emulator, rec: tuple[EventRecorder, VirtualClock]
) -> None:
    r, clock = rec
    r.event(hpa_obj(), "Warning", "FailedGetScale", 'deployments.apps "web" not found')
    await r.flush()
    first = events(emulator)
    assert len(first) == 1
    ev = first[0]
    assert ev["count"] == 1
    assert ev["source"] == {"component": "horizontal-pod-autoscaler"}
    assert ev["reportingComponent"] == "horizontal-pod-autoscaler"
    assert ev["involvedObject"] == {
        "kind": "HorizontalPodAutoscaler",
        "namespace": "default",
        "name": "web",
        "uid": "u-1",
        "apiVersion": "autoscaling/v2",
        "resourceVersion": "7",
    }
    assert ev["metadata"]["name"].startswith("web.")
    int(ev["metadata"]["name"].split(".", 1)[1], 16)  # hex nanoseconds
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2026-01-01T00:00:00Z"

    clock.advance(30)
    r.event(hpa_obj(), "Warning", "FailedGetScale", 'deployments.apps "web" not found')
    await r.flush()
    after = events(emulator)
    assert len(after) == 1
    assert after[0]["count"] == 2
    assert after[0]["metadata"]["name"] == ev["metadata"]["name"]
    assert after[0]["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert after[0]["lastTimestamp"] == "2026-01-01T00:00:30Z"


async def test_different_message_or_object_makes_new_events(
    emulator: Emulator, rec: tuple[EventRecorder, VirtualClock]
) -> None:
    r, _ = rec
    r.event(hpa_obj(), "Normal", "SuccessfulRescale", "New size: 4; reason: cpu above target")
    r.event(hpa_obj(), "Normal", "SuccessfulRescale", "New size: 5; reason: cpu above target")
    r.event(
        hpa_obj("other", "u-2"),
        "Normal",
        "SuccessfulRescale",
        "New size: 5; reason: cpu above target",
    )
    await r.flush()
    evs = events(emulator)
    assert len(evs) == 3
    assert len({e["metadata"]["name"] for e in evs}) == 3
    assert all(e["count"] == 1 for e in evs)


async def test_similar_events_are_combined_after_ten(
    emulator: Emulator, rec: tuple[EventRecorder, VirtualClock]
) -> None:
    r, _ = rec
    for i in range(12):
        r.event(hpa_obj(), "Normal", "SuccessfulRescale", f"New size: {i}; reason: x")
    await r.flush()
    evs = events(emulator)
    combined = [e for e in evs if e["message"].startswith(COMBINED_PREFIX)]
    plain = [e for e in evs if not e["message"].startswith(COMBINED_PREFIX)]
    assert len(plain) == 9
    assert len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == COMBINED_PREFIX + "New size: 11; reason: x"


async def test_recreated_when_patched_event_was_deleted(
    emulator: Emulator, rec: tuple[EventRecorder, VirtualClock]
) -> None:
    r, _ = rec
    r.event(hpa_obj(), "Warning", "FailedRescale", "boom")
    await r.flush()
    (ev,) = events(emulator)
    emulator.store.delete("", "events", "default", ev["metadata"]["name"])
    r.event(hpa_obj(), "Warning", "FailedRescale", "boom")
    await r.flush()
    (again,) = events(emulator)
    assert again["metadata"]["name"] == ev["metadata"]["name"]
    assert again["count"] == 2


async def test_spam_filter_drops_beyond_burst(emulator: Emulator) -> None:
    clock = VirtualClock()
    drops: list[str] = []
    async with KubeSession(master=emulator.url) as s:
        r = EventRecorder(s, clock=clock, on_drop=drops.append)
        task = asyncio.create_task(r.run())
        for i in range(26):
            r.event(hpa_obj(), "Normal", f"Reason{i}", "m")
        await r.flush()
        assert len(events(emulator)) == 25
        assert drops == ["spam filter"]
        clock.advance(300)  # one token back
        r.event(hpa_obj(), "Normal", "Late", "m")
        await r.flush()
        r.close()
        await task
    assert len(events(emulator)) == 26


async def test_spam_filter_keeps_normal_events_after_a_flood_of_warnings(
    emulator: Emulator,
) -> None:
    """client-go keys the spam filter by event type too (1.32+, PR #124747): a metric
    failing every sync must not starve the HPA's SuccessfulRescale events."""
    clock = VirtualClock()
    drops: list[str] = []
    async with KubeSession(master=emulator.url) as s:
        r = EventRecorder(s, clock=clock, on_drop=drops.append)
        task = asyncio.create_task(r.run())
        for i in range(40):
            clock.advance(15)  # one sync period apart: well under the refill rate
            r.event(hpa_obj(), "Warning", "FailedGetResourceMetric", f"failed ({i})")
            await r.flush()
        r.event(hpa_obj(), "Normal", "SuccessfulRescale", "New size: 4; reason: cpu above target")
        await r.flush()
        r.close()
        await task
    evs = events(emulator)
    normal = [e for e in evs if e["type"] == "Normal"]
    assert [e["reason"] for e in normal] == ["SuccessfulRescale"]
    # The Warnings themselves are still limited by their own bucket (burst 25, one
    # token per 300 s refilled over the 600 s): every Warning is written or dropped.
    warning_writes = sum(e["count"] for e in evs if e["type"] == "Warning")
    assert 25 <= warning_writes <= 27
    assert drops == ["spam filter"] * (40 - warning_writes)


def test_event_never_blocks_when_queue_full() -> None:
    drops: list[str] = []

    class NoSink:
        async def create(self, event: Any) -> dict[str, Any]:
            raise AssertionError("not written")

        async def patch(self, namespace: str, name: str, patch: Any) -> dict[str, Any]:
            raise AssertionError("not written")

    r = EventRecorder(None, clock=VirtualClock(), queue_size=1, on_drop=drops.append, sink=NoSink())
    r.event(hpa_obj(), "Normal", "A", "m")
    r.event(hpa_obj(), "Normal", "B", "m")
    assert drops == ["queue full"]
    assert r.dropped == 1


async def test_event_from_hpa_model_and_core_event(
    emulator: Emulator, rec: tuple[EventRecorder, VirtualClock]
) -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Named:
        namespace: str
        name: str
        uid: str
        resource_version: str

    @dataclass(frozen=True)
    class CoreEvent:
        type: str
        reason: str
        message: str

    r, _ = rec
    r.emit(
        Named("default", "web", "u-9", "12"),
        CoreEvent("Normal", "SuccessfulRescale", "New size: 2; reason: All metrics below target"),
    )
    await r.flush()
    (ev,) = events(emulator)
    assert ev["involvedObject"] == {
        "kind": "HorizontalPodAutoscaler",
        "namespace": "default",
        "name": "web",
        "uid": "u-9",
        "apiVersion": "autoscaling/v2",
        "resourceVersion": "12",
    }
    assert (ev["type"], ev["reason"]) == ("Normal", "SuccessfulRescale")
