"""A bookmark never carries a resourceVersion above an event still to be sent."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from hpactl.emulator import Emulator


def _cm(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "default", "name": f"c{i}"},
    }


async def test_bookmarks_never_run_ahead_of_queued_events() -> None:
    async with Emulator(bookmark_interval=0.0005) as emu, aiohttp.ClientSession() as http:
        rvs: list[int] = []

        async def watch() -> None:
            params = {
                "watch": "true",
                "allowWatchBookmarks": "true",
                "resourceVersion": "0",
                "timeoutSeconds": "3",
            }
            async with http.get(
                f"{emu.url}/api/v1/namespaces/default/configmaps", params=params
            ) as r:
                async for line in r.content:
                    ev = json.loads(line)
                    rvs.append(int(ev["object"]["metadata"]["resourceVersion"]))

        async def write() -> None:
            for i in range(3000):
                emu.store.create(_cm(i))
                if i % 3 == 0:
                    await asyncio.sleep(0)

        w = asyncio.create_task(watch())
        await asyncio.sleep(0.2)
        await write()
        await w
        assert rvs == sorted(rvs)
