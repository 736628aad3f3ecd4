"""Per-HPA schedules on a virtual clock: period, spread, concurrency, wake, removal, crashes."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SyncSupervisor, spread_offset

PERIOD = 15.0


async def run_for(clock: VirtualClock, seconds: float) -> None:
    # Let freshly spawned tasks reach their first sleep before time moves.
    await clock.settle()
    await clock.run_for(seconds)


class Recorder:
    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.calls: list[tuple[float, str]] = []

    async def __call__(self, key: str) -> None:
        self.calls.append((self.clock.monotonic(), key))

    def times(self, key: str) -> list[float]:
        return [t for t, k in self.calls if k == key]


async def test_initial_keys_are_spread_over_one_period_then_synced_every_period() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    keys = [f"ns/hpa-{i}" for i in range(200)]
    sup.start(keys)
    await run_for(clock, PERIOD * 3 - 0.001)
    firsts = sorted(rec.times(k)[0] for k in keys)
    # Every key ran in the first period, at its own stable offset, not all at t=0.
    assert all(0 <= t < PERIOD for t in firsts)
    assert len({round(t, 3) for t in firsts}) > 150
    for k in keys[:20]:
        times = rec.times(k)
        assert times[0] == pytest.approx(spread_offset(k, PERIOD))
        assert [round(b - a, 6) for a, b in itertools.pairwise(times)] == [PERIOD, PERIOD]
    await sup.stop()


async def test_a_new_key_is_synced_at_once() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    sup.start([])
    await run_for(clock, 4)
    sup.add("ns/new")
    await run_for(clock, 0)
    assert rec.times("ns/new") == [4.0]
    await run_for(clock, PERIOD)
    assert rec.times("ns/new") == [4.0, 4.0 + PERIOD]
    await sup.stop()


async def test_keys_added_before_start_wait_for_start() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    sup.add("ns/a")
    await run_for(clock, PERIOD)
    assert rec.calls == []
    sup.start()
    await run_for(clock, PERIOD)
    assert len(rec.times("ns/a")) == 1
    await sup.stop()


async def test_concurrency_is_bounded() -> None:
    clock = VirtualClock()
    running = 0
    peak = 0
    release = asyncio.Event()

    async def slow(_key: str) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1

    sup = SyncSupervisor(clock, PERIOD, 3, slow)
    sup.start([])
    for i in range(10):
        sup.add(f"ns/{i}")
    await clock.settle(100)
    assert peak == 3 and sup.in_flight == 3
    release.set()
    await clock.settle(200)
    assert running == 0
    await sup.stop()


async def test_wake_brings_the_next_sync_forward() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    sup.start([])
    sup.add("ns/a")
    await run_for(clock, 5)
    sup.wake("ns/a")
    await run_for(clock, 0)
    assert rec.times("ns/a") == [0.0, 5.0]
    await sup.stop()


async def test_remove_cancels_and_forgets() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    forgotten: list[str] = []
    sup = SyncSupervisor(clock, PERIOD, 5, rec, forget=forgotten.append)
    sup.start([])
    sup.add("ns/a")
    await run_for(clock, 1)
    sup.remove("ns/a")
    await run_for(clock, PERIOD * 3)
    assert rec.times("ns/a") == [0.0]
    assert forgotten == ["ns/a"]
    assert sup.keys() == []
    await sup.stop()


async def test_a_crashing_sync_is_retried_next_period_and_others_go_on() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)

    async def sync(key: str) -> None:
        await rec(key)
        if key == "ns/bad":
            raise RuntimeError("boom")

    sup = SyncSupervisor(clock, PERIOD, 5, sync)
    sup.start([])
    sup.add("ns/bad")
    sup.add("ns/good")
    await run_for(clock, PERIOD * 2)
    assert rec.times("ns/bad") == [0.0, PERIOD, 2 * PERIOD]
    assert rec.times("ns/good") == [0.0, PERIOD, 2 * PERIOD]
    await sup.stop()


async def test_one_hanging_sync_does_not_delay_others() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    hang = asyncio.Event()

    async def sync(key: str) -> None:
        await rec(key)
        if key == "ns/stuck":
            await hang.wait()

    sup = SyncSupervisor(clock, PERIOD, 2, sync)
    sup.start([])
    sup.add("ns/stuck")
    sup.add("ns/ok")
    await run_for(clock, PERIOD * 3)
    assert rec.times("ns/ok") == [0.0, PERIOD, 2 * PERIOD, 3 * PERIOD]
    assert rec.times("ns/stuck") == [0.0]
    await sup.stop()


async def test_lag_is_reported() -> None:
    clock = VirtualClock()
    lags: list[float] = []
    sup = SyncSupervisor(clock, PERIOD, 5, Recorder(clock), on_lag=lags.append)
    sup.start([])
    sup.add("ns/a")
    await run_for(clock, PERIOD)
    assert lags == [0.0, 0.0]
    await sup.stop()


async def test_stop_with_grace_lets_inflight_sync_finish() -> None:
    clock = VirtualClock()
    finished: list[str] = []
    gate = asyncio.Event()

    async def sync(key: str) -> None:
        await gate.wait()
        finished.append(key)

    sup = SyncSupervisor(clock, PERIOD, 5, sync)
    sup.start([])
    sup.add("ns/a")
    await clock.settle()
    stopping = asyncio.create_task(sup.stop(grace=5))
    await clock.settle()
    gate.set()
    await stopping
    assert finished == ["ns/a"]
    assert not sup.running


def test_invalid_arguments() -> None:
    clock = VirtualClock()
    with pytest.raises(ValueError):
        SyncSupervisor(clock, 0, 1, Recorder(clock))
    with pytest.raises(ValueError):
        SyncSupervisor(clock, 1, 0, Recorder(clock))


async def test_a_wake_during_a_sync_syncs_again_when_it_ends() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    gate = asyncio.Event()

    async def sync(key: str) -> None:
        await rec(key)
        if len(rec.calls) == 1:
            await gate.wait()

    sup = SyncSupervisor(clock, PERIOD, 5, sync)
    sup.start([])
    sup.add("ns/a")
    await run_for(clock, 2)
    sup.wake("ns/a")  # while its first sync is still running: never two at once
    await run_for(clock, 0)
    assert rec.times("ns/a") == [0.0]
    gate.set()
    await run_for(clock, 0)
    assert rec.times("ns/a") == [0.0, 2.0]
    await sup.stop()


async def test_removing_a_key_in_flight_frees_its_worker() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    forever = asyncio.Event()

    async def sync(key: str) -> None:
        await rec(key)
        if key == "ns/gone":
            await forever.wait()

    sup = SyncSupervisor(clock, PERIOD, 1, sync)
    sup.start([])
    sup.add("ns/gone")
    await run_for(clock, 1)
    sup.add("ns/next")  # the only worker is busy with ns/gone
    await run_for(clock, 1)
    assert rec.times("ns/next") == []
    sup.remove("ns/gone")
    await run_for(clock, PERIOD)
    # due at 1 (the add), run at 2 (when a worker came free): fixed rate from 1
    assert rec.times("ns/next") == [2.0, 1.0 + PERIOD]
    assert sup.in_flight == 0
    await sup.stop()
