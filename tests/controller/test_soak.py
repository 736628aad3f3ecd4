"""The long run: ten minutes of hundreds of HPAs whose metrics change every minute,
with RSS, open file descriptors and asyncio tasks flat (``-m long``; ~11 minutes).

The emulator runs in a child process (tests/support/loaded_cluster.py), so what is
sampled in this process is the controller's: ``ControllerApp`` from `hpactl run`'s
default flags (15 s period, QPS 20 / burst 30, 5 concurrent syncs), its logging
rendered to /dev/null, its collector tuned as `hpactl run` tunes it, and its
``SyncSupervisor`` scheduling 300 HPAs. Every minute every workload's CPU usage
changes (on target, twice the target, under it, in turn), so every minute brings
status writes, and scale writes and Events: a third of the HPAs scale up each minute
and another third down. The one flag changed from the defaults is the downscale
stabilization window, 30 s instead of 5 minutes: with the default, an HPA that saw
twice its target within 5 minutes (always, with this 3-minute pattern) would stay up,
and after the third minute nothing would scale any more.

A sample per minute: RSS (``/proc/self/statm``); and, as the least over 20 looks in
the minute's last 10 s (the floor, without the short-lived tasks and sockets of the
syncs in flight at one instant), the open file descriptors (``/proc/self/fd``) and
``len(asyncio.all_tasks())``. After five minutes of warm-up, the last five samples
must hold: RSS within 5 % of each other, the task floor exactly the same, the
descriptor floor within 2 (idle keep-alive connections of the client's pool close
and reopen as the syncs' timing shifts).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import os
import time
from typing import Any

import pytest
from support.loaded_cluster import ClusterSpec, LoadedCluster, QuietLogs

from hpactl.controller.app import ControllerApp
from hpactl.flags import parse_run_config

MINUTES = 10
WARM_UP = 5
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.long
@pytest.mark.timeout(MINUTES * 60 + 240)
async def test_ten_minutes_of_changing_metrics_leave_rss_fds_and_tasks_flat() -> None:
    spec = ClusterSpec(hpas=300, per_ns=20, pods=2)
    samples: list[tuple[int, float, int, int, int, int]] = []
    rescaled: list[int] = []  # rescales so far, at each sample
    with QuietLogs():
        async with LoadedCluster(spec) as cluster:
            cfg = parse_run_config(["--horizontal-pod-autoscaler-downscale-stabilization=30s"], {})
            async with ControllerApp(cfg, env={}, master=cluster.url) as app:
                from hpactl.controller.run import tune_gc

                tune_gc()  # as `hpactl run` does once the caches have synced
                syncs: collections.Counter[str] = collections.Counter()

                def on_record(rec: Any) -> None:
                    syncs["syncs"] += 1
                    syncs["rescaled"] += bool(rec.rescaled)
                    syncs["errors"] += bool(rec.errors)

                app.controller.on_record = on_record
                app.controller.start_scheduling()
                start = time.monotonic()
                for minute in range(MINUTES + 1):
                    fds, tasks = [], []
                    # the minute's last 10 s: 20 looks (minute 0: right away)
                    for _ in range(20):
                        if minute:
                            await asyncio.sleep(0.5)
                        fds.append(open_fds())
                        tasks.append(len(asyncio.all_tasks()))
                    rescaled.append(syncs["rescaled"])
                    samples.append((minute, rss_mib(), min(fds), max(fds), min(tasks), max(tasks)))
                    print(
                        f"minute {minute}: RSS {samples[-1][1]:.1f} MiB, fds {min(fds)}..{max(fds)}, "
                        f"tasks {min(tasks)}..{max(tasks)}, so far {dict(syncs)}",
                        flush=True,
                    )
                    if minute == MINUTES:
                        break
                    await cluster.call("metrics", minute + 1)  # the metrics change
                    next_look = start + (minute + 1) * 60 - 10
                    await asyncio.sleep(max(0.0, next_look - time.monotonic()))
                await app.controller.stop_scheduling()

    print("\nminute  RSS MiB  fds(floor..max)  tasks(floor..max)")
    for m, rss, fd0, fd1, t0, t1 in samples:
        print(f"{m:6d}  {rss:7.1f}  {fd0:5d}..{fd1:<5d}    {t0:5d}..{t1}")
    print(f"syncs {dict(syncs)}")
    # The run did the work: every HPA synced about every 15 s, and the changing
    # metrics made it scale.
    assert syncs["syncs"] >= spec.hpas * MINUTES * 4 * 0.9
    per_minute = [b - a for a, b in itertools.pairwise(rescaled)]
    print(f"rescales per minute {per_minute}")
    assert all(n > 0 for n in per_minute[1:]), per_minute
    tail = samples[WARM_UP + 1 :]
    rss = [s[1] for s in tail]
    assert max(rss) <= min(rss) * 1.05, f"RSS not flat: {rss}"
    assert len({s[4] for s in tail}) == 1, f"task floor not flat: {[s[4] for s in tail]}"
    fd_floor = [s[2] for s in tail]
    assert max(fd_floor) - min(fd_floor) <= 2, f"fd floor not flat: {fd_floor}"
