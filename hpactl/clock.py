"""Injected time: the one place hpactl reads a clock.

`RealClock` serves `hpactl run`; `VirtualClock` serves `hpactl simulate` and the
tests. Everything that waits (sync ticks, backoff, resync) calls `clock.sleep`, so a
virtual clock controls it. Network I/O timeouts stay on real time: they bound real
sockets, not simulated behaviour.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "RealClock", "VirtualClock"]


@runtime_checkable
class Clock(Protocol):
    """What hpactl needs from time."""

    def now(self) -> datetime:
        """Wall time as an aware UTC datetime (Go's `time.Now()`)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences mean anything."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for `seconds` (<= 0 still yields once)."""
        ...


class RealClock:
    """The system clock."""

    __slots__ = ()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def _as_utc(dt: datetime) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"naive datetime {dt.isoformat()!r}: an aware datetime is required")
    return dt.astimezone(UTC)


class VirtualClock:
    """A clock that moves only when told to.

    Sleepers are futures on the running loop, kept in a heap by (deadline, arrival
    order). Moving the clock resolves every sleeper whose deadline has passed, earliest
    deadline first and, for equal deadlines, in the order they went to sleep, so the
    loop resumes them in that order: runs are reproducible.

    `advance`/`advance_to` are synchronous jumps: a task woken by them that sleeps
    again measures its new deadline from the target time. `run_for`/`run_until` walk
    from deadline to deadline instead, letting woken tasks run (and sleep again) at
    each intermediate instant, which is what periodic tasks need.
    """

    __slots__ = ("_heap", "_mono", "_offset", "_seq")

    def __init__(self, start: datetime | None = None) -> None:
        start_utc = _as_utc(start) if start is not None else datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 0.0
        # now() = _offset + _mono seconds; set() changes the offset only.
        self._offset = start_utc
        self._seq = itertools.count()
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []

    # -- Clock protocol -------------------------------------------------------------

    def now(self) -> datetime:
        return self._offset + timedelta(seconds=self._mono)

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            # Still a scheduling point, like asyncio.sleep(0).
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (self._mono + seconds, next(self._seq), fut))
        # A cancelled sleeper leaves a done future in the heap; it is skipped later.
        await fut

    # -- control --------------------------------------------------------------------

    def advance(self, seconds: float) -> int:
        """Move time forward by `seconds` and wake due sleepers; returns how many woke."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards ({seconds} s)")
        return self._move_to(self._mono + seconds)

    def advance_to(self, dt: datetime) -> int:
        """Move time forward to wall time `dt` (must not be in the past)."""
        delta = (_as_utc(dt) - self.now()).total_seconds()
        if delta < 0:
            raise ValueError(f"cannot move the clock back to {dt.isoformat()}")
        return self._move_to(self._mono + delta)

    def set(self, dt: datetime) -> None:
        """Set wall time to `dt` (either direction) without touching monotonic time.

        Like an NTP step on a real host: `now()` jumps, sleepers (which wait on
        monotonic time) are unaffected.
        """
        self._offset = _as_utc(dt) - timedelta(seconds=self._mono)

    async def run_for(self, seconds: float, *, settle: int = 50) -> None:
        """Advance by `seconds` one deadline at a time, letting woken tasks run.

        After each wake-up the loop gets `settle` turns, so tasks that only await
        in-process work reach their next `sleep` before time moves on.
        """
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards ({seconds} s)")
        target = self._mono + seconds
        while True:
            self._drop_cancelled()
            if not self._heap or self._heap[0][0] > target:
                break
            self._move_to(self._heap[0][0])
            await self.settle(settle)
        self._move_to(target)
        await self.settle(settle)

    async def run_until(self, dt: datetime, *, settle: int = 50) -> None:
        """`run_for` up to wall time `dt`."""
        delta = (_as_utc(dt) - self.now()).total_seconds()
        if delta < 0:
            raise ValueError(f"cannot move the clock back to {dt.isoformat()}")
        await self.run_for(delta, settle=settle)

    @staticmethod
    async def settle(rounds: int = 50) -> None:
        """Give the loop `rounds` turns (no time passes)."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    def next_deadline(self) -> float | None:
        """Monotonic deadline of the earliest pending sleeper, or None."""
        self._drop_cancelled()
        return self._heap[0][0] if self._heap else None

    @property
    def sleepers(self) -> int:
        """How many tasks are waiting on this clock."""
        return sum(1 for _, _, fut in self._heap if not fut.done())

    # -- internals ------------------------------------------------------------------

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0][2].done():
            heapq.heappop(self._heap)

    def _move_to(self, target: float) -> int:
        woken = 0
        while self._heap and self._heap[0][0] <= target:
            _, _, fut = heapq.heappop(self._heap)
            if fut.done():
                continue
            # Resolution order = resumption order (the loop runs callbacks FIFO). The
            # woken tasks resume after this call returns, so they all see `target`.
            fut.set_result(None)
            woken += 1
        self._mono = max(self._mono, target)
        return woken
