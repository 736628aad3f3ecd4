"""List-then-watch into a `Store`: client-go's Reflector, in asyncio.

The loop (``reflector.go: ListAndWatch`` and ``watchHandler``):

1. List (page by page) and reconcile the store with the result: new keys are adds,
   changed resourceVersions are updates, keys absent from the list are deletes (the
   deletions that happened while we were not watching). The first list asks for
   resourceVersion ``"0"`` (any cached state is fine); a relist after 410 Gone asks
   for ``""`` (a consistent read).
2. Watch from the list's resourceVersion with bookmarks. Every event and bookmark
   moves the resume point. When the stream ends (server timeout, dropped connection,
   inactivity) the next watch resumes from there: no relist.
3. 410 Gone (an ERROR event or a 410 status) → relist with ``""``.
4. Other errors → capped exponential backoff with jitter on the injected clock, then
   resume (watch from the last resourceVersion, or the list again if it never
   completed). A watch that ends at once without delivering anything counts as an
   error, so a server that keeps closing streams is not hammered.

Handlers are synchronous and must be cheap (enqueue a key, set a flag). Big lists
and event bursts yield to the loop every ``yield_every`` objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import structlog

from hpactl.cache.store import ProjectionError, Store, object_key, raw_identity
from hpactl.clock import Clock, RealClock
from hpactl.kube.errors import Gone, KubeError, RequestTimeout, error_from_status

__all__ = [
    "Backoff",
    "ListPage",
    "ListerWatcher",
    "Reflector",
    "ReflectorSink",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

_log = structlog.get_logger("hpactl.cache")


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list response: its items and the list's resourceVersion."""

    items: Sequence[Mapping[str, Any]]
    resource_version: str


class ListerWatcher(Protocol):
    """Where a reflector gets its data (client-go ``cache.ListerWatcher``).

    Errors are `hpactl.kube.errors` exceptions; a 410 must surface as `Gone`
    (``watch`` may also yield the raw ERROR event instead: the reflector handles both).
    """

    def list_pages(self, resource_version: str) -> AsyncIterator[ListPage]:
        """Pages of a (possibly chunked) list at `resource_version`."""
        ...

    def watch(self, resource_version: str) -> AsyncIterator[Mapping[str, Any]]:
        """Raw watch events (``{"type": ..., "object": {...}}``) from `resource_version`."""
        ...


class ReflectorSink(Protocol[T_contra]):
    """What the reflector reports to (the informer)."""

    def on_add(self, key: str, obj: T_contra | ProjectionError) -> None: ...

    def on_update(
        self, key: str, old: T_contra | ProjectionError, new: T_contra | ProjectionError
    ) -> None: ...

    def on_delete(self, key: str, obj: T_contra | ProjectionError) -> None: ...

    def on_resource_version(self, rv: str) -> None:
        """The store now reflects everything up to `rv` (after events, bookmarks, lists)."""
        ...

    def on_synced(self) -> None:
        """A full list has been ingested."""
        ...


class Backoff:
    """Capped exponential backoff with jitter (client-go's reflector: 0.8 s .. 30 s, x2).

    ``delay = min(cap, initial * factor**n * (1 + jitter * U[0, 1)))``.
    """

    __slots__ = ("_attempts", "_rng", "cap", "factor", "initial", "jitter")

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1 or jitter < 0:
            raise ValueError("invalid backoff parameters")
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._attempts = 0

    @property
    def attempts(self) -> int:
        return self._attempts

    def next_delay(self) -> float:
        base = min(self.cap, self.initial * self.factor**self._attempts)
        self._attempts += 1
        return min(self.cap, base * (1.0 + self.jitter * self._rng.random()))

    def reset(self) -> None:
        self._attempts = 0


class _ShortWatch(KubeError):
    """The server closed a watch at once, delivering nothing."""


class Reflector(Generic[T]):
    """Keeps a `Store` in step with the API for one resource type."""

    def __init__(
        self,
        name: str,
        lister_watcher: ListerWatcher,
        store: Store[T],
        sink: ReflectorSink[T],
        *,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        yield_every: int = 256,
        min_watch_seconds: float = 1.0,
        initial_list_resource_version: str = "0",
    ) -> None:
        if initial_list_resource_version not in ("0", ""):
            raise ValueError('the first list is at resourceVersion "0" (cache) or "" (consistent)')
        self.name = name
        self._initial_list_rv = initial_list_resource_version
        self._lw = lister_watcher
        self._store = store
        self._sink = sink
        self._clock: Clock = clock or RealClock()
        self._backoff = backoff or Backoff()
        self._yield_every = max(1, yield_every)
        # Real time: this guards against a misbehaving server, not simulated behaviour.
        self._min_watch_seconds = min_watch_seconds
        self.last_resource_version = ""
        self.lists = 0  # completed lists (observability, tests)
        self.watches = 0  # watch attempts
        self.last_error: BaseException | None = None

    async def run(self) -> None:
        """List and watch until cancelled."""
        need_list = True
        list_rv = self._initial_list_rv
        while True:
            try:
                if need_list:
                    await self._list(list_rv)
                    need_list = False
                    self._backoff.reset()
                await self._watch()
            except Gone as exc:
                # Our resourceVersion is too old: only a fresh, consistent list helps.
                _log.info("cache.relist", informer=self.name, reason=str(exc))
                self.last_error = exc
                if list_rv == "" and need_list:
                    # A relist itself was Gone (e.g. an expired continue token twice):
                    # do not spin.
                    await self._clock.sleep(self._backoff.next_delay())
                need_list = True
                list_rv = ""
            except (KubeError, OSError, ValueError) as exc:
                self.last_error = exc
                delay = self._backoff.next_delay()
                retry_after = getattr(exc, "retry_after", None)
                if isinstance(retry_after, int) and retry_after > delay:
                    delay = float(retry_after)  # the server asked us to wait (429, 503)
                _log.warning(
                    "cache.retry",
                    informer=self.name,
                    phase="list" if need_list else "watch",
                    error=str(exc) or type(exc).__name__,
                    error_type=type(exc).__name__,
                    delay=round(delay, 3),
                    resource_version=self.last_resource_version,
                )
                await self._clock.sleep(delay)
            except Exception as exc:
                # A bug or a shape we did not foresee: never let the informer die.
                # Start over from a consistent list once the backoff has passed.
                self.last_error = exc
                delay = self._backoff.next_delay()
                _log.exception("cache.unexpected_error", informer=self.name, delay=round(delay, 3))
                need_list = True
                list_rv = ""
                await self._clock.sleep(delay)

    # -- list -----------------------------------------------------------------------

    async def _list(self, list_rv: str) -> None:
        store = self._store
        sink = self._sink
        seen: set[str] = set()
        final_rv = ""
        n = 0
        async for page in self._lw.list_pages(list_rv):
            for raw in page.items:
                try:
                    ns, name, rv = raw_identity(raw)
                except ValueError as exc:
                    _log.warning("cache.unkeyable_object", informer=self.name, error=str(exc))
                    continue
                key = object_key(ns, name)
                seen.add(key)
                if rv and store.resource_version(key) == rv:
                    continue  # unchanged since we last saw it: skip the projection
                key, old, new = store.upsert(raw)
                if old is None:
                    sink.on_add(key, new)
                else:
                    sink.on_update(key, old, new)
                n += 1
                if n % self._yield_every == 0:
                    await asyncio.sleep(0)
            final_rv = page.resource_version or final_rv
        for key in sorted(set(store.keys()) - seen):
            old = store.delete(key)
            if old is not None:
                sink.on_delete(key, old)
        self.lists += 1
        self._set_rv(final_rv)
        _log.debug(
            "cache.listed",
            informer=self.name,
            objects=len(seen),
            changed=n,
            resource_version=final_rv,
        )
        sink.on_synced()

    # -- watch ----------------------------------------------------------------------

    async def _watch(self) -> None:
        self.watches += 1
        started = time.monotonic()
        delivered = 0
        stream = self._lw.watch(self.last_resource_version)
        try:
            async for event in stream:
                self._handle_event(event)
                delivered += 1
                if delivered == 1:
                    self._backoff.reset()  # the server is healthy again
                if delivered % self._yield_every == 0:
                    await asyncio.sleep(0)
        except RequestTimeout:
            # Nothing arrived for the inactivity bound: the stream may be dead. Resume.
            _log.debug("cache.watch_inactive", informer=self.name)
            return
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        if delivered == 0 and time.monotonic() - started < self._min_watch_seconds:
            raise _ShortWatch("very short watch: the server closed it before any event")

    def _handle_event(self, event: Mapping[str, Any]) -> None:
        etype = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            raise ValueError(f"watch event without an object: {str(event)[:200]}")
        if etype == "ERROR":
            raise error_from_status(obj)
        meta = obj.get("metadata")
        rv = str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""
        if etype == "BOOKMARK":
            self._set_rv(rv)
            return
        if etype in ("ADDED", "MODIFIED"):
            key, old, new = self._store.upsert(obj)
            if old is None:
                self._sink.on_add(key, new)
            else:
                self._sink.on_update(key, old, new)
        elif etype == "DELETED":
            ns, name, _ = raw_identity(obj)
            key = object_key(ns, name)
            gone = self._store.delete(key)
            if gone is not None:
                self._sink.on_delete(key, gone)
        else:
            raise ValueError(f"unknown watch event type {etype!r}")
        self._set_rv(rv)

    def _set_rv(self, rv: str) -> None:
        if rv:
            self.last_resource_version = rv
            self._sink.on_resource_version(rv)
