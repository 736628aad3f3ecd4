"""Benchmark: what shadow mode costs next to a normal run (1,000 HPAs by default).

Run by hand (not a test)::

    .venv/bin/python bench/bench_shadow.py               # 1,000 HPAs / 10 namespaces
    .venv/bin/python bench/bench_shadow.py --hpas 200    # quicker

For each mode (normal, then ``--shadow``), with the cluster of bench/bench_scale.py
(each HPA on its own Deployment of 3 Ready pods, CPU at target):

* the emulator runs in a child process and a warm-up controller (another child) syncs
  every HPA once, so each HPA carries a writer's status, as in a cluster where the
  built-in controller runs;
* the measured controller runs in a child process of its own (so its memory is its
  own): ``ControllerApp`` from ``parse_run_config`` with default flags (QPS 20, 15 s
  period), logging as ``hpactl run`` (JSON, info) to /dev/null, tracing off, the
  collector tuned once synced; a virtual clock advances one sync period between
  rounds, so the shadow's timelines are pruned as in a real run;
* it runs ``--rounds`` rounds of ``sync_all()`` in the steady state, then one round
  after 10 % of the workloads' usage doubles (the normal run writes scale, status and
  Events; the shadow decides the same and writes nothing), then ``--rounds`` more.
  The default 12 + 1 + 12 rounds span 375 s of virtual time: past the shadow's
  warm-up (the 5 min downscale stabilization), so its comparisons run in full.

It prints, per mode: RSS after the caches synced and at the end, CPU seconds per
steady round (median) and of the change round, and for shadow mode the comparison
counters. The difference between the two lines is the cost of shadow mode.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_scale import rss_mib, serve, warm_up


def measure(conn: Connection, url: str, shadow: bool, rounds: int, emu_conn: Connection) -> None:
    """Child process: the measured controller."""

    async def run() -> dict[str, Any]:
        import gc

        from hpactl.cli.run_cmd import parse_run_config
        from hpactl.clock import VirtualClock
        from hpactl.controller.app import ControllerApp
        from hpactl.controller.run import tune_gc
        from hpactl.obs.logging import configure_logging

        devnull = open(os.devnull, "w")  # noqa: SIM115 - open for the process' life
        configure_logging("json", 0, stream=devnull)
        argv = ["--shadow"] if shadow else []
        cfg = parse_run_config(argv, {})
        period = cfg.hpa.sync_period.total_seconds()
        clock = VirtualClock(datetime.now(UTC))
        out: dict[str, Any] = {}
        async with ControllerApp(cfg, clock=clock, env={}, master=url, sync_timeout=600) as app:
            tune_gc()
            gc.collect()
            out["rss_synced"] = rss_mib()
            ctl = app.controller
            if app.session is not None and shadow:
                app.session.write_fence = lambda: False
            steady: list[float] = []

            async def one_round() -> float:
                t0 = time.process_time()
                await ctl.sync_all()
                took = time.process_time() - t0
                clock.advance(period)
                return took

            for _ in range(rounds):
                steady.append(await one_round())
            n = len(ctl.hpas.keys())
            emu_conn.send(("metrics", list(range(0, n, 10))))
            emu_conn.recv()
            await asyncio.sleep(1.0)
            out["change"] = await one_round()
            for _ in range(rounds):
                steady.append(await one_round())
            out["steady"] = statistics.median(steady)
            out["rss_end"] = rss_mib()
            m = app.metrics
            out["writes"] = sum(
                s.value
                for fam in m.api_requests.collect()
                for s in fam.samples
                if s.name.endswith("_total") and s.labels["verb"] in ("create", "update", "patch")
            )
            if shadow:
                out["comparisons"] = {
                    s.labels["result"]: s.value
                    for fam in m.shadow_comparisons.collect()
                    for s in fam.samples
                    if s.name.endswith("_total")
                }
                out["divergences"] = sum(
                    s.value
                    for fam in m.shadow_divergences.collect()
                    for s in fam.samples
                    if s.name.endswith("_total")
                )
            out["hpas"] = n
        return out

    logging.disable(logging.CRITICAL)
    conn.send(asyncio.run(run()))


def one_mode(args: argparse.Namespace, shadow: bool) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    per_ns = max(1, args.hpas // args.namespaces)
    parent, child = ctx.Pipe()
    emu = ctx.Process(target=serve, args=(child, args.hpas, per_ns, 3), daemon=True)
    emu.start()
    url, _ = parent.recv()
    wp, wc = ctx.Pipe()
    warm = ctx.Process(target=warm_up, args=(url, [], wc), daemon=True)
    warm.start()
    wp.recv()
    warm.join()
    mp, mc = ctx.Pipe()
    meas = ctx.Process(target=measure, args=(mc, url, shadow, args.rounds, parent), daemon=True)
    meas.start()
    result: dict[str, Any] = mp.recv()
    meas.join()
    parent.send(("stop", None))
    parent.recv()
    emu.join()
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hpas", type=int, default=1000)
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--rounds", type=int, default=12, help="steady rounds before and after")
    args = p.parse_args()
    results = {}
    for shadow in (False, True):
        name = "shadow" if shadow else "normal"
        r = one_mode(args, shadow)
        results[name] = r
        extra = ""
        if shadow:
            extra = f", comparisons {r['comparisons']}, divergences {r['divergences']:g}"
        print(
            f"{name:7s} {r['hpas']} HPAs: RSS synced {r['rss_synced']:.0f} MiB, end "
            f"{r['rss_end']:.0f} MiB; CPU per steady round {r['steady']:.2f} s, change round "
            f"{r['change']:.2f} s; writes {r['writes']:g}{extra}",
            flush=True,
        )
    n, s = results["normal"], results["shadow"]
    print(
        f"shadow - normal: RSS end {s['rss_end'] - n['rss_end']:+.0f} MiB, CPU per steady "
        f"round {s['steady'] - n['steady']:+.2f} s "
        f"({(s['steady'] / n['steady'] - 1) * 100:+.0f} %), change round "
        f"{s['change'] - n['change']:+.2f} s"
    )


if __name__ == "__main__":
    main()
