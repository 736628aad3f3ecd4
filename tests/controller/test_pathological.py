"""Many HPAs with pathological ones among them: the others keep their schedule.

The emulator runs in a child process (tests/support/loaded_cluster.py), loaded with
healthy HPAs and four pathological ones: a selector matching every pod of a large
namespace, a metrics API that answers that namespace after ``slow_answer`` seconds,
a target flipping between a Deployment and a StatefulSet of the same name (and its
HPA's ``scaleTargetRef.kind`` edited), and an HPA edited every second. After a
warm-up sync (every HPA has a status, as after a restart), the controller runs as
``hpactl run`` does (``ControllerApp`` from the run flags, default QPS 20 / burst
30, 5 concurrent syncs, its ``SyncSupervisor``) for a few periods, and every healthy
HPA's schedule lag and the gaps between its syncs are measured.

The CI size (the default suite): 200 HPAs, a 1,000-pod namespace, the metrics answer
after 3 s with each call bounded at 1 s, a 5 s period, 15 s of running. The full size
(``-m long``): 1,000 HPAs, a 5,000-pod namespace, the answer after 30 s with the
default 10 s call timeout, the default 15 s period, 90 s of running.

The lag bound is half the call timeout at CI size (0.5 s; 3 s of 10 s at full size):
a healthy HPA queued behind a sync stuck on the slow metrics call would wait for that
call's timeout and fail it. (With one sync worker,
``--concurrent-horizontal-pod-autoscaler-syncs=1``, the CI size's largest lag is
0.96 s and the test fails, as it should.)
"""

from __future__ import annotations

import asyncio
import time

import pytest
from support.loaded_cluster import (
    PATHOLOGICAL,
    ClusterSpec,
    LoadedCluster,
    QuietLogs,
    ScheduleWatch,
    warm_up,
)

from hpactl.controller.app import ControllerApp
from hpactl.flags import parse_run_config


async def _run(
    spec: ClusterSpec, period: float, run_for: float, call_timeout: float, lag_bound: float
) -> None:
    with QuietLogs():
        async with LoadedCluster(spec) as cluster:
            await warm_up(cluster.url)
            cfg = parse_run_config([f"--horizontal-pod-autoscaler-sync-period={period:g}s"], {})
            async with ControllerApp(
                cfg, env={}, master=cluster.url, call_timeout=call_timeout
            ) as app:
                from hpactl.controller.run import tune_gc

                tune_gc()  # as `hpactl run` does once the caches have synced
                watch = ScheduleWatch(app)
                await cluster.call("chaos")
                begin = time.monotonic()
                app.controller.start_scheduling()
                await asyncio.sleep(run_for)
                end = time.monotonic()
                await app.controller.stop_scheduling()
                chaos_writes = await cluster.call("count")

    healthy = spec.healthy_keys()
    mean, worst, syncs = watch.summary(healthy)
    gaps = {k: watch.max_gap(k, begin, end) for k in healthy}
    counts = {k: len(watch.starts.get(k, [])) for k in healthy}
    print(
        f"\n{spec.hpas} healthy HPAs, period {period:g} s, {run_for:g} s: {syncs} syncs, "
        f"schedule lag mean {mean * 1000:.1f} ms, max {worst * 1000:.1f} ms; "
        f"longest gap between syncs {max(gaps.values()):.2f} s; "
        f"pathological syncs {[len(watch.starts.get(k, [])) for k in PATHOLOGICAL]}, "
        f"chaos writes {chaos_writes}"
    )
    # The faults were there: the slow namespace's metrics timed out, the chaos ran.
    assert any("deadline" in e for e in watch.errors["slow/web"]), watch.errors["slow/web"]
    assert chaos_writes >= run_for / 2
    assert all(watch.starts.get(k) for k in PATHOLOGICAL)  # they are synced too
    # Every healthy HPA kept its schedule: synced once per period, never late by more
    # than the bound, never a gap longer than a period plus the bound.
    assert worst <= lag_bound, f"max schedule lag {worst:.2f} s > {lag_bound} s"
    # Each HPA's phase in the period is spread, so a window of k periods holds k or
    # k - 1 sync starts (starts at 5.0 and 10.0 s of a 15 s window: gaps of exactly
    # one period, two syncs); the gaps below bound the edges as well.
    assert min(counts.values()) >= int(run_for / period) - 1, sorted(counts.items())[:5]
    late = {k: g for k, g in gaps.items() if g > period + lag_bound}
    assert not late, f"{len(late)} healthy HPAs went longer than a period: {list(late.items())[:5]}"


@pytest.mark.timeout(90)
async def test_pathological_hpas_do_not_delay_the_others() -> None:
    spec = ClusterSpec(
        hpas=200, per_ns=20, pods=2, pathological=True, big_pods=1000, slow_answer=3.0
    )
    await _run(spec, period=5.0, run_for=15.0, call_timeout=1.0, lag_bound=0.5)


@pytest.mark.long
@pytest.mark.timeout(600)
async def test_pathological_hpas_do_not_delay_the_others_at_full_size() -> None:
    spec = ClusterSpec(
        hpas=1000, per_ns=10, pods=3, pathological=True, big_pods=5000, slow_answer=30.0
    )
    await _run(spec, period=15.0, run_for=90.0, call_timeout=10.0, lag_bound=3.0)
