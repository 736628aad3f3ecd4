"""Per-key sync periods (KEP-6003) in the SyncSupervisor, on a virtual clock."""

from __future__ import annotations

import itertools

import pytest

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SyncSupervisor, spread_offset

from .test_scheduling import Recorder, run_for

DEFAULT = 15.0


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 6) for a, b in itertools.pairwise(times)]


async def test_each_key_runs_at_its_own_period_spread_over_it() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    periods = {"ns/fast": 5.0, "ns/slow": 60.0, "ns/default": DEFAULT}
    sup = SyncSupervisor(clock, DEFAULT, 2, rec, period_of=lambda k: periods.get(k, DEFAULT))
    sup.start(periods)
    await run_for(clock, 180 - 0.001)
    for key, period in periods.items():
        times = rec.times(key)
        assert times[0] == pytest.approx(spread_offset(key, period))
        assert set(gaps(times)) == {period}
        assert sup.period(key) == period
    assert len(rec.times("ns/fast")) == 36
    assert len(rec.times("ns/slow")) == 3
    await sup.stop()


async def test_a_changed_period_applies_from_the_next_sync() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    periods = {"ns/a": 60.0}
    sup = SyncSupervisor(clock, DEFAULT, 1, rec, period_of=lambda k: periods[k])
    sup.start([])
    sup.add("ns/a")  # synced at once (t=0), then every 60 s
    await run_for(clock, 10)
    periods["ns/a"] = 5.0
    # Not told: the tick already waiting (t=60) stands; the period is read after it.
    await run_for(clock, 59)
    assert rec.times("ns/a") == [0.0, 60.0, 65.0]
    # t=69: the tick at 70 is waiting; told, it moves to one new period after 65.
    periods["ns/a"] = 30.0
    sup.reperiod("ns/a")
    await run_for(clock, 30)
    assert rec.times("ns/a") == [0.0, 60.0, 65.0, 95.0]
    await sup.stop()


async def test_reperiod_to_a_shorter_period_brings_the_sync_forward_but_not_into_the_past() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    periods = {"ns/a": 3600.0}
    sup = SyncSupervisor(clock, DEFAULT, 1, rec, period_of=lambda k: periods[k])
    sup.start([])
    sup.add("ns/a")
    await run_for(clock, 100)
    periods["ns/a"] = 10.0
    sup.reperiod("ns/a")  # last sync at 0: the next would have been at 10, so now
    await run_for(clock, 25)
    assert rec.times("ns/a") == [0.0, 100.0, 110.0, 120.0]
    await sup.stop()


async def test_a_failing_period_lookup_falls_back_to_the_default() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)

    def period_of(key: str) -> float:
        if key == "ns/bad":
            raise RuntimeError("boom")
        return 0.0  # not positive: the default too

    sup = SyncSupervisor(clock, DEFAULT, 1, rec, period_of=period_of)
    sup.start([])
    sup.add("ns/bad")
    sup.add("ns/zero")
    await run_for(clock, 31)
    assert gaps(rec.times("ns/bad")) == [DEFAULT, DEFAULT]
    assert gaps(rec.times("ns/zero")) == [DEFAULT, DEFAULT]
    await sup.stop()
