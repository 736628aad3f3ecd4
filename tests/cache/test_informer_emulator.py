"""Informers against the Kubernetes API emulator over loopback HTTP.

The informers run on a VirtualClock: their backoff sleeps only end when a test
advances it, which makes the "disconnected" windows deterministic. Network waits
are bounded by real timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from hpactl.cache.factory import HPAS, SharedInformers
from hpactl.cache.reflector import Backoff
from hpactl.cache.store import ProjectionError
from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector
from hpactl.kube.session import KubeSession

from .conftest import Requests

WAIT = 10.0  # real seconds: a bound, never a sleep


def pod_obj(
    name: str, app: str = "web", ns: str = "default", phase: str = "Running"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": {"app": app}},
        "spec": {
            "containers": [
                {"name": "c", "image": "img", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
        "status": {"phase": phase},
    }


def hpa_obj(name: str, target: str, max_replicas: Any = 5) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": "default", "name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
        },
    }


def deploy_obj(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": "default", "name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "img"}]},
            },
        },
    }


def rv_of(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def handlers(self) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None]]:
        return (
            lambda key, obj: self.events.append(("add", key)),
            lambda key, old, new: self.events.append(("update", key)),
            lambda key, obj: self.events.append(("delete", key)),
        )

    def take(self) -> list[tuple[str, str]]:
        out, self.events = self.events, []
        return out


async def until(cond: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not cond():
            await asyncio.sleep(0.01)  # polling real I/O progress, bounded by WAIT


@contextlib.asynccontextmanager
async def synced(informers: SharedInformers) -> AsyncIterator[SharedInformers]:
    """Start the informers, wait (bounded) for their caches; stop them at the end."""
    informers.start()
    try:
        assert await informers.wait_for_cache_sync(WAIT)
        yield informers
    finally:
        await informers.stop()


def make_informers(s: KubeSession, clock: VirtualClock) -> SharedInformers:
    # Fixed backoff (no jitter) so the tests can advance the clock by exactly enough.
    return SharedInformers(
        s,
        clock=clock,
        page_size=2,
        watch_read_timeout=WAIT,
        backoff_factory=lambda: Backoff(initial=1, cap=4, jitter=0),
    )


async def test_list_then_watch_adds_updates_deletes(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, reqs = session
    for i in range(5):
        emu.store.create(pod_obj(f"p{i}"))
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    rec = Recorder()
    pods.informer.add_handler(*rec.handlers())
    async with synced(informers):
        assert [p.name for p in pods.list("default")] == [f"p{i}" for i in range(5)]
        assert rec.take() == [("add", f"default/p{i}") for i in range(5)]
        added = emu.store.create(pod_obj("new", app="db"))
        changed = dict(emu.store.get("", "pods", "default", "p1") or {})
        changed["metadata"]["labels"] = {"app": "db"}
        emu.store.apply(changed)
        emu.store.delete("", "pods", "default", "p2")
        last = emu.store.rv
        assert last > rv_of(added)
        await pods.informer.wait_for_rv(last, timeout=WAIT)
        assert rec.take() == [
            ("add", "default/new"),
            ("update", "default/p1"),
            ("delete", "default/p2"),
        ]
        p1 = pods.get("default", "p1")
        assert p1 is not None and p1.labels == {"app": "db"}
        assert pods.get("default", "p2") is None
        assert pods.informer.store.resource_version("default/new") == str(rv_of(added))
        assert reqs.count("list") == 1 and reqs.count("watch") == 1


async def test_bookmarks_move_an_idle_informer_and_the_barrier(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, reqs = session
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    rec = Recorder()
    pods.informer.add_handler(*rec.handlers())
    async with synced(informers):
        # A write to another resource type: pods see no event, only bookmarks.
        rv = rv_of(emu.store.create(deploy_obj("web", 3)))
        await pods.informer.wait_for_rv(rv, timeout=WAIT)
        assert int(pods.informer.resource_version) >= rv
        assert rec.take() == []
        assert reqs.count("watch") == 1  # the same stream carried the bookmark
        # The next watch resumes from the bookmark's resourceVersion.
        assert pods.informer.reflector.last_resource_version == pods.informer.resource_version


async def test_shared_barrier_waits_for_every_informer(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, _ = session
    informers = make_informers(s, clock)
    hpas = informers.hpa_lister()
    workloads = informers.workload_lister()
    informers.pod_lister()
    async with synced(informers):
        emu.store.create(deploy_obj("web", 3))
        rv = rv_of(emu.store.create(hpa_obj("web", "web")))
        await informers.wait_for_rv(rv, timeout=WAIT)
        assert all(i.observed_rv >= rv for i in informers.informers.values())
        assert [h.name for h in hpas.by_target("Deployment", "default", "web")] == ["web"]
        scale = workloads.get("Deployment", "default", "web")
        assert scale is not None and (scale.spec_replicas, scale.selector) == (3, "app=web")


async def test_dead_stream_resumes_without_relist(clock: VirtualClock) -> None:
    """A stream that goes silent (no bookmarks either) is abandoned after the read
    timeout and the watch resumes from the last resourceVersion."""
    async with Emulator(bookmark_interval=3600) as emu:
        reqs = Requests()
        async with KubeSession(master=emu.url, qps=0, on_request=reqs) as s:
            informers = SharedInformers(s, clock=clock, watch_read_timeout=0.2)
            pods = informers.pod_lister()
            rec = Recorder()
            pods.informer.add_handler(*rec.handlers())
            async with synced(informers):
                a = emu.store.create(pod_obj("a"))
                await pods.informer.wait_for_rv(rv_of(a), timeout=WAIT)
                await until(lambda: reqs.count("watch") >= 3, "two resumed watches")
                b = emu.store.create(pod_obj("b"))
                await pods.informer.wait_for_rv(rv_of(b), timeout=WAIT)
                assert rec.take() == [("add", "default/a"), ("add", "default/b")]
                # resumed, never relisted: the other lists are the one-item checks of
                # the server's resourceVersion before each resumed watch
                refl = pods.informer.reflector
                assert refl.lists == 1 and refl.probes >= 2
                assert reqs.count("list") == 1 + refl.probes
                assert clock.monotonic() == 0 and clock.sleepers == 0  # no backoff either


async def test_server_dropped_stream_resumes_without_relist(clock: VirtualClock) -> None:
    faults = FaultInjector(seed=1)
    # Streams are recycled every 0.3 s (read timeout, no bookmarks), so the drop rule
    # meets a stream whether the emulator applies it to running or to new streams.
    async with Emulator(bookmark_interval=3600, faults=faults) as emu:
        reqs = Requests()
        async with KubeSession(master=emu.url, qps=0, on_request=reqs) as s:
            informers = SharedInformers(
                s,
                clock=clock,
                watch_read_timeout=0.3,
                backoff_factory=lambda: Backoff(initial=1, cap=4, jitter=0),
            )
            pods = informers.pod_lister()
            rec = Recorder()
            pods.informer.add_handler(*rec.handlers())
            async with synced(informers):
                a = emu.store.create(pod_obj("a"))
                await pods.informer.wait_for_rv(rv_of(a), timeout=WAIT)
                rule = faults.add("watch-drop=/api/v1/pods,count=1")
                await until(lambda: faults.hits(rule) == 1, "the drop")
                b = emu.store.create(pod_obj("b"))
                async with asyncio.timeout(WAIT):
                    while pods.informer.observed_rv < rv_of(b):
                        deadline = clock.next_deadline()
                        if deadline is not None:
                            # a stream dropped before any event counts as an error
                            clock.advance(deadline - clock.monotonic())
                        await asyncio.sleep(0.01)
                assert rec.take() == [("add", "default/a"), ("add", "default/b")]
                # resumed from the last resourceVersion (after a one-item list probe)
                refl = pods.informer.reflector
                assert refl.lists == 1 and refl.probes >= 1
                assert reqs.count("list") == 1 + refl.probes


async def test_forced_410_relists_and_detects_deletions(
    emu: Emulator,
    session: tuple[KubeSession, Requests],
    clock: VirtualClock,
    faults: FaultInjector,
) -> None:
    s, reqs = session
    for name in ("keep", "change", "remove"):
        emu.store.create(pod_obj(name))
    # Watches are refused at first: after its list the reflector backs off on the
    # virtual clock, and the changes below happen while it is not watching.
    refuse = faults.add("status=503,path=/api/v1/pods,verb=watch")
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    rec = Recorder()
    pods.informer.add_handler(*rec.handlers())
    async with synced(informers):
        await until(lambda: clock.sleepers == 1, "backoff")
        assert ("watch", "pods", "503") in reqs.calls
        rec.take()
        emu.store.delete("", "pods", "default", "remove")
        changed = dict(emu.store.get("", "pods", "default", "change") or {})
        changed["metadata"]["labels"] = {"app": "other"}
        emu.store.apply(changed)
        emu.store.create(pod_obj("fresh"))
        faults.remove(refuse)
        faults.add("gone=/api/v1/pods,count=1")  # as if the history had been compacted
        last = emu.store.rv
        clock.advance(1)
        await pods.informer.wait_for_rv(last, timeout=WAIT)
        assert pods.informer.reflector.lists == 2  # relisted (page by page)
        assert sorted(rec.take()) == [
            ("add", "default/fresh"),
            ("delete", "default/remove"),
            ("update", "default/change"),
        ]  # "keep" did not change: not redelivered
        assert [p.name for p in pods.list("default")] == ["change", "fresh", "keep"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_refused_backs_off_then_recovers(clock: VirtualClock) -> None:
    port = free_port()
    async with KubeSession(master=f"http://127.0.0.1:{port}", qps=0, connect_timeout=2) as s:
        informers = SharedInformers(
            s, clock=clock, backoff_factory=lambda: Backoff(initial=1, cap=4, jitter=0)
        )
        pods = informers.pod_lister()
        informers.start()
        try:
            delays = []
            for _ in range(3):
                await until(lambda: clock.sleepers == 1, "backoff")
                deadline = clock.next_deadline()
                assert deadline is not None
                delays.append(deadline - clock.monotonic())
                clock.advance(delays[-1])
            await until(lambda: clock.sleepers == 1, "backoff")
            assert delays == [1, 2, 4]  # exponential
            assert clock.next_deadline() == clock.monotonic() + 4  # then capped
            assert not informers.has_synced
            err = pods.informer.reflector.last_error
            assert err is not None and f"127.0.0.1:{port}" in str(err)
            async with Emulator(port=port) as emu:
                emu.store.create(pod_obj("a"))
                clock.advance(4)
                assert await informers.wait_for_cache_sync(WAIT)
                assert [p.name for p in pods.list("default")] == ["a"]
                await informers.stop()
        finally:
            await informers.stop()


async def test_malformed_hpa_is_reported_without_killing_the_informer(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, _ = session
    informers = make_informers(s, clock)
    hpas = informers.hpa_lister()
    seen: list[tuple[str, Any]] = []
    hpas.informer.add_handler(on_add=lambda key, obj: seen.append((key, obj)))
    async with synced(informers):
        emu.store.create(hpa_obj("bad", "web", max_replicas="many"))
        rv = rv_of(emu.store.create(hpa_obj("good", "web")))
        await informers.wait_for_rv(rv, timeout=WAIT, names=[HPAS])
        assert [k for k, _ in seen] == ["default/bad", "default/good"]
        assert isinstance(seen[0][1], ProjectionError)
        err = hpas.get_error("default", "bad")
        assert err is not None
        assert err.message == "spec.maxReplicas: expected an integer, got 'many'"
        assert hpas.get("default", "bad") is None and hpas.exists("default", "bad")
        good = hpas.get("default", "good")
        assert good is not None and good.spec.max_replicas == 5
        assert informers.informers[HPAS].running


async def test_wait_for_writes_needs_no_bookmark(clock: VirtualClock) -> None:
    """Waiting per written kind for its last write's resourceVersion is exact."""
    async with Emulator(bookmark_interval=3600) as emu, KubeSession(master=emu.url, qps=0) as s:
        informers = SharedInformers(s, clock=clock)
        pods = informers.pod_lister()
        workloads = informers.workload_lister()
        async with synced(informers):
            d = rv_of(emu.store.create(deploy_obj("web", 2)))
            p = rv_of(emu.store.create(pod_obj("web-1")))
            await informers.wait_for_writes({"Deployment": d, "Pod": p, "CronJob": p}, WAIT)
            assert workloads.get("Deployment", "default", "web") is not None
            assert pods.get("default", "web-1") is not None
            # the StatefulSet informer saw nothing newer than its list: a global
            # barrier would need a bookmark it will not get within the timeout
            with pytest.raises(TimeoutError):
                await informers.wait_for_rv(p, timeout=0.2)


async def test_a_watch_cut_mid_stream_is_resumed_not_relisted(
    emu: Emulator, clock: VirtualClock
) -> None:
    """A connection dropped under an open watch (a load balancer closing idle streams)
    is resumed from the last resourceVersion, as client-go does: at 30,000 pods a relist
    per dropped connection would cost more than it proves. Only a failure to connect
    at all (the server restarted, maybe restored) relists (tests/controller/test_outage.py)."""
    from support.proxy import RecordingProxy

    async with RecordingProxy(emu.url) as proxy, KubeSession(master=proxy.url, qps=0) as s:
        informers = make_informers(s, clock)
        hpas = informers.hpas()
        async with synced(informers):
            emu.store.create(hpa_obj("a", "web"))
            await until(lambda: hpas.store.get("default/a") is not None, "a watched")
            lists, watches = hpas.reflector.lists, hpas.reflector.watches
            assert proxy.cut_streams() >= 1
            emu.store.create(hpa_obj("b", "web"))
            async with asyncio.timeout(WAIT):
                while hpas.store.get("default/b") is None:
                    clock.advance(1.0)  # past the reflector's backoff (1 s, no jitter)
                    await asyncio.sleep(0.02)
            assert hpas.reflector.watches > watches  # a new watch after the cut...
            assert hpas.reflector.lists == lists  # ...resumed where it was: no relist
