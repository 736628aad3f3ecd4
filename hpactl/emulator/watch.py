"""Watch streams: backlog from the history ring, live fan-out, bookmarks, 410s.

A watch subscribes to the store and computes its backlog with no await in between,
so the queue holds exactly the events after the backlog. Events are filtered per
watcher with the transitions a real watch shows when selectors are used (an object
leaving the selection is DELETED, one entering it ADDED).

A watch from a resourceVersion the server has not reached yet (a client that saw a
newer state before an etcd restore, or an HA peer ahead of this server) is not an
error, as in kube-apiserver's watch cache: the stream stays open and sends only the
events, and the bookmarks, newer than that resourceVersion. With
``sendInitialEvents=true`` it is an ERROR event carrying the watch cache's 504
``Too large resource version`` Status (cause ``ResourceVersionTooLarge``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import random
from typing import TYPE_CHECKING, Any

from aiohttp import web

from hpactl.emulator import errors, tables
from hpactl.emulator.filters import FieldSelector, LabelMatcher, parse_field_selector
from hpactl.emulator.registry import ResourceType
from hpactl.emulator.server import JSON, accept_table, call_bool_hook, parse_bool
from hpactl.emulator.store import Entry, Obj, WatchEvent, dumps

if TYPE_CHECKING:
    from hpactl.emulator.server import ApiServer


def _initial_events_forbidden(conditions: str) -> errors.ApiError:
    """kube-apiserver's 422 for a sendInitialEvents it does not accept; ``conditions``
    is what the message adds after the feature gate (empty when the gate is off)."""
    return errors.invalid(
        "ListOptions",
        "meta.k8s.io",
        "",
        [
            (
                "sendInitialEvents",
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList "
                f"feature gate is enabled{conditions}",
            )
        ],
    )


async def serve_watch(
    server: ApiServer, request: web.Request, rt: ResourceType, ns: str | None, name: str
) -> web.StreamResponse:
    q = request.query
    ls, fs = server._selectors(request, rt)
    if name:
        extra = parse_field_selector(f"metadata.name={name}", rt)
        assert extra is not None
        fs = FieldSelector((fs.requirements if fs else ()) + extra.requirements)
    bookmarks = parse_bool(q["allowWatchBookmarks"]) if q.get("allowWatchBookmarks") else False
    send_initial_s = q.get("sendInitialEvents", "")
    send_initial = parse_bool(send_initial_s) if send_initial_s else False
    if send_initial and not server.config.watch_list:
        # kube-apiserver with the WatchList feature gate off (before 1.32's default).
        raise _initial_events_forbidden("")
    if send_initial and (q.get("resourceVersionMatch") != "NotOlderThan" or not bookmarks):
        raise _initial_events_forbidden(
            " and allowWatchBookmarks is true and resourceVersionMatch is NotOlderThan"
        )
    timeout_s = q.get("timeoutSeconds", "")
    if timeout_s:
        try:
            timeout = float(int(timeout_s))
        except ValueError:
            raise errors.bad_request(f'timeoutSeconds: Invalid value: "{timeout_s}"') from None
    else:
        mrt = server.config.min_request_timeout
        timeout = mrt * (1 + random.random())
    rv_param = q.get("resourceVersion", "")
    mode = accept_table(request.headers.get("Accept", ""))
    table_mode = mode if mode is not None and not mode.startswith("meta:") else None
    key = rt.storage_key
    faults = server.hooks.faults

    # Compute the backlog and subscribe with no await in between: the queue then
    # holds exactly the events after the backlog.
    initial: list[Entry] = []
    backlog: list[WatchEvent] = []
    gone_msg = ""
    error: errors.ApiError | None = None
    start_rv = server.store.rv
    # Events and bookmarks at or below this resourceVersion are not sent (the
    # cacher's cacheWatcher filter); it only matters for a watch from the future.
    floor = 0
    drop_after: int | None = None
    if faults is not None:
        if hasattr(faults, "watch_drop_after"):
            drop_after = faults.watch_drop_after(request.path)
        elif call_bool_hook(faults, "should_drop_watch", request.path):
            drop_after = 0
    if (
        faults is not None
        and rv_param not in ("", "0")
        and call_bool_hook(faults, "force_gone", request.path)
    ):
        gone_msg = (
            f"too old resource version: {rv_param or 0} ({server.store.oldest_available(key)})"
        )
    elif rv_param in ("", "0") or send_initial:
        if rv_param not in ("", "0") and send_initial:
            want = errors.parse_resource_version(rv_param)
            if want > start_rv:
                # The watch cache waits up to 3 s to catch up, then ends the watch
                # with this ERROR event.
                error = too_large_resource_version(want, start_rv)
        if error is None:
            initial = list(server.store.iter_entries(key, ns))
    else:
        want = errors.parse_resource_version(rv_param)
        if server.store.too_old(key, want):
            gone_msg = f"too old resource version: {want} ({server.store.oldest_available(key)})"
        else:
            floor = want
            backlog = [
                ev
                for ev in server.store.events_since(key, want)
                if ns is None or ev.namespace == ns
            ]
    if gone_msg:
        error = errors.gone(gone_msg)
    watcher = server.store.subscribe(key, ns) if error is None else None

    resp = web.StreamResponse(status=200, headers={"Content-Type": JSON})
    resp.enable_chunked_encoding()
    headers_sent = table_mode is None
    try:
        await resp.prepare(request)
        if error is not None:
            await resp.write(dumps({"type": "ERROR", "object": error.status()}).encode() + b"\n")
            return resp
        buf: list[str] = []
        for e in initial:
            if (ls is None and fs is None) or server._matches(e.obj, ls, fs):
                buf.append(_event_line(server, "ADDED", rt, e, table_mode, not headers_sent, q))
                headers_sent = True
            if len(buf) >= 500 and drop_after is None:
                await resp.write("".join(buf).encode())
                buf = []
        for ev in backlog:
            line = _transition(server, ev, rt, ls, fs, table_mode, not headers_sent, q)
            if line:
                buf.append(line)
                headers_sent = True
        if send_initial:
            buf.append(_bookmark_line(server, rt, start_rv, initial_end=True))
        budget = [drop_after]  # injected fault: end the stream after this many events

        async def emit(lines: list[str]) -> bool:
            left = budget[0]
            if left is not None:
                lines = lines[:left]
                budget[0] = left - len(lines)
            if lines:
                await resp.write("".join(lines).encode())
            return budget[0] != 0

        if not await emit(buf):
            return resp
        assert watcher is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        next_bookmark = loop.time() + server.config.bookmark_interval
        while True:
            now = loop.time()
            if now >= deadline or server._stopping.is_set():
                break
            # Wake at least every few seconds to notice a client that went away
            # (aiohttp does not cancel handlers on disconnect).
            wait = min(deadline - now, server.config.disconnect_check)
            if bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            try:
                # Take what is queued directly: with wait 0 (a bookmark due while events
                # are queued), Python 3.11's wait_for cancels the get before it runs, for
                # ever, and the watch would deliver nothing more.
                if watcher.queue.empty():
                    got = await asyncio.wait_for(watcher.queue.get(), timeout=wait)
                else:
                    got = watcher.queue.get_nowait()
            except TimeoutError:
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                # Events offered after the timeout fired but before this task resumed
                # are still queued: a bookmark at store.rv now would run ahead of them
                # (the client would see the resourceVersion go back). Send them first.
                if bookmarks and loop.time() >= next_bookmark and watcher.queue.empty():
                    if server.store.rv >= floor:
                        await resp.write(_bookmark_line(server, rt, server.store.rv).encode())
                    next_bookmark = loop.time() + server.config.bookmark_interval
                continue
            if got is None:
                break  # the store closed this watch (server stopping, store restored)
            lines = []
            closed = False
            pending: list[WatchEvent] = [got]
            # Drain what is already queued in one write.
            while not watcher.queue.empty():
                nxt = watcher.queue.get_nowait()
                if nxt is None:
                    closed = True
                    break
                pending.append(nxt)
            for ev in pending:
                if ev.rv <= floor:
                    continue
                line = _transition(server, ev, rt, ls, fs, table_mode, not headers_sent, q)
                if line:
                    lines.append(line)
                    headers_sent = True
            if not await emit(lines):
                return resp
            if closed:
                break
    except ConnectionResetError:
        return resp  # the client went away: nothing to finish
    finally:
        if watcher is not None:
            server.store.unsubscribe(watcher)
    with contextlib.suppress(ConnectionResetError):
        await resp.write_eof()
    return resp


def _transition(
    server: ApiServer,
    ev: WatchEvent,
    rt: ResourceType,
    ls: LabelMatcher | None,
    fs: FieldSelector | None,
    table_mode: str | None,
    headers: bool,
    q: Any,
) -> str:
    """The event a watcher with these selectors sees for a store event ('' for none)."""
    if ls is None and fs is None:
        return _event_line(server, ev.type, rt, ev.entry, table_mode, headers, q)
    cur = ev.type != "DELETED" and server._matches(ev.entry.obj, ls, fs)
    prev = ev.prev is not None and server._matches(ev.prev.obj, ls, fs)
    if ev.type == "ADDED":
        etype = "ADDED" if cur else ""
    elif ev.type == "DELETED":
        etype = "DELETED" if prev else ""
    elif cur and prev:
        etype = "MODIFIED"
    elif cur:
        etype = "ADDED"
    elif prev and ev.prev is not None:
        # Left the selection: the watch cache sends the previous object, stamped
        # with the event's resourceVersion.
        old = copy.deepcopy(ev.prev.obj)
        old["metadata"]["resourceVersion"] = str(ev.rv)
        entry = Entry(old, dumps(old), ev.rv)
        return _event_line(server, "DELETED", rt, entry, table_mode, headers, q)
    else:
        etype = ""
    if not etype:
        return ""
    return _event_line(server, etype, rt, ev.entry, table_mode, headers, q)


def _event_line(
    server: ApiServer,
    etype: str,
    rt: ResourceType,
    entry: Entry,
    table_mode: str | None,
    headers: bool,
    q: Any,
) -> str:
    if table_mode is None:
        return f'{{"type":"{etype}","object":{server.served_raw(rt, entry)}}}\n'
    t = tables.table(
        rt,
        [(entry.obj, server.served_obj(rt, entry))],
        server.store.now(),
        q.get("includeObject", "Metadata"),
        headers=headers,
        list_meta={"resourceVersion": str(entry.rv)},
    )
    t["apiVersion"] = "meta.k8s.io/" + table_mode
    if not headers:
        t.pop("columnDefinitions", None)
    return dumps({"type": etype, "object": t}) + "\n"


def too_large_resource_version(want: int, current: int) -> errors.ApiError:
    """The watch cache's answer for a resourceVersion it has not reached within its
    wait (``storage.NewTooLargeResourceVersionError``: a Timeout StatusError)."""
    return errors.ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {want}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def _bookmark_line(server: ApiServer, rt: ResourceType, rv: int, initial_end: bool = False) -> str:
    meta: Obj = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
    return dumps({"type": "BOOKMARK", "object": obj}) + "\n"
