"""The periodic sync schedule: one dispatcher over a heap of due times, N workers.

As upstream's work queue with a fixed per-item interval and N workers: every HPA key
has one due time in a heap; one dispatcher task sleeps until the earliest, hands every
key that is due to a ready queue, and ``--concurrent-horizontal-pod-autoscaler-syncs``
worker tasks take keys from it and sync them. Keys due together run back to back, and
a key costs no task of its own between syncs (at 10,000 HPAs, per-key sleeping tasks
made each tick allocate several futures and kept the collector busy).

- Ticks are placed per namespace (:func:`tick_phase`): each namespace has a stable
  phase in the period (a hash of its name), and its HPAs tick inside a short slot
  right after it, at stable positions (a hash of the key), the slot
  ``SLOT_PER_HPA`` seconds wide per HPA of the namespace (at most half a period).
  The HPAs of a namespace read their pod metrics from one shared list
  (``hpactl.metrics.shared``): clustered, one list right before their decisions
  serves them all, so an HPA decides on metrics at most a slot old, not a period;
  the namespaces stay staggered over the period, and a large namespace's syncs are
  spread over its wider slot rather than bunched.
- A key's ticks are the times ``start + phase + k * period`` (its "grid"; ``start``:
  when the supervisor started, so two replicas, or a shadow beside a writer, do not
  tick in lockstep). Keys
  known when the supervisor starts (the informer's initial list) or taken over
  (``add_spread``) first sync at their next grid point, so ten thousand HPAs do not
  fire together. A key added while running (a new HPA) is synced at once, as upstream
  1.37 does; its next tick is the first grid point at least one period later (so
  once a gap between one and two periods, never less than one). The phase is fixed
  when the key is placed (a namespace growing does not move its placed keys).
- One key is never synced twice at once: a key is either waiting in the heap, queued,
  or being synced by exactly one worker.
- After a sync the next tick is the previous tick plus one period (fixed rate, so the
  placement holds); a sync that overran its period skips the missed ticks rather than
  bursting to catch up, and a sync off the grid (woken, new) returns to it at the
  first grid point one period or more after it.
- ``wake(key)`` brings the next sync forward to now (a spec change under the
  HPAGeneration gate); a key woken while queued or syncing is synced again as soon as
  that sync ends. ``remove(key)`` drops a pending tick (cancelling a sync in flight)
  and calls ``forget``.
- Per-key periods (KEP-6003, ``period_of``): each key's ticks are its own period
  apart, read after each sync (and at the first placement), so a changed period
  applies from the next tick on (at the first point of the new period's grid one new
  period or more after the last tick); ``reperiod(key)`` applies it to the tick
  already waiting (a shorter period brings it forward, never before now). Phases
  are anchored on one base (the default period) and taken modulo the key's period,
  so a namespace's HPAs at multiples of one another's periods still tick together.
- A failing sync is logged by the caller's sync function; whatever escapes is caught
  here and the key is retried on its next tick: a worker never dies of it.
- A sync waiting for a write token does not hold a worker (``release_slot``): before
  its first write the sync gives its slot back and a fresh worker takes the next key,
  while the sync goes on in its own task with only its writes left (scale, status,
  events, in that order). The writes still queue on the client's token bucket, so a
  burst takes as long as the QPS says, as upstream; but a 1,000-rescale burst no longer
  keeps the other HPAs from their ticks. The key stays "syncing" until the sync ends,
  so it is never synced twice at once; the N slots bound the syncs that are deciding
  (a sync that must decide again after a stale write takes a slot back first,
  ``reacquire_slot``).
- A sync that hangs holds one worker until it returns, so it delays no other key
  while a worker is free; N hung syncs would block every key. The controller bounds
  each API and metrics call with a timeout (``call_timeout``), so a sync cannot hang
  for long.

``observer`` (a :class:`QueueObserver`) sees the schedule as client-go's workqueue
metrics see upstream's HPA queue: a key handed to the ready queue is an add, the time
from its due time to a worker taking it is its queue duration, its sync is the work,
and putting it back for its next tick after a sync is a retry (upstream's
``AddRateLimited`` after every sync, counted as a retry by its delaying queue).
``queue_state()`` answers depth (keys due and waiting for a worker), the seconds of
syncs in flight, and the longest of them, read when scraped.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import zlib
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Protocol

import structlog

from hpactl.clock import Clock

SyncFn = Callable[[str], Awaitable[None]]
LagObserver = Callable[[float], None]
PeriodOf = Callable[[str], float]

log = structlog.get_logger("hpactl.scheduling")


class QueueObserver(Protocol):
    """Workqueue-style events of the schedule (see the module docstring)."""

    def added(self) -> None: ...

    def started(self, queued_seconds: float) -> None: ...

    def done(self, seconds: float) -> None: ...

    def requeued(self) -> None: ...


_IDLE, _WAITING, _QUEUED, _SYNCING = range(4)


class _Slot:
    """The decision slot a sync runs in: held until released for the write phase."""

    __slots__ = ("detached", "held", "sem", "sup")

    def __init__(self, sup: SyncSupervisor, sem: asyncio.Semaphore) -> None:
        self.sup = sup
        self.sem = sem
        self.held = False
        self.detached = False  # this worker was replaced and ends with its sync


_SLOT: ContextVar[_Slot | None] = ContextVar("hpactl_sync_slot", default=None)


def release_slot() -> None:
    """Give the current sync's worker slot back: only writes are left to do.

    A no-op outside a supervised sync (``sync_all``) and when already released.
    """
    slot = _SLOT.get()
    if slot is not None and slot.held:
        slot.sup._release(slot)


async def reacquire_slot() -> None:
    """Take a slot again before deciding once more (no-op if held or unsupervised)."""
    slot = _SLOT.get()
    if slot is not None and not slot.held:
        await slot.sem.acquire()
        slot.held = True


def spread_offset(key: str, period: float) -> float:
    """A stable offset in [0, period) for ``key``: the same on every replica and restart."""
    return (zlib.crc32(key.encode()) / 2**32) * period


#: Seconds of a namespace's slot per HPA of the namespace: 100 HPAs tick within 0.5 s.
SLOT_PER_HPA = 0.005

# Two times closer than this are the same grid point (ticks are sums of floats).
_EPS = 1e-6


def namespace_of(key: str) -> str:
    return key.partition("/")[0]


def slot_width(count: int, period: float) -> float:
    """How long a namespace of ``count`` HPAs takes to tick: wider when larger, at most P/2."""
    return min(period / 2, max(1, count) * SLOT_PER_HPA)


def tick_phase(key: str, period: float, base: float, count: int) -> float:
    """Where in each ``period`` ``key`` ticks, in [0, period): its namespace's phase
    (a stable hash of the name times ``base``) plus its place in the namespace's slot
    (``count`` HPAs wide, :func:`slot_width`)."""
    ns_phase = spread_offset(namespace_of(key), base)
    return (ns_phase + spread_offset(key, slot_width(count, period))) % period


def grid_ceil(t: float, phase: float, period: float) -> float:
    """The first time at or after ``t`` that is ``phase`` modulo ``period``."""
    d = (phase - t) % period
    return t if d >= period - _EPS else t + d


class _KeySchedule:
    __slots__ = (
        "due",
        "gen",
        "key",
        "on_grid",
        "period",
        "phase",
        "phase_period",
        "started",
        "state",
        "syncing_since",
        "tick",
        "woken",
        "worker",
    )

    def __init__(self, key: str) -> None:
        self.key = key
        self.state = _IDLE
        self.gen = 0  # bumped to invalidate the key's entry in the heap
        self.tick = 0.0  # the fixed-rate tick the next sync serves
        self.period = 0.0  # the period the waiting tick was computed with
        self.phase = 0.0  # where in each period the key ticks (tick_phase) ...
        self.phase_period = 0.0  # ... for this period (0: not placed yet)
        self.on_grid = False  # ``tick`` is a point of the key's grid
        self.started = 0.0  # when the sync being served was handed to the workers
        self.due = 0.0  # the due time it was handed over for
        self.syncing_since = 0.0  # when a worker started its sync
        self.woken = False  # sync again as soon as the current one ends
        self.worker: asyncio.Task[None] | None = None


_Entry = tuple[float, int, int, _KeySchedule]  # (due, arrival order, gen, schedule)


class SyncSupervisor:
    def __init__(
        self,
        clock: Clock,
        period: float,
        concurrency: int,
        sync: SyncFn,
        forget: Callable[[str], None] = lambda _key: None,
        on_lag: LagObserver | None = None,
        period_of: PeriodOf | None = None,
        observer: QueueObserver | None = None,
    ) -> None:
        if period <= 0:
            raise ValueError("sync period must be positive")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._clock = clock
        self._period = period
        self._concurrency = concurrency
        self._sync = sync
        self._forget = forget
        self._on_lag = on_lag
        self._period_of = period_of
        self._observer = observer
        self._keys: dict[str, _KeySchedule] = {}
        self._per_ns: dict[str, int] = {}  # keys per namespace, for the slot widths
        self._origin = 0.0  # when the supervisor started: every grid's origin
        self._running = False
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._next_due = float("inf")  # what the dispatcher sleeps until
        self._dispatcher: asyncio.Task[None] | None = None
        self._ready: asyncio.Queue[_KeySchedule] = asyncio.Queue()
        self._workers: set[asyncio.Task[None]] = set()
        # Workers whose sync released its slot: each ends with its sync.
        self._detached: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(concurrency)
        self._idle = asyncio.Event()
        self._idle.set()
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
        self._heap = []
        self._next_due = float("inf")
        self._ready = asyncio.Queue()
        self._slots = asyncio.Semaphore(self._concurrency)
        now = self._origin = self._clock.monotonic()
        for key in set(initial_keys) - set(self._keys):
            self._new_key(key)
        for key in sorted(self._keys):
            sched = self._keys[key]
            sched.phase_period = 0.0  # placed anew, with today's namespace sizes
            self._place(sched, now)
            self._push(sched, now if sched.woken else sched.tick)
            sched.woken = False
        for _ in range(self._concurrency):
            self._spawn_worker()
        self._restart_dispatcher()

    async def stop(self, grace: float | None = None) -> None:
        """Stop scheduling. With ``grace``, syncs in flight get that long to finish first."""
        self._running = False
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            self._dispatcher = None
        self._heap = []
        self._next_due = float("inf")
        if grace and self.in_flight:
            # Nothing new starts (workers drop what they take once stopped); a sync
            # in flight is waited for, bounded by ``grace``, so it can finish its writes.
            try:
                async with asyncio.timeout(grace):
                    await self._idle.wait()
            except TimeoutError:
                pass
        workers = [*self._workers, *self._detached]
        self._workers, self._detached = set(), set()
        for w in workers:
            w.cancel()
        if workers:
            await asyncio.gather(*workers, return_exceptions=True)
        for sched in self._keys.values():
            sched.state = _IDLE
            sched.gen += 1

    # -- informer-driven changes ----------------------------------------------------

    def add(self, key: str) -> None:
        if key in self._keys:
            return
        sched = self._new_key(key)
        if self._running:
            sched.tick = self._clock.monotonic()  # off the grid until its next tick
            self._push(sched, sched.tick)

    def wake(self, key: str) -> None:
        sched = self._keys.get(key)
        if sched is None:
            return
        if self._running and sched.state == _WAITING:
            self._push(sched, self._clock.monotonic())
        else:  # queued, syncing or not started: consumed at the next scheduling
            sched.woken = True

    def remove(self, key: str) -> None:
        sched = self._drop_key(key)
        if sched is not None:
            sched.gen += 1  # its heap entry, if any, is now stale
            if sched.state == _SYNCING and sched.worker is not None:
                # Cancel the sync in flight; its worker is replaced.
                self._cancel_sync(sched.worker)
            sched.state = _IDLE
        self._forget(key)

    def reperiod(self, key: str) -> None:
        """Apply a changed period to ``key``'s waiting tick (one period after the last)."""
        sched = self._keys.get(key)
        if sched is None or not self._running or sched.state != _WAITING or not sched.period:
            # Queued, syncing or due at once: the period is read when the sync ends.
            return
        period = self._key_period(key)
        if period == sched.period:
            return
        earliest = max(sched.tick - sched.period + period, self._clock.monotonic())
        sched.period = period
        sched.tick = grid_ceil(earliest, self._phase(sched, period), period)
        sched.on_grid = True
        self._push(sched, sched.tick)

    def keys(self) -> list[str]:
        return list(self._keys)

    def add_spread(self, keys: Iterable[str]) -> None:
        """Add ``keys`` with their first syncs at their next grid points, as at ``start``.

        For a shard just taken over: its HPAs were synced by another replica moments
        ago, and thousands of them must not fire at once.
        """
        now = self._clock.monotonic()
        fresh = [self._new_key(k) for k in sorted(set(keys)) if k not in self._keys]
        if self._running:
            for sched in fresh:  # placed once all are counted
                self._place(sched, now)
                self._push(sched, sched.tick)

    async def drain(self, keys: Iterable[str], grace: float | None = None) -> None:
        """Stop scheduling ``keys`` (a shard handed off or lost), without ``forget``.

        Pending ticks are dropped at once; syncs in flight get ``grace`` seconds to
        finish (so a rescale written is also recorded), then are cancelled.
        """
        busy: list[_KeySchedule] = []
        for key in set(keys):
            sched = self._drop_key(key)
            if sched is None:
                continue
            sched.gen += 1  # its heap entry, if any, is now stale
            if sched.state == _SYNCING and sched.worker is not None:
                busy.append(sched)
            else:
                sched.state = _IDLE
        if busy and grace:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    while any(s.state == _SYNCING for s in busy):
                        await asyncio.sleep(0.02)
        for sched in busy:
            if sched.state == _SYNCING and sched.worker is not None:
                self._cancel_sync(sched.worker)
            sched.state = _IDLE

    def queue_state(self) -> tuple[int, float, float]:
        """(keys due and waiting for a worker, seconds of syncs in flight, longest of them)."""
        now = self._clock.monotonic()
        depth = 0
        unfinished = longest = 0.0
        for sched in self._keys.values():
            if sched.state == _QUEUED:
                depth += 1
            elif sched.state == _SYNCING:
                running = max(0.0, now - sched.syncing_since)
                unfinished += running
                longest = max(longest, running)
        return depth, unfinished, longest

    def period(self, key: str) -> float:
        """The period ``key`` is scheduled with now."""
        sched = self._keys.get(key)
        return sched.period if sched is not None and sched.period else self._key_period(key)

    # -- internals ------------------------------------------------------------------

    def _new_key(self, key: str) -> _KeySchedule:
        sched = self._keys[key] = _KeySchedule(key)
        ns = namespace_of(key)
        self._per_ns[ns] = self._per_ns.get(ns, 0) + 1
        return sched

    def _drop_key(self, key: str) -> _KeySchedule | None:
        sched = self._keys.pop(key, None)
        if sched is not None:
            ns = namespace_of(key)
            left = self._per_ns.get(ns, 1) - 1
            if left > 0:
                self._per_ns[ns] = left
            else:
                self._per_ns.pop(ns, None)
        return sched

    def _phase(self, sched: _KeySchedule, period: float) -> float:
        """``sched``'s phase for ``period``: computed at its first tick on that period."""
        if sched.phase_period != period:
            count = self._per_ns.get(namespace_of(sched.key), 1)
            phase = tick_phase(sched.key, period, self._period, count)
            sched.phase = (self._origin + phase) % period
            sched.phase_period = period
        return sched.phase

    def _place(self, sched: _KeySchedule, now: float) -> None:
        """First tick of a key known at start or taken over: its next grid point."""
        sched.period = self._key_period(sched.key)
        sched.tick = grid_ceil(now, self._phase(sched, sched.period), sched.period)
        sched.on_grid = True

    def _key_period(self, key: str) -> float:
        if self._period_of is None:
            return self._period
        try:
            period = self._period_of(key)
        except Exception:  # a bad lookup must not stop the schedule
            log.exception("sync period lookup failed; using the default", hpa=key)
            return self._period
        return period if period > 0 else self._period

    def _push(self, sched: _KeySchedule, due: float) -> None:
        sched.gen += 1
        sched.state = _WAITING
        heapq.heappush(self._heap, (due, next(self._seq), sched.gen, sched))
        if due < self._next_due:
            self._restart_dispatcher()

    def _restart_dispatcher(self) -> None:
        # The dispatcher's only await is its sleep, so it can be replaced at any time
        # outside it; this happens when a key becomes due before the one it sleeps for
        # (an add or a wake), not on the steady path.
        if self._dispatcher is not None:
            self._dispatcher.cancel()
        self._next_due = self._heap[0][0] if self._heap else float("inf")
        self._dispatcher = asyncio.create_task(self._dispatch(), name="hpa-schedule")

    async def _dispatch(self) -> None:
        heap = self._heap
        observer = self._observer
        while True:
            now = self._clock.monotonic()
            while heap and heap[0][0] <= now:
                due, _, gen, sched = heapq.heappop(heap)
                if gen != sched.gen or self._keys.get(sched.key) is not sched:
                    continue  # rescheduled or removed since
                sched.state = _QUEUED
                sched.started = now
                sched.due = due
                self._ready.put_nowait(sched)
                if observer is not None:
                    observer.added()
            if heap:
                self._next_due = heap[0][0]
                await self._clock.sleep(self._next_due - now)
            else:
                self._next_due = float("inf")
                await asyncio.get_running_loop().create_future()  # until replaced

    def _spawn_worker(self) -> None:
        task = asyncio.create_task(self._work(), name="hpa-sync-worker")
        self._workers.add(task)

    def _cancel_sync(self, worker: asyncio.Task[None]) -> None:
        """Cancel a sync in flight; a worker still taking keys is replaced."""
        if worker in self._detached:
            self._detached.discard(worker)  # already replaced when it released its slot
        else:
            self._workers.discard(worker)
            if self._running:
                self._spawn_worker()
        worker.cancel()

    def _release(self, slot: _Slot) -> None:
        slot.held = False
        slot.sem.release()
        if slot.detached:
            return  # released once already (then reacquired): no second replacement
        me = asyncio.current_task()
        if me is None or me not in self._workers:
            return
        slot.detached = True
        self._workers.discard(me)
        self._detached.add(me)
        if self._running:
            self._spawn_worker()  # takes the next key while this sync writes

    async def _work(self) -> None:
        ready = self._ready
        slots = self._slots
        me = asyncio.current_task()
        slot = _Slot(self, slots)
        _SLOT.set(slot)  # this task's context: the sync below sees it
        while True:
            sched = await ready.get()
            if (
                not self._running
                or sched.state != _QUEUED
                or self._keys.get(sched.key) is not sched
            ):
                continue  # stopped, or removed while queued
            await slots.acquire()
            if (
                not self._running
                or sched.state != _QUEUED
                or self._keys.get(sched.key) is not sched
            ):
                slots.release()
                continue  # stopped, or removed while waiting for a slot
            slot.held = True
            sched.state = _SYNCING
            sched.worker = me
            began = sched.syncing_since = self._clock.monotonic()
            if self._on_lag is not None:
                self._on_lag(max(0.0, began - sched.tick))
            observer = self._observer
            if observer is not None:
                observer.started(max(0.0, began - sched.due))
            self.in_flight += 1
            self._idle.clear()
            try:
                await self._sync(sched.key)
            except Exception:  # the sync function logs its own errors; never die here
                log.exception("sync crashed; retrying next period", hpa=sched.key)
            finally:
                if slot.held:
                    slot.held = False
                    slots.release()
                self.in_flight -= 1
                if self.in_flight == 0:
                    self._idle.set()
                if observer is not None:
                    observer.done(max(0.0, self._clock.monotonic() - began))
                sched.worker = None
                if sched.state == _SYNCING:
                    sched.state = _IDLE
            if self._running and self._keys.get(sched.key) is sched:
                self._next_tick(sched, observer)
            # else: stopped while syncing, or removed: schedule no more
            if slot.detached:
                if me is not None:
                    self._detached.discard(me)
                return  # a fresh worker took this one's place

    def _next_tick(self, sched: _KeySchedule, observer: QueueObserver | None) -> None:
        """Put ``sched`` back in the heap for its next tick after a sync."""
        # Fixed rate from the tick this sync served (a key off its grid, just added:
        # from when it was handed over); skip ticks a slow sync overran.
        period = self._key_period(sched.key)
        tick = (sched.tick if sched.on_grid else max(sched.tick, sched.started)) + period
        now = self._clock.monotonic()
        if tick < now:  # skip whole periods a slow sync overran
            tick += math.ceil((now - tick) / period) * period
        # On the key's grid (for a new key, or a changed period: the first point after).
        tick = grid_ceil(tick, self._phase(sched, period), period)
        sched.on_grid = True
        sched.period = period
        sched.tick = tick
        if observer is not None:
            observer.requeued()
        if sched.woken:
            sched.woken = False
            self._push(sched, now)
        else:
            self._push(sched, tick)
