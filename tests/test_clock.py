"""Tests for hpactl.clock."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest

from hpactl.clock import Clock, RealClock, VirtualClock

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(RealClock(), Clock)
    assert isinstance(VirtualClock(T0), Clock)


def test_real_clock_now_is_aware_utc() -> None:
    now = RealClock().now()
    assert now.tzinfo is not None
    assert now.utcoffset() == timedelta(0)


async def test_real_clock_sleep_accepts_negative() -> None:
    await RealClock().sleep(-1)  # must not raise


def test_virtual_clock_rejects_naive_start() -> None:
    with pytest.raises(ValueError, match="naive"):
        VirtualClock(datetime(2026, 1, 1))


def test_virtual_clock_converts_start_to_utc() -> None:
    cest = timezone(timedelta(hours=2))
    clock = VirtualClock(datetime(2026, 3, 1, 14, 0, tzinfo=cest))
    assert clock.now() == T0
    assert clock.now().tzinfo == UTC


def test_advance_moves_now_and_monotonic() -> None:
    clock = VirtualClock(T0)
    clock.advance(15.5)
    assert clock.now() == T0 + timedelta(seconds=15.5)
    assert clock.monotonic() == 15.5
    clock.advance_to(T0 + timedelta(minutes=1))
    assert clock.monotonic() == 60.0


def test_cannot_go_backwards() -> None:
    clock = VirtualClock(T0)
    clock.advance(10)
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.advance_to(T0)


def test_set_changes_wall_time_only() -> None:
    clock = VirtualClock(T0)
    clock.advance(30)
    clock.set(T0 - timedelta(hours=1))
    assert clock.now() == T0 - timedelta(hours=1)
    assert clock.monotonic() == 30
    clock.advance(5)
    assert clock.now() == T0 - timedelta(hours=1) + timedelta(seconds=5)


async def test_sleepers_wake_in_deadline_order_then_arrival_order() -> None:
    clock = VirtualClock(T0)
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [
        asyncio.create_task(sleeper(name, seconds))
        for name, seconds in [("c", 30), ("a", 10), ("b1", 20), ("b2", 20), ("late", 100)]
    ]
    await clock.settle()
    assert clock.sleepers == 5
    assert clock.advance(10) == 1
    await clock.settle()
    assert woke == ["a"]
    assert clock.advance(25) == 3
    await clock.settle()
    assert woke == ["a", "b1", "b2", "c"]
    assert clock.next_deadline() == 100
    tasks[-1].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert clock.sleepers == 0
    assert clock.next_deadline() is None


async def test_sleeping_until_exactly_the_target_wakes() -> None:
    clock = VirtualClock(T0)
    task = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    clock.advance(4.999)
    await clock.settle()
    assert not task.done()
    clock.advance(0.001)
    await clock.settle()
    assert task.done()


async def test_zero_sleep_yields_without_registering() -> None:
    clock = VirtualClock(T0)
    await clock.sleep(0)
    assert clock.sleepers == 0
    assert clock.monotonic() == 0


async def test_cancelled_sleeper_is_not_counted_as_woken() -> None:
    clock = VirtualClock(T0)
    task = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.advance(10) == 0


async def test_jump_versus_run_for_with_a_periodic_task() -> None:
    """advance() jumps (one tick); run_for() lets a periodic task tick at each period."""

    async def periodic(clock: VirtualClock, ticks: list[float]) -> None:
        while True:
            await clock.sleep(15)
            ticks.append(clock.monotonic())

    jumped = VirtualClock(T0)
    jumped_ticks: list[float] = []
    t1 = asyncio.create_task(periodic(jumped, jumped_ticks))
    await jumped.settle()
    jumped.advance(60)
    await jumped.settle()
    assert jumped_ticks == [60]

    walked = VirtualClock(T0)
    walked_ticks: list[float] = []
    t2 = asyncio.create_task(periodic(walked, walked_ticks))
    await walked.settle()
    await walked.run_for(60)
    assert walked_ticks == [15, 30, 45, 60]
    assert walked.monotonic() == 60
    await walked.run_until(T0 + timedelta(seconds=80))
    assert walked_ticks == [15, 30, 45, 60, 75]
    assert walked.now() == T0 + timedelta(seconds=80)

    for t in (t1, t2):
        t.cancel()
    await asyncio.gather(t1, t2, return_exceptions=True)
