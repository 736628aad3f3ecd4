"""Leader election across wall-clock steps (NTP steps, a VM restored with the wrong
time): leadership is judged on monotonic time, so a jump of `now()` on the leader or
on the standby, forward or back, changes nothing. The Lease's renewTime carries the
stepped wall time (it is informative only, as in client-go)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.kube.leader import LeaderElector
from hpactl.kube.session import KubeSession


async def _until(cond: Callable[[], bool], what: str) -> None:
    for _ in range(1000):
        if cond():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def _asleep(clock: VirtualClock) -> Callable[[], bool]:
    return lambda: clock.sleepers >= 1


async def _step(clocks: list[VirtualClock], seconds: int) -> None:
    """Both hosts' time moves one second at a time; each elector sleeps again."""
    for _ in range(seconds):
        for c in clocks:
            c.advance(1.0)
        for c in clocks:
            await _until(_asleep(c), "electors asleep")


def _lease(emu: Emulator) -> dict[str, str]:
    obj = emu.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
    assert obj is not None
    spec: dict[str, str] = obj["spec"]
    return spec


@pytest.mark.parametrize("jump_hours", [1, -2])
async def test_a_wall_clock_step_changes_no_leadership(emulator: Emulator, jump_hours: int) -> None:
    leader_clock, standby_clock = VirtualClock(), VirtualClock()
    async with KubeSession(master=emulator.url) as s:

        def elector(ident: str, clock: VirtualClock) -> LeaderElector:
            return LeaderElector(
                s, namespace="kube-system", name="hpactl", identity=ident, clock=clock
            )

        a = elector("a", leader_clock)
        b = elector("b", standby_clock)
        ta = asyncio.create_task(a.run())
        await _until(lambda: a.leading.is_set() and leader_clock.sleepers >= 1, "a leads")
        tb = asyncio.create_task(b.run())
        await _until(lambda: standby_clock.sleepers >= 1, "b waits")
        try:
            await _step([leader_clock, standby_clock], 5)
            renew_before = _lease(emulator)["renewTime"]
            # The leader's wall clock steps; 40 s (> lease 15 s) pass on both hosts.
            leader_clock.set(leader_clock.now() + timedelta(hours=jump_hours))
            assert a.holds_lease(), "a wall-clock step closed the write fence"
            await _step([leader_clock, standby_clock], 40)
            renew_after = _lease(emulator)["renewTime"]
            assert a.is_leader and a.holds_lease() and not b.leading.is_set()
            # Then the standby's wall clock steps the same way: it does not take over.
            standby_clock.set(standby_clock.now() + timedelta(hours=jump_hours))
            await _step([leader_clock, standby_clock], 40)
            assert a.is_leader and a.holds_lease() and not b.leading.is_set()
            lease = _lease(emulator)
            assert lease["holderIdentity"] == "a"
            print(
                f"\n[clock step {jump_hours:+d}h] renewTime {renew_before} -> {renew_after} "
                f"(the stepped wall time); 80 s on both hosts: holder "
                f"{lease['holderIdentity']}, transitions {lease.get('leaseTransitions', 0)}, "
                f"fence open throughout"
            )
            assert int(lease.get("leaseTransitions") or 0) == 0
        finally:
            for t in (ta, tb):
                t.cancel()
            for t in (ta, tb):
                with pytest.raises(asyncio.CancelledError):
                    await t
