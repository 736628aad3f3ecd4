"""Reflector and informer semantics against an in-memory API (no network, virtual clock)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from hpactl.cache.informer import Informer, InformerStopped
from hpactl.cache.reflector import Backoff, ListPage
from hpactl.cache.store import ProjectionError
from hpactl.clock import VirtualClock
from hpactl.kube.errors import ServiceUnavailable

from .fake_api import FakeAPI, refused


@dataclass(frozen=True, slots=True)
class Obj:
    key: str
    size: int


def project(raw: Mapping[str, Any]) -> Obj:
    meta = raw["metadata"]
    size = raw["spec"]["size"]
    if not isinstance(size, int):
        raise ValueError(f"size must be an integer, got {size!r}")
    return Obj(f"{meta['namespace']}/{meta['name']}", size)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def add(self, key: str, obj: Any) -> None:
        self.events.append(("add", key, _size(obj)))

    def update(self, key: str, old: Any, new: Any) -> None:
        self.events.append(("update", key, _size(old), _size(new)))

    def delete(self, key: str, obj: Any) -> None:
        self.events.append(("delete", key, _size(obj)))

    def take(self) -> list[tuple[Any, ...]]:
        out, self.events = self.events, []
        return out


def _size(obj: Any) -> Any:
    return "error" if isinstance(obj, ProjectionError) else obj.size


async def until(cond: Callable[[], bool], rounds: int = 500) -> None:
    for _ in range(rounds):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


@contextlib.asynccontextmanager
async def informer_on_fake_api(
    clock: VirtualClock,
) -> AsyncIterator[tuple[FakeAPI, Informer[Obj], Recorder]]:
    """Five objects in a FakeAPI, an informer synced on them and watching."""
    api = FakeAPI(page_size=2)
    for i in range(5):
        api.put("ns", f"o{i}", size=i)  # resourceVersions 101..105
    inf: Informer[Obj] = Informer(
        "things",
        api,
        project,
        clock=clock,
        backoff=Backoff(rng=random.Random(7)),
        min_watch_seconds=0.0,
    )
    rec = Recorder()
    inf.add_handler(rec.add, rec.update, rec.delete)
    inf.start()
    try:
        await inf.wait_synced(timeout=5)
        await until(lambda: api.watchers == 1)
        yield api, inf, rec
    finally:
        await inf.stop()


@pytest.fixture
async def setup(clock: VirtualClock) -> AsyncIterator[tuple[FakeAPI, Informer[Obj], Recorder]]:
    async with informer_on_fake_api(clock) as it:
        yield it


async def test_initial_paged_list_then_watch(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    assert inf.has_synced
    assert api.list_calls == ["0"]  # the first list may be served from a cache
    assert [o.size for o in inf.store.list()] == [0, 1, 2, 3, 4]
    assert rec.take() == [("add", f"ns/o{i}", i) for i in range(5)]
    assert inf.resource_version == str(api.rv) == "105"
    assert api.watch_calls == ["105"]
    assert inf.observed_rv == 105


async def test_watch_add_update_delete_in_order(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    rec.take()
    api.put("ns", "new", size=10)
    api.put("ns", "o1", size=11)
    rv = api.delete("ns", "o2")
    await inf.wait_for_rv(rv, timeout=5)
    assert rec.take() == [("add", "ns/new", 10), ("update", "ns/o1", 1, 11), ("delete", "ns/o2", 2)]
    store = inf.store
    assert store.get("ns/o1") == Obj("ns/o1", 11) and store.get("ns/o2") is None
    assert store.resource_version("ns/o1") == "107"


async def test_bookmark_moves_the_resume_point_and_the_barrier(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    waiter = asyncio.create_task(inf.wait_for_rv(106))
    await asyncio.sleep(0)
    assert not waiter.done()
    api.bookmark()  # RV 106, no object changed
    await asyncio.wait_for(waiter, 5)
    assert inf.resource_version == "106"
    assert rec.take()[5:] == []  # no handler call for a bookmark
    api.drop_watches()
    await until(lambda: len(api.watch_calls) == 2)
    assert api.watch_calls[-1] == "106"


async def test_barrier_returns_at_once_for_an_old_rv(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    _, inf, _ = setup
    await inf.wait_for_rv("50")
    with pytest.raises(ValueError):
        await inf.wait_for_rv("abc")
    with pytest.raises(TimeoutError):
        await inf.wait_for_rv(10_000, timeout=0.01)


async def test_dropped_stream_resumes_without_relist(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    rec.take()
    api.put("ns", "o0", size=100)  # rv 106, seen
    await inf.wait_for_rv(106, timeout=5)
    api.drop_watches()
    api.put("ns", "o3", size=103)  # rv 107, happens while disconnected
    await inf.wait_for_rv(107, timeout=5)
    assert api.list_calls == ["0"]
    assert api.watch_calls == ["105", "106"]
    assert rec.take() == [("update", "ns/o0", 0, 100), ("update", "ns/o3", 3, 103)]


async def test_gone_relists_consistently_and_detects_deletions(
    setup: tuple[FakeAPI, Informer[Obj], Recorder], clock: VirtualClock
) -> None:
    api, inf, rec = setup
    rec.take()
    # While the watch is down, changes happen and the history is compacted.
    api.watch_faults.append(refused())
    api.drop_watches()
    await until(lambda: inf.reflector.last_error is not None)
    api.delete("ns", "o1")
    api.put("ns", "o2", size=22)
    api.put("ns", "fresh", size=7)
    api.compact()
    assert clock.sleepers == 1  # backing off after the refused watch
    clock.advance(60)
    await inf.wait_for_rv(api.rv, timeout=5)
    assert api.list_calls == ["0", ""]  # relisted with a consistent read
    events = rec.take()
    assert sorted(events) == sorted(
        [("add", "ns/fresh", 7), ("update", "ns/o2", 2, 22), ("delete", "ns/o1", 1)]
    )  # unchanged objects (same RV) are not redelivered
    assert sorted(o.key for o in inf.store.list()) == [
        "ns/fresh",
        "ns/o0",
        "ns/o2",
        "ns/o3",
        "ns/o4",
    ]
    await until(lambda: api.watchers == 1)
    assert api.watch_calls[-1] == str(api.rv)


async def test_error_event_410_in_stream_relists(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, _inf, _ = setup
    api.send_error(410, "Expired", "too old resource version: 1 (100)")
    await until(lambda: len(api.list_calls) == 2)
    assert api.list_calls == ["0", ""]
    await until(lambda: api.watchers == 1)


async def test_other_error_event_backs_off_and_resumes(
    setup: tuple[FakeAPI, Informer[Obj], Recorder], clock: VirtualClock
) -> None:
    api, _inf, _ = setup
    api.send_error(500, "InternalError", "etcd is sad")
    await until(lambda: clock.sleepers == 1)
    delay = clock.next_deadline()
    assert delay is not None and 0.8 <= delay <= 1.6
    clock.advance(delay)
    await until(lambda: api.watchers == 1)
    assert api.list_calls == ["0"]
    assert api.watch_calls == ["105", "105"]


async def test_connection_refused_backs_off_exponentially_then_recovers(
    clock: VirtualClock,
) -> None:
    api = FakeAPI()
    api.put("ns", "a", size=1)
    api.list_faults = [refused(), refused(), ServiceUnavailable("down", code=503), refused()]
    inf: Informer[Obj] = Informer(
        "things",
        api,
        project,
        clock=clock,
        backoff=Backoff(initial=1, cap=5, jitter=0.5, rng=random.Random(1)),
    )
    inf.start()
    delays = []
    for _ in range(4):
        await until(lambda: clock.sleepers == 1)
        deadline = clock.next_deadline()
        assert deadline is not None
        delays.append(deadline - clock.monotonic())
        assert not inf.has_synced
        clock.advance(delays[-1])
    await inf.wait_synced(timeout=5)
    assert inf.store.get("ns/a") == Obj("ns/a", 1)
    assert len(api.list_calls) == 5
    bases = [1, 2, 4, 5]
    for base, d in zip(bases, delays, strict=True):
        assert base <= d <= min(5, base * 1.5)
    assert isinstance(inf.reflector.last_error, Exception)
    await inf.stop()


async def test_short_watch_counts_as_an_error(clock: VirtualClock) -> None:
    """A server that closes every watch at once is not hammered."""
    api = FakeAPI()
    inf: Informer[Obj] = Informer("things", api, project, clock=clock, min_watch_seconds=60)
    original = api.watch

    async def closing_watch(rv: str) -> AsyncIterator[Mapping[str, Any]]:
        api.watch_calls.append(rv)
        return
        yield  # pragma: no cover

    api.watch = closing_watch  # type: ignore[method-assign,assignment]
    inf.start()
    await inf.wait_synced(timeout=5)
    await until(lambda: clock.sleepers == 1)
    assert len(api.watch_calls) == 1
    api.watch = original  # type: ignore[method-assign]
    clock.advance(60)
    await until(lambda: api.watchers == 1)
    await inf.stop()


async def test_malformed_object_is_reported_and_informer_keeps_going(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    rec.take()
    api.put("ns", "o1", size="huge")
    rv = api.put("ns", "o2", size=20)
    await inf.wait_for_rv(rv, timeout=5)
    assert rec.take() == [("update", "ns/o1", 1, "error"), ("update", "ns/o2", 2, 20)]
    err = inf.store.get_error("ns/o1")
    assert err is not None and err.message == "size must be an integer, got 'huge'"
    assert inf.store.get("ns/o1") is None
    rv = api.put("ns", "o1", size=1)
    await inf.wait_for_rv(rv, timeout=5)
    assert rec.take() == [("update", "ns/o1", "error", 1)]


async def test_failing_handler_does_not_stop_others(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, rec = setup
    rec.take()

    def boom(key: str, obj: Any) -> None:
        raise RuntimeError("handler bug")

    inf.add_handler(on_add=boom)
    rv1 = api.put("ns", "x", size=1)
    rv2 = api.put("ns", "y", size=2)
    await inf.wait_for_rv(rv2, timeout=5)
    assert rv1 < rv2
    assert rec.take() == [("add", "ns/x", 1), ("add", "ns/y", 2)]


async def test_late_handler_gets_existing_objects_and_can_be_removed(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, _ = setup
    late = Recorder()
    reg = inf.add_handler(late.add, late.update, late.delete)
    assert late.take() == [("add", f"ns/o{i}", i) for i in range(5)]
    inf.remove_handler(reg)
    rv = api.put("ns", "z", size=1)
    await inf.wait_for_rv(rv, timeout=5)
    assert late.take() == []


async def test_resync_redelivers_every_object_on_the_clock(clock: VirtualClock) -> None:
    api = FakeAPI()
    api.put("ns", "a", size=1)
    api.put("ns", "b", size=2)
    inf: Informer[Obj] = Informer("things", api, project, clock=clock, resync_period=15)
    rec = Recorder()
    inf.add_handler(rec.add, rec.update, rec.delete)
    inf.start()
    await inf.wait_synced(timeout=5)
    rec.take()
    await clock.run_for(14.9)
    assert rec.take() == []
    await clock.run_for(0.1)
    assert rec.take() == [("update", "ns/a", 1, 1), ("update", "ns/b", 2, 2)]
    await clock.run_for(30)
    assert len(rec.take()) == 4
    await inf.stop()


async def test_stop_releases_waiters_and_closes_the_watch(
    setup: tuple[FakeAPI, Informer[Obj], Recorder],
) -> None:
    api, inf, _ = setup
    waiter = asyncio.create_task(inf.wait_for_rv(10_000))
    await asyncio.sleep(0)
    await inf.stop()
    with pytest.raises(InformerStopped):
        await waiter
    assert api.watchers == 0
    assert not inf.running


def test_backoff_is_capped_and_resets() -> None:
    b = Backoff(initial=0.8, cap=30, factor=2, jitter=0, rng=random.Random(0))
    assert [b.next_delay() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30]
    b.reset()
    assert b.next_delay() == 0.8
    jittered = Backoff(initial=1, cap=100, jitter=1.0, rng=random.Random(3))
    d = [jittered.next_delay() for _ in range(3)]
    assert 1 <= d[0] < 2 and 2 <= d[1] < 4 and 4 <= d[2] < 8
    with pytest.raises(ValueError):
        Backoff(initial=0)


async def test_retry_after_from_the_server_extends_the_backoff(clock: VirtualClock) -> None:
    from hpactl.kube.errors import TooManyRequests

    api = FakeAPI()
    api.list_faults = [TooManyRequests("slow down", code=429, retry_after=10)]
    inf: Informer[Obj] = Informer(
        "things", api, project, clock=clock, backoff=Backoff(initial=1, jitter=0)
    )
    inf.start()
    await until(lambda: clock.sleepers == 1)
    assert clock.next_deadline() == 10
    clock.advance(10)
    await inf.wait_synced(timeout=5)
    await inf.stop()


async def test_unexpected_errors_never_kill_the_informer(clock: VirtualClock) -> None:
    api = FakeAPI()
    api.put("ns", "a", size=1)
    original = api.list_pages
    calls: list[str] = []

    async def flaky_list(resource_version: str) -> AsyncIterator[ListPage]:
        calls.append(resource_version)
        if len(calls) == 1:
            yield ListPage(["not an object", 42], "200")  # type: ignore[list-item]
            raise RuntimeError("a bug somewhere")
        async for page in original(resource_version):
            yield page

    api.list_pages = flaky_list  # type: ignore[method-assign]
    inf: Informer[Obj] = Informer("things", api, project, clock=clock, backoff=Backoff(jitter=0))
    inf.start()
    await until(lambda: clock.sleepers == 1)
    assert isinstance(inf.reflector.last_error, RuntimeError)
    clock.advance(0.8)
    await inf.wait_synced(timeout=5)
    assert calls == ["0", ""]  # started over with a consistent list
    assert inf.store.get("ns/a") == Obj("ns/a", 1)
    await inf.stop()
