"""`hpactl run --shards 4` replicas paused, joining and leaving (issue 13, "Tests").

Every replica is a process talking through its own recording proxy, so the test sees
from the server's side who wrote what and when. Lease 3 s / renew 2 s / retry 250 ms
(``_fast_lease``), sync period 1 s, no downscale window: a load change shows within a
few seconds whether every HPA is still synced, and by whom.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from support.proxy import RecordingProxy, Seen

from hpactl.core.history_codec import decode_histories
from hpactl.core.sharding import assign_shards, shard_of
from hpactl.emulator.emulator import Emulator

from .builders import hpa, pod_metrics, workload
from .test_run_process import Proc, _args, _fast_lease, _now, spawn, wait_until

__all__ = ["spawn"]  # the fixture, shared with test_run_process

pytestmark = pytest.mark.timeout(180)  # 20-40 s each on an idle host

SHARDS = 4
LEASE, RETRY, PERIOD = 3.0, 0.25, 1.0
#: How long a shard may stay without its rightful owner after a change: a lease
#: duration, a few retry periods (LIST, elector retry, hand-off), and slack for a busy
#: host running several processes.
SETTLE = LEASE + 8 * RETRY + 2.0
#: What a scale-down may lag the sync it is due at, beyond the period: the sync's
#: schedule lag and duration and the test's 50 ms sampling, on a busy host. A window
#: started over at the takeover or hand-off would move it by 6 s or more.
SLACK = 2.5
GATE_ON = "--feature-gates=HPAHistoryPersistence=true"


def _namespaces() -> list[str]:
    """Two namespaces per shard, so every shard has HPAs to sync."""
    out: list[str] = []
    per: dict[int, int] = {}
    i = 0
    while len(out) < 2 * SHARDS:
        ns = f"team-{i}"
        s = shard_of(ns, SHARDS)
        if per.get(s, 0) < 2:
            per[s] = per.get(s, 0) + 1
            out.append(ns)
        i += 1
    return out


NAMESPACES = _namespaces()


@dataclass
class Replica:
    proc: Proc
    proxy: RecordingProxy

    @property
    def identity(self) -> str:
        return str((self.proc.logged("hpactl.sharding") or {}).get("identity") or "")

    def held(self) -> set[int]:
        """The shards this replica says it holds (its last shard_* log line)."""
        for e in reversed(self.proc.logs):
            if e.get("msg") in ("hpactl.shard_acquired", "hpactl.shard_released"):
                return set(e.get("held") or ())
            if e.get("msg") == "hpactl.shard_lost":
                return set(e.get("held") or ())
        return set()


class Cluster:
    def __init__(self, emu: Emulator, lock: str) -> None:
        self.emu = emu
        self.lock = lock
        self.pods: dict[str, list[str]] = {}
        for ns in NAMESPACES:
            emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            self.pods[ns] = workload(emu, "web", 2, _now(), ns=ns)
            emu.store.create(hpa("web", "web", max_replicas=4, ns=ns))

    def load(self, cpu: str) -> None:
        self.emu.metrics.set_pod_metrics(
            [m for ns in NAMESPACES for m in pod_metrics(self.pods[ns], cpu, _now(), ns=ns)]
        )

    def replicas(self, ns: str) -> int:
        d = self.emu.store.get("apps", "deployments", ns, "web") or {}
        return int((d.get("spec") or {}).get("replicas") or 0)

    def all_at(self, n: int) -> bool:
        return all(self.replicas(ns) == n for ns in NAMESPACES)

    def holders(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(SHARDS):
            lease = self.emu.store.get(
                "coordination.k8s.io", "leases", "kube-system", f"{self.lock}-shard-{i}"
            )
            holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
            if holder:
                out[i] = holder
        return out

    def settled(self, live: list[Replica]) -> bool:
        """Every shard held by the live replica ``assign_shards`` names, by lease and by
        that replica's own account, and by no other live replica's account."""
        ids = [r.identity for r in live]
        if not all(ids):
            return False
        want = assign_shards(SHARDS, ids)
        if self.holders() != want:
            return False
        return all(r.held() == {s for s, who in want.items() if who == r.identity} for r in live)


def _shard_of_write(w: Seen, lock: str) -> int | None:
    """The shard a write is for: its namespace's, or a history ConfigMap's suffix."""
    if "/configmaps/" in w.path or w.path.endswith("/configmaps"):
        name = w.path.rsplit("/", 1)[-1]
        prefix = f"{lock}-history-"
        return int(name[len(prefix) :].split("-")[0]) if name.startswith(prefix) else None
    if "/namespaces/" not in w.path:
        return None
    return shard_of(w.path.split("/namespaces/")[1].split("/")[0], SHARDS)


async def _replica(
    spawn: Callable[..., Any], stack: contextlib.AsyncExitStack, emu: Emulator, flags: list[str]
) -> Replica:
    proxy = await stack.enter_async_context(RecordingProxy(emu.url))
    p: Proc = await spawn([f"--master={proxy.url}", *_args(emu, *flags)[1:]])
    await wait_until(lambda: p.logged("hpactl.sharding") is not None, 30, p, "sharding")
    return Replica(p, proxy)


def _scaled_by_holders(c: Cluster, replicas: list[Replica], since: float, n: int) -> None:
    """Every namespace's last scale write since ``since`` (to ``n``) came from exactly
    the replica that holds its shard now."""
    holders = c.holders()
    for ns in NAMESPACES:
        by = {
            r.identity
            for r in replicas
            for w in r.proxy.writes(since=since)
            if w.path == f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale"
        }
        assert by == {holders[shard_of(ns, SHARDS)]}, (ns, by, holders)
    assert c.all_at(n)


async def test_a_replica_paused_past_its_lease_writes_nothing_for_the_shards_it_lost(
    spawn: Callable[..., Any],
) -> None:
    """A and B split the shards 2/2; A is SIGSTOPped; B takes all four and rescales
    every namespace; A is resumed. From its resumption A sends no write but Lease
    writes until it holds a shard again, and then writes only for the shards it holds
    (scale, status, Events, history ConfigMaps); the shards go back to 2/2 and every
    HPA is synced again by its shard's holder."""
    lock = "hpactl-stop"
    flags = [
        *_fast_lease(lock),
        f"--shards={SHARDS}",
        GATE_ON,
        "--horizontal-pod-autoscaler-downscale-stabilization=0s",
    ]
    async with Emulator() as emu, contextlib.AsyncExitStack() as stack:
        c = Cluster(emu, lock)
        c.load("50m")  # at the target: 2 replicas each
        a = await _replica(spawn, stack, emu, flags)
        await wait_until(lambda: c.settled([a]), 30, a.proc, "A holds all")
        b = await _replica(spawn, stack, emu, flags)
        await wait_until(lambda: c.settled([a, b]), 30, b.proc, "2/2")
        lost = a.held()
        assert len(lost) == 2
        await wait_until(  # A has persisted its shards' history at least once
            lambda: all(
                emu.store.get("", "configmaps", "kube-system", f"{lock}-history-{s}") is not None
                for s in range(SHARDS)
            ),
            10,
            a.proc,
            "every shard's history written",
        )

        a.proc.proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            await wait_until(lambda: c.settled([b]), 2 * LEASE + SETTLE, b.proc, "B holds all")
            took = time.monotonic() - stopped
            since = time.monotonic()
            c.load("200m")
            await wait_until(lambda: c.all_at(4), 15, b.proc, "B scales every namespace")
            _scaled_by_holders(c, [a, b], since, 4)
        finally:
            a.proc.proc.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        await wait_until(lambda: c.settled([a, b]), 30, a.proc, "2/2 again")
        rebalanced = time.monotonic() - resumed
        since = time.monotonic()
        c.load("10m")
        await wait_until(lambda: c.all_at(1), 15, b.proc, "every namespace scaled down")
        _scaled_by_holders(c, [a, b], since, 1)
        print(
            f"\n[shards SIGSTOP] B held all {took:.2f}s after the stop; 2/2 again "
            f"{rebalanced:.2f}s after the resumption; A lost {sorted(lost)}, "
            f"holds {sorted(a.held())}"
        )

        # A's writes from its resumption: for each shard, nothing before A won its lease
        # again (the first successful write of that lease since the resumption).
        won: dict[int, float] = {}
        for w in a.proxy.writes(since=resumed, leases=True):
            for s in range(SHARDS):
                if w.path.endswith(f"/leases/{lock}-shard-{s}") and w.status < 300:
                    won.setdefault(s, w.at)
        others = a.proxy.writes(since=resumed)
        assert others, "A wrote nothing at all after rejoining"
        for w in others:
            shard = _shard_of_write(w, lock)
            assert shard is not None, w
            assert shard in won and w.at >= won[shard], (w, won, sorted(lost))
        first_other = min(w.at for w in others)
        assert first_other >= min(won.values())
        assert a.proc.logged("hpactl.shard_lost") is not None
        assert await a.proc.stop() == 0
        assert await b.proc.stop() == 0


async def test_shards_rebalance_as_replicas_join_and_leave_and_every_hpa_stays_synced(
    spawn: Callable[..., Any],
) -> None:
    """One replica, then two, then three; one SIGTERMed (it hands its shards off), one
    SIGKILLed (its shards are taken once its leases expire). After each change every
    shard is held by the live replica ``assign_shards`` names, by lease and by every
    replica's own account, within ``SETTLE``; then a load change rescales every
    namespace, each by its shard's holder only. The history gate is off: no replica
    ever sends a request about ConfigMaps."""
    lock = "hpactl-join"
    flags = [
        *_fast_lease(lock),
        f"--shards={SHARDS}",
        "--horizontal-pod-autoscaler-downscale-stabilization=0s",
    ]
    async with Emulator() as emu, contextlib.AsyncExitStack() as stack:
        c = Cluster(emu, lock)
        all_replicas: list[Replica] = []
        live: list[Replica] = []
        loads = iter(["200m", "10m", "200m", "10m", "200m", "10m"])
        taken: dict[str, float] = {}

        async def settle_and_rescale(what: str, started: float, bound: float) -> None:
            await wait_until(lambda: c.settled(live), bound, live[0].proc, what)
            taken[what] = round(time.monotonic() - started, 2)
            cpu = next(loads)
            n = 4 if cpu == "200m" else 1
            since = time.monotonic()
            c.load(cpu)
            await wait_until(lambda: c.all_at(n), 15, live[0].proc, f"{what}: rescaled")
            _scaled_by_holders(c, all_replicas, since, n)

        c.load("50m")
        first = await _replica(spawn, stack, emu, flags)
        all_replicas.append(first)
        live.append(first)
        await settle_and_rescale("one", time.monotonic(), 30)
        for what in ("two", "three"):
            r = await _replica(spawn, stack, emu, flags)  # the caches synced, it is a member
            joined = time.monotonic()
            all_replicas.append(r)
            live.append(r)
            await settle_and_rescale(what, joined, SETTLE)

        leaving = live.pop(0)
        termed = time.monotonic()
        assert await leaving.proc.stop() == 0
        assert leaving.proc.logged("hpactl.shard_released") is not None
        await settle_and_rescale("SIGTERM", termed, SETTLE)

        dying = live.pop(0)
        dying.proc.proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        await settle_and_rescale("SIGKILL", killed, SETTLE)
        print(f"\n[shards join/leave] settled (s after the change): {taken}")
        assert live[0].held() == set(range(SHARDS))
        # Nobody lost a shard without grace on the way: joins and SIGTERM hand off.
        for r in all_replicas:
            assert r.proc.logged("hpactl.shard_lost") is None, r.identity
        # HPAHistoryPersistence is off here: no replica ever asked about a ConfigMap.
        for r in all_replicas:
            assert not [w for w in r.proxy.seen if "configmaps" in w.path], r.identity
            assert r.proc.logged("hpactl.sharding_without_history") is not None
        assert await live[0].proc.stop() == 0


WINDOW = 15.0


def _last_high(emu: Emulator, lock: str, ns: str) -> float:
    """Wall time of the newest persisted recommendation above 1 for ``ns``/web, from
    its shard's history ConfigMap."""
    name = f"{lock}-history-{shard_of(ns, SHARDS)}"
    cm = emu.store.get("", "configmaps", "kube-system", name)
    assert cm is not None, name
    decoded = decode_histories(base64.b64decode(cm["binaryData"]["history.json.gz"]))
    recs = decoded.records[f"{ns}/web"].history.recommendations
    return max(r.timestamp.timestamp() for r in recs if r.recommendation > 1)


async def _downs(c: Cluster) -> dict[str, float]:
    """When (monotonic) each namespace's target first showed 1 replica."""
    down: dict[str, float] = {}
    deadline = time.monotonic() + 2 * WINDOW
    while len(down) < len(NAMESPACES) and time.monotonic() < deadline:
        now = time.monotonic()
        for ns in NAMESPACES:
            if ns not in down and c.replicas(ns) == 1:
                down[ns] = now
        await asyncio.sleep(0.05)
    assert len(down) == len(NAMESPACES), down
    return down


def _window_flags(lock: str) -> list[str]:
    """Sharded replicas with the history gate on and a ``WINDOW`` downscale window."""
    return [
        *_fast_lease(lock),
        f"--shards={SHARDS}",
        GATE_ON,
        f"--horizontal-pod-autoscaler-downscale-stabilization={WINDOW:g}s",
    ]


async def _drop_load_into_the_window(c: Cluster, hold: float = 6.0) -> float:
    """Drop the load and wait ``hold`` seconds, still inside the window; when
    (monotonic) it dropped."""
    c.load("10m")
    dropped = time.monotonic()
    await asyncio.sleep(hold)
    assert c.all_at(4), "scaled down inside the window"
    return dropped


def _first_lease_write(r: Replica, lock: str, shards: set[int], since: float = 0.0) -> float:
    """When ``r`` first wrote one of these shards' leases successfully (its takeover)."""
    return min(
        w.at
        for w in r.proxy.writes(since=since, leases=True)
        if w.status < 300 and any(w.path.endswith(f"/{lock}-shard-{s}") for s in shards)
    )


def _assert_down_as_the_window_ends(late: dict[str, float]) -> None:
    """Every namespace scaled down at the first sync after its window ended (see ``_late``)."""
    for ns, t in late.items():
        assert -0.1 <= t <= PERIOD + SLACK, (ns, late)


def _late(down: dict[str, float], last_high: dict[str, float]) -> dict[str, float]:
    """Per namespace, how long after its last high recommendation left the window it
    scaled down (the clock offset turns monotonic samples into the entries' wall time)."""
    offset = time.time() - time.monotonic()
    return {ns: round(down[ns] + offset - (last_high[ns] + WINDOW), 2) for ns in NAMESPACES}


async def test_a_killed_replicas_shards_keep_their_scale_down_window_on_the_new_owner(
    spawn: Callable[..., Any],
) -> None:
    """Gate on, A and B 2/2, every namespace at 4, the load drops (15 s window); A is
    SIGKILLed 6 s in. B takes A's shards, loads each one's history ConfigMap, and scales
    A's namespaces down when an uninterrupted owner would: at the first sync after the
    persisted last high recommendation is a window old, as B does for its own
    namespaces, not at the takeover."""
    lock = "hpactl-shwin"
    flags = _window_flags(lock)
    async with Emulator() as emu, contextlib.AsyncExitStack() as stack:
        c = Cluster(emu, lock)
        c.load("200m")
        a = await _replica(spawn, stack, emu, flags)
        b = await _replica(spawn, stack, emu, flags)
        await wait_until(lambda: c.settled([a, b]), 30, b.proc, "2/2")
        await wait_until(lambda: c.all_at(4), 15, b.proc, "every namespace at 4")
        await asyncio.sleep(2 * PERIOD)
        mine_a = [ns for ns in NAMESPACES if shard_of(ns, SHARDS) in a.held()]
        assert len(mine_a) == 4

        dropped = await _drop_load_into_the_window(c)
        a.proc.proc.send_signal(signal.SIGKILL)
        killed, killed_wall = time.monotonic(), time.time()
        last_high = {ns: _last_high(emu, lock, ns) for ns in NAMESPACES}
        down = await _downs(c)
        lost = {shard_of(ns, SHARDS) for ns in mine_a}
        # B's acquisitions after the kill, by its log's own time (ms since the epoch): B,
        # started right after A, may have taken a shard of A's before it saw A's member
        # Lease and handed it over (with no history yet) long before the kill.
        took = [
            e
            for e in b.proc.logs
            if e.get("msg") == "hpactl.shard_acquired" and e["ts"] / 1000 > killed_wall
        ]
        assert sorted(e["shard"] for e in took) == sorted(lost)  # once each, after the kill
        assert all(e["histories"] == 2 for e in took), took
        late = _late(down, last_high)
        print(
            f"\n[shards kill in window] killed {killed - dropped:.2f}s after the drop; "
            f"scale-down after the last high entry left the window (A's: "
            f"{[late[ns] for ns in mine_a]}, B's own: "
            f"{[late[ns] for ns in NAMESPACES if ns not in mine_a]})"
        )
        _assert_down_as_the_window_ends(late)
        taken = _first_lease_write(b, lock, lost, since=killed)
        assert all(down[ns] >= taken + 2 * PERIOD for ns in mine_a), "down at the takeover"
        assert b.held() == set(range(SHARDS))
        assert await b.proc.stop() == 0


async def test_shards_handed_off_to_a_joining_replica_keep_their_scale_down_window(
    spawn: Callable[..., Any],
) -> None:
    """Gate on, A alone holds the 4 shards, every namespace at 4, the load drops (15 s
    window); B is started 3 s in. A hands two shards off (syncs drained, history flushed,
    lease released); B loads their history and scales them down when A would have:
    within a period of the last high recommendation leaving the window, not at the
    hand-off."""
    lock = "hpactl-shjoin"
    flags = _window_flags(lock)
    async with Emulator() as emu, contextlib.AsyncExitStack() as stack:
        c = Cluster(emu, lock)
        c.load("200m")
        a = await _replica(spawn, stack, emu, flags)
        await wait_until(lambda: c.settled([a]), 30, a.proc, "A holds all")
        await wait_until(lambda: c.all_at(4), 15, a.proc, "every namespace at 4")
        await asyncio.sleep(2 * PERIOD)

        # B is started 3 s in: starting (spawn, imports, caches) and the hand-off took
        # 1.3 to 5.3 s here on a shared host, and B must hold its shards 2 periods before
        # the window ends for "not at the hand-off" to be told apart from "on time". A
        # window started over at the hand-off would still end 15 s after it.
        dropped = await _drop_load_into_the_window(c, hold=3.0)
        last_high = {ns: _last_high(emu, lock, ns) for ns in NAMESPACES}
        joining = time.monotonic()
        b = await _replica(spawn, stack, emu, flags)
        member = time.monotonic()
        down = await _downs(c)
        assert c.settled([a, b])
        moved = {s for s in range(SHARDS) if s in b.held()}
        assert len(moved) == 2
        took = [e for e in b.proc.logs if e.get("msg") == "hpactl.shard_acquired"]
        assert sorted(e["shard"] for e in took) == sorted(moved)
        assert all(e["histories"] == 2 for e in took), took
        released = [e["shard"] for e in a.proc.logs if e.get("msg") == "hpactl.shard_released"]
        assert sorted(released) == sorted(moved)
        late = _late(down, last_high)
        mine_b = [ns for ns in NAMESPACES if shard_of(ns, SHARDS) in moved]
        taken = _first_lease_write(b, lock, moved)
        print(
            f"\n[shards join in window] B started {joining - dropped:.2f}s after the drop, "
            f"logged sharding {member - dropped:.2f}s, took its shards {taken - dropped:.2f}s "
            "after it; "
            f"scale-down after the last high entry left the window (moved to B: "
            f"{[late[ns] for ns in mine_b]}, kept by A: "
            f"{[late[ns] for ns in NAMESPACES if ns not in mine_b]})"
        )
        _assert_down_as_the_window_ends(late)
        assert all(down[ns] >= taken + 2 * PERIOD for ns in mine_b), "down at the hand-off"
        assert await a.proc.stop() == 0
        assert await b.proc.stop() == 0
