"""The reflector against resourceVersions that go back, too-large resourceVersions and
forced relists, on the in-memory API (no network, virtual clock)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from hpactl.cache.informer import Informer
from hpactl.clock import VirtualClock

from .fake_api import FakeAPI
from .test_informer_unit import Obj, Recorder, informer_on_fake_api, project, until


@pytest.fixture
async def setup(clock: VirtualClock) -> AsyncIterator[tuple[FakeAPI, Informer[Obj], Recorder]]:
    async with informer_on_fake_api(clock) as (api, inf, rec):
        rec.take()  # the initial adds: each test looks at what follows
        yield api, inf, rec


def restored(api: FakeAPI) -> dict[str, dict[str, object]]:
    """The state of a backup taken at resourceVersion 103: o0..o2 as they were then,
    and o2 with different content under the resourceVersion the cache holds."""
    objs = {k: copy.deepcopy(v) for k, v in api.objects.items() if k in ("ns/o0", "ns/o1")}
    objs["ns/o2"] = {
        "metadata": {"namespace": "ns", "name": "o2", "resourceVersion": "103"},
        "spec": {"size": 20},
    }
    return objs


async def test_watch_event_below_the_last_resource_version_relists(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    high = asyncio.ensure_future(inf.wait_for_rv(200))
    await asyncio.sleep(0)
    with capture_logs() as logs:
        api.restore(103, restored(api))
        api.put("ns", "o9", size=9)  # resourceVersion 104: sent on the open watch
        await until(lambda: inf.reflector.lists == 2)
        await asyncio.wait_for(high, 5)  # released: 200 belongs to the lost history
    assert api.list_calls == ["0", ""]  # a consistent relist
    assert inf.reflector.regressions == 1
    (warning,) = [e for e in logs if e["event"] == "cache.resource_version_regressed"]
    assert warning["log_level"] == "warning"
    assert (warning["last_resource_version"], warning["resource_version"]) == (105, 104)
    assert warning["seen_in"] == "watch"
    assert sorted(inf.store.keys()) == ["ns/o0", "ns/o1", "ns/o2", "ns/o9"]
    o2 = inf.store.get("ns/o2")
    assert o2 is not None and o2.size == 20  # same resourceVersion, new content: reloaded
    events = rec.take()
    assert ("delete", "ns/o3", 3) in events and ("delete", "ns/o4", 4) in events
    assert ("update", "ns/o2", 2, 20) in events and ("add", "ns/o9", 9) in events
    assert inf.observed_rv == 104 and inf.resource_version == "104"
    await inf.wait_for_rv(104, timeout=1)
    api.put("ns", "o10", size=10)
    await inf.wait_for_rv(105, timeout=5)
    assert inf.store.get("ns/o10") is not None


async def test_bookmark_below_the_last_resource_version_relists(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    api.restore(90, {})
    api.bookmark()  # resourceVersion 91
    await until(lambda: inf.reflector.lists == 2)
    assert len(inf.store) == 0
    assert sorted(e[1] for e in rec.take()) == [f"ns/o{i}" for i in range(5)]
    assert inf.observed_rv == 91


async def test_check_before_resuming_a_watch(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    """A resumed watch from the old resourceVersion would get nothing from a real
    server: the one-item list before resuming sees the lower number."""
    api, inf, _ = setup
    probes = api.probe_calls
    with capture_logs() as logs:
        api.restore(100, {})
        api.drop_watches()
        await until(lambda: inf.reflector.lists == 2 and api.watchers == 1)
    assert api.probe_calls == probes + 1
    assert api.watch_calls == ["105", "100"]  # never resumed from 105
    (warning,) = [e for e in logs if e["event"] == "cache.resource_version_regressed"]
    assert warning["seen_in"] == "probe"
    assert len(inf.store) == 0 and inf.observed_rv == 100


async def test_resuming_without_regression_does_not_relist(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, _ = setup
    api.put("ns", "o0", size=100)
    await inf.wait_for_rv(106, timeout=5)
    api.drop_watches()
    await until(lambda: len(api.watch_calls) == 2)
    assert api.watch_calls == ["105", "106"] and api.list_calls == ["0"]
    assert inf.reflector.regressions == 0


async def test_too_large_resource_version_relists_without_backoff(
    setup: tuple[FakeAPI, Informer[Obj], Recorder], clock: VirtualClock
) -> None:
    """An apiserver behind our resourceVersion answers 504 ResourceVersionTooLarge:
    a consistent relist (client-go's isTooLargeResourceVersionError), no backoff."""
    api, inf, rec = setup
    api.send_error(504, "Timeout", "Timeout: Too large resource version: 105, current: 103")
    await until(lambda: inf.reflector.lists == 2)
    assert api.list_calls == ["0", ""]
    assert clock.sleepers == 0 and clock.monotonic() == 0
    assert inf.reflector.regressions == 0  # the list was not lower: nothing went back
    assert rec.take() == []  # and nothing changed
    await until(lambda: api.watchers == 1)
    assert inf.reflector.failing_since is None


async def test_relist_ends_the_watch_and_lists_consistently(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    await inf.wait_for_resync(timeout=0)  # nothing pending
    api.objects.pop("ns/o4")  # a deletion the watch never delivered
    target = inf.relist()
    assert inf.resync_pending and target == 2
    await inf.wait_for_resync(timeout=5)
    assert not inf.resync_pending and inf.reflector.completed_list == 2
    assert api.list_calls == ["0", ""]
    assert rec.take() == [("delete", "ns/o4", 4)]
    await until(lambda: api.watchers == 1)
    assert len(api.watch_calls) == 2


async def test_relist_during_a_list_needs_a_later_list(clock: VirtualClock) -> None:
    api = FakeAPI(page_size=1)
    for i in range(3):
        api.put("ns", f"o{i}", size=i)
    gate = asyncio.Event()
    pages = api.list_pages

    async def slow_pages(rv: str) -> AsyncIterator[object]:
        async for page in pages(rv):
            await gate.wait()
            yield page

    api.list_pages = slow_pages  # type: ignore[method-assign,assignment]
    inf: Informer[Obj] = Informer("things", api, project, clock=clock)
    inf.start()
    try:
        await until(lambda: inf.reflector.lists_started == 1)
        inf.relist()  # while the first list is under way
        gate.set()
        await inf.wait_synced(timeout=5)
        assert inf.resync_pending  # the first list started before the request
        await inf.wait_for_resync(timeout=5)
        assert api.list_calls == ["0", ""]
    finally:
        await inf.stop()
