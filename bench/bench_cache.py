"""Benchmark: informers syncing 10,000 HPAs and 30,000 pods from the emulator, then a
burst of watch events, on one event loop.

Run by hand:  .venv/bin/python bench/bench_cache.py [hpas] [pods] [first-list-rv]
Prints the time to sync, the longest time the event loop was blocked (a ticker task
measures the gaps between its turns), event throughput and the lister lookups.
Results go in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from hpactl.cache.factory import HPAS, PODS, SharedInformers
from hpactl.emulator import Emulator
from hpactl.kube.session import KubeSession
from hpactl.model.selectors import parse_selector

NAMESPACES = 100


def pod(i: int) -> dict[str, Any]:
    app = f"app{i % 10_000}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": f"ns{i % NAMESPACES}",
            "name": f"{app}-{i}",
            "labels": {"app": app, "pod-template-hash": "5d8f7c9b6"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": "x"}
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/app:1.2.3",
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                    "env": [{"name": f"VAR{k}", "value": "x" * 40} for k in range(10)],
                }
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:30Z"}
            ],
        },
    }


def hpa(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"namespace": f"ns{i % NAMESPACES}", "name": f"app{i}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"app{i}"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ],
        },
    }


class LoopLag:
    """Longest gap between turns of a task that only yields."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0)
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - last)
            last = now

    def start(self) -> None:
        self.max_gap = 0.0
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> float:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        return self.max_gap


def serve(conn: Connection, n_hpas: int, n_pods: int) -> None:
    """Child process: the emulator, loaded, answering commands over a pipe. Running it
    apart keeps its CPU (and the GIL) out of the informers' measurements."""

    async def run() -> None:
        emu = Emulator(bookmark_interval=1.0, namespaces=[f"ns{i}" for i in range(NAMESPACES)])
        emu.store.bulk_create(hpa(i) for i in range(n_hpas))
        emu.store.bulk_create(pod(i) for i in range(n_pods))
        await emu.start()
        conn.send(emu.url)
        loop = asyncio.get_running_loop()
        while True:
            cmd = await loop.run_in_executor(None, conn.recv)
            if cmd == "burst":
                # every pod of 1,000 apps changes (a status update), as a rollout would
                last = ""
                for i in range(n_pods):
                    if i % 10_000 < 1000:
                        p = pod(i)
                        p["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:05:00Z"
                        last = emu.store.apply(p)["metadata"]["resourceVersion"]
                conn.send(last)
            else:
                await emu.stop()
                conn.send("stopped")
                return

    asyncio.run(run())


async def main(n_hpas: int, n_pods: int, initial_rv: str) -> None:
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=serve, args=(child, n_hpas, n_pods), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    url = parent.recv()
    print(
        f"emulator (own process) loaded {n_hpas} HPAs, {n_pods} pods in {time.perf_counter() - t0:.1f} s"
    )
    try:
        async with KubeSession(master=url, qps=0, request_timeout=120) as s:
            informers = SharedInformers(s, initial_list_resource_version=initial_rv)
            hpas = informers.hpa_lister()
            pods = informers.pod_lister()
            lag = LoopLag()
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            lag.start()
            t0 = time.perf_counter()
            informers.start()
            assert await informers.wait_for_cache_sync(600)
            sync_s = time.perf_counter() - t0
            rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(
                f"initial sync: {sync_s:.2f} s, loop blocked at most {await lag.stop() * 1000:.0f} ms, "
                f"max RSS +{(rss1 - rss0) / 1024:.0f} MiB"
            )
            lag.start()
            t0 = time.perf_counter()
            parent.send("burst")
            last = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
            await informers.wait_for_writes({PODS: last}, 600)
            burst_s = time.perf_counter() - t0
            print(
                f"watch burst: 3000 pod events in {burst_s:.2f} s (incl. the emulator's writes), "
                f"loop blocked at most {await lag.stop() * 1000:.0f} ms"
            )

            sel = parse_selector("app=app7")
            t0 = time.perf_counter()
            for i in range(n_hpas):
                h = hpas.get(f"ns{i % NAMESPACES}", f"app{i}")
                assert h is not None
                pods.list(f"ns{i % NAMESPACES}", sel)
            per = (time.perf_counter() - t0) / n_hpas * 1e6
            print(f"lookups: HPA get + pod list by selector: {per:.1f} us per HPA")
            counts = {k: len(v.store) for k, v in informers.informers.items() if k in (HPAS, PODS)}
            print(f"cached: {counts}")
            await informers.stop()
    finally:
        parent.send("stop")
        parent.recv()
        proc.join(10)


if __name__ == "__main__":
    # usage: bench_cache.py [hpas] [pods] [initial list resourceVersion: "0" or ""]
    n_hpas = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    n_pods = int(sys.argv[2]) if len(sys.argv) > 2 else 30_000
    rv = sys.argv[3] if len(sys.argv) > 3 else "0"
    print(f"first list with resourceVersion={rv!r}")
    asyncio.run(main(n_hpas, n_pods, rv))
