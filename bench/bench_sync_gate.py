"""Benchmark: a steady sync's selector-to-``decide`` part, as ``_reconcile_once`` runs it.

Run by hand:  .venv/bin/python bench/bench_sync_gate.py [iterations]
One HPA (one CPU metric, 3 Ready pods, samples standing still) in a namespace of 101
HPAs: the selector store lookup, ``with_selector``, ``needs_metrics``,
``with_metrics`` and ``decide`` (replica memo fed back). On a tree without
``SelectorStore.version`` (before the selector memo) it runs the old glue, so the
same file measures both sides of docs/performance.md's "Goal 4, session 5".
Prints the per-sync CPU time of 7 repeats, best first.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from hpactl.controller.selector_store import SelectorStore
from hpactl.core.decide import (
    CoreConfig,
    ScaleView,
    SyncInputs,
    decide,
    needs_metrics,
    with_metrics,
    with_selector,
)
from hpactl.core.history import History
from hpactl.model.hpa import hpa_from_raw
from hpactl.model.metrics import PodMetric
from hpactl.model.pod import pod_view_from_raw
from hpactl.model.selectors import parse_selector

try:
    from hpactl.controller.selector_memo import SelectorMemo
except ImportError:  # a tree before the memo
    SelectorMemo = None  # type: ignore[assignment,misc]

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
NEW = SelectorMemo is not None
KEY = "ns/web"


def _pod(i: int) -> Any:
    return pod_view_from_raw(
        {
            "metadata": {"namespace": "ns", "name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    store = SelectorStore()
    for i in range(100):
        store.register(f"ns/h{i}")
        store.set(f"ns/h{i}", parse_selector(f"app=w{i}"))
    store.register(KEY)
    store.set(KEY, parse_selector("app=web"))
    hpa = hpa_from_raw(
        {
            "metadata": {"namespace": "ns", "name": "web", "generation": 1},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1,
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
        }
    )
    pods = [_pod(i) for i in range(3)]
    scale = ScaleView(3, 3, "app=web")
    ts = NOW - timedelta(seconds=15)
    metrics = ({p.name: PodMetric(ts, timedelta(seconds=30), 500) for p in pods},)
    config = CoreConfig()
    memos: dict[str, Any] = {}
    replica_memos: dict[str, Any] = {}

    def sync() -> None:
        listed = list(pods)  # the pod lister hands out a new list of the same objects
        known = None
        if NEW:
            version = store.version("ns")
            memo = memos.get(KEY)
            if memo is not None and memo.fits(scale.selector, listed, version):
                hpa_selectors, known = memo.hpa_selectors, memo.result
            else:
                hpa_selectors = store.relevant(KEY, {frozenset(p.labels.items()) for p in listed})
        else:
            hpa_selectors = store.relevant(KEY, {frozenset(p.labels.items()) for p in listed})
        inputs = SyncInputs(
            hpa=hpa,
            scale=scale,
            pods=listed,
            metrics=(),
            history=History(),
            config=config,
            now=NOW,
            hpa_selectors=hpa_selectors,
            selector_result=known,
            replica_memo=replica_memos.get(KEY),
        )
        inputs = with_selector(inputs)
        if NEW and known is None and inputs.selector_result is not None:
            memos[KEY] = SelectorMemo(
                scale.selector, tuple(listed), version, hpa_selectors, inputs.selector_result
            )
        if needs_metrics(inputs):
            assert inputs.selector_result is not None and inputs.selector_result.selector
            store.set(KEY, inputs.selector_result.selector)
            inputs = with_metrics(inputs, metrics)
        plan = decide(inputs)
        if plan.replica_memo is not None:
            replica_memos[KEY] = plan.replica_memo

    for _ in range(200):
        sync()
    runs = []
    for _ in range(7):
        t = time.process_time()
        for _ in range(n):
            sync()
        runs.append((time.process_time() - t) / n * 1e6)
    side = "selector memo" if NEW else "no selector memo"
    print(f"{side}: us per sync, best first:", " ".join(f"{r:.1f}" for r in sorted(runs)))


if __name__ == "__main__":
    main()
