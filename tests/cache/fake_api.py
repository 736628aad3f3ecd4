"""An in-memory ListerWatcher for reflector/informer unit tests.

It models what the reflector relies on from an API server: a global resourceVersion
counter, lists at "0"/"" with an RV, ordered watch events from an RV, 410 for an RV
older than the retained history, bookmarks, and injectable faults. The emulator
tests cover the same behaviour over HTTP.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

from hpactl.cache.reflector import ListPage
from hpactl.kube.errors import Gone, KubeError, TransportError


class FakeAPI:
    def __init__(self, page_size: int = 2) -> None:
        self.rv = 100
        self.objects: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[int, dict[str, Any]]] = []  # (rv, event)
        self.oldest_rv = 100  # watches from an RV below this get 410
        self.page_size = page_size
        self._watchers: list[asyncio.Queue[dict[str, Any] | None]] = []
        self.list_calls: list[str] = []
        self.watch_calls: list[str] = []
        # faults: exceptions raised by the next list/watch calls, in order
        self.list_faults: list[KubeError] = []
        self.watch_faults: list[KubeError] = []
        self.probe_calls = 0

    # -- mutations ------------------------------------------------------------------

    def _emit(self, etype: str, obj: dict[str, Any]) -> None:
        event = {"type": etype, "object": copy.deepcopy(obj)}
        self.history.append((self.rv, event))
        for q in self._watchers:
            q.put_nowait(event)

    def put(self, ns: str, name: str, **spec: Any) -> int:
        self.rv += 1
        key = f"{ns}/{name}"
        etype = "MODIFIED" if key in self.objects else "ADDED"
        obj = {
            "metadata": {"namespace": ns, "name": name, "resourceVersion": str(self.rv)},
            "spec": spec,
        }
        self.objects[key] = obj
        self._emit(etype, obj)
        return self.rv

    def delete(self, ns: str, name: str) -> int:
        self.rv += 1
        obj = self.objects.pop(f"{ns}/{name}")
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._emit("DELETED", obj)
        return self.rv

    def bookmark(self) -> None:
        self.rv += 1  # something happened elsewhere (another resource type)
        event = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(self.rv)}}}
        for q in self._watchers:
            q.put_nowait(event)

    def send_error(self, code: int, reason: str, message: str) -> None:
        status = {
            "kind": "Status",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
        for q in self._watchers:
            q.put_nowait({"type": "ERROR", "object": status})

    def compact(self) -> None:
        """Forget history: every RV seen so far becomes too old to watch from."""
        self.rv += 1
        self.oldest_rv = self.rv
        self.history.clear()

    def restore(self, rv: int, objects: dict[str, dict[str, Any]]) -> None:
        """An etcd restore: these objects, the counter back at `rv`, no history."""
        self.rv = rv
        self.objects = copy.deepcopy(objects)
        self.history.clear()
        self.oldest_rv = rv

    def drop_watches(self) -> None:
        for q in self._watchers:
            q.put_nowait(None)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    # -- ListerWatcher ----------------------------------------------------------------

    async def list_pages(self, resource_version: str) -> AsyncIterator[ListPage]:
        self.list_calls.append(resource_version)
        if self.list_faults:
            raise self.list_faults.pop(0)
        items = [copy.deepcopy(o) for _, o in sorted(self.objects.items())]
        rv = str(self.rv)
        for i in range(0, max(1, len(items)), self.page_size):
            await asyncio.sleep(0)
            yield ListPage(items[i : i + self.page_size], rv)

    async def current_resource_version(self) -> str:
        """What a one-item consistent list says (the reflector's check before resuming)."""
        self.probe_calls += 1
        await asyncio.sleep(0)
        return str(self.rv)

    async def watch(self, resource_version: str) -> AsyncIterator[Mapping[str, Any]]:
        self.watch_calls.append(resource_version)
        if self.watch_faults:
            raise self.watch_faults.pop(0)
        start = int(resource_version)
        if start < self.oldest_rv:
            raise Gone(
                f"too old resource version: {start} ({self.oldest_rv})", code=410, reason="Expired"
            )
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        for rv, event in self.history:
            if rv > start:
                q.put_nowait(event)
        self._watchers.append(q)
        try:
            while True:
                item = await q.get()
                if item is None:
                    return
                yield item
        finally:
            self._watchers.remove(q)


def refused() -> TransportError:
    return TransportError('Get "http://127.0.0.1:1/api": connection refused')
