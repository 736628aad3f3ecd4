"""Benchmark: upstream's request pattern next to hpactl's, in one run, one emulator.

Run by hand (not a test)::

    .venv/bin/python bench/bench_upstream_pattern.py --hpas 1000 --namespaces 10
    .venv/bin/python bench/bench_upstream_pattern.py --hpas 1000 --upstream-qps 0  # no limit

The cluster and the warm-up are bench_scale.py's (an emulator child process with N
HPAs of 3 pods each, every HPA synced once so nothing needs writing). Then two
clients run side by side against that emulator for ``--periods`` sync periods:

* **upstream's pattern** (a child process, so its CPU is its own): a plain asyncio
  loop doing what kube-controller-manager's HPA controller does per HPA per period,
  with the same rate limits (one token bucket per client, QPS 20 / burst 30 by
  default, as ``--kube-api-qps`` / ``--kube-api-burst``): a GET of the target's
  ``/scale`` subresource (the scale client; no cache), then one metrics request per
  metric: for a CPU Resource metric a ``PodMetricsList`` filtered by the HPA's
  selector (the metrics client; nothing shared between HPAs), then the utilization
  from the pods of its informer. Its informers: a list and a watch of HPAs and of
  Pods. Workers: 5 (``--concurrent-horizontal-pod-autoscaler-syncs``) over a queue
  where each HPA comes back one period after its sync, as upstream's
  ``AddRateLimited`` with a fixed interval. No status writes: the statuses are
  already what a sync would write (the warm-up wrote them), for both clients.
* **hpactl** (this process): ``ControllerApp`` with default `hpactl run` flags and its
  SyncSupervisor: scale read from the informer caches, one ``PodMetricsList`` per
  namespace and period shared by the namespace's HPAs.

For each it prints the requests in the window by verb and resource, per period,
the syncs done (and how many HPAs were synced at least once), requests per sync, and
its CPU seconds; the emulator's CPU over the window is printed once (both clients
share it).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import multiprocessing
import os
import sys
import time
import urllib.parse
from multiprocessing.connection import Connection
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_scale as scale

Counts = collections.Counter[tuple[str, str]]


# -- upstream's pattern (child process) ---------------------------------------------------


class Upstream:
    """The request pattern of upstream's HPA controller, without its decision logic."""

    def __init__(self, url: str, qps: float, burst: int, workers: int, period: float) -> None:
        from hpactl.kube.session import TokenBucket

        self.url = url
        self.period = period
        self.workers = workers
        self.scale_bucket = TokenBucket(qps, burst)
        self.metrics_bucket = TokenBucket(qps, burst)
        self.informer_bucket = TokenBucket(qps, burst)
        self.counts: Counts = collections.Counter()
        self.syncs = 0
        self.synced: set[str] = set()
        self.counting = False
        self.hpas: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.failed = 0

    def _count(self, verb: str, resource: str) -> None:
        if self.counting:
            self.counts[(verb, resource)] += 1

    async def _get(self, session: Any, path: str, verb: str, resource: str) -> Any:
        async with session.get(self.url + path) as resp:
            body = await resp.read()
        self._count(verb, resource)
        if resp.status != 200:
            self.failed += 1
            return None
        return json.loads(body)

    async def _informer(self, session: Any, path: str, resource: str, store: dict[str, Any]) -> str:
        await self.informer_bucket.wait()
        lst = await self._get(session, path + "?resourceVersion=0", "list", resource)
        for item in lst["items"]:
            md = item["metadata"]
            store[f"{md['namespace']}/{md['name']}"] = item
        return str(lst["metadata"]["resourceVersion"])

    async def _watch(
        self, session: Any, path: str, rv: str, resource: str, store: dict[str, Any]
    ) -> None:
        while True:
            await self.informer_bucket.wait()
            q = f"{path}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"
            async with session.get(self.url + q, timeout=None) as resp:
                self._count("watch", resource)
                async for line in resp.content:
                    ev = json.loads(line)
                    obj = ev["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if ev["type"] == "BOOKMARK":
                        continue
                    md = obj["metadata"]
                    key = f"{md['namespace']}/{md['name']}"
                    if ev["type"] == "DELETED":
                        store.pop(key, None)
                    else:
                        store[key] = obj

    async def _sync(self, session: Any, key: str) -> None:
        hpa = self.hpas.get(key)
        if hpa is None:
            return
        ns = hpa["metadata"]["namespace"]
        ref = hpa["spec"]["scaleTargetRef"]
        await self.scale_bucket.wait()
        sc = await self._get(
            session,
            f"/apis/apps/v1/namespaces/{ns}/deployments/{ref['name']}/scale",
            "get",
            "deployments/scale",
        )
        if sc is None:
            return
        selector = sc["status"].get("selector", "")
        for metric in hpa["spec"].get("metrics", []):
            if metric["type"] != "Resource":
                continue
            await self.metrics_bucket.wait()
            pm = await self._get(
                session,
                f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods?labelSelector={urllib.parse.quote(selector)}",
                "list",
                "pods.metrics.k8s.io",
            )
            if pm is None:
                continue
            usage = requests = 0
            for item in pm["items"]:
                pod = self.pods.get(f"{ns}/{item['metadata']['name']}")
                if pod is None:
                    continue
                for c in item["containers"]:
                    usage += int(c["usage"]["cpu"].rstrip("m"))
                for c in pod["spec"]["containers"]:
                    requests += int(c["resources"]["requests"]["cpu"].rstrip("m"))
            _ = usage * 100 // max(1, requests)  # the utilization the decision would use

    async def _worker(self, session: Any) -> None:
        loop = asyncio.get_running_loop()
        while True:
            key = await self.queue.get()
            try:
                await self._sync(session, key)
            except Exception:  # a failed sync is retried next period, as upstream
                self.failed += 1
            if self.counting:
                self.syncs += 1
                self.synced.add(key)
            loop.call_later(self.period, self.queue.put_nowait, key)

    async def run(self, conn: Connection) -> None:
        import aiohttp

        conn_limit = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=conn_limit) as session:
            hpa_path = "/apis/autoscaling/v2/horizontalpodautoscalers"
            pod_path = "/api/v1/pods"
            hrv = await self._informer(session, hpa_path, "horizontalpodautoscalers", self.hpas)
            prv = await self._informer(session, pod_path, "pods", self.pods)
            tasks = [
                asyncio.create_task(
                    self._watch(session, hpa_path, hrv, "horizontalpodautoscalers", self.hpas)
                ),
                asyncio.create_task(self._watch(session, pod_path, prv, "pods", self.pods)),
            ]
            for key in self.hpas:  # the informer's adds: every HPA queued at once
                self.queue.put_nowait(key)
            tasks += [asyncio.create_task(self._worker(session)) for _ in range(self.workers)]
            loop = asyncio.get_running_loop()
            conn.send("synced")
            cmd = await loop.run_in_executor(None, conn.recv)
            assert cmd == "count"
            self.counting = True
            cpu0 = time.process_time()
            cmd = await loop.run_in_executor(None, conn.recv)
            cpu = time.process_time() - cpu0
            self.counting = False
            conn.send((dict(self.counts), self.syncs, len(self.synced), cpu, self.failed))
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def upstream_child(
    conn: Connection, url: str, qps: float, burst: int, workers: int, period: float
) -> None:
    asyncio.run(Upstream(url, qps, burst, workers, period).run(conn))


# -- both in one window -------------------------------------------------------------------


def _per_period(counts: Counts, periods: int) -> str:
    return ", ".join(
        f"{v} {r} {n / periods:.0f}" for (v, r), n in sorted(counts.items()) if ":" not in v
    )


async def measure(args: argparse.Namespace, url: str, rpc: scale.Rpc) -> None:
    import structlog

    from hpactl.cli.run_cmd import parse_run_config
    from hpactl.controller.app import ControllerApp
    from hpactl.controller.run import tune_gc

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    cfg = parse_run_config(args.run_argv, {})
    period = cfg.hpa.sync_period.total_seconds()
    up_qps = cfg.client.qps if args.upstream_qps is None else args.upstream_qps
    up, upc = multiprocessing.Pipe()
    child = multiprocessing.Process(
        target=upstream_child,
        args=(upc, url, up_qps, cfg.client.burst, cfg.hpa.concurrent_syncs, period),
        daemon=True,
    )
    child.start()
    assert scale._recv(up, child, "upstream pattern") == "synced"
    print(
        f"upstream pattern: pid {child.pid}, informers synced; qps {up_qps:g} per client, "
        f"{cfg.hpa.concurrent_syncs} workers"
    )
    async with ControllerApp(cfg, env={}, master=url, sync_timeout=600) as app:
        tune_gc()
        assert app.session is not None
        counts: Counts = collections.Counter()
        syncs = 0
        synced: set[str] = set()

        def on_request(verb: str, res: str, code: str, seconds: float) -> None:
            counts[(verb, res)] += 1

        def on_record(rec: Any) -> None:
            nonlocal syncs
            syncs += 1
            synced.add(rec.key)

        app.controller.start_scheduling()
        await asyncio.sleep(args.warm)  # both past their start-up
        app.session.on_request = on_request
        app.controller.on_record = on_record
        emu0 = await rpc.call("cpu")
        up.send("count")
        cpu0 = time.process_time()
        await asyncio.sleep(args.periods * period)
        cpu = time.process_time() - cpu0
        up.send("stop")
        emu_cpu = await rpc.call("cpu") - emu0
        app.session.on_request = None
        app.controller.on_record = None
        await app.controller.stop_scheduling()
    up_counts, up_syncs, up_synced, up_cpu, up_failed = scale._recv(up, child, "upstream")
    child.join(10)
    p = args.periods
    n = args.hpas
    window = p * period
    for name, c, s, hs, cpu_s in (
        ("upstream pattern", collections.Counter(up_counts), up_syncs, up_synced, up_cpu),
        ("hpactl", counts, syncs, len(synced), cpu),
    ):
        total = sum(v for (verb, _), v in c.items() if ":" not in verb)
        print(
            f"{name}: {s} syncs in {window:g} s ({s / p:.0f} per period; {hs} of {n} HPAs "
            f"synced at least once; on time would be {n} per period)\n"
            f"  requests per period: {total / p:.0f} ({_per_period(c, p)}); "
            f"{total / max(1, s):.2f} per sync\n"
            f"  CPU {cpu_s:.2f} s = {cpu_s / window * 100:.1f} % of a core, "
            f"{cpu_s / max(1, s) * 1e6:.0f} us per sync"
        )
    print(
        f"emulator CPU over the window (both clients): {emu_cpu:.2f} s; upstream failures {up_failed}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hpas", type=int, default=1000)
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--pods", type=int, default=3)
    p.add_argument("--periods", type=int, default=4, help="measured sync periods")
    p.add_argument("--warm", type=float, default=20.0, help="seconds before measuring")
    p.add_argument(
        "--upstream-qps", type=float, default=None, help="the upstream pattern's QPS (0: none)"
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
