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
3. 410 Gone (an ERROR event or a 410 status), or a 504 whose cause is
   ``ResourceVersionTooLarge`` (client-go's ``isTooLargeResourceVersionError``: the
   server is behind our resourceVersion) → relist with ``""``.
4. Other errors → capped exponential backoff with jitter on the injected clock, then
   resume (watch from the last resourceVersion, or the list again if it never
   completed). A watch that ends at once without delivering anything counts as an
   error, so a server that keeps closing streams is not hammered.
5. ``request_relist()`` ends the current watch and lists again with ``""``
   (``Informer.relist``: after re-acquiring the lease).

resourceVersions going backwards. Kubernetes calls resourceVersions opaque, and this
is the one place hpactl compares them: kube-apiserver's are etcd revisions, which only
go back when etcd is restored from a backup (or replaced by an empty one). A watch
resumed from our resourceVersion is then silently held by the server (its watch cache
sends nothing at or below that number, bookmarks included) while the cache keeps
objects the server no longer has. So, when both parse as integers:

- before resuming a watch after a stream ended (timeout, drop, error), the reflector
  asks the server for its current resourceVersion (a ``limit=1`` consistent list,
  `ListerWatcher.current_resource_version`, when the lister-watcher has it);
- every watch event and bookmark is checked as well;

and a resourceVersion lower than the last one delivered logs one warning
``cache.resource_version_regressed`` (both numbers) and relists with ``""``. A
relist whose resourceVersion is lower replaces the store entirely (every object
re-projected and redelivered, vanished ones deleted: resourceVersions after a
restore are reused, so "same resourceVersion" no longer means "unchanged") and resets
the sink's resourceVersion (`ReflectorSink.on_resource_version_reset`).

Streaming lists (client-go's ``watchList``, KEP 3157). When the lister-watcher has
``watch_list`` (and ``watch_list_enabled``), every list is a watch with
``sendInitialEvents=true``, ``resourceVersionMatch=NotOlderThan`` and bookmarks, at
resourceVersion ``""`` (a consistent snapshot, as client-go's first watch-list): the
objects arrive as ADDED events, decoded one line at a time, and are reconciled with
the store exactly as a list is; the BOOKMARK annotated ``k8s.io/initial-events-end``
carries the list's resourceVersion, and the same stream then goes on as the watch
(as client-go's). A server without the protocol (the ``WatchList`` gate off: 400
or 422 on the request; before 1.27, one that ignores the parameters and sends
MODIFIED, DELETED or a plain BOOKMARK before the end bookmark) is remembered, and lists are paged LISTs from
then on. Any other failure of a watch-list is followed, in the same attempt, by a
LIST (client-go: "making progress is better than deadlocking"). A resourceVersion that went back is only known at the end bookmark, after
unchanged objects were skipped by resourceVersion, so it restarts the stream with
every object re-projected.

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
from hpactl.kube.errors import (
    ApiError,
    ConnectFailed,
    Gone,
    KubeError,
    RequestTimeout,
    error_from_status,
)

__all__ = [
    "Backoff",
    "ListPage",
    "ListerWatcher",
    "Reflector",
    "ReflectorSink",
    "is_too_large_resource_version",
]

T = TypeVar("T")

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# Consecutive watch-lists that ended before their end bookmark, after which the
# server is taken not to speak the protocol.
_INCOMPLETE_WATCH_LISTS = 3
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

    # Optional (the reflector looks it up with getattr):
    #   async def current_resource_version(self) -> str
    # the server's current resourceVersion for the collection (a consistent read),
    # asked before a watch is resumed, to notice resourceVersions that went back.


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

    def on_resource_version_reset(self, rv: str) -> None:
        """The server's resourceVersions went back: a full relist at `rv` (lower than
        anything reported before) replaced the store."""
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


class _WatchListUnsupported(Exception):
    """The server does not serve streaming lists: use LIST."""


class _Regressed(Exception):
    """The server answered with a resourceVersion lower than the last one delivered."""

    def __init__(self, last: int, current: int, phase: str) -> None:
        super().__init__(f"resourceVersion went back from {last} to {current} ({phase})")
        self.last = last
        self.current = current
        self.phase = phase


def _rv_int(rv: str) -> int | None:
    try:
        return int(rv)
    except ValueError:
        return None


def _event_parts(event: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
    """A watch event's type and object; an ERROR event raises the error it carries."""
    etype = event.get("type")
    obj = event.get("object")
    if not isinstance(obj, Mapping):
        raise ValueError(f"watch event without an object: {str(event)[:200]}")
    if etype == "ERROR":
        raise error_from_status(obj)
    return etype, obj


async def _close(stream: Any) -> None:
    """Close a watch stream (an async generator, or anything with ``aclose``), quietly:
    it is being abandoned, and a failure to close it changes nothing."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


def is_too_large_resource_version(exc: BaseException) -> bool:
    """client-go's ``isTooLargeResourceVersionError``: the server has not reached the
    resourceVersion asked for (cause ``ResourceVersionTooLarge``, or a 504 Timeout
    saying "Too large resource version" as servers before 1.19 did)."""
    if not isinstance(exc, ApiError):
        return False
    status = exc.status or {}
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    messages: list[str] = []
    if isinstance(causes, list):
        for cause in causes:
            if not isinstance(cause, Mapping):
                continue
            if cause.get("reason") == "ResourceVersionTooLarge":
                return True
            messages.append(str(cause.get("message") or ""))
    if exc.code != 504 and exc.reason != "Timeout":
        return False
    return "Too large resource version" in messages or "Too large resource version" in str(
        exc.message
    )


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
        self.probes = 0  # current_resource_version asks before resuming a watch
        self.regressions = 0  # resourceVersions seen going back
        self.last_error: BaseException | None = None
        self.lists_started = 0
        # The number (in lists_started) of the last list that completed.
        self.completed_list = 0
        self.last_list_seconds = 0.0  # how long the last completed list took (real time)
        # Since when (on `clock`) list/watch have failed without a list or watch event
        # getting through since; None while healthy.
        self.failing_since: float | None = None
        # True once a watch-list completed, False once the server proved it has none.
        self.watch_list_supported: bool | None = None
        self.stream_lists = 0  # lists done as watch-lists
        self.watch_list_fallbacks = 0  # watch-lists that failed, replaced by a LIST
        self._incomplete_streams = 0
        # A watch-list's stream after its end bookmark: the next watch reads on from it.
        self._carry: AsyncIterator[Mapping[str, Any]] | None = None
        self._relist_requested = asyncio.Event()
        self._regression_pending = False
        self._too_large_streak = 0

    def request_relist(self) -> int:
        """End the current watch and list again with ``""``; the number (compare with
        `completed_list`) of the list that will satisfy the request."""
        self._relist_requested.set()
        return self.lists_started + 1

    def _ok(self) -> None:
        if self.failing_since is not None:
            # One line when a failing streak ends (its start is the one `cache.retry`
            # warning; the retries in between log at debug).
            _log.info(
                "cache.recovered",
                informer=self.name,
                failed_for=round(self._clock.monotonic() - self.failing_since, 3),
            )
        self.failing_since = None

    def _fail(self, exc: BaseException) -> None:
        self.last_error = exc
        if self.failing_since is None:
            self.failing_since = self._clock.monotonic()

    async def run(self) -> None:
        """List and watch until cancelled."""
        try:
            await self._run()
        finally:
            await self._drop_carry()

    async def _drop_carry(self) -> None:
        stream, self._carry = self._carry, None
        await _close(stream)

    async def _run(self) -> None:
        need_list = True
        list_rv = self._initial_list_rv
        resuming = False  # the next watch follows a stream that ended: probe first
        while True:
            try:
                if need_list:
                    await self._list_or_stream(list_rv)
                    need_list = False
                    resuming = False
                    self._backoff.reset()
                elif resuming:
                    await self._probe()
                resuming = True
                if await self._watch_or_relist():
                    _log.info("cache.relist", informer=self.name, reason="requested")
                    need_list = True
                    list_rv = ""
            except _Regressed as exc:
                self.regressions += 1
                self._regression_pending = True
                _log.warning(
                    "cache.resource_version_regressed",
                    informer=self.name,
                    last_resource_version=exc.last,
                    resource_version=exc.current,
                    seen_in=exc.phase,
                )
                need_list = True
                list_rv = ""
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
                if is_too_large_resource_version(exc) and not need_list:
                    # The server is behind our resourceVersion (a lagging apiserver, or
                    # a restored etcd): a consistent list tells which.
                    _log.info("cache.relist", informer=self.name, reason=str(exc))
                    self.last_error = exc
                    self._too_large_streak += 1
                    if self._too_large_streak > 1:
                        # Again, with no event in between: do not spin.
                        await self._clock.sleep(self._backoff.next_delay())
                    need_list = True
                    list_rv = ""
                    continue
                first = self.failing_since is None
                self._fail(exc)
                if isinstance(exc, ConnectFailed | ConnectionRefusedError):
                    # No connection at all: the server that answers next may be
                    # another one (restarted, restored from a backup, emptied), whose
                    # resourceVersions need not be comparable with ours. Relist rather
                    # than resume. A stream cut mid-way (a load balancer closing an
                    # idle watch) is resumed, as client-go does: at 30,000 pods a
                    # relist per dropped connection would cost more than it proves.
                    need_list = True
                    list_rv = ""
                delay = self._backoff.next_delay()
                retry_after = getattr(exc, "retry_after", None)
                if isinstance(retry_after, int) and retry_after > delay:
                    delay = float(retry_after)  # the server asked us to wait (429, 503)
                # A warning when the failures start, debug for each retry after it
                # (a minute of refused connections is one line per informer, not 30).
                (_log.warning if first else _log.debug)(
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
                self._fail(exc)
                delay = self._backoff.next_delay()
                _log.exception("cache.unexpected_error", informer=self.name, delay=round(delay, 3))
                need_list = True
                list_rv = ""
                await self._clock.sleep(delay)

    # -- resourceVersions going back --------------------------------------------------

    def _check_regression(self, rv: str, phase: str) -> None:
        if not rv or not self.last_resource_version:
            return
        current = _rv_int(rv)
        last = _rv_int(self.last_resource_version)
        if current is not None and last is not None and current < last:
            raise _Regressed(last, current, phase)

    async def _probe(self) -> None:
        ask = getattr(self._lw, "current_resource_version", None)
        if ask is None:
            return
        self.probes += 1
        rv = await ask()
        self._check_regression(str(rv or ""), "probe")

    # -- list -----------------------------------------------------------------------

    async def _list(self, list_rv: str) -> None:
        number, started = self._begin_list()
        seen: set[str] = set()
        final_rv = ""
        n = 0
        first = True
        # After a regression every object is re-projected: resourceVersions are being
        # reused, so an equal one does not mean an unchanged object.
        full = self._regression_pending
        regressed = False
        async for page in self._lw.list_pages(list_rv):
            if first:
                first = False
                try:
                    self._check_regression(page.resource_version, "list")
                except _Regressed as exc:
                    regressed = full = True
                    if not self._regression_pending:
                        self.regressions += 1
                        _log.warning(
                            "cache.resource_version_regressed",
                            informer=self.name,
                            last_resource_version=exc.last,
                            resource_version=exc.current,
                            seen_in="list",
                        )
            for raw in page.items:
                if not self._apply_listed(raw, seen, full):
                    continue
                n += 1
                if n % self._yield_every == 0:
                    await asyncio.sleep(0)
            final_rv = page.resource_version or final_rv
        self._finish_list(number, started, seen, n, final_rv, regressed)

    def _begin_list(self) -> tuple[int, float]:
        """Count a list (of either kind) as started; it satisfies every relist request so far."""
        self.lists_started += 1
        self._relist_requested.clear()
        return self.lists_started, time.monotonic()

    def _apply_listed(self, raw: Mapping[str, Any], seen: set[str], full: bool) -> bool:
        """Store one object a list returned and tell the sink; False if skipped.

        Skipped: an object without a name (logged), or one whose resourceVersion is the
        stored one (unchanged, so not re-projected) unless ``full`` (after a regression).
        """
        try:
            ns, name, rv = raw_identity(raw)
        except ValueError as exc:
            _log.warning("cache.unkeyable_object", informer=self.name, error=str(exc))
            return False
        key = object_key(ns, name)
        seen.add(key)
        if not full and rv and self._store.resource_version(key) == rv:
            return False
        key, old, new = self._store.upsert(raw)
        if old is None:
            self._sink.on_add(key, new)
        else:
            self._sink.on_update(key, old, new)
        return True

    def _finish_list(
        self, number: int, started: float, seen: set[str], n: int, final_rv: str, regressed: bool
    ) -> None:
        """Delete what the list did not have, then report the list's resourceVersion."""
        store = self._store
        sink = self._sink
        deleted = 0
        for key in sorted(set(store.keys()) - seen):
            old = store.delete(key)
            if old is not None:
                sink.on_delete(key, old)
                deleted += 1
        self.lists += 1
        self.completed_list = number
        self.last_list_seconds = time.monotonic() - started
        self._ok()
        after_regression = self._regression_pending or regressed
        self._regression_pending = False
        if regressed:
            self.last_resource_version = final_rv
            sink.on_resource_version_reset(final_rv)
        else:
            self._set_rv(final_rv)
        if after_regression:
            _log.info(
                "cache.relisted_after_regression",
                informer=self.name,
                objects=len(seen),
                deleted=deleted,
                resource_version=final_rv,
                seconds=round(self.last_list_seconds, 4),
            )
        _log.debug(
            "cache.listed",
            informer=self.name,
            objects=len(seen),
            changed=n,
            deleted=deleted,
            resource_version=final_rv,
            seconds=round(self.last_list_seconds, 4),
        )
        sink.on_synced()

    # -- streaming list (watch-list) ---------------------------------------------------

    async def _list_or_stream(self, list_rv: str) -> None:
        await self._drop_carry()
        open_stream = getattr(self._lw, "watch_list", None)
        if (
            open_stream is not None
            and getattr(self._lw, "watch_list_enabled", True)
            and self.watch_list_supported is not False
        ):
            try:
                await self._stream_list(open_stream)
                return
            except _WatchListUnsupported as exc:
                self.watch_list_supported = False
                _log.info("cache.watch_list_unsupported", informer=self.name, reason=str(exc))
            except (KubeError, OSError) as exc:
                # As client-go: "making progress is better than deadlocking". This list
                # is a LIST (a server refusing watches may still serve lists); the
                # next one tries the stream again.
                self.watch_list_fallbacks += 1
                _log.info(
                    "cache.watch_list_failed",
                    informer=self.name,
                    error=str(exc) or type(exc).__name__,
                    error_type=type(exc).__name__,
                )
        await self._list(list_rv)

    async def _stream_list(self, open_stream: Any) -> None:
        number, started = self._begin_list()
        seen: set[str] = set()
        full = self._regression_pending
        n = 0
        count = 0
        end_rv: str | None = None
        regressed = False
        # Always a consistent snapshot (client-go's first watch-list, and its relists).
        stream = open_stream("")
        keep = False
        try:
            async for event in stream:
                etype, obj = _event_parts(event)
                if etype == "BOOKMARK":
                    meta = obj.get("metadata")
                    if isinstance(meta, Mapping):
                        notes = meta.get("annotations")
                        if isinstance(notes, Mapping) and notes.get(INITIAL_EVENTS_END) == "true":
                            end_rv = str(meta.get("resourceVersion") or "")
                            break
                    # A watch-list server sends no bookmark before the end of the
                    # initial events; a server older than 1.27 ignores the parameters
                    # and sends its periodic ones.
                    raise _WatchListUnsupported(f"a bookmark before {INITIAL_EVENTS_END}")
                if etype != "ADDED":
                    # Changes before the end of the initial events: a plain watch from
                    # a server that ignored sendInitialEvents.
                    raise _WatchListUnsupported(f"{etype} event before {INITIAL_EVENTS_END}")
                count += 1
                if count % self._yield_every == 0:
                    await asyncio.sleep(0)
                if self._apply_listed(obj, seen, full):
                    n += 1
            if end_rv is not None:
                self._incomplete_streams = 0
                try:
                    self._check_regression(end_rv, "list")
                except _Regressed:
                    if not full:
                        raise  # objects were skipped by a resourceVersion now reused: again
                    regressed = True
                keep = True
        except ApiError as exc:
            if count == 0 and exc.code in (400, 422):
                # The WatchList gate is off (sendInitialEvents is forbidden), or an
                # older server rejects the parameters.
                raise _WatchListUnsupported(str(exc)) from exc
            raise
        finally:
            if not keep:
                await _close(stream)
        if end_rv is None:
            self._incomplete_streams += 1
            if count and self._incomplete_streams >= _INCOMPLETE_WATCH_LISTS:
                raise _WatchListUnsupported(f"no {INITIAL_EVENTS_END} bookmark")
            raise _ShortWatch(f"watch-list ended before its {INITIAL_EVENTS_END} bookmark")
        self._carry = stream
        self.watch_list_supported = True
        self.stream_lists += 1
        self._finish_list(number, started, seen, n, end_rv, regressed)

    # -- watch ----------------------------------------------------------------------

    async def _watch_or_relist(self) -> bool:
        """Watch until the stream ends (False) or a relist is requested (True)."""
        if self._relist_requested.is_set():
            return True
        watch = asyncio.ensure_future(self._watch())
        relist = asyncio.ensure_future(self._relist_requested.wait())
        try:
            await asyncio.wait((watch, relist), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watch, relist):
                if not task.done():
                    task.cancel()
            await asyncio.gather(watch, relist, return_exceptions=True)
        if not watch.cancelled():
            exc = watch.exception()
            if exc is not None:
                raise exc
        return self._relist_requested.is_set()

    async def _watch(self) -> None:
        self.watches += 1
        started = time.monotonic()
        delivered = 0
        stream = self._carry or self._lw.watch(self.last_resource_version)
        self._carry = None
        try:
            async for event in stream:
                self._handle_event(event)
                delivered += 1
                if delivered == 1:
                    self._backoff.reset()  # the server is healthy again
                    self._too_large_streak = 0
                    self._ok()
                if delivered % self._yield_every == 0:
                    await asyncio.sleep(0)
        except RequestTimeout:
            # Nothing arrived for the inactivity bound: the stream may be dead. Resume.
            _log.debug("cache.watch_inactive", informer=self.name)
            return
        finally:
            await _close(stream)
        if delivered == 0 and time.monotonic() - started < self._min_watch_seconds:
            raise _ShortWatch("very short watch: the server closed it before any event")

    def _handle_event(self, event: Mapping[str, Any]) -> None:
        etype, obj = _event_parts(event)
        meta = obj.get("metadata")
        rv = str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""
        self._check_regression(rv, "watch")
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
