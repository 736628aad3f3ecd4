"""Write bursts and the schedule: a sync waiting for write tokens holds no worker slot.

A virtual clock and the client's token bucket: syncs that rescale release their slot
before their writes (as ``HorizontalController._reconcile_once`` does) and queue on the
bucket, while HPAs that do not rescale keep being synced on their ticks.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SyncSupervisor, reacquire_slot, release_slot
from hpactl.kube.session import TokenBucket

PERIOD = 15.0
WORKERS = 2


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 6) for a, b in itertools.pairwise(times)]


class Burst:
    """Syncs where ``writers`` write scale then status through one bucket at 1 QPS."""

    def __init__(self, clock: VirtualClock, writers: set[str], *, redecide: bool = False) -> None:
        self.clock = clock
        self.writers = writers
        self.redecide = redecide
        self.bucket = TokenBucket(1.0, 1, monotonic=clock.monotonic, sleep=clock.sleep)
        self.log: list[tuple[float, str, str]] = []  # (time, key, step)
        self.in_flight: set[str] = set()
        self.deciding = 0
        self.most_deciding = 0
        self.overlaps: list[str] = []

    def _decide(self) -> None:
        self.deciding += 1
        self.most_deciding = max(self.most_deciding, self.deciding)

    async def __call__(self, key: str) -> None:
        if key in self.in_flight:
            self.overlaps.append(key)
        self.in_flight.add(key)
        try:
            self._decide()
            await asyncio.sleep(0)  # a decision may yield (metrics) while holding its slot
            self.log.append((self.clock.monotonic(), key, "decide"))
            self.deciding -= 1
            if key not in self.writers:
                return
            release_slot()
            await self.bucket.wait()
            self.log.append((self.clock.monotonic(), key, "scale"))
            if self.redecide:
                await reacquire_slot()  # a stale write: decide again within the bound
                self._decide()
                await asyncio.sleep(0)
                self.log.append((self.clock.monotonic(), key, "redecide"))
                self.deciding -= 1
                release_slot()
            await self.bucket.wait()
            self.log.append((self.clock.monotonic(), key, "status"))
            self.log.append((self.clock.monotonic(), key, "events"))
        finally:
            self.in_flight.discard(key)

    def steps(self, key: str) -> list[str]:
        return [s for _, k, s in self.log if k == key]

    def times(self, key: str, step: str) -> list[float]:
        return [t for t, k, s in self.log if k == key and s == step]


async def _run(
    burst: Burst, keys: list[str], seconds: float, placed: Sequence[str] = ()
) -> SyncSupervisor:
    sup = SyncSupervisor(burst.clock, PERIOD, WORKERS, burst)
    sup.start(placed)  # at their places in the namespace's slot, from t=0 on
    for k in keys:
        sup.add(k)  # all due now
    await burst.clock.settle()
    await burst.clock.run_for(seconds)
    return sup


async def test_hpas_that_do_not_rescale_keep_their_ticks_while_writes_queue() -> None:
    clock = VirtualClock()
    writers = [f"ns/w{i}" for i in range(10)]
    quiet = [f"ns/q{i}" for i in range(30)]
    burst = Burst(clock, set(writers))
    sup = await _run(burst, writers, 2 * PERIOD + 1, placed=quiet)
    # 20 writes at 1 QPS: the burst lasts as long as the bucket says...
    assert max(t for t, _, s in burst.log if s == "status") >= 19.0
    # ...and meanwhile every quiet HPA is synced on its ticks, one period apart.
    for k in quiet:
        times = burst.times(k, "decide")
        assert len(times) >= 2 and times[0] < PERIOD
        assert set(gaps(times)) == {PERIOD}
    # The writers decided at once too; only their writes waited.
    assert all(burst.times(k, "decide")[0] == 0.0 for k in writers)
    assert burst.most_deciding <= WORKERS
    assert burst.overlaps == []
    await sup.stop()


async def test_each_hpa_writes_in_order_and_is_never_synced_twice_at_once() -> None:
    clock = VirtualClock()
    writers = [f"ns/w{i}" for i in range(12)]
    burst = Burst(clock, set(writers))
    sup = await _run(burst, writers, 3 * PERIOD)
    assert burst.overlaps == []
    for k in writers:
        steps = burst.steps(k)
        # Whole syncs, one after the other: decide, scale, status, events.
        assert len(steps) >= 5  # a second sync began
        assert steps == (["decide", "scale", "status", "events"] * len(steps))[: len(steps)]
        # The next sync starts only after this one's last write.
        assert burst.times(k, "decide")[1] >= burst.times(k, "events")[0]
    # Writes are served in the bucket's order at its rate: never faster than 1 QPS.
    writes = sorted(t for t, _, s in burst.log if s in ("scale", "status"))
    assert all(b - a >= 0.999 for a, b in itertools.pairwise(writes))
    await sup.stop()


async def test_deciding_again_after_a_write_takes_a_slot_back() -> None:
    clock = VirtualClock()
    writers = [f"ns/w{i}" for i in range(8)]
    quiet = [f"ns/q{i}" for i in range(8)]
    burst = Burst(clock, set(writers), redecide=True)
    sup = await _run(burst, writers, 2 * PERIOD, placed=quiet)
    assert burst.most_deciding <= WORKERS
    for k in writers:
        assert burst.steps(k)[:5] == ["decide", "scale", "redecide", "status", "events"]
    for k in quiet:
        times = burst.times(k, "decide")
        assert len(times) == 2 and gaps(times) == [PERIOD]
    await sup.stop()


async def test_removing_a_key_while_it_writes_keeps_the_worker_count() -> None:
    clock = VirtualClock()
    writers = [f"ns/w{i}" for i in range(4)]
    burst = Burst(clock, set(writers))
    sup = await _run(burst, writers, 1.5)
    sup.remove("ns/w3")  # waiting for its scale token, detached from its worker
    sup.add("ns/late")
    await clock.settle()
    await clock.run_for(PERIOD)
    assert "scale" not in burst.steps("ns/w3")
    await clock.run_for(PERIOD)
    # synced at once, then at its place in the namespace's slot a period or more later
    first, second = burst.times("ns/late", "decide")
    assert first == 1.5 and PERIOD <= second - first < 2 * PERIOD
    assert burst.most_deciding <= WORKERS
    await sup.stop()
