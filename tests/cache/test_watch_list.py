"""Streaming lists (watch-list, ``sendInitialEvents=true``) against the emulator, and
the fallback to LIST on a server that has the WatchList feature gate off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from hpactl.cache.factory import SharedInformers
from hpactl.cache.informer import Informer
from hpactl.cache.reflector import Backoff
from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector
from hpactl.kube.session import KubeSession

from .conftest import Requests
from .fake_api import FakeAPI
from .test_informer_emulator import WAIT, Recorder, pod_obj, rv_of, synced


def make_informers(s: KubeSession, clock: VirtualClock) -> SharedInformers:
    return SharedInformers(
        s,
        clock=clock,
        watch_list=True,
        page_size=2,
        watch_read_timeout=WAIT,
        backoff_factory=lambda: Backoff(initial=1, cap=4, jitter=0),
    )


@pytest.fixture
async def old_server() -> AsyncIterator[Emulator]:
    async with Emulator(watch_list=False) as e:
        yield e


async def test_streamed_list_then_the_same_stream_watches(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, reqs = session
    for i in range(5):
        emu.store.create(pod_obj(f"p{i}"))
    synced_rv = emu.store.rv
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    rec = Recorder()
    pods.informer.add_handler(*rec.handlers())
    async with synced(informers):
        reflector = pods.informer.reflector
        assert reflector.watch_list_supported is True and reflector.stream_lists == 1
        assert reflector.last_resource_version == str(synced_rv)  # the end bookmark's
        assert [p.name for p in pods.list("default")] == [f"p{i}" for i in range(5)]
        assert rec.take() == [("add", f"default/p{i}") for i in range(5)]
        added = emu.store.create(pod_obj("new", app="db"))
        emu.store.delete("", "pods", "default", "p2")
        await pods.informer.wait_for_rv(emu.store.rv, timeout=WAIT)
        assert rec.take() == [("add", "default/new"), ("delete", "default/p2")]
        assert pods.informer.store.resource_version("default/new") == str(rv_of(added))
        # No LIST at all, and one stream for the list and the watch after it.
        assert reqs.count("list") == 0 and reqs.count("watch") == 1


async def test_streamed_relist_redelivers_only_changes(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, reqs = session
    for name in ("keep", "change"):
        emu.store.create(pod_obj(name))
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    rec = Recorder()
    pods.informer.add_handler(*rec.handlers())
    async with synced(informers):
        rec.take()
        informers.relist()
        assert await informers.wait_for_resync(WAIT)
        assert pods.informer.reflector.stream_lists == 2
        assert rec.take() == []  # nothing changed: nothing redelivered
        changed = dict(emu.store.get("", "pods", "default", "change") or {})
        changed["metadata"]["labels"] = {"app": "other"}
        emu.store.apply(changed)
        await pods.informer.wait_for_rv(emu.store.rv, timeout=WAIT)
        assert rec.take() == [("update", "default/change")]
        assert reqs.count("list") == 0 and reqs.count("watch") == 2


async def test_server_without_watch_list_falls_back_to_list_once(
    old_server: Emulator, clock: VirtualClock
) -> None:
    reqs = Requests()
    for i in range(3):
        old_server.store.create(pod_obj(f"p{i}"))
    async with KubeSession(master=old_server.url, qps=0, on_request=reqs) as s:
        informers = make_informers(s, clock)
        pods = informers.pod_lister()
        async with synced(informers):
            reflector = pods.informer.reflector
            assert reflector.watch_list_supported is False and reflector.stream_lists == 0
            assert [p.name for p in pods.list("default")] == ["p0", "p1", "p2"]
            informers.relist()
            assert await informers.wait_for_resync(WAIT)
            fresh = old_server.store.create(pod_obj("fresh"))
            await pods.informer.wait_for_rv(rv_of(fresh), timeout=WAIT)
            assert pods.get("default", "fresh") is not None
        # The server said 422 (the gate is off) once; every list since is a LIST
        # (the first at "0" in one page, as the watch cache ignores limit; the relist
        # at "" in two pages of 2).
        assert reqs.calls.count(("watch", "pods", "422")) == 1
        assert reqs.count("list") == 3


async def test_failed_watch_list_falls_back_to_list_for_that_attempt(
    emu: Emulator,
    session: tuple[KubeSession, Requests],
    clock: VirtualClock,
    faults: FaultInjector,
) -> None:
    s, reqs = session
    for i in range(3):
        emu.store.create(pod_obj(f"p{i}"))
    refuse = faults.add("status=503,path=/api/v1/pods,verb=watch")
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    async with synced(informers):
        # Synced by the LIST that followed the refused stream, not left waiting.
        reflector = pods.informer.reflector
        assert [p.name for p in pods.list("default")] == ["p0", "p1", "p2"]
        assert reflector.watch_list_fallbacks == 1 and reflector.stream_lists == 0
        assert reflector.watch_list_supported is None  # not given up: a 503 is no verdict
        assert ("watch", "pods", "503") in reqs.calls and reqs.count("list") == 1
        faults.remove(refuse)
        informers.relist()
        assert await informers.wait_for_resync(WAIT)
        assert reflector.stream_lists == 1 and reflector.watch_list_supported is True


class PlainWatchServer(FakeAPI):
    """A server older than 1.27: it ignores sendInitialEvents and answers a watch from
    "" with the current objects as ADDED, then its periodic plain bookmarks."""

    async def watch_list(self, resource_version: str) -> AsyncIterator[Mapping[str, Any]]:
        self.watch_calls.append(f"watch-list {resource_version!r}")
        for _, obj in sorted(self.objects.items()):
            yield {"type": "ADDED", "object": obj}
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(self.rv)}}}
        await asyncio.Event().wait()  # an open stream with nothing more to say


async def test_a_server_that_ignores_send_initial_events_gets_lists(
    clock: VirtualClock,
) -> None:
    api = PlainWatchServer(page_size=2)
    for i in range(3):
        api.put("ns", f"o{i}", size=i)
    inf: Informer[dict[str, Any]] = Informer("things", api, dict, clock=clock)
    inf.start()
    try:
        await inf.wait_synced(timeout=WAIT)
        assert sorted(inf.store.keys()) == ["ns/o0", "ns/o1", "ns/o2"]
        assert inf.reflector.watch_list_supported is False
        assert api.list_calls == ["0"]  # synced by the LIST, not held by the stream
        assert api.watch_calls[0] == "watch-list ''"
    finally:
        await inf.stop()
