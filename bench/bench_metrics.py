"""Metrics sharing: N HPAs of one namespace, each with its own Deployment's pods.

    .venv/bin/python bench/bench_metrics.py [HPAS] [PODS_PER_HPA]

Runs one "period" of resource-metric fetches twice against the emulator: every HPA
asking alone (RestMetricsClient) and through SharedMetricsFetcher, checks that the
answers are identical, and prints requests made and wall time.
"""

from __future__ import annotations

import asyncio
import sys
import time

from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.kube.session import KubeSession
from hpactl.metrics import RestMetricsClient, SharedMetricsFetcher
from hpactl.model.selectors import parse_selector


async def main(hpas: int, per: int) -> None:
    async with Emulator() as emu:
        pms = []
        for h in range(hpas):
            for p in range(per):
                name = f"app{h}-{p}"
                emu.store.create(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": name,
                            "namespace": "default",
                            "labels": {"app": f"app{h}"},
                        },
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    }
                )
                pms.append(
                    {
                        "metadata": {"name": name, "namespace": "default"},
                        "timestamp": "2026-01-01T00:00:00Z",
                        "window": "30s",
                        "containers": [{"name": "c", "usage": {"cpu": f"{100 + p}m"}}],
                    }
                )
        emu.metrics.set_pod_metrics(pms)
        selectors = [parse_selector(f"app=app{h}") for h in range(hpas)]
        calls = [0]

        def count(v: str, r: str, c: str, s: float) -> None:
            calls[0] += 1

        async with KubeSession(master=emu.url, on_request=count, qps=0) as s:
            direct = RestMetricsClient(s)
            t0 = time.perf_counter()
            alone = [await direct.get_resource_metric("cpu", "default", sel) for sel in selectors]
            t_alone, n_alone = time.perf_counter() - t0, calls[0]
            calls[0] = 0
            shared = SharedMetricsFetcher(RestMetricsClient(s), clock=VirtualClock())
            t0 = time.perf_counter()
            together = await asyncio.gather(
                *(shared.get_resource_metric("cpu", "default", sel) for sel in selectors)
            )
            t_shared, n_shared = time.perf_counter() - t0, calls[0]
        assert list(together) == alone, "shared answers differ"
        print(f"{hpas} HPAs x {per} pods, one namespace")
        print(f"  per HPA: {n_alone} requests, {t_alone:.2f} s")
        print(f"  shared:  {n_shared} requests, {t_shared:.2f} s (answers identical)")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(args[0] if args else 200, args[1] if len(args) > 1 else 5))
