"""Per-HPA reconcile tasks.

Upstream runs one work queue with a fixed per-item interval and N workers. We
give every HPA its own asyncio task that owns its schedule; a semaphore of
``--concurrent-horizontal-pod-autoscaler-syncs`` bounds how many syncs run at
once. Both give "each HPA once per sync period, one key never synced twice at
once"; per-key tasks also make a per-HPA period (KEP-6003) a one-line change.

- A key added while running (a new HPA) is synced at once, as upstream 1.37
  does. Keys known when the supervisor starts (the informer's initial list) get
  their first sync spread over one period by a stable hash of the key, so ten
  thousand HPAs do not fire together.
- After a sync the next tick is the previous tick plus one period (fixed rate,
  so the spread holds); a sync that overran its period skips the missed ticks
  rather than bursting to catch up.
- ``wake(key)`` brings the next sync forward to now (a spec change under the
  HPAGeneration gate). ``remove(key)`` cancels the task and calls ``forget``.
- A failing sync is logged by the caller's sync function; whatever escapes is
  caught here and the key is retried on its next tick: a task never dies of it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable, Iterable

import structlog

from hpactl.clock import Clock

SyncFn = Callable[[str], Awaitable[None]]
LagObserver = Callable[[float], None]

log = structlog.get_logger("hpactl.scheduling")


def spread_offset(key: str, period: float) -> float:
    """A stable offset in [0, period) for ``key``: the same on every replica and restart."""
    return (zlib.crc32(key.encode()) / 2**32) * period


class _KeySchedule:
    __slots__ = ("syncing", "task", "wake")

    def __init__(self) -> None:
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.syncing = False


class SyncSupervisor:
    def __init__(
        self,
        clock: Clock,
        period: float,
        concurrency: int,
        sync: SyncFn,
        forget: Callable[[str], None] = lambda _key: None,
        on_lag: LagObserver | None = None,
    ) -> None:
        if period <= 0:
            raise ValueError("sync period must be positive")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._clock = clock
        self._period = period
        self._sync = sync
        self._forget = forget
        self._on_lag = on_lag
        self._slots = asyncio.Semaphore(concurrency)
        self._keys: dict[str, _KeySchedule] = {}
        self._running = False
        self.in_flight = 0

    # -- lifecycle ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._running

    def start(self, initial_keys: Iterable[str] = ()) -> None:
        """Begin scheduling: ``initial_keys`` spread over the first period, later adds at once."""
        if self._running:
            return
        self._running = True
        for key in sorted(set(initial_keys) | set(self._keys)):
            self._spawn(key, delay=spread_offset(key, self._period))

    async def stop(self, grace: float | None = None) -> None:
        """Stop every task. With ``grace``, syncs in flight get that long to finish first."""
        self._running = False
        scheds = [s for s in self._keys.values() if s.task is not None]
        tasks = [s.task for s in scheds if s.task is not None]
        if grace:
            # Tasks sleeping between ticks are cancelled at once; a task inside a
            # sync is waited for (bounded by ``grace``) so it can finish its writes.
            busy = []
            for sched in scheds:
                assert sched.task is not None
                if sched.syncing:
                    busy.append(sched.task)
                else:
                    sched.task.cancel()
            if busy:
                await asyncio.wait(busy, timeout=grace)
        for sched in scheds:
            sched.task = None
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- informer-driven changes ----------------------------------------------------

    def add(self, key: str) -> None:
        if key in self._keys:
            return
        self._keys[key] = _KeySchedule()
        if self._running:
            self._spawn(key, delay=0.0)

    def wake(self, key: str) -> None:
        sched = self._keys.get(key)
        if sched is not None:
            sched.wake.set()

    def remove(self, key: str) -> None:
        sched = self._keys.pop(key, None)
        if sched is not None and sched.task is not None:
            sched.task.cancel()
        self._forget(key)

    def keys(self) -> list[str]:
        return list(self._keys)

    # -- internals ------------------------------------------------------------------

    def _spawn(self, key: str, delay: float) -> None:
        sched = self._keys.setdefault(key, _KeySchedule())
        if sched.task is None or sched.task.done():
            sched.task = asyncio.create_task(self._loop(key, sched, delay), name=f"hpa:{key}")

    async def _sleep_until(self, sched: _KeySchedule, deadline: float) -> None:
        """Sleep on the injected clock until ``deadline`` or an early wake."""
        delay = deadline - self._clock.monotonic()
        if sched.wake.is_set() or delay <= 0:
            sched.wake.clear()
            return
        sleeper = asyncio.ensure_future(self._clock.sleep(delay))
        waker = asyncio.ensure_future(sched.wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()
        sched.wake.clear()

    async def _loop(self, key: str, sched: _KeySchedule, delay: float) -> None:
        tick = self._clock.monotonic() + delay
        while True:
            await self._sleep_until(sched, tick)
            started = self._clock.monotonic()
            async with self._slots:
                lag = self._clock.monotonic() - tick
                if self._on_lag is not None:
                    self._on_lag(max(0.0, lag))
                self.in_flight += 1
                sched.syncing = True
                try:
                    await self._sync(key)
                except asyncio.CancelledError:
                    raise
                except Exception:  # the sync function logs its own errors; never die here
                    log.exception("sync crashed; retrying next period", hpa=key)
                finally:
                    self.in_flight -= 1
                    sched.syncing = False
            if not self._running:
                return  # stopped while syncing: the sync finished, schedule no more
            # Fixed rate from the tick this sync served; skip ticks a slow sync overran.
            tick = max(tick, started) + self._period
            now = self._clock.monotonic()
            while tick < now:
                tick += self._period
