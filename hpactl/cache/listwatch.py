"""A `ListerWatcher` over the API server (``hpactl.kube``): raw JSON, no models.

Lists are paged (``limit``/``continue``) and handed to the reflector page by page,
so a 30,000-pod list is decoded and projected in slices with the loop free in
between, and never held whole as raw dicts. Watches ask for bookmarks and a
server-side timeout of 5-10 minutes (client-go's ``minWatchTimeout`` x [1, 2)), and
give up on a stream that is silent for ``read_timeout`` seconds.
`current_resource_version` is the reflector's check, before it resumes a watch, that
the server's resourceVersions have not gone back (an etcd restore).

`watch_list` is the streaming list (client-go's ``watchList``, KEP 3157):
``sendInitialEvents=true`` with ``resourceVersionMatch=NotOlderThan`` and bookmarks,
the objects as ADDED events, one line each, so the list is decoded one object at a
time and never held as one body. ``watch_list_enabled=False`` keeps the LIST path.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Mapping
from typing import Any

from hpactl.cache.reflector import ListPage
from hpactl.kube.errors import ApiError, Gone
from hpactl.kube.paths import resource_path
from hpactl.kube.requests import raise_for_status, watch_stream
from hpactl.kube.session import KubeSession

__all__ = ["ResourceListerWatcher"]


class ResourceListerWatcher:
    """List and watch one resource type (all namespaces unless `namespace` is given)."""

    def __init__(
        self,
        session: KubeSession,
        group: str,
        version: str,
        resource: str,
        *,
        namespace: str | None = None,
        page_size: int = 500,
        read_timeout: float = 90.0,
        min_watch_timeout: int = 300,
        list_timeout: float | None = None,
        rng: random.Random | None = None,
        watch_list: bool = True,
    ) -> None:
        self._session = session
        self.path = resource_path(group, version, resource, namespace=namespace)
        self.page_size = page_size
        self.read_timeout = read_timeout
        self.min_watch_timeout = min_watch_timeout
        self.list_timeout = list_timeout
        self._rng = rng or random.Random()
        self.watch_list_enabled = watch_list

    async def _get_page(self, query: Mapping[str, str]) -> dict[str, Any]:
        resp = await self._session.send(
            "GET", self.path, query=query, timeout=self.list_timeout, verb="list"
        )
        raise_for_status(resp)
        page = json.loads(resp.body)
        if not isinstance(page, dict):
            raise ApiError(f"list {self.path}: unexpected body", code=resp.status)
        return page

    async def list_pages(self, resource_version: str) -> AsyncIterator[ListPage]:
        cont = ""
        paged = self.page_size > 0
        while True:
            query: dict[str, str] = {}
            if cont:
                query["continue"] = cont  # the token pins the snapshot; no resourceVersion
            else:
                query["resourceVersion"] = resource_version
            if paged:
                query["limit"] = str(self.page_size)
            try:
                page = await self._get_page(query)
            except Gone:
                if not cont:
                    raise
                # The continue token expired mid-list. client-go's pager would fall back
                # to one unpaged list; a consistent relist from scratch is as correct
                # and lets the reflector keep its bounded memory.
                raise Gone("continue token expired during a paged list", code=410) from None
            meta = page.get("metadata") or {}
            cont = str(meta.get("continue") or "") if paged else ""
            yield ListPage(page.get("items") or [], str(meta.get("resourceVersion") or ""))
            if not cont:
                return

    async def current_resource_version(self) -> str:
        """The server's current resourceVersion: a consistent one-item list (no
        ``resourceVersion``: served from etcd, or from a watch cache brought up to
        date), whose list resourceVersion is the latest revision."""
        page = await self._get_page({"limit": "1"})
        meta = page.get("metadata") or {}
        return str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""

    def watch(self, resource_version: str) -> AsyncIterator[dict[str, Any]]:
        return self._watch(resource_version, send_initial_events=False)

    def watch_list(self, resource_version: str) -> AsyncIterator[dict[str, Any]]:
        """A watch that first streams the current objects (see the module docstring)."""
        return self._watch(resource_version, send_initial_events=True)

    def _watch(
        self, resource_version: str, *, send_initial_events: bool
    ) -> AsyncIterator[dict[str, Any]]:
        # Spread over [min, 2*min) as client-go's reflector, so watches do not all end at once.
        timeout = int(self.min_watch_timeout * (1.0 + self._rng.random()))
        return watch_stream(
            self._session,
            self.path,
            resource_version=resource_version,
            allow_bookmarks=True,
            timeout_seconds=timeout,
            read_timeout=self.read_timeout,
            send_initial_events=send_initial_events,
        )
