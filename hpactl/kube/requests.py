"""The API verbs over raw JSON. Every call is rate-limited and timed out by the session.

All functions take the open ``KubeSession`` and an API path (build one with
``hpactl.kube.paths.resource_path``). Non-2xx responses raise the matching
``hpactl.kube.errors.ApiError`` subclass; a missing response raises
``TransportError``/``RequestTimeout``.

``await get_json(s, path, *, query=None, timeout=None) -> dict``
``await list_json(s, path, *, label_selector=None, field_selector=None,
resource_version=None, limit=500, timeout=None, query=None) -> ListResult``
    Pages with ``limit``/``continue`` and concatenates ``items``; if a continue token
    expires (410) it falls back to one unpaged list, as client-go's pager does.
    ``ListResult(items: list[dict], resource_version: str, raw_meta: dict)``.
``await create_json(s, path, body, *, timeout=None) -> dict``   (POST)
``await put_json(s, path, body, *, timeout=None) -> dict``      (PUT, update)
``await patch_json(s, path, patch, *, patch_type="merge", timeout=None) -> dict``
    ``patch_type``: "merge" (application/merge-patch+json), "strategic"
    (application/strategic-merge-patch+json), "json" (application/json-patch+json).
``await delete_json(s, path, *, body=None, timeout=None) -> dict``
``watch_stream(s, path, *, resource_version=None, label_selector=None,
field_selector=None, allow_bookmarks=True, timeout_seconds=None, read_timeout=60.0,
raise_errors=True) -> AsyncIterator[dict]``
    ``async for ev in watch_stream(...)`` yields raw events ``{"type": "ADDED" |
    "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR", "object": {...}}``. With
    ``raise_errors`` an ``ERROR`` event raises ``error_from_status`` of its Status (410 →
    ``Gone``: relist). A non-200 answer raises like the other verbs. The iterator ends
    when the server closes the stream; ``RequestTimeout`` when no byte arrived for
    ``read_timeout`` seconds (bookmarks keep a healthy stream alive).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hpactl.kube.errors import (
    ApiError,
    Gone,
    TransportError,
    error_from_response,
    error_from_status,
)
from hpactl.kube.session import KubeSession, QueryParams, Response

__all__ = [
    "PATCH_CONTENT_TYPES",
    "ListResult",
    "create_json",
    "delete_json",
    "get_json",
    "list_json",
    "patch_json",
    "put_json",
    "raise_for_status",
    "watch_stream",
]

PATCH_CONTENT_TYPES: Mapping[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


def _retry_after(headers: Mapping[str, str]) -> int | None:
    v = headers.get("Retry-After")
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        return None


def raise_for_status(resp: Response) -> None:
    if 200 <= resp.status <= 206:
        return
    raise error_from_response(
        resp.status,
        resp.body,
        resp.content_type,
        resp.method,
        resp.info,
        _retry_after(resp.headers),
    )


def _decode(resp: Response) -> dict[str, Any]:
    raise_for_status(resp)
    if not resp.body:
        return {}
    obj = json.loads(resp.body)
    if not isinstance(obj, dict):
        raise ApiError(f"unexpected response body of type {type(obj).__name__}", code=resp.status)
    # A 2xx Status with Failure is still an error (client-go Result.Into).
    if obj.get("kind") == "Status" and obj.get("status") == "Failure":
        raise error_from_status(obj, resp.status)
    return obj


async def get_json(
    s: KubeSession,
    path: str,
    *,
    query: QueryParams | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    return _decode(await s.send("GET", path, query=query, timeout=timeout, verb="get"))


@dataclass(slots=True)
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str
    raw_meta: dict[str, Any] = field(default_factory=dict)


async def list_json(
    s: KubeSession,
    path: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    resource_version: str | None = None,
    limit: int | None = 500,
    timeout: float | None = None,
    query: Mapping[str, str] | None = None,
) -> ListResult:
    base: dict[str, str] = dict(query or {})
    if label_selector:
        base["labelSelector"] = label_selector
    if field_selector:
        base["fieldSelector"] = field_selector
    if resource_version is not None:
        base["resourceVersion"] = resource_version
    items: list[dict[str, Any]] = []
    cont = ""
    paged = limit is not None and limit > 0
    while True:
        q = dict(base)
        if paged:
            q["limit"] = str(limit)
        if cont:
            q["continue"] = cont
            # resourceVersion must not accompany a continue token.
            q.pop("resourceVersion", None)
        try:
            page = _decode(await s.send("GET", path, query=q, timeout=timeout, verb="list"))
        except Gone:
            if not cont:
                raise
            # The continue token expired: one full list instead (client-go pager).
            items.clear()
            cont = ""
            paged = False
            continue
        page_items = page.get("items") or []
        items.extend(page_items)
        meta = page.get("metadata") or {}
        cont = str(meta.get("continue") or "")
        if not cont or not paged:
            return ListResult(
                items=items,
                resource_version=str(meta.get("resourceVersion") or ""),
                raw_meta=dict(meta),
            )


async def create_json(
    s: KubeSession, path: str, body: Mapping[str, Any], *, timeout: float | None = None
) -> dict[str, Any]:
    return _decode(await s.send("POST", path, body=body, timeout=timeout, verb="create"))


async def put_json(
    s: KubeSession, path: str, body: Mapping[str, Any], *, timeout: float | None = None
) -> dict[str, Any]:
    return _decode(await s.send("PUT", path, body=body, timeout=timeout, verb="update"))


async def patch_json(
    s: KubeSession,
    path: str,
    patch: Any,
    *,
    patch_type: str = "merge",
    timeout: float | None = None,
) -> dict[str, Any]:
    try:
        ctype = PATCH_CONTENT_TYPES[patch_type]
    except KeyError:
        raise ValueError(f"unknown patch type {patch_type!r}") from None
    return _decode(
        await s.send("PATCH", path, body=patch, content_type=ctype, timeout=timeout, verb="patch")
    )


async def delete_json(
    s: KubeSession,
    path: str,
    *,
    body: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    return _decode(await s.send("DELETE", path, body=body, timeout=timeout, verb="delete"))


async def watch_stream(
    s: KubeSession,
    path: str,
    *,
    resource_version: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    allow_bookmarks: bool = True,
    timeout_seconds: int | None = None,
    read_timeout: float = 60.0,
    raise_errors: bool = True,
    send_initial_events: bool = False,
) -> AsyncIterator[dict[str, Any]]:
    q: dict[str, str] = {"watch": "true"}
    if send_initial_events:
        # A watch-list (streaming list): the current objects as ADDED events, then a
        # BOOKMARK annotated ``k8s.io/initial-events-end``. The server requires bookmarks
        # and ``resourceVersionMatch=NotOlderThan`` with it.
        q["sendInitialEvents"] = "true"
        q["resourceVersionMatch"] = "NotOlderThan"
    if resource_version is not None:
        q["resourceVersion"] = resource_version
    if label_selector:
        q["labelSelector"] = label_selector
    if field_selector:
        q["fieldSelector"] = field_selector
    if allow_bookmarks:
        q["allowWatchBookmarks"] = "true"
    if timeout_seconds is not None:
        q["timeoutSeconds"] = str(timeout_seconds)
    async with s.stream(path, query=q, read_timeout=read_timeout) as resp:
        if resp.status != 200:
            body = await resp.read()
            raise error_from_response(
                resp.status,
                body,
                resp.headers.get("Content-Type", ""),
                resp.method,
                resp.info,
                _retry_after(resp.headers),
            )
        while True:
            line = await resp.readline()
            if not line:
                return
            line = line.strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError as exc:
                # client-go's decoder error ends the watch; the reflector starts anew.
                raise TransportError(f"unable to decode watch event: {exc}") from exc
            if not isinstance(ev, dict):
                raise TransportError("unable to decode watch event: not an object")
            if raise_errors and ev.get("type") == "ERROR":
                obj = ev.get("object") or {}
                raise error_from_status(obj, int(obj.get("code") or 0) or None)
            yield ev
