"""Scale-down victims (hpactl.emulator.podranking): upstream's ActivePodsWithRanks
order, one rule at a time, each case built so that only that rule tells the pods
apart (and the rule before it would not)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hpactl.emulator.podranking import deletion_cost, deletion_order, pods_to_delete
from hpactl.emulator.store import format_timestamp

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    ready_ago: float = 3600,
    created_ago: float = 7200,
    cost: str | None = None,
    restarts: int = 0,
) -> Obj:
    p: Obj = {
        "metadata": {
            "name": name,
            "creationTimestamp": format_timestamp(NOW - timedelta(seconds=created_ago)),
        },
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": format_timestamp(NOW - timedelta(seconds=ready_ago)),
                }
            ],
            "containerStatuses": [{"name": "app", "restartCount": restarts}],
        },
    }
    if cost is not None:
        p["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    return p


def order(*pods: Obj, related: list[Obj] | None = None) -> list[str]:
    ranked = deletion_order(list(pods), related if related is not None else list(pods), NOW)
    return [p["metadata"]["name"] for p in ranked]


def test_1_unassigned_before_assigned() -> None:
    # The assigned pod is not ready and Pending: rule 1 still puts the unassigned first.
    assert order(pod("assigned", phase="Pending", ready=False), pod("free", node="")) == [
        "free",
        "assigned",
    ]


def test_2_pending_then_unknown_then_running() -> None:
    pods = [pod("run", ready=False), pod("unk", phase="Unknown"), pod("pend", phase="Pending")]
    assert order(*pods) == ["pend", "unk", "run"]


def test_3_not_ready_before_ready() -> None:
    # The ready pod has the lower deletion cost: rule 3 decides before rule 4.
    assert order(pod("ready", cost="-5"), pod("unready", ready=False)) == ["unready", "ready"]


def test_4_lower_deletion_cost_first() -> None:
    # "cheap" sits on the less crowded node: rule 4 decides before rule 5.
    pods = [pod("dear", cost="10"), pod("mid"), pod("cheap", node="n2", cost="-1")]
    assert order(*pods, related=[*pods, pod("x")]) == ["cheap", "mid", "dear"]


def test_deletion_cost_reads_int32_or_zero() -> None:
    assert deletion_cost(pod("a", cost="2147483647")) == 2147483647
    assert deletion_cost(pod("a", cost="2147483648")) == 0
    assert deletion_cost(pod("a", cost="1.5")) == 0
    assert deletion_cost(pod("a", cost=" 3")) == 0
    assert deletion_cost(pod("a")) == 0


def test_5_more_related_pods_on_the_node_first() -> None:
    lonely = pod("lonely", node="n2", ready_ago=10)  # the newest: rule 6 would pick it
    crowded = pod("crowded", node="n1")
    related = [lonely, crowded, pod("x", node="n1"), pod("y", node="n1")]
    assert order(lonely, crowded, related=related) == ["crowded", "lonely"]
    # Inactive related pods do not count.
    gone = pod("x", node="n1", phase="Succeeded")
    assert order(lonely, crowded, related=[lonely, crowded, gone]) == ["lonely", "crowded"]


def test_6_recently_ready_first_in_logarithmic_buckets() -> None:
    # 100 s vs 1000 s ago: different buckets (log2 of ns: 36 vs 39).
    assert order(pod("b-old", ready_ago=1000), pod("a-new", ready_ago=100)) == ["a-new", "b-old"]
    # 600 s vs 1000 s: both in bucket 39, so the UID (here the name) decides, even
    # though "z" turned ready more recently.
    assert order(pod("z", ready_ago=600), pod("a", ready_ago=1000)) == ["a", "z"]


def test_7_more_restarts_first() -> None:
    # Same ready time; "flaky" is older (rule 8 would keep it) but restarted more.
    pods = [pod("fresh", created_ago=60), pod("flaky", restarts=3)]
    assert order(*pods) == ["flaky", "fresh"]


def test_8_newer_first_in_logarithmic_buckets() -> None:
    # Not ready (rule 6 does not apply): creation time decides.
    a = pod("b-new", ready=False, created_ago=100)
    b = pod("a-old", ready=False, created_ago=100_000)
    assert order(b, a) == ["b-new", "a-old"]
    same = [pod("z", ready=False, created_ago=600), pod("y", ready=False, created_ago=1000)]
    assert order(*same) == ["y", "z"]  # one bucket: the name


def test_pods_to_delete_takes_the_first_n_or_all() -> None:
    pods = [pod("keep"), pod("go", ready=False), pod("also", node="")]
    assert [p["metadata"]["name"] for p in pods_to_delete(pods, 2, NOW)] == ["also", "go"]
    assert len(pods_to_delete(pods, 5, NOW)) == 3
