"""etcd restores in the emulator: snapshot/restore/reset, what lists and watches answer
afterwards (as kube-apiserver's watch cache does), and the restore=/reset= fault rules."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from hpactl.emulator import Emulator
from hpactl.emulator.faults import FaultInjector, FaultRule, parse_fault_spec

from .helpers import Http

PODS = "/api/v1/namespaces/default/pods"
WAIT = 10.0


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }


def names(emu: Emulator) -> list[str]:
    return [p["metadata"]["name"] for p in emu.store.list("", "pods", "default")]


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(bookmark_interval=0.05) as e:
        yield e


@pytest.fixture
async def http(emu: Emulator) -> AsyncIterator[Http]:
    h = Http(emu)
    yield h
    await h.close()


# ---- the store -------------------------------------------------------------------------


async def test_restore_serves_the_snapshot_with_its_lower_counter(emu: Emulator) -> None:
    emu.store.create(pod("a"))
    snap = emu.snapshot()
    at = emu.store.rv
    a = emu.store.get("", "pods", "default", "a")
    assert a is not None
    a["metadata"]["labels"] = {"changed": "yes"}
    emu.store.apply(a)
    emu.store.create(pod("b"))
    assert emu.store.rv > at
    emu.restore(snap)
    assert emu.store.rv == at and names(emu) == ["a"]
    restored = emu.store.get("", "pods", "default", "a")
    assert restored is not None and "labels" not in restored["metadata"]
    c = emu.store.create(pod("c"))
    assert c["metadata"]["resourceVersion"] == str(at + 1)  # the counter goes on from there
    # The snapshot is not affected by later writes: restoring it again drops c.
    emu.restore(snap)
    assert names(emu) == ["a"] and emu.store.rv == at


async def test_reset_keeps_only_fresh_namespaces(emu: Emulator) -> None:
    emu.store.create(pod("a"))
    before = emu.store.rv
    emu.reset()
    assert names(emu) == []
    namespaces = sorted(n["metadata"]["name"] for n in emu.store.list("", "namespaces"))
    assert namespaces == ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert emu.store.rv == 4 < before


async def test_restore_follows_the_restored_crds(emu: Emulator, http: Http) -> None:
    from support.objects import scale_crd

    snap = emu.snapshot()
    crd = scale_crd("widgets", "Widget")
    emu.store.create(crd)
    group = crd["spec"]["group"]
    assert group in emu.registry.groups()
    emu.restore(snap)
    assert group not in emu.registry.groups()
    emu.store.create(crd)
    with_crd = emu.snapshot()
    emu.reset()
    assert group not in emu.registry.groups()
    emu.restore(with_crd)
    assert group in emu.registry.groups()


# ---- lists and watches after a restore -------------------------------------------------


async def test_lists_after_a_restore(emu: Emulator, http: Http) -> None:
    emu.store.create(pod("a"))
    snap = emu.snapshot()
    for n in ("b", "c", "d"):
        emu.store.create(pod(n))
    high = emu.store.rv
    emu.restore(snap)
    low = emu.store.rv
    for rv in ("", "0"):
        code, lst = await http.get(PODS, params={"resourceVersion": rv} if rv else None)
        assert code == 200 and lst["metadata"]["resourceVersion"] == str(low)
        assert [p["metadata"]["name"] for p in lst["items"]] == ["a"]
    code, err = await http.get(
        PODS, params={"resourceVersion": str(high), "resourceVersionMatch": "NotOlderThan"}
    )
    assert code == 504 and err["reason"] == "Timeout"
    assert err["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert err["details"]["retryAfterSeconds"] == 1
    # A watch from before the restored state: the history starts afresh.
    events = await http.watch(PODS, {"watch": "true", "resourceVersion": str(low - 1)})
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410


async def _read(resp: aiohttp.ClientResponse, into: list[dict[str, Any]]) -> None:
    async for line in resp.content:
        if line.strip():
            into.append(json.loads(line))


async def test_open_watches_end_and_a_watch_from_the_future_is_held(emu: Emulator) -> None:
    emu.store.create(pod("a"))
    snap = emu.snapshot()
    emu.store.create(pod("b"))
    emu.store.create(pod("c"))
    high = emu.store.rv
    params = {"watch": "true", "allowWatchBookmarks": "true"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s:
        async with s.get(emu.url + PODS, params={**params, "resourceVersion": str(high)}) as r:
            before: list[dict[str, Any]] = []
            reader = asyncio.ensure_future(_read(r, before))
            while not any(e["type"] == "BOOKMARK" for e in before):
                await asyncio.sleep(0.01)
            emu.restore(snap)
            await asyncio.wait_for(reader, WAIT)  # the stream ended
        # Resumed from the old resourceVersion: nothing at or below it is sent, not
        # even bookmarks; newer events are.
        async with s.get(emu.url + PODS, params={**params, "resourceVersion": str(high)}) as r:
            after: list[dict[str, Any]] = []
            reader = asyncio.ensure_future(_read(r, after))
            for i in range(high - emu.store.rv - 1):
                emu.store.create(pod(f"n{i}"))
            assert emu.store.rv == high - 1
            await asyncio.sleep(0.3)  # several bookmark intervals
            assert after == []
            emu.store.create(pod("at-high"))  # the resourceVersion asked for: not sent
            emu.store.create(pod("newer"))
            async with asyncio.timeout(WAIT):
                while not any(e["type"] == "ADDED" for e in after):
                    await asyncio.sleep(0.01)
            reader.cancel()
    added = [e["object"]["metadata"] for e in after if e["type"] != "BOOKMARK"]
    assert [(m["name"], int(m["resourceVersion"])) for m in added] == [("newer", high + 1)]
    bookmarks = [
        int(e["object"]["metadata"]["resourceVersion"]) for e in after if e["type"] == "BOOKMARK"
    ]
    assert all(rv >= high for rv in bookmarks)


async def test_watch_list_from_the_future_is_an_error_event(emu: Emulator, http: Http) -> None:
    rv = emu.store.rv
    events = await http.watch(
        PODS,
        {
            "watch": "true",
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "resourceVersion": str(rv + 10),
        },
    )
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (504, "Timeout")
    assert status["message"] == f"Timeout: Too large resource version: {rv + 10}, current: {rv}"
    assert status["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }


# ---- fault rules -----------------------------------------------------------------------


def test_restore_and_reset_specs() -> None:
    rule = parse_fault_spec("reset=/apis/autoscaling/v2/*,verb=update,after=20")
    assert (rule.kind, rule.path, rule.after, rule.count) == (
        "reset",
        "/apis/autoscaling/v2/*",
        20,
        1,
    )
    rule = parse_fault_spec("restore=*,count=2")
    assert (rule.kind, rule.path, rule.count) == ("restore", "*", 2)
    assert FaultRule.restore().count == 1 and FaultRule.reset("/api/*").path == "/api/*"
    with pytest.raises(ValueError, match="restore= needs a path glob"):
        parse_fault_spec("restore=")
    with pytest.raises(ValueError, match="drop path="):
        parse_fault_spec("reset=*,path=/api/*")
    with pytest.raises(ValueError, match="exactly one of"):
        parse_fault_spec("reset=*,gone=*")


async def test_reset_and_restore_rules_act_before_the_request() -> None:
    faults = FaultInjector(seed=1)
    async with Emulator(faults=faults) as emu:
        http = Http(emu)
        try:
            emu.store.create(pod("base"))
            code, _ = await http.get(PODS)  # the first request: the restore point
            assert code == 200
            emu.store.create(pod("later"))
            restore = faults.add("restore=/api/v1/namespaces/*/pods,verb=list,after=1")
            code, lst = await http.get(PODS)  # let through (after=1)
            assert [p["metadata"]["name"] for p in lst["items"]] == ["base", "later"]
            code, lst = await http.get(PODS)
            assert [p["metadata"]["name"] for p in lst["items"]] == ["base"]
            assert faults.hits(restore) == 1
            code, lst = await http.get(PODS)  # count=1: once
            assert code == 200 and faults.hits(restore) == 1
            reset = faults.add(FaultRule.reset("/api/v1/namespaces/default/pods"))
            code, lst = await http.get(PODS)
            assert code == 200 and lst["items"] == [] and faults.hits(reset) == 1
            assert lst["metadata"]["resourceVersion"] == "4"
        finally:
            await http.close()
