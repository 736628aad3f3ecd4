"""Lease leader election against the emulator, stepped on a VirtualClock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.controller.leader import LeaseElector
from hpactl.emulator.emulator import Emulator
from hpactl.kube.session import KubeSession


@pytest.fixture
async def api() -> AsyncIterator[tuple[Emulator, KubeSession, VirtualClock]]:
    clock = VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
    async with Emulator(now=clock.now) as emu, KubeSession(master=emu.url) as s:
        yield emu, s, clock


def _elector(s: KubeSession, clock: VirtualClock, who: str, log: list[str]) -> LeaseElector:
    return LeaseElector(
        s,
        clock,
        namespace="kube-system",
        name="hpactl",
        identity=who,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        on_started_leading=lambda: log.append(f"{who}+"),
        on_stopped_leading=lambda: log.append(f"{who}-"),
    )


def _lease(emu: Emulator) -> dict[str, Any]:
    obj = emu.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
    assert obj is not None
    return dict(obj["spec"])


async def test_one_holder_takeover_after_expiry_and_release(
    api: tuple[Emulator, KubeSession, VirtualClock],
) -> None:
    emu, s, clock = api
    log: list[str] = []
    a = _elector(s, clock, "a", log)
    b = _elector(s, clock, "b", log)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    spec = _lease(emu)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["renewTime"].endswith("Z") and "." in spec["renewTime"]

    # a renews: b keeps seeing a fresh record, so the lease never expires for b.
    clock.advance(10)
    assert await a.try_acquire_or_renew()
    clock.advance(10)
    assert not await b.try_acquire_or_renew()

    # a dies: once b has seen no change for a whole lease duration it takes over.
    clock.advance(14)
    assert not await b.try_acquire_or_renew()
    clock.advance(2)
    assert await b.try_acquire_or_renew()
    spec = _lease(emu)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert not await a.try_acquire_or_renew()

    # A clean shutdown frees the lease for an immediate takeover.
    await b.release()
    assert _lease(emu)["holderIdentity"] == ""
    assert await a.try_acquire_or_renew()
    assert _lease(emu)["holderIdentity"] == "a"


async def test_run_loop_leads_and_stops_when_the_lease_is_taken(
    api: tuple[Emulator, KubeSession, VirtualClock],
) -> None:
    import asyncio

    emu, s, clock = api
    log: list[str] = []
    a = _elector(s, clock, "a", log)
    task = asyncio.create_task(a.run())
    for _ in range(200):
        if log:
            break
        await asyncio.sleep(0.01)
    assert log == ["a+"] and a.is_leader and a.state == "leader"
    # Someone else writes the lease (an operator, or a partitioned leader's successor).
    lease = emu.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
    assert lease is not None
    lease["spec"]["holderIdentity"] = "intruder"
    emu.store.apply(lease)
    for _ in range(200):
        clock.advance(2)
        await asyncio.sleep(0.01)
        if len(log) > 1:
            break
    assert log == ["a+", "a-"]
    assert not a.is_leader
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
