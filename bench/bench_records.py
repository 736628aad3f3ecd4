"""Benchmark: the memory of decision records (--decision-records) at 1,000 HPAs.

Run by hand:  .venv/bin/python bench/bench_records.py [hpas] [records]
Defaults: 1,000 HPAs, 5 records. Each HPA has one cpu metric over 10 pods, a
behavior with a scale-up policy, and a full stabilization window (20 recommendations,
the 5-minute default at a 15 s period): what a busy HPA's explanation holds.

Every sync makes new records (as the controller does), so the bench runs ``records``
syncs per HPA and measures with tracemalloc what stays allocated: the controller's
last record per HPA alone (``--decision-records=0``), then with the records kept.
The difference is what the flag costs. Results go in docs/performance.md.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from datetime import UTC, datetime, timedelta

from hpactl.controller.horizontal import SyncRecord
from hpactl.controller.records import DecisionRecords
from hpactl.core.decide import CoreConfig, ScaleView, SyncInputs, reconcile
from hpactl.core.history import History, Recommendation
from hpactl.model.hpa import hpa_from_raw
from hpactl.model.metrics import PodMetric
from hpactl.model.pod import PodView, pod_view_from_raw

START = datetime(2026, 1, 1, 12, tzinfo=UTC)
N_PODS = 10


def hpa_raw(i: int) -> dict[str, object]:
    return {
        "metadata": {"namespace": f"ns-{i % 10}", "name": f"web-{i}", "generation": 1},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": f"web-{i}", "apiVersion": "apps/v1"},
            "minReplicas": 2,
            "maxReplicas": 50,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ],
            "behavior": {
                "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}
            },
        },
    }


def pods(i: int) -> tuple[PodView, ...]:
    return tuple(
        pod_view_from_raw(
            {
                "metadata": {
                    "namespace": f"ns-{i % 10}",
                    "name": f"web-{i}-{j}",
                    "labels": {"app": f"web-{i}"},
                },
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
        for j in range(N_PODS)
    )


def full_window() -> History:
    """20 recommendations: the 5-minute window at a 15 s period."""
    return History(
        tuple(
            Recommendation(10 + k % 3, START - timedelta(seconds=15 * (k + 1))) for k in range(20)
        )
    )


def sync(i: int, n: int, ps: tuple[PodView, ...], history: History) -> tuple[SyncRecord, History]:
    """One sync of HPA ``i`` (the ``n``-th): scaling down under stabilization."""
    now = START + timedelta(seconds=15 * n)
    inputs = SyncInputs(
        hpa=hpa_from_raw(hpa_raw(i)),
        scale=ScaleView(10, 10, f"app=web-{i}"),
        pods=ps,
        metrics=(
            {
                p.name: PodMetric(now - timedelta(seconds=15), timedelta(seconds=30), 300)
                for p in ps
            },
        ),
        history=history,
        config=CoreConfig(),
        now=now,
    )
    out = reconcile(inputs)
    rec = SyncRecord(
        key=f"ns-{i % 10}/web-{i}",
        current=10,
        desired=out.desired_replicas,
        rescaled=out.rescaled,
        reason=out.explanation.limit_reason,
        explanation=out.explanation,
        status_written=out.status_changed,
        events=out.events,
    )
    return rec, out.history


def measure(hpas: int, keep: int, syncs: int) -> int:
    """Bytes still allocated after ``syncs`` syncs of every HPA: the controller's
    histories, its last record per HPA, and the decision records."""
    all_pods = [pods(i) for i in range(hpas)]  # the informer cache: not counted
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.take_snapshot()
    last: dict[str, SyncRecord] = {}
    histories = [full_window() for _ in range(hpas)]
    records = DecisionRecords(keep)
    for n in range(syncs):
        for i in range(hpas):
            rec, histories[i] = sync(i, n, all_pods[i], histories[i])
            last[rec.key] = rec
            records.add(rec, START + timedelta(seconds=15 * n))
    gc.collect()
    snap = tracemalloc.take_snapshot()
    tracemalloc.stop()
    return sum(s.size_diff for s in snap.compare_to(base, "filename"))


def main() -> None:
    hpas = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    keep = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    without = measure(hpas, 0, keep)
    with_records = measure(hpas, keep, keep)
    extra = with_records - without
    print(f"{hpas} HPAs, {keep} syncs each")
    print(f"  histories + last record (--decision-records=0): {without / 1e6:.2f} MB")
    print(f"  with --decision-records={keep}:                  {with_records / 1e6:.2f} MB")
    print(f"  records cost: {extra / 1e6:.2f} MB, {extra / hpas / 1024:.1f} KiB per HPA")
    e = sync(0, 0, pods(0), full_window())[0].explanation
    assert e is not None
    print(f"  one explanation: {len(e.windows[1].recommendations)} recommendations in its window")


if __name__ == "__main__":
    main()
