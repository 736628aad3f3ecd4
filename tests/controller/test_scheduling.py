"""Per-HPA schedules on a virtual clock: period, spread, concurrency, wake, removal, crashes."""

from __future__ import annotations

import asyncio
import collections
import itertools

import pytest

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SLOT_PER_HPA, SyncSupervisor, slot_width

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


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 6) for a, b in itertools.pairwise(times)]


def in_period(t: float) -> float:
    return t % PERIOD


async def test_initial_keys_tick_in_their_namespaces_slots_then_every_period() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    namespaces = [f"team-{n}" for n in range(8)]
    keys = [f"{ns}/hpa-{i}" for ns in namespaces for i in range(40)]
    sup.start(keys)
    await run_for(clock, PERIOD * 3 - 0.001)
    firsts = {k: rec.times(k)[0] for k in keys}
    # Every key ran in the first period, then every period, not all at t=0.
    assert all(0 <= t < PERIOD for t in firsts.values())
    assert len({round(t, 4) for t in firsts.values()}) > 250
    for k in keys:
        assert gaps(rec.times(k)) == [PERIOD, PERIOD]
    # A namespace's HPAs tick within its slot (40 HPAs: 0.2 s), so one metrics list
    # serves them all; the namespaces' slots are spread over the period.
    width = slot_width(40, PERIOD)
    assert width == pytest.approx(40 * SLOT_PER_HPA)
    starts = []
    for ns in namespaces:
        mine = sorted(in_period(t) for k, t in firsts.items() if k.startswith(ns + "/"))
        spans = [(b - a) % PERIOD for a, b in itertools.pairwise(mine)]
        # the slot may wrap around the end of the period
        assert PERIOD - max([*spans, PERIOD - (mine[-1] - mine[0])]) < width
        starts.append(mine[0])
    assert max(starts) - min(starts) > PERIOD / 3
    await sup.stop()


async def test_placement_is_stable_and_a_large_namespace_spreads_its_syncs() -> None:
    for count in (1, 100, 10_000):
        assert 0 < slot_width(count, PERIOD) <= PERIOD / 2
    assert slot_width(100, PERIOD) < slot_width(1000, PERIOD) == PERIOD / 3
    assert slot_width(10_000, PERIOD) == PERIOD / 2
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    big = [f"big/hpa-{i}" for i in range(2000)]
    sup.start(big)
    await run_for(clock, PERIOD - 0.001)
    firsts = sorted(rec.times(k)[0] for k in big)
    assert len(firsts) == 2000
    # Spread over half the period, not bunched in a fraction of a second: at most
    # about a tenth of the namespace in any half second.
    per_half_second = collections.Counter(int(t * 2) for t in firsts)
    assert max(per_half_second.values()) < 200
    await sup.stop()
    # The same keys get the same ticks on another replica started at the same time.
    clock2 = VirtualClock()
    rec2 = Recorder(clock2)
    sup2 = SyncSupervisor(clock2, PERIOD, 5, rec2)
    sup2.start(reversed(big))
    await run_for(clock2, PERIOD - 0.001)
    assert {k: rec2.times(k) for k in big} == {k: rec.times(k)[:1] for k in big}
    await sup2.stop()


async def test_a_new_key_is_synced_at_once_then_joins_its_namespaces_slot() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    sup = SyncSupervisor(clock, PERIOD, 5, rec)
    old = [f"ns/old-{i}" for i in range(20)]
    sup.start(old)
    await run_for(clock, 4)
    sup.add("ns/new")
    await run_for(clock, 0)
    assert rec.times("ns/new") == [4.0]
    await run_for(clock, PERIOD * 3)
    times = rec.times("ns/new")
    # Never sooner than a period after the first sync, less than two; then every period.
    assert PERIOD <= times[1] - times[0] < 2 * PERIOD
    assert gaps(times[1:]) == [PERIOD] * (len(times) - 2)
    # ... and in the slot of the namespace's other HPAs (so their list serves it too).
    slot = [in_period(t) for k in old for t in rec.times(k)]
    near = min(abs(in_period(times[1]) - t) for t in slot)
    assert min(near, PERIOD - near) < slot_width(21, PERIOD)
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
    sup.start(["ns/bad", "ns/good"])
    await run_for(clock, PERIOD * 3 - 0.001)
    for key in ("ns/bad", "ns/good"):
        assert gaps(rec.times(key)) == [PERIOD, PERIOD]
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
    sup.start(["ns/stuck", "ns/ok"])
    await run_for(clock, PERIOD * 4 - 0.001)
    assert gaps(rec.times("ns/ok")) == [PERIOD, PERIOD, PERIOD]
    assert len(rec.times("ns/stuck")) == 1
    await sup.stop()


async def test_lag_is_reported() -> None:
    clock = VirtualClock()
    lags: list[float] = []
    sup = SyncSupervisor(clock, PERIOD, 5, Recorder(clock), on_lag=lags.append)
    sup.start([])
    sup.add("ns/a")
    await run_for(clock, 2 * PERIOD)
    assert len(lags) >= 2 and set(lags) == {0.0}
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
    await run_for(clock, PERIOD)
    # due at 1 (the add), run at 2 (when a worker came free); the next a period or
    # more after 1, at its place in the namespace's slot
    first, second = rec.times("ns/next")[:2]
    assert first == 2.0 and PERIOD <= second - 1.0 < 2 * PERIOD
    assert sup.in_flight == 0
    await sup.stop()
