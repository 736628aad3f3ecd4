"""Benchmark: ``sync_all`` of N HPAs (one Deployment of 2 pods each, one namespace).

Run by hand:  .venv/bin/python bench/bench_controller.py [N] [steps]
Starts the emulator and a ControllerApp (no client-side rate limit) on a virtual
clock and times successive ``sync_all()`` steps 15 s apart: the first rescales every
HPA (scale, status and event writes), the later ones write nothing (the status does
not change). Results go in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import structlog

from hpactl.clock import VirtualClock
from hpactl.config import ClientConnectionConfig, ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.model.times import format_time

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _objects(i: int) -> list[dict[str, Any]]:
    name = f"w{i}"
    labels = {"app": name}
    started = "2025-12-31T23:00:00Z"
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": []}},
            },
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            },
        },
    ]
    for j in range(2):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{j}", "namespace": "default", "labels": labels},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                    ]
                },
                "status": {
                    "phase": "Running",
                    "startTime": started,
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": started}
                    ],
                },
            }
        )
    return out


async def main(n: int, steps: int) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    clock = VirtualClock(T0)
    async with Emulator(now=clock.now, bookmark_interval=0.05) as emu:
        metrics = []
        for i in range(n):
            for obj in _objects(i):
                emu.store.create(obj)
            for j in range(2):
                metrics.append(
                    {
                        "metadata": {"name": f"w{i}-{j}", "namespace": "default"},
                        "timestamp": format_time(T0),
                        "window": "30s",
                        "containers": [{"name": "c", "usage": {"cpu": "80m"}}],
                    }
                )
        emu.metrics.set_pod_metrics(metrics)
        config = ControllerConfig()
        config = replace(config, client=ClientConnectionConfig(master=emu.url, qps=0, burst=1))
        async with ControllerApp(config, clock=clock, env={}) as app:
            print(f"{n} HPAs x 2 pods, one namespace")
            for step in range(steps):
                started = time.perf_counter()
                recs = await app.controller.sync_all()
                took = time.perf_counter() - started
                rescaled = sum(r.rescaled for r in recs)
                written = sum(r.status_written for r in recs)
                print(
                    f"  step {step}: {took:.2f} s ({took / n * 1000:.2f} ms/HPA), "
                    f"{rescaled} rescaled, {written} status writes"
                )
                clock.advance(15)
            assert app.fetcher is not None
            print(f"  metrics API requests: {app.fetcher.requests} for {steps} steps")


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(int(args[0]) if args else 300, int(args[1]) if len(args) > 1 else 3))
