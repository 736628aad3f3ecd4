"""Per-key sync periods (KEP-6003) in the SyncSupervisor, on a virtual clock."""

from __future__ import annotations

import itertools

import pytest

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SyncSupervisor, slot_width

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
        assert 0 <= times[0] < period
        assert set(gaps(times)) == {period}
        assert sup.period(key) == period
    assert len(rec.times("ns/fast")) == 36
    assert len(rec.times("ns/slow")) == 3
    # One namespace: the slow and default HPAs tick together with some of the fast
    # one's ticks (periods that are multiples share the namespace's slot), so one
    # metrics list serves them.
    fast = rec.times("ns/fast")
    width = slot_width(3, 5.0)
    for key in ("ns/slow", "ns/default"):
        for t in rec.times(key):
            assert min(abs(t - f) for f in fast) < width
    await sup.stop()


async def test_a_changed_period_applies_from_the_next_sync() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)
    periods = {"ns/a": 60.0}
    sup = SyncSupervisor(clock, DEFAULT, 1, rec, period_of=lambda k: periods[k])
    sup.start(["ns/a"])
    await run_for(clock, 60)
    (first,) = rec.times("ns/a")
    periods["ns/a"] = 5.0
    # Not told: the tick already waiting (a minute after the first) stands; the new
    # period is read after it: at least 5 s later (on the 5 s grid), then every 5 s.
    await run_for(clock, 20)
    times = rec.times("ns/a")
    assert times[1] == pytest.approx(first + 60.0)
    assert 5.0 <= times[2] - times[1] < 10.0
    assert set(gaps(times[2:])) == {5.0}
    # Told while a tick waits: it moves to its 30 s grid, at least 30 s after the last sync.
    periods["ns/a"] = 30.0
    sup.reperiod("ns/a")
    last = rec.times("ns/a")[-1]
    await run_for(clock, 100)
    times = [t for t in rec.times("ns/a") if t > last]
    assert 30.0 <= times[0] - last < 60.0
    assert set(gaps(times)) == {30.0}
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
    sup.reperiod("ns/a")  # last sync at 0: the next would have been at 10, so now ...
    await run_for(clock, 35)
    times = rec.times("ns/a")
    assert times[0] == 0.0
    assert 100.0 <= times[1] < 110.0  # ... at the first point of its 10 s grid
    assert set(gaps(times[1:])) == {10.0}
    await sup.stop()


async def test_a_failing_period_lookup_falls_back_to_the_default() -> None:
    clock = VirtualClock()
    rec = Recorder(clock)

    def period_of(key: str) -> float:
        if key == "ns/bad":
            raise RuntimeError("boom")
        return 0.0  # not positive: the default too

    sup = SyncSupervisor(clock, DEFAULT, 1, rec, period_of=period_of)
    sup.start(["ns/bad", "ns/zero"])
    await run_for(clock, 3 * DEFAULT - 0.001)
    assert gaps(rec.times("ns/bad")) == [DEFAULT, DEFAULT]
    assert gaps(rec.times("ns/zero")) == [DEFAULT, DEFAULT]
    await sup.stop()
