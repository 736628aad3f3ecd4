"""Caches against an API server whose resourceVersions went back (an etcd restore, an
emptied server), forced relists, and `connected()`.

Against the emulator over loopback HTTP, informers on a VirtualClock (backoff sleeps
end only when a test advances it); network waits are bounded by real timeouts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from hpactl.cache.factory import HPAS, PODS, SharedInformers
from hpactl.cache.reflector import Backoff
from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector
from hpactl.kube.session import KubeSession

from .conftest import Requests
from .test_informer_emulator import WAIT, Recorder, hpa_obj, pod_obj, rv_of, synced

HPA_RES = ("autoscaling", "horizontalpodautoscalers")


@pytest.fixture
def bookmark_interval() -> float:
    return 0.05  # barriers here wait on bookmarks of informers that saw no change


@pytest.fixture(params=[False, True], ids=["list", "watch-list"])
def watch_list(request: pytest.FixtureRequest) -> bool:
    """Lists as paged LISTs, or as streaming lists (sendInitialEvents)."""
    flag: bool = request.param
    return flag


def make_informers(
    s: KubeSession, clock: VirtualClock, watch_list: bool = False
) -> SharedInformers:
    return SharedInformers(
        s,
        clock=clock,
        watch_list=watch_list,
        page_size=2,
        watch_read_timeout=WAIT,
        backoff_factory=lambda: Backoff(initial=1, cap=4, jitter=0),
    )


async def drive(clock: VirtualClock, cond: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for `cond`, ending any backoff sleep on the virtual clock."""
    try:
        async with asyncio.timeout(WAIT):
            while not cond():
                deadline = clock.next_deadline()
                if deadline is not None:
                    clock.advance(deadline - clock.monotonic())
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def server_hpas(emu: Emulator) -> dict[str, str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for o in emu.store.list(*HPA_RES)
    }


def cached_hpas(informers: SharedInformers) -> dict[str, str]:
    store = informers.hpas().store
    return {k: store.resource_version(k) or "" for k, _ in store.items()}


async def test_restore_to_an_older_snapshot_relists_and_resets_the_barrier(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock, watch_list: bool
) -> None:
    s, _ = session
    emu.store.create(hpa_obj("old", "web"))
    emu.store.create(hpa_obj("changed", "web"))
    snap = emu.snapshot()
    informers = make_informers(s, clock, watch_list)
    hpas = informers.hpa_lister()
    rec = Recorder()
    hpas.informer.add_handler(*rec.handlers())
    async with synced(informers):
        # After the snapshot: two new HPAs, one changed (it reverts), writes push the
        # resourceVersion well past the snapshot's.
        emu.store.create(hpa_obj("new-1", "web"))
        emu.store.create(hpa_obj("new-2", "web"))
        changed = emu.store.get(*HPA_RES, "default", "changed")
        assert changed is not None
        changed["spec"]["maxReplicas"] = 9
        emu.store.apply(changed)
        for i in range(5):
            emu.store.create(pod_obj(f"p{i}"))
        high = emu.store.rv
        await informers.wait_for_rv(high, timeout=WAIT, names=[HPAS])
        assert set(cached_hpas(informers)) == {
            "default/old",
            "default/changed",
            "default/new-1",
            "default/new-2",
        }
        rec.take()
        # A waiter on a resourceVersion the server will never reach again.
        stuck = asyncio.ensure_future(hpas.informer.wait_for_rv(high + 100, timeout=WAIT))
        await asyncio.sleep(0)

        with capture_logs() as logs:
            emu.restore(snap)
            assert emu.store.rv < high
            # Written after the restore, with a resourceVersion the old history used.
            reused = emu.store.create(hpa_obj("after", "web"))
            assert rv_of(reused) < high
            await drive(clock, lambda: hpas.informer.reflector.regressions == 1, "the relist")
            await hpas.informer.wait_for_rv(rv_of(reused), timeout=WAIT)
            await asyncio.wait_for(stuck, WAIT)  # released, not left hanging

        assert cached_hpas(informers) == server_hpas(emu)
        cached = hpas.get("default", "changed")
        assert cached is not None and cached.spec.max_replicas == 5  # reverted
        events = rec.take()
        assert sorted(e for e in events if e[0] == "delete") == [
            ("delete", "default/new-1"),
            ("delete", "default/new-2"),
        ]
        assert ("add", "default/after") in events
        assert ("update", "default/changed") in events
        warnings = [e for e in logs if e["event"] == "cache.resource_version_regressed"]
        assert len(warnings) == 1
        w = warnings[0]
        assert w["log_level"] == "warning" and w["informer"] == HPAS
        assert w["last_resource_version"] >= high and w["resource_version"] <= rv_of(reused)
        relisted = [e for e in logs if e["event"] == "cache.relisted_after_regression"]
        assert relisted and relisted[0]["informer"] == HPAS and relisted[0]["deleted"] == 2
        # The relist's duration, at this small scale, for the record.
        structlog.get_logger("test").info("relist_seconds", seconds=relisted[0]["seconds"])
        assert hpas.informer.observed_rv == int(hpas.informer.resource_version)
        assert hpas.informer.observed_rv < high

        # The barrier follows the server's new numbers.
        nxt = emu.store.create(hpa_obj("later", "web"))
        await hpas.informer.wait_for_rv(rv_of(nxt), timeout=WAIT)
        assert hpas.get("default", "later") is not None


async def test_restore_to_empty_empties_every_cache(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock, watch_list: bool
) -> None:
    s, _ = session
    for i in range(3):
        emu.store.create(hpa_obj(f"h{i}", "web"))
        emu.store.create(pod_obj(f"p{i}"))
    informers = make_informers(s, clock, watch_list)
    hpas = informers.hpa_lister()
    pods = informers.pod_lister()
    rec = Recorder()
    hpas.informer.add_handler(*rec.handlers())
    async with synced(informers):
        await informers.wait_for_rv(emu.store.rv, timeout=WAIT)
        # Both watches open (one started after the restore, from the old number,
        # would be held silently until its read timeout: then the check catches it).
        await drive(clock, lambda: emu.store.watcher_count() == 2, "two watches")
        rec.take()
        emu.reset()
        assert emu.store.list(*HPA_RES) == [] and emu.store.list("", "pods") == []
        await drive(
            clock,
            lambda: len(hpas.informer.store) == 0 and len(pods.informer.store) == 0,
            "empty caches",
        )
        assert sorted(rec.take()) == [("delete", f"default/h{i}") for i in range(3)]
        assert hpas.informer.reflector.regressions == 1
        assert pods.informer.reflector.regressions == 1
        await informers.wait_for_rv(emu.store.rv, timeout=WAIT)
        # New objects flow in again, with the restarted numbering.
        h = emu.store.create(hpa_obj("fresh", "web"))
        await hpas.informer.wait_for_rv(rv_of(h), timeout=WAIT)
        assert [x.name for x in hpas.list("default")] == ["fresh"]


async def test_relist_and_wait_for_resync(
    emu: Emulator, session: tuple[KubeSession, Requests], clock: VirtualClock
) -> None:
    s, reqs = session
    emu.store.create(pod_obj("a"))
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    informers.hpa_lister()
    async with synced(informers):
        assert await informers.wait_for_resync(0)  # nothing asked: at once
        lists = {n: i.reflector.lists for n, i in informers.informers.items()}
        informers.relist()
        assert pods.informer.resync_pending
        assert await informers.wait_for_resync(WAIT)
        for name, inf in informers.informers.items():
            assert inf.reflector.lists == lists[name] + 1
            assert not inf.resync_pending
        assert pods.informer.has_synced and pods.get("default", "a") is not None
        # The informers watch again after their relists.
        b = emu.store.create(pod_obj("b"))
        await pods.informer.wait_for_rv(rv_of(b), timeout=WAIT)
        assert pods.get("default", "b") is not None
        assert pods.informer.reflector.watches == 2
        assert reqs.count("watch") == 1  # the first stream ended (the second is open)


async def test_wait_for_resync_times_out_while_lists_fail(
    emu: Emulator,
    session: tuple[KubeSession, Requests],
    clock: VirtualClock,
    faults: FaultInjector,
) -> None:
    s, _ = session
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    async with synced(informers):
        rule = faults.add("status=503,path=/api/v1/pods,verb=list")
        informers.relist()
        assert not await informers.wait_for_resync(0.3)
        assert pods.informer.resync_pending
        faults.remove(rule)
        await drive(clock, lambda: not pods.informer.resync_pending, "the relist")
        assert await informers.wait_for_resync(WAIT)


async def test_connected_follows_refused_watches(
    emu: Emulator,
    session: tuple[KubeSession, Requests],
    clock: VirtualClock,
    faults: FaultInjector,
) -> None:
    s, _ = session
    informers = make_informers(s, clock)
    pods = informers.pod_lister()
    informers.hpa_lister()
    assert informers.connected(grace=0) == (False, f"{HPAS}: not synced yet")
    async with synced(informers):
        await drive(clock, lambda: emu.store.watcher_count() == 2, "two watches")
        assert informers.connected(grace=0) == (True, "")
        refuse = faults.add("status=503,path=/api/v1/pods,verb=watch")
        emu.store.close_watchers(("", "pods"))  # end the running stream
        refl = pods.informer.reflector
        await drive(clock, lambda: "503" in str(refl.last_error), "a refused watch")
        ok, why = informers.connected(grace=0)
        assert not ok and why.startswith(f"{PODS}: ") and "503" in why
        # Within the grace period a failure does not count yet.
        assert informers.connected(grace=60) == (True, "")
        clock.advance(61)
        ok, why = informers.connected(grace=60)
        assert not ok and why.startswith(f"{PODS}: ")
        faults.remove(refuse)
        await drive(clock, lambda: informers.connected(grace=0)[0], "reconnection")
        assert informers.connected(grace=0) == (True, "")


def test_too_large_resource_version_is_recognised() -> None:
    from hpactl.cache.reflector import is_too_large_resource_version
    from hpactl.kube.errors import error_from_status

    def status(code: int, reason: str, message: str, details: Any = None) -> Any:
        body: dict[str, Any] = {"kind": "Status", "code": code, "reason": reason}
        body["message"] = message
        if details is not None:
            body["details"] = details
        return error_from_status(body)

    cause = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "x"}]}
    assert is_too_large_resource_version(status(504, "Timeout", "whatever", cause))
    old_cause = {"causes": [{"message": "Too large resource version"}]}
    assert is_too_large_resource_version(status(504, "Timeout", "whatever", old_cause))
    assert is_too_large_resource_version(
        status(504, "Timeout", "Timeout: Too large resource version: 9, current: 3")
    )
    assert not is_too_large_resource_version(status(504, "Timeout", "request timed out"))
    assert not is_too_large_resource_version(
        status(500, "InternalError", "Too large resource version: 9, current: 3")
    )
    assert not is_too_large_resource_version(ValueError("Too large resource version"))
