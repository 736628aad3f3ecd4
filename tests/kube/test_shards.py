"""Active-active shards against the emulator: sharing, hand-off, takeover, fallback, GC.

Real time with short durations (lease 2 s, renew deadline 1 s, retry 0.25 s); every
test is bounded by ``asyncio.timeout``. A watcher polls ``holds()`` of every manager
every few milliseconds: no shard may ever be held by two at once. Measured takeover
times are printed (``-s``), not asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from support.proxy import RecordingProxy

from hpactl.clock import RealClock
from hpactl.core.sharding import assign_shards
from hpactl.emulator import Emulator
from hpactl.kube.session import KubeSession
from hpactl.kube.shards import (
    ANNOTATION_SHARDS,
    LABEL_LEASE_SET,
    LABEL_MEMBER_OF,
    LABEL_SHARD,
    LABEL_SHARD_OF,
    ShardManager,
    member_lease_name,
    shard_lease_name,
)
from hpactl.model.times import format_micro_time

NS = "kube-system"
NAME = "hpactl"
LD, RD, RP = 2.0, 1.0, 0.25


class PausableClock:
    """Real time whose sleepers do not wake while paused: every loop of a manager
    stops at its next sleep, as a SIGSTOPped process does (requests in flight land)."""

    def __init__(self) -> None:
        self._real = RealClock()
        self.running = asyncio.Event()
        self.running.set()

    def now(self) -> datetime:
        return self._real.now()

    def monotonic(self) -> float:
        return self._real.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
        await self.running.wait()


class Replica:
    """A ShardManager with callbacks that record what they were told, and when."""

    def __init__(
        self,
        emu: Emulator,
        session: KubeSession,
        identity: str,
        shards: int,
        clock: PausableClock | None = None,
        **kw: Any,
    ) -> None:
        self.emu = emu
        self.identity = identity
        self.events: list[tuple[str, int]] = []
        # (shard, holds() at the call, the lease's holder in the API at the call)
        self.releasing: list[tuple[int, bool, str]] = []
        self.mgr = ShardManager(
            session,
            namespace=NS,
            name=NAME,
            shards=shards,
            identity=identity,
            lease_duration=LD,
            renew_deadline=RD,
            retry_period=RP,
            clock=clock,
            on_acquired=self._acquired,
            on_releasing=self._releasing,
            on_lost=self._lost,
            **kw,
        )
        self.task: asyncio.Task[None] | None = None

    async def _acquired(self, shard: int) -> None:
        self.events.append(("acquired", shard))

    async def _releasing(self, shard: int) -> None:
        self.releasing.append((shard, self.mgr.holds(shard), holder(self.emu, shard)))
        await asyncio.sleep(0.05)  # a flush of the shard's history takes a while
        self.events.append(("released", shard))

    def _lost(self, shard: int) -> None:
        self.events.append(("lost", shard))

    def start(self) -> None:
        self.task = asyncio.create_task(self.mgr.run())

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)


def lease(emu: Emulator, name: str) -> dict[str, Any] | None:
    return emu.store.get("coordination.k8s.io", "leases", NS, name)


def holder(emu: Emulator, shard: int) -> str:
    obj = lease(emu, shard_lease_name(NAME, shard))
    return str(((obj or {}).get("spec") or {}).get("holderIdentity") or "")


async def until(cond: Callable[[], bool], every: float = 0.02) -> None:
    while not cond():
        await asyncio.sleep(every)


@contextlib.asynccontextmanager
async def overlap_watch(replicas: list[Replica], shards: int) -> AsyncIterator[list[str]]:
    """Poll holds() of every replica; collect any instant where two hold one shard."""
    violations: list[str] = []

    async def watch() -> None:
        while True:
            for s in range(shards):
                holders = [r.identity for r in replicas if r.mgr.holds(s)]
                if len(holders) > 1:
                    violations.append(f"shard {s} held by {holders}")
            await asyncio.sleep(0.005)

    task = asyncio.create_task(watch())
    try:
        yield violations
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def split_ok(replicas: list[Replica], shards: int) -> bool:
    """Every shard held by exactly the replica all views assign it to, floor/ceil each."""
    views = [dict(r.mgr.assignment) for r in replicas]
    if any(v != views[0] for v in views) or len(views[0]) != shards:
        return False
    live = {r.identity for r in replicas}
    if set(views[0].values()) - live or len(set(views[0].values())) != min(len(live), shards):
        return False
    for r in replicas:
        if r.mgr.held != {s for s, o in views[0].items() if o == r.identity}:
            return False
    sizes = [len(r.mgr.held) for r in replicas]
    return max(sizes) - min(sizes) <= 1 and sum(sizes) == shards


async def test_one_replica_holds_every_shard_and_leaves_cleanly(emulator: Emulator) -> None:
    async with asyncio.timeout(20), KubeSession(master=emulator.url, qps=0) as s:
        a = Replica(emulator, s, "a", 5)
        a.start()
        # on_acquired runs as the elector's work task: soon after the lease is won
        await until(lambda: a.mgr.held == set(range(5)) and a.count("acquired") == 5)
        assert a.mgr.members == ("a",)
        assert dict(a.mgr.assignment) == dict.fromkeys(range(5), "a")
        for i in range(5):
            obj = lease(emulator, shard_lease_name(NAME, i))
            assert obj is not None
            assert obj["spec"]["holderIdentity"] == "a"
            assert obj["spec"]["leaseDurationSeconds"] == 2
            assert obj["metadata"]["labels"] == {
                LABEL_LEASE_SET: NAME,
                LABEL_SHARD_OF: NAME,
                LABEL_SHARD: str(i),
            }
            assert a.mgr.epoch(i) == obj["spec"]["leaseTransitions"] == 0
        member = lease(emulator, member_lease_name(NAME, "a"))
        assert member is not None and member["spec"]["holderIdentity"] == "a"
        assert member["metadata"]["labels"] == {LABEL_LEASE_SET: NAME, LABEL_MEMBER_OF: NAME}
        assert member["metadata"]["annotations"] == {ANNOTATION_SHARDS: "5"}
        assert sorted(s for k, s in a.events if k == "acquired") == list(range(5))

        await a.stop()
        # every shard handed off (on_releasing while still held), then released
        assert sorted(r[0] for r in a.releasing) == list(range(5))
        assert all(held and was == "a" for _, held, was in a.releasing)
        assert all(holder(emulator, i) == "" for i in range(5))
        assert lease(emulator, member_lease_name(NAME, "a")) is None
        assert a.count("lost") == 0 and a.mgr.held == frozenset()


async def test_a_joining_replica_takes_its_share_by_graceful_hand_off(
    emulator: Emulator,
) -> None:
    n = 7
    async with asyncio.timeout(30), KubeSession(master=emulator.url, qps=0) as s:
        a = Replica(emulator, s, "a", n)
        b = Replica(emulator, s, "b", n)
        a.start()
        await until(lambda: a.mgr.held == set(range(n)))
        epochs_a = {i: a.mgr.epoch(i) for i in range(n)}
        async with overlap_watch([a, b], n) as violations:
            t0 = time.monotonic()
            b.start()
            await until(lambda: split_ok([a, b], n))
            print(
                f"\njoin: split {len(a.mgr.held)}/{len(b.mgr.held)} after {time.monotonic() - t0:.2f} s"
            )
            await asyncio.sleep(3 * RP)  # and it stays so
            assert split_ok([a, b], n)
        assert violations == []
        moved = set(b.mgr.held)
        # a was told before each release, while it still held the lease
        assert {r[0] for r in a.releasing} == moved
        assert all(held and was == "a" for _, held, was in a.releasing)
        assert a.count("lost") == 0 and b.count("lost") == 0
        for i in moved:
            assert b.mgr.epoch(i) > epochs_a[i]  # a new fencing epoch per change of owner
            assert holder(emulator, i) == "b"
        await a.stop()
        await b.stop()


async def test_a_leaving_replica_hands_its_shards_to_the_other(emulator: Emulator) -> None:
    n = 6
    async with asyncio.timeout(30), KubeSession(master=emulator.url, qps=0) as s:
        a = Replica(emulator, s, "a", n)
        b = Replica(emulator, s, "b", n)
        a.start()
        b.start()
        await until(lambda: split_ok([a, b], n))
        async with overlap_watch([a, b], n) as violations:
            t0 = time.monotonic()
            await b.stop()
            await until(lambda: a.mgr.held == set(range(n)))
            took = time.monotonic() - t0
            print(f"\nleave (graceful): a holds all {n} shards {took:.2f} s after b stopped")
        assert violations == []
        assert a.mgr.members == ("a",)
        assert b.count("lost") == 0 and b.count("released") == 3
        assert lease(emulator, member_lease_name(NAME, "b")) is None
        await a.stop()


async def test_a_paused_replica_loses_its_fence_and_its_shards_and_writes_nothing_after(
    emulator: Emulator,
) -> None:
    """SIGSTOP past the lease: the other takes over (seeded electors: on the first or
    second attempt, not a whole lease duration later); the paused one, resumed, finds
    holds() False, gets on_lost, and no write of its own lands for the lost shards."""
    n = 4
    clock = PausableClock()
    async with (
        asyncio.timeout(40),
        RecordingProxy(emulator.url) as pa,
        RecordingProxy(emulator.url) as pb,
        KubeSession(master=pa.url, qps=0) as sa,
        KubeSession(master=pb.url, qps=0) as sb,
    ):
        a = Replica(emulator, sa, "a", n, clock=clock)
        b = Replica(emulator, sb, "b", n)
        a.start()
        b.start()
        await until(lambda: split_ok([a, b], n))
        lost = set(a.mgr.held)
        async with overlap_watch([a, b], n) as violations:
            clock.running.clear()  # pause a
            paused = time.monotonic()
            await until(lambda: not a.mgr.held)
            fence_closed = time.monotonic() - paused
            since = time.monotonic()
            await until(lambda: b.mgr.held == set(range(n)))
            took = time.monotonic() - paused
            print(
                f"\npause: a's fence closed {fence_closed:.2f} s after the pause, "
                f"b held all {took:.2f} s after it (lease {LD} s)"
            )
            # b's electors for a's shards acquired within two attempts each
            for i in lost:
                path = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{shard_lease_name(NAME, i)}"
                gets = [
                    x for x in pb.seen if x.method == "GET" and x.path == path and x.at >= since
                ]
                assert 1 <= len(gets) <= 3, (i, len(gets))
            await asyncio.sleep(LD)  # a stays paused past the lease
            resumed = time.monotonic()
            clock.running.set()
            await until(lambda: a.count("lost") == len(lost))
            lost_at = time.monotonic()
            print(
                f"pause: a got on_lost for {sorted(lost)} {lost_at - resumed:.2f} s after resuming"
            )
            landed = [
                x
                for x in pa.writes(since=resumed, leases=True)
                if x.status < 300
                and any(x.path.endswith(f"/{shard_lease_name(NAME, i)}") for i in lost)
                and x.at < lost_at
            ]
            assert landed == []
            # resumed, a is a member again and gets a share back by hand-off
            await until(lambda: split_ok([a, b], n))
        assert violations == []
        assert all(was == "b" and held for _, held, was in b.releasing)
        await a.stop()
        await b.stop()


async def test_a_shard_nobody_takes_is_taken_by_fallback_and_kept(emulator: Emulator) -> None:
    """A member that is live (its lease renewed) but never takes its shards: after
    2 x lease_duration unowned, another replica takes them, and keeps them while the
    members stay the same."""
    n = 4
    ghost = member_lease_name(NAME, "ghost")
    body: dict[str, Any] = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": ghost,
            "namespace": NS,
            "labels": {LABEL_LEASE_SET: NAME, LABEL_MEMBER_OF: NAME},
            "annotations": {ANNOTATION_SHARDS: str(n)},
        },
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 2},
    }

    async def haunt() -> None:
        while True:
            body["spec"]["renewTime"] = format_micro_time(datetime.now(UTC))
            emulator.store.apply(dict(body))
            await asyncio.sleep(RP)

    async with asyncio.timeout(40), KubeSession(master=emulator.url, qps=0) as s:
        haunting = asyncio.create_task(haunt())
        a = Replica(emulator, s, "a", n)
        a.start()
        await until(lambda: a.mgr.members == ("a", "ghost") and len(a.mgr.held) == 2)
        ghosts = {i for i, o in a.mgr.assignment.items() if o == "ghost"}
        t0 = time.monotonic()
        await until(lambda: a.mgr.held == set(range(n)) and a.count("acquired") == n)
        print(f"\nfallback: a took the ghost's shards {time.monotonic() - t0:.2f} s later")
        await asyncio.sleep(2 * LD + 4 * RP)  # kept: no hand-off back and forth
        assert a.mgr.held == set(range(n)) and a.releasing == []
        assert all(holder(emulator, i) == "a" for i in ghosts)
        haunting.cancel()
        # the ghost's lease expires: every shard is a's by assignment now
        await until(lambda: a.mgr.members == ("a",))
        await asyncio.sleep(4 * RP)
        assert a.mgr.held == set(range(n)) and a.releasing == [] and a.count("lost") == 0
        await a.stop()


async def test_expired_member_leases_are_deleted(emulator: Emulator) -> None:
    dead = member_lease_name(NAME, "dead-pod")
    emulator.store.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": dead,
                "namespace": NS,
                "labels": {LABEL_LEASE_SET: NAME, LABEL_MEMBER_OF: NAME},
                "annotations": {ANNOTATION_SHARDS: "2"},
            },
            "spec": {"holderIdentity": "dead-pod", "leaseDurationSeconds": 2},
        }
    )
    async with asyncio.timeout(30), KubeSession(master=emulator.url, qps=0) as s:
        a = Replica(emulator, s, "a", 2, member_gc_after=3.0)
        b = Replica(emulator, s, "b", 2, member_gc_after=3.0)
        a.start()
        b.start()
        await until(lambda: "dead-pod" in a.mgr.members)  # live until its lease expires
        await until(lambda: lease(emulator, dead) is None)
        await asyncio.sleep(4 * RP)
        # live members' leases change every retry period: never collected
        assert lease(emulator, member_lease_name(NAME, "a")) is not None
        assert lease(emulator, member_lease_name(NAME, "b")) is not None
        assert a.mgr.members == b.mgr.members == ("a", "b")
        await until(lambda: split_ok([a, b], 2))
        await a.stop()
        await b.stop()


async def test_a_replica_with_another_shard_count_waits_for_the_old_ones_to_go(
    emulator: Emulator,
) -> None:
    """Shard i of 4 and shard i of 8 hold different HPAs: during a rolling update that
    changes N, the replicas with the new count take nothing until the old are gone."""
    async with asyncio.timeout(30), KubeSession(master=emulator.url, qps=0) as s:
        old = Replica(emulator, s, "a", 4)
        new = Replica(emulator, s, "b", 8)
        old.start()
        await until(lambda: old.mgr.held == set(range(4)))
        both: list[tuple[frozenset[int], frozenset[int]]] = []

        async def watch() -> None:
            while True:
                if old.mgr.held and new.mgr.held:
                    both.append((old.mgr.held, new.mgr.held))
                await asyncio.sleep(0.005)

        watcher = asyncio.create_task(watch())
        new.start()
        await until(lambda: new.mgr.members == ("a",))
        await asyncio.sleep(2 * LD)
        assert new.mgr.held == frozenset() and dict(new.mgr.assignment) == {}
        assert new.events == []
        assert old.mgr.held == set(range(4)) and old.mgr.members == ("a",)
        await old.stop()
        await until(lambda: new.mgr.held == set(range(8)) and new.mgr.members == ("b",))
        watcher.cancel()
        assert both == []
        await new.stop()


async def test_a_stray_lease_of_ours_is_released_for_its_owner(emulator: Emulator) -> None:
    """An acquisition cancelled in flight can land after all: the lease names this
    replica though no elector here holds it. It is released at once, not left for the
    owner to wait out (here an hour)."""
    n = 4
    stray = next(i for i, o in assign_shards(n, ["a", "b"]).items() if o == "b")
    emulator.store.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": shard_lease_name(NAME, stray),
                "namespace": NS,
                "labels": {LABEL_LEASE_SET: NAME, LABEL_SHARD_OF: NAME, LABEL_SHARD: str(stray)},
            },
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 3600, "leaseTransitions": 4},
        }
    )
    async with asyncio.timeout(20), KubeSession(master=emulator.url, qps=0) as s:
        b = Replica(emulator, s, "b", n)
        b.start()
        await until(lambda: b.mgr.held == set(range(n)) - {stray})
        a = Replica(emulator, s, "a", n)
        a.start()
        await until(lambda: split_ok([a, b], n))
        assert b.mgr.holds(stray) and b.mgr.epoch(stray) == 5
        assert a.events.count(("acquired", stray)) == 0
        await a.stop()
        await b.stop()


async def test_a_failing_on_acquired_counts_as_lost_and_is_retried(emulator: Emulator) -> None:
    calls: list[int] = []
    lost: list[int] = []

    async def acquired(shard: int) -> None:
        calls.append(shard)
        if len(calls) == 1:
            raise RuntimeError("loading history failed")

    async def releasing(shard: int) -> None:
        pass

    async with asyncio.timeout(20), KubeSession(master=emulator.url, qps=0) as s:
        mgr = ShardManager(
            s,
            namespace=NS,
            name=NAME,
            shards=1,
            identity="a",
            lease_duration=LD,
            renew_deadline=RD,
            retry_period=RP,
            on_acquired=acquired,
            on_releasing=releasing,
            on_lost=lost.append,
        )
        task = asyncio.create_task(mgr.run())
        await until(lambda: len(calls) == 2 and mgr.holds(0))
        assert lost == [0]
        assert mgr.epoch(0) == 1  # released after the failure, acquired anew
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_rejects_inconsistent_settings() -> None:
    async def noop(shard: int) -> None:
        pass

    def make(**kw: Any) -> ShardManager:
        args: dict[str, Any] = {
            "namespace": NS,
            "name": NAME,
            "shards": 2,
            "identity": "a",
            "lease_duration": LD,
            "renew_deadline": RD,
            "retry_period": RP,
            "on_acquired": noop,
            "on_releasing": noop,
            "on_lost": lambda s: None,
        }
        args.update(kw)
        return ShardManager(None, **args)  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="shards"):
        make(shards=0)
    with pytest.raises(ValueError, match="renewDeadline"):
        make(renew_deadline=LD)
    with pytest.raises(ValueError, match="retryPeriod"):
        make(retry_period=RD)
