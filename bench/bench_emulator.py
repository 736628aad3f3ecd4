"""Benchmark the API emulator at the benchmark size: 10k HPAs, 10k Deployments, 30k Pods.

Run by hand:  .venv/bin/python bench/bench_emulator.py [--hpas 10000 --deployments 10000 --pods 30000]

Measures (wall clock, one process, client and server on one event loop, so the
numbers include both sides): loading the objects in-process, full LIST over HTTP
(all namespaces), paginated LIST (limit=500), a watch from "now" receiving one
MODIFIED per HPA (10k status writes), and a watch from resourceVersion "" (initial
ADDED events for every Pod).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from typing import Any

import aiohttp

from hpactl.emulator import Emulator

NAMESPACES = 100


def deployment(i: int) -> dict[str, Any]:
    name = f"app-{i}"
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": f"ns-{i % NAMESPACES}", "labels": labels},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ]
                },
            },
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3},
    }


def hpa(i: int) -> dict[str, Any]:
    name = f"app-{i}"
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": f"ns-{i % NAMESPACES}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
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


def pod(i: int, j: int) -> dict[str, Any]:
    name = f"app-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{j}",
            "namespace": f"ns-{i % NAMESPACES}",
            "labels": {"app": name},
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
            "containerStatuses": [
                {"name": "app", "ready": True, "restartCount": 0, "state": {"running": {}}}
            ],
            "startTime": "2026-01-01T00:00:00Z",
        },
    }


async def timed_list(
    session: aiohttp.ClientSession, url: str, limit: int = 0
) -> tuple[float, float, int, int]:
    """(seconds until all bodies were received, seconds the client spent in
    json.loads, items, bytes)."""
    wire = 0.0
    parse = 0.0
    items = 0
    size = 0
    cont = ""
    while True:
        params = {"limit": str(limit)} if limit else {}
        if cont:
            params["continue"] = cont
        t0 = time.perf_counter()
        async with session.get(url, params=params) as resp:
            body = await resp.read()
        t1 = time.perf_counter()
        doc = json.loads(body)
        parse += time.perf_counter() - t1
        wire += t1 - t0
        size += len(body)
        items += len(doc["items"])
        cont = doc["metadata"].get("continue", "")
        if not cont:
            break
    return wire, parse, items, size


async def main(args: argparse.Namespace) -> None:
    emu = Emulator(history_size=max(20_000, args.hpas * 2), namespaces=())
    store = emu.store
    t0 = time.perf_counter()
    for n in range(NAMESPACES):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{n}"}})
    for i in range(args.deployments):
        store.create(deployment(i))
    for i in range(args.hpas):
        store.create(hpa(i))
    per = max(1, args.pods // max(1, args.deployments))
    made = 0
    for i in range(args.deployments):
        for j in range(per):
            if made >= args.pods:
                break
            store.create(pod(i, j))
            made += 1
    load = time.perf_counter() - t0
    results: list[tuple[str, str]] = [
        (
            "load in-process (store.create)",
            f"{load:.2f} s for {args.hpas + args.deployments + made + NAMESPACES} objects",
        ),
    ]
    await emu.start()
    try:
        async with aiohttp.ClientSession() as s:
            base = emu.url
            for label, path in (
                ("LIST hpas (all namespaces)", "/apis/autoscaling/v2/horizontalpodautoscalers"),
                (
                    "LIST hpas autoscaling/v1 (converted)",
                    "/apis/autoscaling/v1/horizontalpodautoscalers",
                ),
                ("LIST deployments", "/apis/apps/v1/deployments"),
                ("LIST pods", "/api/v1/pods"),
            ):
                dt, dp, n, size = await timed_list(s, base + path)
                results.append(
                    (
                        label,
                        f"{dt * 1000:.0f} ms to receive {n} items, {size / 1e6:.1f} MB "
                        f"(+{dp * 1000:.0f} ms client json.loads)",
                    )
                )
            dt, dp, n, _ = await timed_list(s, base + "/api/v1/pods", limit=500)
            results.append(
                (
                    "LIST pods limit=500 (all pages)",
                    f"{dt * 1000:.0f} ms to receive {n} items (+{dp * 1000:.0f} ms json.loads)",
                )
            )
            t1 = time.perf_counter()
            async with s.get(
                base + "/api/v1/namespaces/ns-7/pods", params={"labelSelector": "app=app-7"}
            ) as r:
                await r.read()
            results.append(
                (
                    "LIST pods one namespace + labelSelector",
                    f"{(time.perf_counter() - t1) * 1000:.1f} ms",
                )
            )

            # Watch: one MODIFIED per HPA status write, all delivered.
            rv = store.current_resource_version()
            got = 0
            t_write = 0.0
            async with s.get(
                base + "/apis/autoscaling/v2/horizontalpodautoscalers",
                params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "120"},
            ) as resp:
                t0 = time.perf_counter()
                for i in range(args.hpas):
                    store.update_status(
                        {
                            "apiVersion": "autoscaling/v2",
                            "kind": "HorizontalPodAutoscaler",
                            "metadata": {"name": f"app-{i}", "namespace": f"ns-{i % NAMESPACES}"},
                            "status": {"currentReplicas": 3, "desiredReplicas": 4},
                        }
                    )
                t_write = time.perf_counter() - t0
                async for line in resp.content:
                    if line.strip():
                        got += 1
                        if got == args.hpas:
                            break
                t_all = time.perf_counter() - t0
            results.append(
                (
                    f"WATCH hpas: {args.hpas} status writes -> events received",
                    f"writes {t_write * 1000:.0f} ms, all {got} events in {t_all * 1000:.0f} ms",
                )
            )
            got = 0
            t0 = time.perf_counter()
            async with s.get(
                base + "/api/v1/pods", params={"watch": "true", "timeoutSeconds": "120"}
            ) as resp:
                async for line in resp.content:
                    if line.strip():
                        got += 1
                        if got == made:
                            break
            results.append(
                (
                    'WATCH pods from rv="" (initial ADDED events)',
                    f"{got} events in {(time.perf_counter() - t0) * 1000:.0f} ms",
                )
            )
    finally:
        await emu.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results.append(("peak RSS (client + server)", f"{rss:.0f} MB"))
    width = max(len(k) for k, _ in results)
    for k, v in results:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hpas", type=int, default=10_000)
    p.add_argument("--deployments", type=int, default=10_000)
    p.add_argument("--pods", type=int, default=30_000)
    asyncio.run(main(p.parse_args()))
