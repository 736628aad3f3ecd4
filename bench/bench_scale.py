"""Benchmark: the controller at product scale (10,000 HPAs on one core, QPS 20).

Run by hand (not a test)::

    .venv/bin/python bench/bench_scale.py                    # 10,000 HPAs / 100 namespaces
    .venv/bin/python bench/bench_scale.py --hpas 1000        # quicker
    .venv/bin/python bench/bench_scale.py -- --kube-api-qps 50   # any `hpactl run` flag after --

Three processes, so the controller's CPU is measured alone:

* the emulator (a child process), loaded with N HPAs over the namespaces, each HPA
  targeting its own Deployment of 3 Ready pods with CPU requests, and PodMetrics for
  every pod set in one call;
* a warm-up controller (a child process, no client rate limit) that syncs one HPA;
  the emulator copies the status it wrote to every HPA (all are alike, so a sync of
  each would write the same; ``--full-warm-up`` syncs every HPA instead, 171 s at
  50,000): the measured controller then starts like a restarted ``hpactl run`` in a
  settled cluster, where nothing needs writing;
* the measured controller (this process): ``ControllerApp`` built from
  ``parse_run_config`` (default flags: QPS 20, burst 30, 5 concurrent syncs, 15 s
  period), logging configured as ``hpactl run`` does (JSON at info, one line per
  sync) but written to /dev/null, tracing off; once its caches have synced it tunes
  the garbage collector as ``hpactl run`` does (``hpactl.controller.run.tune_gc``).

It prints: the time to caches synced and the RSS after it; for each round of
``sync_all()`` the wall time (until the last event is written), the controller's CPU
seconds, the emulator's CPU seconds, the API requests by verb and resource, the
rescales and status writes; a steady round first (no change: no writes), then a
round after 10 % of the workloads' metrics double (scale + status + event writes).
Each round is checked against the sync period: every client (HPA status + Events,
scale, informers, each metrics API) has its own bucket, as in kube-controller-manager,
so at QPS q a round whose busiest bucket takes R requests needs at least
(R - burst) / q seconds. Between the steady
rounds and the change, the SyncSupervisor runs the HPAs for ``--periods`` periods as
``hpactl run`` does (spread over the period), reporting CPU share and schedule lag;
``--change-periods P`` runs the change that way too instead of one ``sync_all``.
``--relist`` adds one supervised period during which every informer relists at
resourceVersion "" (the path a 410 Gone takes: 30,000 pods again), reporting the
relist's time, the loop's lateness and RSS. Each supervised run also reports the
interval between an HPA's consecutive syncs (p50, p99, max; HPAs with an interval over
period + 0.5 s, HPAs with fewer syncs than periods) and the request times. At the end:
the process's peak RSS (``ru_maxrss``), one line of cost per HPA (CPU per HPA-sync
under the supervisor; peak RSS over the bare process per HPA), the verdict on issue
17's goal 1 (p99 interval <= period + 0.5 s, <= 75 % of a core, peak <= 1 GiB) and a
``RESULT {json}`` line. ``--curve 1000,10000,50000`` runs the bench once per count
(child processes, one after the other, the other flags passed on) and prints the cost
per HPA of each in one table.

What-if switches (they patch the measured process only, to size a proposed fix):
``--no-trust-env`` (a no-op now: ``KubeSession`` builds its aiohttp session without
per-request netrc and proxy lookups), ``--gc-threshold G0,G1,G2`` / ``--gc-freeze`` (collector tuning once
synced), ``--paged-list`` (first lists paged at resourceVersion ""), ``--watch-list``
(every list a streaming watch-list, ``sendInitialEvents=true``),
``--spread-slots N`` (first ticks on N slots per period), ``--gc-late`` (the collector's
default thresholds until the caches have synced, as ``hpactl run`` did before it set
its thresholds from the start). ``--profile N`` prints
cProfile's top N per phase; ``--profile-out PREFIX`` keeps the pstats files.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import gc
import io
import json
import logging
import math
import multiprocessing
import os
import pstats
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any

STARTED = "2026-01-01T00:00:00Z"
READY_AT = "2026-01-01T00:00:30Z"
REQUEST_MILLI = 200  # each pod's CPU request
TARGET_UTILIZATION = 50  # percent: usage of 100m is exactly on target
STEADY_USAGE = "100m"
HIGH_USAGE = "200m"  # 100 % utilization: 3 pods -> 6


# -- the cluster -----------------------------------------------------------------------


def _ns(i: int, per_ns: int) -> str:
    return f"ns{i // per_ns}"


def workload(i: int, per_ns: int, pods: int) -> Iterator[dict[str, Any]]:
    ns, app = _ns(i, per_ns), f"app{i}"
    labels = {"app": app}
    yield {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": ns, "name": app, "labels": labels},
        "spec": {
            "replicas": pods,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.2.3"}]},
            },
        },
        "status": {"replicas": pods, "readyReplicas": pods, "availableReplicas": pods},
    }
    yield {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": ns, "name": app},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {
                            "type": "Utilization",
                            "averageUtilization": TARGET_UTILIZATION,
                        },
                    },
                }
            ],
        },
    }
    for j in range(pods):
        yield {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "namespace": ns,
                "name": f"{app}-{j}",
                "labels": {**labels, "pod-template-hash": "5d8f7c9b6"},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": "x"}
                ],
            },
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.example/app:1.2.3",
                        "resources": {"requests": {"cpu": f"{REQUEST_MILLI}m", "memory": "256Mi"}},
                        "env": [{"name": f"VAR{k}", "value": "x" * 40} for k in range(10)],
                    }
                ]
            },
            "status": {
                "phase": "Running",
                "startTime": STARTED,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": READY_AT}],
            },
        }


def pod_metrics(n: int, per_ns: int, pods: int, high: set[int]) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        cpu = HIGH_USAGE if i in high else STEADY_USAGE
        for j in range(pods):
            out.append(
                {
                    "metadata": {"namespace": _ns(i, per_ns), "name": f"app{i}-{j}"},
                    "window": "30s",
                    "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": "100Mi"}}],
                }
            )
    return out


def serve(conn: Connection, n: int, per_ns: int, pods: int) -> None:
    """Child process: the loaded emulator, answering commands over a pipe."""
    from hpactl.emulator import Emulator

    async def run() -> None:
        namespaces = [f"ns{k}" for k in range((n + per_ns - 1) // per_ns)]
        t0 = time.perf_counter()
        emu = Emulator(bookmark_interval=1.0, namespaces=["default", *namespaces])
        emu.store.bulk_create(o for i in range(n) for o in workload(i, per_ns, pods))
        emu.metrics.set_pod_metrics(pod_metrics(n, per_ns, pods, set()))
        await emu.start()
        conn.send((emu.url, time.perf_counter() - t0))
        loop = asyncio.get_running_loop()
        while True:
            cmd, arg = await loop.run_in_executor(None, conn.recv)
            if cmd == "cpu":
                conn.send(time.process_time())
            elif cmd == "copy-status":  # arg: the HPA whose status every HPA gets
                conn.send(copy_status(emu, arg, n, per_ns))
            elif cmd == "metrics":  # arg: the workloads whose usage doubles
                emu.metrics.set_pod_metrics(pod_metrics(n, per_ns, pods, set(arg)))
                conn.send("ok")
            else:
                await emu.stop()
                conn.send("stopped")
                return

    asyncio.run(run())


def copy_status(emu: Any, key: str, n: int, per_ns: int) -> int:
    """Give every HPA the status the warm-up wrote on ``key`` (all HPAs are alike, so
    a sync of each would write the same): in-process writes instead of n syncs."""
    ns, _, name = key.partition("/")
    hpa = emu.store.get("autoscaling", "horizontalpodautoscalers", ns, name)
    status = hpa["status"]
    for i in range(n):
        emu.store.update_status(
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"namespace": _ns(i, per_ns), "name": f"app{i}"},
                "status": status,
            }
        )
    return n


def warm_up(url: str, run_argv: list[str], conn: Connection, sample: str = "") -> None:
    """Child process: one unthrottled sync of every HPA, so each has its status; or,
    with ``sample`` (an HPA's key), of that HPA only (``copy_status`` does the rest)."""

    async def run() -> None:
        from hpactl.cli.run_cmd import parse_run_config
        from hpactl.controller.app import ControllerApp

        logging.disable(logging.CRITICAL)
        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
        cfg = parse_run_config(run_argv, {})
        cfg = replace(
            cfg,
            client=replace(cfg.client, qps=0.0),
            hpa=replace(cfg.hpa, concurrent_syncs=50),
        )
        async with ControllerApp(cfg, env={}, master=url, sync_timeout=600) as app:
            if sample:
                register = getattr(app.controller.selectors, "register", None)
                if register is not None:
                    register(sample)  # as sync_all does before its syncs
                one = await app.controller.sync_one(sample)
                recs = [] if one is None else [one]
            else:
                recs = await app.controller.sync_all()
            if app.recorder is not None:
                await app.recorder.flush()
            conn.send((len(recs), sum(r.status_written for r in recs)))

    asyncio.run(run())


# -- measuring -------------------------------------------------------------------------


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class LoopLateness:
    """How late a 10 ms ticker wakes: the longest the event loop was busy elsewhere.
    (A ticker that only yields would burn the CPU this bench measures.)"""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            due = time.perf_counter() + 0.01
            await asyncio.sleep(0.01)
            self.worst = max(self.worst, time.perf_counter() - due)

    def start(self) -> None:
        self.worst = 0.0
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> float:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        return self.worst


class GcPauses:
    """Garbage-collector passes while active: count, total and longest pause, and how
    many were full (generation 2) collections."""

    def __init__(self) -> None:
        self.count = self.full = 0
        self.total = self.worst = 0.0
        self._t0 = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
            return
        took = time.perf_counter() - self._t0
        self.count += 1
        self.full += info.get("generation") == 2
        self.total += took
        self.worst = max(self.worst, took)

    def reset(self) -> None:
        self.count = self.full = 0
        self.total = self.worst = 0.0

    def __str__(self) -> str:
        return (
            f"GC {self.count} passes ({self.full} full), {self.total:.2f} s, "
            f"longest {self.worst * 1000:.0f} ms"
        )


class Rpc:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def call(self, cmd: str, arg: Any = None) -> Any:
        self._conn.send((cmd, arg))
        return await asyncio.get_running_loop().run_in_executor(None, self._conn.recv)


# Requests by the client (and so the token bucket) upstream would use; the same
# split as hpactl.kube.session.KubeSession.limiter_for.
# How late a sync may end and still be on time (issue 17, goal 1: p99 <= period + 0.5 s).
GRACE = 0.5

METRICS_GROUPS = ("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")


def _fmt_counts(counts: collections.Counter[tuple[str, str]]) -> str:
    return ", ".join(f"{v} {r}={n}" for (v, r), n in sorted(counts.items())) or "none"


def _fmt_took(
    took: dict[tuple[str, str], list[float]], counts: collections.Counter[tuple[str, str]]
) -> str:
    return (
        ", ".join(
            f"{v} {r} mean {t[0] / max(1, counts[(v, r)]) * 1000:.0f} ms, max {t[1] * 1000:.0f} ms"
            for (v, r), t in sorted(took.items())
        )
        or "none"
    )


def _client(verb: str, res: str) -> str:
    base, _, sub = res.partition("/")
    group = base.partition(".")[2]
    if group in METRICS_GROUPS or group == "coordination.k8s.io":
        return group
    if sub == "scale":
        return "scale"
    if base == "discovery":
        return "discovery"
    if verb in ("list", "watch"):
        return "informers"
    return "hpa"


def _buckets(counts: collections.Counter[tuple[str, str]]) -> dict[str, int]:
    """Requests per client bucket (the failed-request tally left out)."""
    out: collections.Counter[str] = collections.Counter()
    for (verb, res), n in counts.items():
        if ":" not in verb:
            out[_client(verb, res)] += n
    return dict(sorted(out.items()))


def _bound(buckets: dict[str, int], qps: float, burst: int) -> float:
    """The rate-limit floor: the busiest bucket's (requests - burst) / qps."""
    if qps <= 0 or not buckets:
        return 0.0
    return max(0.0, (max(buckets.values()) - burst) / qps)


def _profiler(args: argparse.Namespace) -> cProfile.Profile | None:
    if not args.profile:
        return None
    prof = cProfile.Profile()
    prof.enable()
    return prof


def _report_profile(prof: cProfile.Profile | None, args: argparse.Namespace, name: str) -> None:
    if prof is None:
        return
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(args.profile)
    print(out.getvalue())
    if args.profile_out:
        stats.dump_stats(f"{args.profile_out}.{name}.prof")


def _histogram_samples(hist: Any) -> dict[tuple[str, str | None], float]:
    return {(x.name, x.labels.get("le")): x.value for m in hist.collect() for x in m.samples}


def _histogram_summary(hist: Any, before: dict[tuple[str, str | None], float]) -> str:
    """count, mean and the bucket holding the largest observation since ``before``."""
    now = _histogram_samples(hist)
    samples = {k: v - before.get(k, 0.0) for k, v in now.items()}
    count = next((v for (n, _), v in samples.items() if n.endswith("_count")), 0.0)
    total = next((v for (n, _), v in samples.items() if n.endswith("_sum")), 0.0)
    bounds = sorted(
        (float(le), v) for (n, le), v in samples.items() if n.endswith("_bucket") and le
    )
    prev, top = 0.0, "none"
    for le, cum in bounds:
        if cum >= count:
            top = f"<= {le:g} s" if le != float("inf") else f"> {prev:g} s"
            break
        prev = le
    mean = total / count if count else 0.0
    return f"schedule lag: mean {mean * 1000:.0f} ms, largest {top}"


def _intervals(
    intervals: list[float],
    worst: dict[str, float],
    synced: collections.Counter[str],
    periods: int,
    period: float,
    hpas: int,
) -> dict[str, float]:
    """Per-HPA sync intervals under the supervisor: percentiles, and the HPAs that
    missed a period (an interval over period + 0.5 s, or fewer syncs than periods).
    Each sync missing from ``periods`` per HPA counts as an infinite interval, so an
    HPA never synced twice cannot leave the p99 looking good."""
    missing = sum(max(0, periods - n) for n in synced.values())
    missing += periods * max(0, hpas - len(synced))
    xs = sorted(intervals) + [float("inf")] * missing

    def pct(q: float) -> float:
        return xs[max(0, math.ceil(q * len(xs)) - 1)] if xs else float("nan")  # nearest rank

    short = sum(1 for n in synced.values() if n < periods) + max(0, hpas - len(synced))
    return {
        "p50": pct(0.50),
        "p99": pct(0.99),
        "max": max(intervals, default=float("nan")),  # of the intervals measured
        "late": float(sum(1 for x in worst.values() if x > period + 0.5)),
        "short": float(short),
    }


def _report_cost(
    args: argparse.Namespace,
    results: dict[str, dict[str, float]],
    period: float,
    rss0: float,
    maxrss: float,
    rss_end: float,
) -> None:
    """One line of cost per HPA and the goal-1 verdict; and a JSON line for --curve."""
    steady = results.get("steady", {})
    kib = (maxrss - rss0) * 1024 / max(1, args.hpas)
    line = (
        f"cost per HPA at {args.hpas}: "
        f"{steady.get('us_per_sync', float('nan')):.0f} us CPU per HPA-sync under the "
        f"supervisor ({steady.get('cpu_share', float('nan')) * 100:.0f} % of a core), "
        f"{kib:.1f} KiB of peak RSS over the bare process ({rss0:.0f} MiB)"
    )
    print(line)
    if steady:
        ok_p99 = steady["p99"] <= period + GRACE  # nan (one period: no interval) fails
        ok_cpu = steady["cpu_share"] <= 0.75
        ok_rss = maxrss <= 1024
        print(
            f"goal 1 at {args.hpas}: p99 interval {steady['p99']:.2f} s "
            f"({'ok' if ok_p99 else 'MISSED'}; {steady['late']:.0f} late, "
            f"{steady['short']:.0f} short), CPU {steady['cpu_share'] * 100:.0f} % "
            f"({'ok' if ok_cpu else 'MISSED'}), peak RSS {maxrss:.0f} MiB "
            f"({'ok' if ok_rss else 'MISSED'})"
        )
    out = {
        "hpas": args.hpas,
        "namespaces": args.namespaces,
        "rss0_mib": rss0,
        "peak_mib": maxrss,
        "end_mib": rss_end,
        "kib_per_hpa": kib,
        "load": os.getloadavg(),
        **{f"{k}_{m}": v for k, d in results.items() for m, v in d.items()},
    }
    print("RESULT " + json.dumps(out))


async def measure(args: argparse.Namespace, url: str, rpc: Rpc) -> None:
    from hpactl.cli.run_cmd import parse_run_config
    from hpactl.obs.logging import configure_logging

    t0 = time.perf_counter()
    import kubernetes_asyncio.client  # noqa: F401  (its import is not the caches' sync)

    from hpactl.controller.app import ControllerApp

    import_s = time.perf_counter() - t0
    cfg = parse_run_config(args.run_argv, {})
    devnull = open(os.environ.get("BENCH_SCALE_LOG", os.devnull), "w")  # noqa: SIM115
    if args.logs:
        configure_logging(cfg.log_format, cfg.verbosity, stream=devnull)
    else:
        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    period = cfg.hpa.sync_period.total_seconds()
    qps, burst = cfg.client.qps, cfg.client.burst
    print(
        f"controller: this process, pid {os.getpid()}; flags {args.run_argv or '(defaults)'}: "
        f"qps {qps:g}, burst {burst}, {cfg.hpa.concurrent_syncs} concurrent syncs, "
        f"period {period:g} s; logs {'JSON to /dev/null' if args.logs else 'off'}"
    )
    print(f"  import kubernetes_asyncio + controller: {import_s:.2f} s")
    if args.paged_list or args.watch_list:
        # what-ifs: informers start with a paged list at resourceVersion "" (limit=500)
        # instead of one unpaged list at "0"; or list by streaming watch-lists
        import functools

        import hpactl.controller.app as app_mod

        options: dict[str, Any] = {}
        if args.paged_list:
            options["initial_list_resource_version"] = ""
        if args.watch_list:
            options["watch_list"] = True
        informers = functools.partial(
            app_mod.SharedInformers,  # type: ignore[attr-defined]
            **options,
        )
        setattr(app_mod, "SharedInformers", informers)  # noqa: B010
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()
    gc.collect()
    if not args.gc_late:
        # as hpactl run: its collector thresholds from the start (--gc-late: the
        # interpreter's defaults until the caches have synced, as before 2026-11-24)
        from hpactl.controller.run import GC_THRESHOLDS

        gc.set_threshold(*GC_THRESHOLDS)
    rss0 = rss_mib()
    results: dict[str, dict[str, float]] = {}
    gcp = GcPauses()
    lag = LoopLateness()
    lag.start()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    async with ControllerApp(cfg, env={}, master=url, sync_timeout=600) as app:
        sync_s = time.perf_counter() - t0
        sync_cpu = time.process_time() - cpu0
        worst = await lag.stop()
        gc.collect()
        cached = {k: len(v.store) for k, v in app.informers.informers.items()}
        print(
            f"caches synced: {sync_s:.2f} s wall, {sync_cpu:.2f} s CPU, loop late at most "
            f"{worst * 1000:.0f} ms; {gcp}\n  cached: {cached}"
        )
        if args.spread_slots:
            # what-if: first ticks on a grid of N slots per period, so the syncs due
            # in one slot run back to back instead of one every period/N_hpas seconds
            import hpactl.controller.scheduling as sched

            exact = sched.spread_offset
            slots: int = args.spread_slots

            def on_grid(key: str, period: float) -> float:
                offset: float = exact(key, period)
                return int(offset / period * slots) * period / slots

            sched.spread_offset = on_grid
        from hpactl.controller.run import tune_gc

        tune_gc()  # as `hpactl run` does once the caches have synced
        from hpactl.controller.run import collect_young

        young = asyncio.ensure_future(collect_young())  # as `hpactl run`; ends with the loop
        print(
            f"  gc thresholds (as hpactl run): {gc.get_threshold()}; "
            f"young passes on a clock: {not young.done()}"
        )
        if args.gc_threshold:
            gc.set_threshold(*(int(x) for x in args.gc_threshold.split(",")))
        if args.gc_freeze:
            gc.freeze()  # what-if: the cached objects leave the collector's generations
        assert app.session is not None
        if args.no_trust_env:
            # what-if: kubernetes_asyncio's aiohttp session without trust_env (no
            # per-request netrc and proxy lookups in a thread)
            app.session.api_client.rest_client.pool_manager._trust_env = False
        rss1 = rss_mib()
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"RSS after sync: {rss1:.0f} MiB (+{rss1 - rss0:.0f} MiB; peak {maxrss:.0f} MiB)")

        counts: collections.Counter[tuple[str, str]] = collections.Counter()
        inner = app.session.on_request

        took: dict[tuple[str, str], list[float]] = {}  # (verb, resource): [sum, max]

        def on_request(verb: str, res: str, code: str, seconds: float) -> None:
            counts[(verb, res)] += 1
            t = took.setdefault((verb, res), [0.0, 0.0])
            t[0] += seconds
            t[1] = max(t[1], seconds)
            if code not in ("200", "201"):
                counts[(f"{verb}:{code}", res)] += 1
            if inner is not None:
                inner(verb, res, code, seconds)

        app.session.on_request = on_request

        async def round_(label: str) -> None:
            counts.clear()
            emu0 = await rpc.call("cpu")
            gc.collect()
            gcp.reset()
            lag.start()
            prof = _profiler(args)
            cpu0 = time.process_time()
            sys0 = os.times().system
            t0 = time.perf_counter()
            recs = await app.controller.sync_all()
            syncs_s = time.perf_counter() - t0
            assert app.recorder is not None
            # sync_all waits 30 s at most for events; a round ends at its last write.
            await app.recorder.flush()
            wall = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            sys_cpu = os.times().system - sys0
            worst = await lag.stop()
            _report_profile(prof, args, label.split()[0])
            emu_cpu = await rpc.call("cpu") - emu0
            rescaled = sum(r.rescaled for r in recs)
            written = sum(r.status_written for r in recs)
            failed = sum(bool(r.errors) for r in recs)
            buckets = _buckets(counts)
            bound = _bound(buckets, qps, burst)
            fits = "fits" if wall <= period else "does NOT fit"
            if label.startswith("steady round"):
                results["round" + label.split()[-1]] = {
                    "us_per_hpa": cpu / max(1, len(recs)) * 1e6,
                    "wall": wall,
                }
            print(
                f"{label}: {len(recs)} HPAs in {wall:.2f} s wall (syncs {syncs_s:.2f} s, events "
                f"after {wall - syncs_s:.2f} s) -> {fits} in the {period:g} s period\n"
                f"  controller CPU {cpu:.2f} s ({cpu / max(1, len(recs)) * 1e6:.0f} us/HPA; "
                f"{sys_cpu:.2f} s of it in the kernel), "
                f"emulator CPU {emu_cpu:.2f} s\n"
                f"  loop late at most {worst * 1000:.0f} ms; {gcp}\n"
                f"  {rescaled} rescaled, {written} status writes, {failed} with errors\n"
                f"  requests: {_fmt_counts(counts)}\n"
                f"  per client bucket {buckets} -> at least {bound:.1f} s at qps "
                f"{qps:g}/burst {burst}"
            )

        async def scheduled(periods: int, label: str, relist: bool = False) -> None:
            """`hpactl run`'s schedule: the supervisor spreads the syncs over the period."""
            counts.clear()
            synced: collections.Counter[str] = collections.Counter()
            rescaled: list[str] = []
            last: dict[str, float] = {}
            intervals: list[float] = []
            worst_gap: dict[str, float] = {}

            def on_record(rec: Any) -> None:
                synced[rec.key] += 1
                now = time.perf_counter()
                prev = last.get(rec.key)
                if prev is not None:
                    intervals.append(now - prev)
                    worst_gap[rec.key] = max(worst_gap.get(rec.key, 0.0), now - prev)
                last[rec.key] = now
                if rec.rescaled:
                    rescaled.append(rec.key)

            app.controller.on_record = on_record
            took.clear()
            lag0 = _histogram_samples(app.metrics.schedule_lag)
            emu0 = await rpc.call("cpu")
            gc.collect()
            gcp.reset()
            lag.start()
            prof = _profiler(args)
            cpu0 = time.process_time()
            sys0 = os.times().system
            app.controller.start_scheduling()
            relisted = ""
            if relist:
                await asyncio.sleep(1.0)
                t_relist = time.perf_counter()
                app.informers.relist()
                assert await app.informers.wait_for_resync(300)
                relist_s = time.perf_counter() - t_relist
                relisted = (
                    f"  relist of every informer (the 410 Gone path) in "
                    f"{relist_s:.2f} s; RSS after it {rss_mib():.0f} MiB\n"
                )
                await asyncio.sleep(max(0.0, periods * period - 1.0 - relist_s))
            else:
                await asyncio.sleep(periods * period)
            cpu = time.process_time() - cpu0
            sys_cpu = os.times().system - sys0
            syncs = sum(synced.values())
            # a sync due at the window's end may finish up to 0.5 s later and be on time
            await asyncio.sleep(GRACE)
            await app.controller.stop_scheduling()
            worst = await lag.stop()
            _report_profile(prof, args, label.split()[0])
            app.controller.on_record = None
            emu_cpu = await rpc.call("cpu") - emu0
            buckets = _buckets(counts)
            ivals = _intervals(intervals, worst_gap, synced, periods, period, args.hpas)
            results[label.split(",")[-1].strip().split()[0]] = {
                "cpu_share": cpu / (periods * period),
                "us_per_sync": cpu / max(1, syncs) * 1e6,
                "syncs": syncs,
                **ivals,
            }
            print(
                f"{label} ({periods} periods of {period:g} s, the supervisor as in "
                f"`hpactl run`): {syncs} syncs of {len(synced)} HPAs "
                f"(on time: {args.hpas * periods}), {len(rescaled)} rescaled\n"
                f"  controller CPU {cpu:.2f} s = {cpu / (periods * period) * 100:.0f} % of a core "
                f"({sys_cpu:.2f} s in the kernel), emulator CPU {emu_cpu:.2f} s; "
                f"RSS {rss_mib():.0f} MiB\n"
                f"  {_histogram_summary(app.metrics.schedule_lag, lag0)}\n"
                f"  interval between an HPA's syncs: p50 {ivals['p50']:.3f} s, p99 "
                f"{ivals['p99']:.3f} s, max {ivals['max']:.3f} s over {len(intervals)} "
                f"intervals; {ivals['late']:.0f} HPAs with an interval > period + 0.5 s, "
                f"{ivals['short']:.0f} with fewer than {periods} syncs (by {GRACE:g} s after)\n"
                f"  CPU per HPA-sync {cpu / max(1, syncs) * 1e6:.0f} us\n"
                f"{relisted}"
                f"  loop late at most {worst * 1000:.0f} ms; {gcp}\n"
                f"  requests: {_fmt_counts(counts)}; per client bucket {buckets}\n"
                f"  request time (sent to response headers): {_fmt_took(took, counts)}"
            )

        for k in range(args.steady_rounds):
            await round_(f"steady round {k + 1}")
        if args.periods:
            await scheduled(args.periods, "scheduled, steady")
        if args.relist:
            await scheduled(1, "scheduled, relist", relist=True)
        n_change = int(args.hpas * args.change)
        if n_change:
            step = args.hpas / n_change
            high = [int(k * step) for k in range(n_change)]  # spread over the namespaces
            await rpc.call("metrics", high)
            what = f"{n_change} workloads at 2x CPU"
            if args.change_periods:
                await scheduled(args.change_periods, f"scheduled, change ({what})")
            else:
                await round_(f"change round ({what})")
        if args.after_rounds:
            await round_("round after the change")
        if args.tracemalloc:
            import tracemalloc

            top = tracemalloc.take_snapshot().statistics("lineno")[: args.tracemalloc]
            print("largest live allocations (tracemalloc, by line):")
            for stat in top:
                print(f"  {stat.size / 2**20:7.1f} MiB {stat.count:9d} blocks  {stat.traceback}")
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rss_end = rss_mib()
        unreachable = gc.collect()
        print(
            f"RSS at the end: {rss_end:.0f} MiB ({rss_mib():.0f} MiB after a full collection "
            f"that found {unreachable} unreachable objects); peak (VmHWM) {maxrss:.0f} MiB"
        )
        _report_cost(args, results, period, rss0, maxrss, rss_end)
    devnull.close()


def on_warm_cluster(
    hpas: int,
    namespaces: int,
    pods: int,
    run_argv: list[str],
    measure: Callable[[str, Rpc], None],
) -> None:
    """Run ``measure(url, rpc)`` against an emulator child process loaded with ``hpas``
    HPAs whose statuses a warm-up controller has written; stop the emulator after."""
    per_ns = max(1, hpas // namespaces)
    parent, child = multiprocessing.Pipe()
    emu = multiprocessing.Process(target=serve, args=(child, hpas, per_ns, pods), daemon=True)
    emu.start()
    url, load_s = _recv(parent, emu, "emulator")
    print(f"emulator: pid {emu.pid}, {hpas} HPAs, loaded in {load_s:.1f} s")
    try:
        wp, wc = multiprocessing.Pipe()
        w = multiprocessing.Process(target=warm_up, args=(url, run_argv, wc), daemon=True)
        w.start()
        synced, written = _recv(wp, w, "warm-up")
        w.join(60)
        print(f"warm-up: {synced} HPAs synced, {written} statuses written")
        measure(url, Rpc(parent))
    finally:
        parent.send(("stop", None))
        parent.recv()
        emu.join(10)


def _recv(conn: Connection, proc: multiprocessing.Process, what: str) -> Any:
    """The child's answer; fail (instead of hanging) if the child died first."""
    while not conn.poll(1.0):
        if not proc.is_alive():
            raise SystemExit(f"{what} process exited with code {proc.exitcode}")
    return conn.recv()


def curve(args: argparse.Namespace) -> None:
    """``--curve``: the bench at each HPA count in turn (never two at once), then the
    cost per HPA side by side, so the curve's flatness is one table."""
    import subprocess
    import sys

    argv = [a for a in sys.argv[1:] if not a.startswith("--curve=")]
    if "--curve" in argv:
        i = argv.index("--curve")
        del argv[i : i + 2]
    rows: list[dict[str, Any]] = []
    for n in (int(x) for x in args.curve.split(",")):
        print(f"=== {n} HPAs (load average {os.getloadavg()[0]:.2f}) ===", flush=True)
        cmd = [sys.executable, __file__, "--hpas", str(n), *argv]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        print(proc.stdout, flush=True)
        found = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if found:
            rows.append(json.loads(found[-1][len("RESULT ") :]))
    print(
        "| HPAs | sync_all rounds, us/HPA | supervisor: us per HPA-sync | % of a core "
        "| p99 interval | late | KiB per HPA | peak RSS | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rounds = " / ".join(
            f"{v:.0f}" for k, v in sorted(r.items()) if k.startswith("round") and "us_per" in k
        )
        print(
            f"| {r['hpas']} | {rounds} | {r.get('steady_us_per_sync', float('nan')):.0f} "
            f"| {r.get('steady_cpu_share', float('nan')) * 100:.0f} "
            f"| {r.get('steady_p99', float('nan')):.2f} s "
            f"| {r.get('steady_late', 0):.0f} + {r.get('steady_short', 0):.0f} short "
            f"| {r['kib_per_hpa']:.1f} | {r['peak_mib']:.0f} MiB "
            f"| {r['load'][0]:.2f} |"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hpas", type=int, default=10_000)
    p.add_argument("--namespaces", type=int, default=100)
    p.add_argument("--pods", type=int, default=3, help="pods per Deployment")
    p.add_argument("--change", type=float, default=0.10, help="fraction of workloads to scale")
    p.add_argument("--steady-rounds", type=int, default=2)
    p.add_argument(
        "--periods", type=int, default=2, help="sync periods run by the supervisor (steady)"
    )
    p.add_argument(
        "--change-periods",
        type=int,
        default=0,
        metavar="P",
        help="run the change under the supervisor for P periods instead of one sync_all",
    )
    p.add_argument("--after-rounds", action="store_true", help="one more round after the change")
    p.add_argument("--no-logs", dest="logs", action="store_false", help="don't render sync logs")
    p.add_argument(
        "--profile", type=int, default=0, metavar="N", help="cProfile each round, print top N"
    )
    p.add_argument("--profile-out", metavar="PREFIX", help="also dump each round's pstats")
    p.add_argument(
        "--gc-freeze", action="store_true", help="what-if: gc.freeze() once the caches synced"
    )
    p.add_argument("--paged-list", action="store_true", help='what-if: first lists paged at RV ""')
    p.add_argument(
        "--watch-list", action="store_true", help="what-if: lists by streaming watch-lists"
    )
    p.add_argument(
        "--gc-late", action="store_true", help="GC thresholds set only once synced (as before)"
    )
    p.add_argument(
        "--tracemalloc",
        type=int,
        default=0,
        metavar="N",
        help="trace allocations from the start; print the N largest live sites at the end",
    )
    p.add_argument(
        "--relist", action="store_true", help="one supervised period with a relist of everything"
    )
    p.add_argument(
        "--spread-slots", type=int, default=0, metavar="N", help="what-if: first ticks on N slots"
    )
    p.add_argument(
        "--gc-threshold", metavar="G0,G1,G2", help="what-if: gc.set_threshold once synced"
    )
    p.add_argument(
        "--no-trust-env",
        action="store_true",
        help="what-if (now the default: a no-op): the aiohttp session with trust_env=False",
    )
    p.add_argument(
        "--full-warm-up",
        action="store_true",
        help="the warm-up syncs every HPA (default: one, whose status is copied to all)",
    )
    p.add_argument(
        "--curve",
        metavar="N,N,...",
        help="run the bench once per HPA count (child processes, one after the other, "
        "each with these flags) and print the cost per HPA of each: e.g. 1000,10000,50000",
    )
    p.add_argument("run_argv", nargs="*", help="hpactl run flags (after --)")
    args = p.parse_args()
    if args.curve:
        curve(args)
        return
    per_ns = max(1, args.hpas // args.namespaces)

    parent, child = multiprocessing.Pipe()
    t0 = time.perf_counter()
    emu = multiprocessing.Process(
        target=serve, args=(child, args.hpas, per_ns, args.pods), daemon=True
    )
    emu.start()
    url, load_s = _recv(parent, emu, "emulator")
    n_pods = args.hpas * args.pods
    print(
        f"emulator: child process pid {emu.pid}, {args.hpas} HPAs + Deployments, {n_pods} pods "
        f"in {(args.hpas + per_ns - 1) // per_ns} namespaces, {n_pods} PodMetrics; "
        f"loaded in {load_s:.1f} s"
    )
    try:
        t0 = time.perf_counter()
        wp, wc = multiprocessing.Pipe()
        sample = "" if args.full_warm_up else f"{_ns(0, per_ns)}/app0"
        w = multiprocessing.Process(
            target=warm_up, args=(url, args.run_argv, wc, sample), daemon=True
        )
        w.start()
        synced, written = _recv(wp, w, "warm-up")
        w.join(60)
        copied = ""
        if sample:
            parent.send(("copy-status", sample))
            copied = f", its status copied to {_recv(parent, emu, 'emulator')} HPAs"
        print(
            f"warm-up: child process, no rate limit: {synced} HPAs synced, {written} statuses "
            f"written{copied} in {time.perf_counter() - t0:.1f} s"
        )
        asyncio.run(measure(args, url, Rpc(parent)))
    finally:
        parent.send(("stop", None))
        parent.recv()
        emu.join(10)


if __name__ == "__main__":
    main()
