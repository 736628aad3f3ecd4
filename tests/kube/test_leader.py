"""Leader election on a Lease in the emulator, with a virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector
from hpactl.kube.leader import LeaderElector
from hpactl.kube.session import KubeSession


async def until(cond: Callable[[], bool], what: str = "condition") -> None:
    """Wait (real time, bounded) for loopback I/O to settle into a state."""
    for _ in range(1000):
        if cond():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


async def step(clock: VirtualClock, seconds: float, sleepers: int) -> None:
    """Advance one second at a time; after each, let the woken tasks go back to sleep."""
    for _ in range(int(seconds)):
        clock.advance(1.0)
        await until(lambda: clock.sleepers >= sleepers, f"{sleepers} sleepers")


def lease(emu: Emulator) -> dict[str, Any]:
    obj = emu.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
    assert obj is not None
    spec: dict[str, Any] = obj["spec"]
    return spec


def elector(s: KubeSession, clock: VirtualClock, ident: str, **kw: Any) -> LeaderElector:
    return LeaderElector(
        s, namespace="kube-system", name="hpactl", identity=ident, clock=clock, **kw
    )


async def test_only_one_leads_and_release_hands_over(emulator: Emulator) -> None:
    clock = VirtualClock()
    stopped: list[str] = []
    async with KubeSession(master=emulator.url) as s:
        a = elector(s, clock, "a", on_stopped_leading=lambda: stopped.append("a"))
        b = elector(s, clock, "b")
        ta = asyncio.create_task(a.run())
        await until(a.leading.is_set, "a leading")
        tb = asyncio.create_task(b.run())
        await until(lambda: clock.sleepers >= 2, "both asleep")
        await step(clock, 40, 2)
        assert a.is_leader and not b.leading.is_set()
        spec = lease(emulator)
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 15
        assert spec["leaseTransitions"] == 0
        assert spec["renewTime"] == "2026-01-01T00:00:40.000000Z"
        assert spec["acquireTime"] == "2026-01-01T00:00:00.000000Z"

        ta.cancel()  # SIGTERM path: release on cancel
        with pytest.raises(asyncio.CancelledError):
            await ta
        assert stopped == ["a"]
        assert lease(emulator)["holderIdentity"] == ""
        assert lease(emulator)["leaseDurationSeconds"] == 1
        # b takes over on its next retry, without waiting for the old lease to expire
        await step(clock, 5, 1)
        await until(b.leading.is_set, "b leading")
        spec = lease(emulator)
        assert spec["holderIdentity"] == "b"
        assert spec["leaseTransitions"] == 1
        tb.cancel()
        with pytest.raises(asyncio.CancelledError):
            await tb


async def test_standby_takes_over_after_lease_duration(emulator: Emulator) -> None:
    clock = VirtualClock()
    async with KubeSession(master=emulator.url) as s:
        dead = elector(s, clock, "dead")
        assert await dead.try_acquire_or_renew()  # acquires, then never renews
        b = elector(s, clock, "b")
        tb = asyncio.create_task(b.run())
        await until(lambda: clock.sleepers >= 1, "b asleep")
        await step(clock, 12, 1)
        assert not b.leading.is_set()
        for _ in range(10):
            if b.leading.is_set():
                break
            await step(clock, 1, 1)
        assert b.leading.is_set()
        # b saw the lease first at t=0; it may take it only after 15 s
        assert 15 <= clock.monotonic() <= 20
        assert lease(emulator)["holderIdentity"] == "b"
        assert lease(emulator)["leaseTransitions"] == 1
        tb.cancel()
        with pytest.raises(asyncio.CancelledError):
            await tb


async def test_renew_failure_stops_leading_at_once() -> None:
    faults = FaultInjector()
    clock = VirtualClock()
    events: list[str] = []
    work_cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            work_cancelled.set()
            raise

    async with Emulator(faults=faults) as emu, KubeSession(master=emu.url) as s:
        a = elector(
            s,
            clock,
            "a",
            on_started_leading=work,
            on_stopped_leading=lambda: events.append("stopped"),
        )
        ta = asyncio.create_task(a.run())
        await until(lambda: a.leading.is_set() and clock.sleepers >= 1, "a leading")
        await step(clock, 4, 1)
        faults.add("path=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/*,status=500")
        t_fail = clock.monotonic()
        while not ta.done() and clock.monotonic() - t_fail < 30:
            clock.advance(1.0)
            await until(lambda: clock.sleepers >= 1 or ta.done(), "renew attempt")
        await ta  # returns normally: leadership lost
        lost_after = clock.monotonic() - t_fail
        assert 8 <= lost_after <= 13, lost_after  # renewDeadline 10 s after the last renew
        assert events == ["stopped"]
        assert work_cancelled.is_set()
        assert not a.leading.is_set()


async def test_crashing_work_releases_and_raises(emulator: Emulator) -> None:
    clock = VirtualClock()

    async def work() -> None:
        raise RuntimeError("controller crashed")

    async with KubeSession(master=emulator.url) as s:
        a = elector(s, clock, "a", on_started_leading=work)
        with pytest.raises(RuntimeError, match="controller crashed"):
            await asyncio.wait_for(a.run(), 5)
    assert lease(emulator)["holderIdentity"] == ""


def test_rejects_inconsistent_durations() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaderElector(None, namespace="n", name="x", lease_duration=10, renew_deadline=10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retryPeriod\\*JitterFactor"):
        LeaderElector(None, namespace="n", name="x", renew_deadline=2, retry_period=2)  # type: ignore[arg-type]


async def test_work_that_returns_keeps_leadership(emulator: Emulator) -> None:
    clock = VirtualClock()
    done = asyncio.Event()

    async def work() -> None:
        done.set()

    async with KubeSession(master=emulator.url) as s:
        a = elector(s, clock, "a", on_started_leading=work)
        ta = asyncio.create_task(a.run())
        await until(done.is_set, "work ran")
        await until(lambda: clock.sleepers >= 1, "a asleep")
        await step(clock, 30, 1)
        assert a.leading.is_set() and not ta.done()
        assert lease(emulator)["renewTime"] == "2026-01-01T00:00:30.000000Z"
        ta.cancel()
        with pytest.raises(asyncio.CancelledError):
            await ta
    assert lease(emulator)["holderIdentity"] == ""


async def test_leader_renews_with_one_update_per_period(emulator: Emulator) -> None:
    clock = VirtualClock()
    calls: list[str] = []
    async with KubeSession(
        master=emulator.url, on_request=lambda v, r, c, s: calls.append(f"{v} {c}")
    ) as s:
        a = elector(s, clock, "a")
        ta = asyncio.create_task(a.run())
        await until(lambda: a.leading.is_set() and clock.sleepers >= 1, "a leading")
        calls.clear()
        await step(clock, 10, 1)  # five renewals, retryPeriod 2 s
        assert calls == ["update 200"] * 5
        # someone else rewrote the Lease: the optimistic update conflicts, the slow path recovers
        obj = emulator.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
        assert obj is not None
        obj["metadata"]["labels"] = {"touched": "yes"}
        emulator.store.apply(obj)
        calls.clear()
        await step(clock, 2, 1)
        assert calls == ["update 409", "get 200", "update 200"]
        assert a.is_leader
        ta.cancel()
        with pytest.raises(asyncio.CancelledError):
            await ta


async def test_holds_lease_closes_when_a_renewal_is_older_than_the_renew_deadline(
    emulator: Emulator,
) -> None:
    """The write fence: a leader whose last successful renewal was sent renew_deadline
    ago (a paused process: its clock jumped) may not write, whatever its state says."""
    clock = VirtualClock()
    async with KubeSession(master=emulator.url) as s:
        a = elector(s, clock, "a")
        assert not a.holds_lease()  # not leading yet
        ta = asyncio.create_task(a.run())
        await until(lambda: a.leading.is_set() and clock.sleepers >= 1, "a leading")
        assert a.holds_lease()
        await step(clock, 6, 1)  # renewed every 2 s: still provably ours
        assert a.holds_lease()
        # The process is frozen for longer than the renew deadline (10 s): on waking,
        # before any renew attempt runs, the fence is closed.
        clock.advance(10.0)
        assert a.leading.is_set() and a.is_leader  # the elector has not noticed yet
        assert not a.holds_lease()
        ta.cancel()
        with pytest.raises(asyncio.CancelledError):
            await ta


async def test_a_renewal_that_finds_another_holder_stops_leading_at_once(
    emulator: Emulator,
) -> None:
    clock = VirtualClock()
    stopped: list[float] = []
    async with KubeSession(master=emulator.url) as s:
        a = elector(s, clock, "a", on_stopped_leading=lambda: stopped.append(clock.monotonic()))
        ta = asyncio.create_task(a.run())
        await until(lambda: a.leading.is_set() and clock.sleepers >= 1, "a leading")
        # Another replica took the lease over (a was paused past the lease duration).
        obj = emulator.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
        assert obj is not None
        obj["spec"]["holderIdentity"] = "b"
        emulator.store.apply(obj)
        woke = clock.monotonic() + 2.0
        clock.advance(2.0)  # the next renewal (retryPeriod 2 s)
        await asyncio.wait_for(ta, 5)  # run() returns: no retrying until renewDeadline
        assert stopped and stopped[0] <= woke + 1e-6
        assert not a.holds_lease() and lease(emulator)["holderIdentity"] == "b"


async def test_release_after_a_renewal_that_landed_unheard_still_releases(
    emulator: Emulator,
) -> None:
    """A renewal cancelled in flight may land: the release then conflicts on the stale
    resourceVersion; it reads the Lease and, still the holder, releases it anyway (else
    the next holder would wait out the whole lease)."""
    clock = VirtualClock()
    async with KubeSession(master=emulator.url) as s:
        a = elector(s, clock, "a")
        assert await a.try_acquire_or_renew()
        obj = emulator.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
        assert obj is not None
        obj["spec"]["renewTime"] = "2026-01-01T00:00:02.000000Z"  # the unheard renewal
        emulator.store.apply(obj)
        assert await a.release()
        assert lease(emulator)["holderIdentity"] == ""
        assert lease(emulator)["leaseTransitions"] == 0
        # taken over meanwhile (a was paused): the conflict shows it, nothing is written
        assert await a.try_acquire_or_renew()
        obj = emulator.store.get("coordination.k8s.io", "leases", "kube-system", "hpactl")
        assert obj is not None
        obj["spec"]["holderIdentity"] = "b"
        emulator.store.apply(obj)
        assert await a.release()
        assert lease(emulator)["holderIdentity"] == "b"
