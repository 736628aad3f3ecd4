"""Benchmark: one decide + finalize for an HPA with 3 metrics over 100 pods.

Run by hand:  .venv/bin/python bench/bench_core.py [iterations]
Prints the mean and best per-call time; results go in docs/performance.md.
"""

from __future__ import annotations

import sys
import timeit
from datetime import UTC, datetime, timedelta

from hpactl.core.decide import (
    CoreConfig,
    ScaleView,
    ScaleWriteResult,
    SyncInputs,
    decide,
    finalize,
)
from hpactl.core.history import History, Recommendation
from hpactl.model.hpa import hpa_from_raw
from hpactl.model.metrics import ExternalMetricValues, PodMetric
from hpactl.model.pod import pod_view_from_raw
from hpactl.model.selectors import parse_selector

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
N_PODS = 100


def build() -> SyncInputs:
    raw = {
        "metadata": {"namespace": "ns", "name": "web", "generation": 1},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 10,
            "maxReplicas": 300,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                },
                {
                    "type": "Resource",
                    "resource": {
                        "name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "512Mi"},
                    },
                },
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
                        "target": {"type": "AverageValue", "averageValue": "30"},
                    },
                },
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}},
        },
    }
    hpa = hpa_from_raw(raw)
    pods = tuple(
        pod_view_from_raw(
            {
                "metadata": {
                    "namespace": "ns",
                    "name": f"web-{i}",
                    "labels": {"app": "web", "tier": "fe"},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                        }
                    ]
                },
                "status": {
                    "phase": "Running",
                    "startTime": "2025-12-31T00:00:00Z",
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "lastTransitionTime": "2025-12-31T00:01:00Z",
                        }
                    ],
                },
            }
        )
        for i in range(N_PODS)
    )
    ts = NOW - timedelta(seconds=20)
    win = timedelta(seconds=30)
    cpu = {p.name: PodMetric(ts, win, 350 + i % 7) for i, p in enumerate(pods)}
    mem = {p.name: PodMetric(ts, win, 400 * 1024**2 * 1000) for p in pods}
    ext = ExternalMetricValues((2400_000,), ts)
    history = History(
        tuple(Recommendation(100, NOW - timedelta(seconds=15 * k)) for k in range(1, 20))
    )
    return SyncInputs(
        hpa=hpa,
        scale=ScaleView(100, 100, "app=web,tier=fe"),
        pods=pods,
        metrics=(cpu, mem, ext),
        history=history,
        config=CoreConfig(),
        now=NOW,
        hpa_selectors={
            "ns/web": parse_selector("app=web,tier=fe"),
            "ns/other": parse_selector("app=db"),
        },
    )


def one(inputs: SyncInputs) -> None:
    plan = decide(inputs)
    finalize(plan, ScaleWriteResult.succeeded() if plan.rescale else None)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    inputs = build()
    one(inputs)
    runs = timeit.repeat(lambda: one(inputs), number=n, repeat=5)
    best = min(runs) / n * 1e6
    mean = sum(runs) / (5 * n) * 1e6
    plan = decide(inputs)
    print(
        f"decide+finalize, 3 metrics, {N_PODS} pods: best {best:.1f} us, mean {mean:.1f} us "
        f"per call ({n} x 5 runs); desired={plan.desired_replicas} rescale={plan.rescale}"
    )


if __name__ == "__main__":
    main()
