"""Benchmark: a rescale burst under the supervisor: schedule lag, burst time, reaction.

Run by hand (not a test)::

    .venv/bin/python bench/bench_burst.py                       # 10,000 HPAs, 1,000 rescale
    .venv/bin/python bench/bench_burst.py --hold-slots          # before: slots held on writes
    .venv/bin/python bench/bench_burst.py --hpas 1000 --namespaces 10   # reaction at 1,000

The cluster and the warm-up are bench_scale.py's (an emulator child process loaded
with N HPAs of 3 pods each, every HPA synced once by an unthrottled child controller).
The measured controller (this process, default `hpactl run` flags: QPS 20, burst 30,
5 concurrent syncs, 15 s period, logs JSON to /dev/null) runs its SyncSupervisor as
`hpactl run` does. After ``--settle`` seconds, ``--change`` of the workloads get twice
the CPU (the emulator's PodMetrics, in one call); the run goes on until every one of
them has written its scale and status, plus one period.

It prints:

* the schedule lag (a sync's start minus its tick) of the HPAs that do not rescale,
  p50 / p99 / max, over the syncs that started between the change and the burst's end;
* the burst's time: from the change to the last scale write and to the last status
  write of a rescaled HPA (then the Events recorder's flush), next to the QPS floor;
* the reaction time of each rescaled HPA: from the change (the emulator answering the
  metrics update) to its scale write returning, p50 / p99 / max.

``--share-window W`` sets the metrics-sharing window: a namespace's shared PodMetrics
list is served for at most W seconds (default 5 s, ``SharedMetricsFetcher``); the
schedule clusters a namespace's ticks in a short slot, so the reaction is at most a
period plus that slot. ``--unclustered`` is the what-if of the code before
(2e41d40): each HPA's tick anywhere in the period by a hash of its key, and a shared
answer served for a whole period (W = period), so a decision may rest on data up to
a period old.

``--hold-slots`` is the what-if of the code before: a sync keeps its worker slot while
it waits for write tokens (``release_slot`` patched to do nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_scale as scale


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q / 100 * len(s)))]


@dataclass
class Seen:
    lags: list[tuple[float, str, float]] = field(default_factory=list)  # (start, key, lag)
    scale_writes: dict[str, float] = field(default_factory=dict)  # key -> first write done
    status_done: dict[str, float] = field(default_factory=dict)  # rescaled key -> sync end


async def measure(args: argparse.Namespace, url: str, rpc: scale.Rpc) -> None:
    import hpactl.controller.horizontal as horizontal
    from hpactl.cli.run_cmd import parse_run_config
    from hpactl.controller.app import ControllerApp
    from hpactl.controller.run import tune_gc
    from hpactl.obs.logging import configure_logging

    cfg = parse_run_config(args.run_argv, {})
    devnull = open(os.devnull, "w")  # noqa: SIM115
    configure_logging(cfg.log_format, cfg.verbosity, stream=devnull)
    period = cfg.hpa.sync_period.total_seconds()
    qps, burst = cfg.client.qps, cfg.client.burst
    print(
        f"controller: pid {os.getpid()}, qps {qps:g}, burst {burst}, "
        f"{cfg.hpa.concurrent_syncs} concurrent syncs, period {period:g} s"
        f"{'; --hold-slots (before)' if args.hold_slots else ''}"
    )
    if args.hold_slots:
        setattr(horizontal, "release_slot", lambda: None)  # noqa: B010

        async def no_reacquire() -> None:
            return None

        setattr(horizontal, "reacquire_slot", no_reacquire)  # noqa: B010

    seen = Seen()
    real_update_scale = getattr(horizontal, "update_scale")  # noqa: B009

    async def timed_update_scale(
        session: Any, mapping: Any, ns: str, name: str, *a: Any, **kw: Any
    ) -> Any:
        out = await real_update_scale(session, mapping, ns, name, *a, **kw)
        seen.scale_writes.setdefault(f"{ns}/{name}", time.monotonic())
        return out

    setattr(horizontal, "update_scale", timed_update_scale)  # noqa: B010

    async with ControllerApp(cfg, env={}, master=url, sync_timeout=600) as app:
        tune_gc()
        if args.share_window and app.fetcher is not None:
            app.fetcher.share_window = args.share_window
        if args.unclustered:
            import hpactl.controller.scheduling as scheduling

            # before: ticks spread by key over the whole period, answers kept a period
            spread = scheduling.spread_offset

            def anywhere(key: str, p: float, _base: float, _count: int) -> float:
                return spread(key, p)

            setattr(scheduling, "tick_phase", anywhere)  # noqa: B010
            if app.fetcher is not None:
                app.fetcher.share_window = period
        n = args.hpas
        per_ns = max(1, n // args.namespaces)
        n_change = int(n * args.change)
        step = n / n_change if n_change else 1
        high = [int(k * step) for k in range(n_change)]
        changed = {f"{scale._ns(i, per_ns)}/app{i}" for i in high}
        t_change = float("inf")

        def on_record(rec: Any) -> None:
            if rec.rescaled and rec.key in changed:
                seen.status_done.setdefault(rec.key, time.monotonic())

        app.controller.on_record = on_record
        sup = app.controller.start_scheduling()
        inner = sup._sync

        async def timed_sync(key: str) -> None:
            s = sup._keys.get(key)
            now = sup._clock.monotonic()
            if s is not None:
                seen.lags.append((time.monotonic(), key, max(0.0, now - s.tick)))
            await inner(key)

        sup._sync = timed_sync
        await asyncio.sleep(args.settle)
        cpu0 = time.process_time()
        await rpc.call("metrics", high)
        t_change = time.monotonic()
        deadline = t_change + args.max_periods * period
        while time.monotonic() < deadline and (
            len(seen.scale_writes.keys() & changed) < n_change or len(seen.status_done) < n_change
        ):
            await asyncio.sleep(0.5)
        t_end = time.monotonic()
        await asyncio.sleep(period)
        cpu = time.process_time() - cpu0
        await app.controller.stop_scheduling()
        assert app.recorder is not None
        await app.recorder.flush()
        t_flushed = time.monotonic()

    writes = [t - t_change for k, t in seen.scale_writes.items() if k in changed]
    status = [t - t_change for t in seen.status_done.values()]
    quiet = [lag for t, k, lag in seen.lags if k not in changed and t_change <= t <= t_end]
    quiet_before = [lag for t, k, lag in seen.lags if t < t_change and t >= t_change - period]
    quiet_after = [lag for t, k, lag in seen.lags if k not in changed and t > t_end]
    burst_s = t_end - t_change
    floor_hpa = max(0.0, (2 * n_change - burst) / qps) if qps else 0.0
    floor_scale = max(0.0, (n_change - burst) / qps) if qps else 0.0
    print(
        f"{n} HPAs, {n_change} rescale (2x CPU) at t=0 (after {args.settle:g} s supervised)\n"
        f"  burst: last scale write {max(writes, default=float('nan')):.1f} s "
        f"({len(writes)} of {n_change}; scale bucket floor {floor_scale:.1f} s), last status "
        f"write {max(status, default=float('nan')):.1f} s ({len(status)}; status + Events "
        f"floor {floor_hpa:.1f} s); Events flushed {t_flushed - t_change:.1f} s\n"
        f"  schedule lag of the {n - n_change} HPAs that do not rescale, during the burst "
        f"({len(quiet)} syncs in {burst_s:.1f} s; due about "
        f"{int((n - n_change) * burst_s / period)}): p50 {pct(quiet, 50) * 1000:.0f} ms, "
        f"p99 {pct(quiet, 99) * 1000:.0f} ms, max {max(quiet, default=0) * 1000:.0f} ms\n"
        f"  the period before the change ({len(quiet_before)} syncs): p99 "
        f"{pct(quiet_before, 99) * 1000:.0f} ms; after the burst (one period, {len(quiet_after)} syncs): p99 "
        f"{pct(quiet_after, 99) * 1000:.0f} ms\n"
        f"  reaction (change -> scale write returned), {len(writes)} HPAs: p50 "
        f"{pct(writes, 50):.2f} s, p99 {pct(writes, 99):.2f} s, max "
        f"{max(writes, default=float('nan')):.2f} s (goal p99 <= {period + 1:g} s)\n"
        f"  controller CPU {cpu:.1f} s over {t_end - t_change + period:.0f} s"
    )
    devnull.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hpas", type=int, default=10_000)
    p.add_argument("--namespaces", type=int, default=100)
    p.add_argument("--pods", type=int, default=3)
    p.add_argument("--change", type=float, default=0.10, help="fraction of workloads to scale")
    p.add_argument("--settle", type=float, default=20.0, help="supervised seconds before")
    p.add_argument("--max-periods", type=int, default=12, help="give up after P periods")
    p.add_argument("--hold-slots", action="store_true", help="before: slots held on writes")
    p.add_argument(
        "--share-window",
        type=float,
        default=0.0,
        metavar="W",
        help="a namespace's shared metrics answer is served for at most W s (default 5)",
    )
    p.add_argument(
        "--unclustered",
        action="store_true",
        help="before: ticks spread over the period by key, answers shared for a period",
    )
    p.add_argument("run_argv", nargs="*", help="hpactl run flags (after --)")
    args = p.parse_args()
    logging.disable(logging.WARNING)
    scale.on_warm_cluster(
        args.hpas,
        args.namespaces,
        args.pods,
        args.run_argv,
        lambda url, rpc: asyncio.run(measure(args, url, rpc)),
    )


if __name__ == "__main__":
    main()
