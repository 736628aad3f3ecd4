"""ResourceListerWatcher against the emulator: paged lists and raw watch events."""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.cache.listwatch import ResourceListerWatcher
from hpactl.emulator import Emulator
from hpactl.kube.errors import Gone
from hpactl.kube.session import KubeSession


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name},
        "spec": {"containers": [{"name": "c", "image": "img"}]},
    }


async def test_paged_list_yields_every_object_once_with_the_list_rv() -> None:
    async with Emulator() as emu, KubeSession(master=emu.url, qps=0) as s:
        for i in range(5):
            emu.store.create(pod(f"p{i}"))
        rv = emu.store.rv
        lw = ResourceListerWatcher(s, "", "v1", "pods", page_size=2)
        pages = [p async for p in lw.list_pages("")]
        assert [len(p.items) for p in pages] == [2, 2, 1]
        names = [i["metadata"]["name"] for p in pages for i in p.items]
        assert names == [f"p{i}" for i in range(5)]
        assert {p.resource_version for p in pages} == {str(rv)}


async def test_expired_continue_token_is_gone() -> None:
    """A relist that outlives the server's history must start over (consistently)."""
    async with Emulator(history_size=3) as emu, KubeSession(master=emu.url, qps=0) as s:
        for i in range(4):
            emu.store.create(pod(f"p{i}"))
        lw = ResourceListerWatcher(s, "", "v1", "pods", page_size=2)
        pages = lw.list_pages("")
        first = await anext(pages)
        assert len(first.items) == 2
        for i in range(10):  # enough writes to push the snapshot out of the history
            emu.store.create(pod(f"q{i}"))
        with pytest.raises(Gone):
            await anext(pages)


async def test_watch_yields_raw_events_and_bookmarks_from_a_resource_version() -> None:
    async with Emulator(bookmark_interval=0.05) as emu, KubeSession(master=emu.url, qps=0) as s:
        start = emu.store.rv
        emu.store.create(pod("a"))
        emu.store.delete("", "pods", "default", "a")
        lw = ResourceListerWatcher(s, "", "v1", "pods", read_timeout=5)
        stream = lw.watch(str(start))
        seen: list[tuple[str, str]] = []
        try:
            async for ev in stream:
                meta = ev["object"]["metadata"]
                seen.append((ev["type"], meta.get("name", "")))
                if ev["type"] == "BOOKMARK":
                    break
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        assert seen == [("ADDED", "a"), ("DELETED", "a"), ("BOOKMARK", "")]
