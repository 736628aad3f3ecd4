"""core/v1 Events recorded as kube-controller-manager's legacy recorder records them.

``EventRecorder(session, *, clock, component="horizontal-pod-autoscaler", host="",
queue_size=1000, on_drop=None, max_tries=12, retry_sleep=10.0, timeout=None)``
    ``recorder.event(obj, type, reason, message)`` never blocks and never raises: it
    stamps the event with ``clock.now()`` and queues it (a full queue drops the event
    and calls ``on_drop``, like client-go's broadcaster). ``await recorder.run()`` is
    the background writer task; ``await recorder.flush()`` waits until everything
    queued so far is written (tests, shutdown); ``recorder.close()`` stops ``run``.
    ``obj`` is a raw object (an HPA dict), an ``ObjectRef``, or anything with
    ``namespace``/``name``/``uid``/``resource_version`` (the HPA model);
    ``recorder.emit(obj, ev)`` takes a core ``Event`` (type, reason, message).

Correlation (client-go ``EventCorrelator``), all implemented:
  * aggregation of similar events: 10 distinct messages for the same
    (source, object, type, reason) within 10 minutes turn into one event with message
    ``(combined from similar events): <message>``;
  * count aggregation: an identical event (same source, object, type, reason, message)
    seen before is PATCHed (strategic merge) with ``count`` + 1, ``lastTimestamp`` and
    ``message`` instead of created; if the PATCH finds no object, it is created again;
  * spam filter: per (source, object, type) token bucket of burst 25 refilling one
    token every 5 minutes; events beyond it are dropped. The type is part of the key
    since client-go 1.32 (kubernetes PR #124747), so a flood of Warnings cannot
    starve an object's Normal events (SuccessfulRescale) or the reverse.
Event objects: name ``<object name>.<hex unix nanos>``, ``source.component``,
``reportingComponent`` (= component), ``reportingInstance`` (= host), ``involvedObject``
(kind, namespace, name, uid, apiVersion, resourceVersion), first/lastTimestamp, count 1.
Writes are retried on transport errors and on 5xx answers (a server in trouble, not
a rejection of the event; client-go gives up on those unless they carry Retry-After,
which the session already honours), ``max_tries`` times, ``retry_sleep`` apart; any
4xx is final. A write refused by the leader fence (``NotLeader``) is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from hpactl.kube.errors import ApiError, NotFound, NotLeader, TransportError
from hpactl.kube.identity import ObjectIdentity
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import create_json, patch_json
from hpactl.kube.session import KubeSession, fenced_by, task_fence
from hpactl.model.times import format_time, parse_time

__all__ = [
    "COMBINED_PREFIX",
    "EventRecorder",
    "EventSink",
    "ObjectRef",
    "RefSource",
    "RestEventSink",
    "object_ref",
]

log = logging.getLogger(__name__)

COMBINED_PREFIX = "(combined from similar events): "
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
CACHE_SIZE = 4096


class _ClockLike(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    namespace: str
    name: str
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""
    field_path: str = ""

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.namespace:
            out["namespace"] = self.namespace
        out["name"] = self.name
        if self.uid:
            out["uid"] = self.uid
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.resource_version:
            out["resourceVersion"] = self.resource_version
        if self.field_path:
            out["fieldPath"] = self.field_path
        return out


# Anything naming an HPA: ``hpactl.model.hpa.HPA`` and the like.
RefSource = ObjectIdentity


class _EventLike(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...


Involved = Mapping[str, Any] | ObjectRef | RefSource


def object_ref(
    obj: Involved,
    *,
    kind: str = "HorizontalPodAutoscaler",
    api_version: str = "autoscaling/v2",
) -> ObjectRef:
    """client-go ``reference.GetReference`` (defaults: an HPA).

    ``obj`` is a raw object, an ``ObjectRef`` (returned as is) or anything with
    ``namespace``, ``name``, ``uid`` and ``resource_version`` attributes.
    """
    if isinstance(obj, ObjectRef):
        return obj
    if not isinstance(obj, Mapping):
        return ObjectRef(
            kind=kind,
            namespace=str(obj.namespace),
            name=str(obj.name),
            uid=str(getattr(obj, "uid", "") or ""),
            # hpactl's own HPAs (the model's api_version) are involved as themselves.
            api_version=str(getattr(obj, "api_version", "") or api_version),
            resource_version=str(getattr(obj, "resource_version", "") or ""),
        )
    meta = obj.get("metadata") or {}
    return ObjectRef(
        kind=str(obj.get("kind") or kind),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        api_version=str(obj.get("apiVersion") or api_version),
        resource_version=str(meta.get("resourceVersion") or ""),
    )


@dataclass(slots=True)
class _Event:
    ref: ObjectRef
    type: str
    reason: str
    message: str
    first: datetime
    last: datetime
    count: int = 1
    name: str = ""
    namespace: str = ""
    resource_version: str = ""
    patch: dict[str, Any] | None = field(default=None)
    # The task fence in force when the event was recorded (the HPA's shard lease):
    # the background writer applies it, so no Event is written for a shard lost since.
    fence: Callable[[], bool] | None = None


class EventSink(Protocol):
    async def create(self, event: Mapping[str, Any]) -> dict[str, Any]: ...

    async def patch(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]: ...


class RestEventSink:
    """Writes to ``/api/v1/namespaces/{ns}/events``."""

    def __init__(self, session: KubeSession, *, timeout: float | None = None) -> None:
        self._s = session
        self._timeout = timeout

    async def create(self, event: Mapping[str, Any]) -> dict[str, Any]:
        ns = str((event.get("metadata") or {}).get("namespace") or "default")
        return await create_json(
            self._s, resource_path("", "v1", "events", namespace=ns), event, timeout=self._timeout
        )

    async def patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        path = resource_path("", "v1", "events", namespace=namespace, name=name)
        return await patch_json(self._s, path, patch, patch_type="strategic", timeout=self._timeout)


class _LRU(OrderedDict[str, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self._size = size

    def get_(self, key: str) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        return None

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self._size:
            self.popitem(last=False)


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


class EventRecorder:
    """See the module docstring."""

    def __init__(
        self,
        session: KubeSession | None,
        *,
        clock: _ClockLike,
        component: str = "horizontal-pod-autoscaler",
        host: str = "",
        queue_size: int = 1000,
        on_drop: Callable[[str], None] | None = None,
        max_tries: int = 12,
        retry_sleep: float = 10.0,
        timeout: float | None = None,
        sink: EventSink | None = None,
    ) -> None:
        if sink is None:
            if session is None:
                raise ValueError("EventRecorder needs a session or a sink")
            sink = RestEventSink(session, timeout=timeout)
        self._sink = sink
        self._clock = clock
        self.component = component
        self.host = host
        self._queue: asyncio.Queue[_Event | None] = asyncio.Queue(maxsize=queue_size)
        self._on_drop = on_drop
        self._max_tries = max_tries
        self._retry_sleep = retry_sleep
        self._aggregate: _LRU = _LRU(CACHE_SIZE)
        self._observed: _LRU = _LRU(CACHE_SIZE)
        self._spam: _LRU = _LRU(CACHE_SIZE)
        self._last_nanos = 0
        self.written = 0
        self.dropped = 0
        self._closing = False

    # -- producer side -----------------------------------------------------------
    def event(self, obj: Involved, type_: str, reason: str, message: str) -> None:
        ref = object_ref(obj)
        now = self._clock.now()
        ev = _Event(
            ref=ref,
            type=type_,
            reason=reason,
            message=message,
            first=now,
            last=now,
            fence=task_fence.get(),
        )
        try:
            self._queue.put_nowait(ev)
        except asyncio.QueueFull:
            self._drop("queue full")

    def eventf(self, obj: Involved, type_: str, reason: str, fmt: str, *args: object) -> None:
        self.event(obj, type_, reason, fmt % args if args else fmt)

    def emit(self, obj: Involved, event: _EventLike) -> None:
        """Record a core ``Event`` (anything with ``type``, ``reason``, ``message``)."""
        self.event(obj, event.type, event.reason, event.message)

    def _drop(self, why: str) -> None:
        self.dropped += 1
        if self._on_drop is not None:
            with contextlib.suppress(Exception):
                self._on_drop(why)

    # -- writer side ---------------------------------------------------------------
    async def run(self) -> None:
        while True:
            ev = await self._queue.get()
            try:
                if ev is None:
                    return
                await self._record(ev)
            except Exception:  # a bad event must not stop the writer
                log.exception("event write failed")
            finally:
                self._queue.task_done()
            if self._closing and self._queue.empty():
                return

    async def flush(self) -> None:
        """Wait until every event queued so far is written (``run`` must be running)."""
        await self._queue.join()

    def close(self) -> None:
        """Stop ``run`` once the events already queued are written."""
        self._closing = True
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)

    # -- correlation (client-go events_cache.go) ----------------------------------------
    def _src(self) -> list[str]:
        return [self.component, self.host]

    def _obj_key(self, ref: ObjectRef) -> list[str]:
        return [ref.kind, ref.namespace, ref.name, ref.uid, ref.api_version]

    def _event_key(self, ev: _Event) -> str:
        r = ev.ref
        return "".join(
            [
                *self._src(),
                r.kind,
                r.namespace,
                r.name,
                r.field_path,
                r.uid,
                r.api_version,
                ev.type,
                ev.reason,
                ev.message,
            ]
        )

    def _spam_key(self, ev: _Event) -> str:
        # client-go getSpamKey: source, involved object and (since 1.32) the type.
        return "".join([*self._src(), *self._obj_key(ev.ref), ev.type])

    def _name_for(self, ref: ObjectRef, at: datetime) -> str:
        nanos = int(at.timestamp()) * 1_000_000_000 + at.microsecond * 1000
        # Several events in one clock tick would share a name; keep them unique.
        if nanos <= self._last_nanos:
            nanos = self._last_nanos + 1
        self._last_nanos = nanos
        return f"{ref.name}.{nanos:x}"

    def _correlate(self, ev: _Event) -> tuple[_Event, str] | None:
        now_mono = self._clock.monotonic()
        # 1. aggregation of similar events (EventAggregator, by reason)
        agg_key = "".join(
            [*self._src(), *self._obj_key(ev.ref), ev.type, ev.reason, self.component, self.host]
        )
        record = self._aggregate.get_(agg_key)
        if record is None or now_mono - record[1] > AGGREGATE_INTERVAL_SECONDS:
            record = (set(), now_mono)
        keys: set[str] = record[0]
        keys.add(ev.message)
        self._aggregate.put(agg_key, (keys, now_mono))
        cache_key = self._event_key(ev)
        if len(keys) >= AGGREGATE_MAX_EVENTS:
            keys.pop()
            ev = replace(ev, message=COMBINED_PREFIX + ev.message, first=ev.last, count=1)
            cache_key = agg_key
        # 2. count aggregation (EventLogger.eventObserve)
        last = self._observed.get_(cache_key)
        if last is not None:
            count, first, name, rv = last
            ev.count = count + 1
            ev.first = first
            ev.name = name
            ev.resource_version = rv
            ev.patch = {
                "count": ev.count,
                "lastTimestamp": format_time(ev.last),
                "message": ev.message,
            }
        else:
            ev.name = self._name_for(ev.ref, ev.last)
        ev.namespace = ev.ref.namespace or "default"
        self._observed.put(cache_key, (ev.count, ev.first, ev.name, ev.resource_version))
        # 3. spam filter (EventSourceObjectSpamFilter)
        skey = self._spam_key(ev)
        b = self._spam.get_(skey)
        if b is None:
            b = _Bucket(tokens=float(SPAM_BURST), last=now_mono)
        b.tokens = min(float(SPAM_BURST), b.tokens + (now_mono - b.last) * SPAM_QPS)
        b.last = now_mono
        self._spam.put(skey, b)
        if b.tokens < 1.0:
            return None
        b.tokens -= 1.0
        return ev, cache_key

    def _body(self, ev: _Event) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": ev.name, "namespace": ev.namespace},
            "involvedObject": ev.ref.to_raw(),
            "reason": ev.reason,
            "message": ev.message,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": format_time(ev.first),
            "lastTimestamp": format_time(ev.last),
            "count": ev.count,
            "type": ev.type,
            "eventTime": None,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }

    async def _record(self, ev: _Event) -> None:
        res = self._correlate(ev)
        if res is None:
            self._drop("spam filter")
            return
        ev, _key = res
        for attempt in range(self._max_tries):
            try:
                with fenced_by(ev.fence):
                    written = await self._write(ev)
            except NotLeader:
                self._drop("not leader")  # fenced: this replica no longer holds the lease
                return
            except (TransportError, ApiError) as exc:
                if isinstance(exc, ApiError) and exc.code < 500:
                    log.warning("server rejected event %s/%s: %s", ev.namespace, ev.name, exc)
                    return
                if attempt + 1 >= self._max_tries:
                    log.warning("giving up on event %s/%s: %s", ev.namespace, ev.name, exc)
                    return
                # client-go randomizes the first sleep so restarts don't stampede.
                delay = self._retry_sleep * (random.random() if attempt == 0 else 1.0)
                await self._clock.sleep(delay)
                continue
            self._update_state(written)
            self.written += 1
            return

    async def _write(self, ev: _Event) -> dict[str, Any]:
        if ev.patch is not None:
            try:
                return await self._sink.patch(ev.namespace, ev.name, ev.patch)
            except NotFound:
                pass  # deleted meanwhile: create it again
        body = self._body(ev)
        return await self._sink.create(body)

    def _update_state(self, written: Mapping[str, Any]) -> None:
        # client-go UpdateState: key the returned event and remember its identity.
        meta = written.get("metadata") or {}
        inv = written.get("involvedObject") or {}
        ref = ObjectRef(
            kind=str(inv.get("kind") or ""),
            namespace=str(inv.get("namespace") or ""),
            name=str(inv.get("name") or ""),
            uid=str(inv.get("uid") or ""),
            api_version=str(inv.get("apiVersion") or ""),
            field_path=str(inv.get("fieldPath") or ""),
        )
        src = written.get("source") or {}
        if (
            str(src.get("component") or "") != self.component
            or str(src.get("host") or "") != self.host
        ):
            return
        first_raw = written.get("firstTimestamp")
        try:
            first = parse_time(str(first_raw)) if first_raw else self._clock.now()
        except ValueError:
            first = self._clock.now()
        ev = _Event(
            ref=ref,
            type=str(written.get("type") or ""),
            reason=str(written.get("reason") or ""),
            message=str(written.get("message") or ""),
            first=first,
            last=first,
        )
        self._observed.put(
            self._event_key(ev),
            (
                int(written.get("count") or 1),
                first,
                str(meta.get("name") or ""),
                str(meta.get("resourceVersion") or ""),
            ),
        )
