"""Informer = reflector + store + handlers (client-go ``sharedIndexInformer``).

One informer per resource type, shared by every consumer. Consumers register
handlers (synchronous, cheap: enqueue a key) and read through the store or listers.

``has_synced`` / ``wait_synced()`` gate workers and ``/readyz``. ``wait_for_rv(rv)``
is the barrier ``hpactl simulate`` uses: it returns once the store reflects every
change up to resourceVersion ``rv`` for this resource type (watch events deliver
them in order, and bookmarks move an idle informer forward).

``has_synced`` stays true once the first list is in. ``relist()`` forces a consistent
relist and ``wait_for_resync()`` waits for a list started after it (the controller
does both when it re-acquires the lease: what it cached while not leading may be
stale). When the server's resourceVersions go back (an etcd restore, see
`hpactl.cache.reflector`) the relist resets ``observed_rv`` to the server's lower
number and releases every ``wait_for_rv`` waiter: the numbers they waited for
belong to a history the server no longer has. ``connected(grace)`` tells whether
list and watch get through.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog

from hpactl.cache.reflector import Backoff, ListerWatcher, Reflector
from hpactl.cache.store import IndexFunc, Projection, ProjectionError, Store
from hpactl.clock import Clock, RealClock

__all__ = [
    "HandlerRegistration",
    "Informer",
    "InformerStopped",
    "OnAdd",
    "OnDelete",
    "OnUpdate",
    "parse_resource_version",
]

T = TypeVar("T")

_log = structlog.get_logger("hpactl.cache")

OnAdd = Callable[[str, Any], None]
"""on_add(key, obj); obj is the projection or a `ProjectionError`."""
OnUpdate = Callable[[str, Any, Any], None]
"""on_update(key, old, new)."""
OnDelete = Callable[[str, Any], None]
"""on_delete(key, last known obj)."""


class InformerStopped(RuntimeError):
    """The informer stopped while someone was waiting on it."""


@dataclass(frozen=True, slots=True, eq=False)
class HandlerRegistration:
    """A registered set of handlers (pass it to `Informer.remove_handler`)."""

    on_add: OnAdd | None
    on_update: OnUpdate | None
    on_delete: OnDelete | None


def parse_resource_version(rv: str | int) -> int | None:
    """resourceVersion as an int (etcd revisions are), or None if it is not one."""
    if isinstance(rv, int):
        return rv
    try:
        return int(rv)
    except ValueError:
        return None


class _Dispatch(Generic[T]):
    """The reflector's sink: fans events out to the informer's handlers."""

    __slots__ = ("_informer",)

    def __init__(self, informer: Informer[T]) -> None:
        self._informer = informer

    def on_add(self, key: str, obj: T | ProjectionError) -> None:
        for h in self._informer._handlers:
            if h.on_add is not None:
                self._informer._call(h.on_add, key, obj)

    def on_update(self, key: str, old: T | ProjectionError, new: T | ProjectionError) -> None:
        for h in self._informer._handlers:
            if h.on_update is not None:
                self._informer._call(h.on_update, key, old, new)

    def on_delete(self, key: str, obj: T | ProjectionError) -> None:
        for h in self._informer._handlers:
            if h.on_delete is not None:
                self._informer._call(h.on_delete, key, obj)

    def on_resource_version(self, rv: str) -> None:
        self._informer._observe(rv)

    def on_resource_version_reset(self, rv: str) -> None:
        self._informer._reset_observed(rv)

    def on_synced(self) -> None:
        self._informer._mark_synced()


class Informer(Generic[T]):
    """A shared informer for one resource type.

    `projection` turns a raw object into what the store keeps; `indexers` add named
    indexes next to the built-in ``namespace`` one. `clock` drives the error backoff
    and the optional resync (pass a real clock when the API is real network I/O and
    the controller runs on a virtual clock, as ``simulate`` does).
    """

    def __init__(
        self,
        name: str,
        lister_watcher: ListerWatcher,
        projection: Projection[T],
        *,
        indexers: Mapping[str, IndexFunc[T]] | None = None,
        keep_raw: bool = False,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        resync_period: float | None = None,
        yield_every: int = 256,
        min_watch_seconds: float = 1.0,
        initial_list_resource_version: str = "0",
    ) -> None:
        self.name = name
        self.store: Store[T] = Store(projection, indexers, keep_raw=keep_raw)
        self._clock: Clock = clock or RealClock()
        self._handlers: tuple[HandlerRegistration, ...] = ()
        self.reflector: Reflector[T] = Reflector(
            name,
            lister_watcher,
            self.store,
            _Dispatch(self),
            clock=self._clock,
            backoff=backoff,
            yield_every=yield_every,
            min_watch_seconds=min_watch_seconds,
            initial_list_resource_version=initial_list_resource_version,
        )
        self._resync_period = resync_period
        self._yield_every = max(1, yield_every)
        self._synced = asyncio.Event()
        self._observed_rv = 0
        self._rv_seq = itertools.count()
        self._rv_waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._resync_target = 0  # the reflector's list number relist() asked for
        self._resync_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    # -- state ----------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def resource_version(self) -> str:
        """The last resourceVersion the store reflects ("" before the first list)."""
        return self.reflector.last_resource_version

    @property
    def observed_rv(self) -> int:
        """`resource_version` as an int (0 before the first list)."""
        return self._observed_rv

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def resync_pending(self) -> bool:
        """A `relist()` has been asked for and its list has not completed yet."""
        return self.reflector.completed_list < self._resync_target

    def connected(self, grace: float = 0.0) -> tuple[bool, str]:
        """(True, "") when the cache has synced and its list and watch get through:
        no error since the last completed list or watch event, or errors for less
        than `grace` seconds (on the informer's clock); else (False, why)."""
        refl = self.reflector
        err = refl.last_error
        why = (str(err) or type(err).__name__) if err is not None else ""
        if not self.has_synced:
            return False, f"not synced yet{': ' + why if why else ''}"
        since = refl.failing_since
        if since is None or self._clock.monotonic() - since < grace:
            return True, ""
        return False, why or "list/watch failing"

    # -- handlers -------------------------------------------------------------------

    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
    ) -> HandlerRegistration:
        """Register handlers; objects already in the store are replayed to `on_add`.

        Handlers run synchronously inside the informer: keep them cheap, never await.
        An exception in a handler is logged and does not affect the informer.
        """
        reg = HandlerRegistration(on_add, on_update, on_delete)
        self._handlers = (*self._handlers, reg)
        if on_add is not None:
            for key, entry in self.store.items():
                self._call(on_add, key, entry)
        return reg

    def remove_handler(self, reg: HandlerRegistration) -> None:
        self._handlers = tuple(h for h in self._handlers if h is not reg)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            _log.exception("cache.handler_failed", informer=self.name, key=args[0])

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Start `run()` as a task (idempotent)."""
        if self._task is None or self._task.done():
            self._stopped = False
            self._task = asyncio.create_task(self.run(), name=f"informer:{self.name}")
        return self._task

    async def run(self) -> None:
        """Reflect (and resync) until cancelled."""
        resync: asyncio.Task[None] | None = None
        if self._resync_period:
            resync = asyncio.create_task(self._resync_loop(self._resync_period))
        try:
            await self.reflector.run()
        finally:
            if resync is not None:
                resync.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resync

    def relist(self) -> int:
        """Force a consistent relist (the current watch ends); `wait_for_resync` waits
        for it. Returns the reflector's number of that list (`reflector.completed_list`
        reaches it)."""
        target = self.reflector.request_relist()
        self._resync_target = max(self._resync_target, target)
        _log.info("cache.relist_requested", informer=self.name)
        return target

    async def wait_for_resync(self, timeout: float | None = None) -> None:
        """Wait until a list started after the last `relist()` has completed (at once
        if none is pending). TimeoutError after `timeout` real seconds;
        `InformerStopped` if the informer stops first."""
        target = self._resync_target
        if self.reflector.completed_list >= target:
            return
        if self._stopped:
            raise InformerStopped(f"informer {self.name} is stopped")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._resync_waiters.append((target, fut))
        try:
            async with asyncio.timeout(timeout):
                await fut
        finally:
            if not fut.done():
                fut.cancel()
            self._resync_waiters = [w for w in self._resync_waiters if w[1] is not fut]

    async def stop(self) -> None:
        """Cancel the informer and wait for it; waiters on it get `InformerStopped`."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif task is not None and task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                _log.error("cache.informer_crashed", informer=self.name, error=repr(exc))
        waiters = [fut for _, _, fut in self._rv_waiters] + [f for _, f in self._resync_waiters]
        for fut in waiters:
            if not fut.done():
                fut.set_exception(InformerStopped(f"informer {self.name} stopped"))
        self._rv_waiters.clear()
        self._resync_waiters.clear()

    async def _resync_loop(self, period: float) -> None:
        while True:
            await self._clock.sleep(period)
            if self.has_synced:
                await self.resync()

    async def resync(self) -> None:
        """Deliver every stored object to `on_update(key, obj, obj)` (client-go resync)."""
        for n, (key, entry) in enumerate(self.store.items(), 1):
            if key not in self.store:
                continue  # deleted while we were yielding
            for h in self._handlers:
                if h.on_update is not None:
                    self._call(h.on_update, key, entry, entry)
            if n % self._yield_every == 0:
                await asyncio.sleep(0)

    # -- barriers -------------------------------------------------------------------

    async def wait_synced(self, timeout: float | None = None) -> None:
        """Wait for the first full list (TimeoutError after `timeout` real seconds)."""
        if self._synced.is_set():
            return
        async with asyncio.timeout(timeout):
            await self._synced.wait()

    async def wait_for_rv(self, rv: int | str, timeout: float | None = None) -> None:
        """Wait until the store reflects resourceVersion >= `rv`.

        ValueError if `rv` is not an integer; TimeoutError after `timeout` real seconds;
        `InformerStopped` if the informer stops first.
        """
        target = parse_resource_version(rv)
        if target is None:
            raise ValueError(f"resourceVersion {rv!r} is not an integer")
        if self._observed_rv >= target:
            return
        if self._stopped:
            raise InformerStopped(f"informer {self.name} is stopped")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._rv_waiters, (target, next(self._rv_seq), fut))
        try:
            async with asyncio.timeout(timeout):
                await fut
        finally:
            if not fut.done():
                fut.cancel()

    def _observe(self, rv: str) -> None:
        value = parse_resource_version(rv)
        if value is None or value <= self._observed_rv:
            return
        self._observed_rv = value
        waiters = self._rv_waiters
        while waiters and waiters[0][0] <= value:
            _, _, fut = heapq.heappop(waiters)
            if not fut.done():
                fut.set_result(None)

    def _reset_observed(self, rv: str) -> None:
        """The server's resourceVersions went back and the store was replaced at `rv`."""
        old = self._observed_rv
        self._observed_rv = parse_resource_version(rv) or 0
        waiters, self._rv_waiters = self._rv_waiters, []
        for _, _, fut in waiters:
            if not fut.done():
                fut.set_result(None)
        _log.info(
            "cache.observed_rv_reset",
            informer=self.name,
            previous=old,
            resource_version=self._observed_rv,
            released_waiters=len(waiters),
        )

    def _mark_synced(self) -> None:
        done = self.reflector.completed_list
        if self._resync_waiters:
            keep: list[tuple[int, asyncio.Future[None]]] = []
            for target, fut in self._resync_waiters:
                if fut.done():
                    continue
                if done >= target:
                    fut.set_result(None)
                else:
                    keep.append((target, fut))
            self._resync_waiters = keep
        if not self._synced.is_set():
            _log.info(
                "cache.synced",
                informer=self.name,
                objects=len(self.store),
                resource_version=self.resource_version,
            )
            self._synced.set()
