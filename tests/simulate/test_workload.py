"""The workload model against the emulator's store (no HTTP, no controller)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.workload import DemandPoint, Workload, WorkloadSpec, demand_at

START = datetime(2026, 1, 1, tzinfo=UTC)


def deployment(replicas: int, *, requests: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "web", "image": "nginx"}
    if requests is not None:
        container["resources"] = {"requests": requests}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "front"}},
                "spec": {"containers": [container, {"name": "sidecar", "image": "envoy"}]},
            },
        },
    }


def make(spec: WorkloadSpec, target: dict[str, Any]) -> tuple[Emulator, VirtualClock, Workload]:
    clock = VirtualClock(START)
    emu = Emulator(now=clock.now)
    emu.store.create(target)
    return emu, clock, Workload(emu.store, [spec], start=START, now=clock.now)


def pods(emu: Emulator) -> list[dict[str, Any]]:
    return emu.store.list("", "pods", "default")


def ready(pod: dict[str, Any]) -> str:
    return next(c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready")


@pytest.mark.parametrize(
    ("t", "milli"),
    [(-5, 1000), (0, 1000), (150, 3500), (300, 6000), (450, 6000), (600, 1000), (1e6, 1000)],
)
def test_demand_is_linear_between_points_and_flat_outside(t: float, milli: int) -> None:
    curve = (
        DemandPoint(0, 1000),
        DemandPoint(300, 6000),
        DemandPoint(450, 6000),
        DemandPoint(600, 1000),
    )
    assert demand_at(curve, t) == milli


def test_step_in_demand_with_repeated_point() -> None:
    curve = (DemandPoint(0, 100), DemandPoint(60, 100), DemandPoint(60, 900))
    assert demand_at(curve, 59) == 100
    assert demand_at(curve, 61) == 900


def test_pods_follow_replicas_with_template_labels_and_requests() -> None:
    spec = WorkloadSpec("Deployment", "default", "web", requests={"cpu": "250m"})
    emu, _clock, wl = make(spec, deployment(3))
    wl.reconcile()
    ps = pods(emu)
    assert len(ps) == 3
    for p in ps:
        assert p["metadata"]["labels"] == {"app": "web", "tier": "front"}
        assert p["metadata"]["name"].startswith("web-")
        assert p["status"]["startTime"] == "2026-01-01T00:00:00Z"
        assert p["status"]["phase"] == "Running"
        # The template has no requests: `requests` fills them on the first container.
        assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
        assert "resources" not in p["spec"]["containers"][1]
        assert p["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None
    assert dep["status"]["replicas"] == 3 and dep["status"]["readyReplicas"] == 3
    # Nothing changed: no write at all.
    rv = emu.store.rv
    assert wl.reconcile() == 0 and emu.store.rv == rv


def test_template_requests_win_over_workload_requests() -> None:
    spec = WorkloadSpec("Deployment", "default", "web", requests={"cpu": "250m", "memory": "64Mi"})
    emu, _, wl = make(spec, deployment(1, requests={"cpu": "1"}))
    wl.reconcile()
    (p,) = pods(emu)
    assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "64Mi"}


def test_ready_after_delay_with_exact_transition_time() -> None:
    spec = WorkloadSpec("Deployment", "default", "web", pod_ready_after=20)
    emu, clock, wl = make(spec, deployment(2))
    wl.reconcile()
    assert [ready(p) for p in pods(emu)] == ["False", "False"]
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None and dep["status"]["replicas"] == 2
    assert "readyReplicas" not in dep["status"]
    clock.advance(15)
    wl.reconcile()
    assert [ready(p) for p in pods(emu)] == ["False", "False"]
    clock.advance(15)  # 30s: became Ready at 20s
    wl.reconcile()
    for p in pods(emu):
        cond = next(c for c in p["status"]["conditions"] if c["type"] == "Ready")
        assert cond["status"] == "True"
        assert cond["lastTransitionTime"] == "2026-01-01T00:00:20Z"
        assert p["status"]["containerStatuses"][0]["ready"] is True
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None and dep["status"]["readyReplicas"] == 2


def test_scale_down_removes_unready_then_newest() -> None:
    spec = WorkloadSpec("Deployment", "default", "web", pod_ready_after=60)
    emu, clock, wl = make(spec, deployment(2))
    wl.reconcile()
    old = {p["metadata"]["name"] for p in pods(emu)}
    clock.advance(120)
    wl.reconcile()  # the first two are Ready now
    target = emu.store.get("apps", "deployments", "default", "web")
    assert target is not None
    target["spec"]["replicas"] = 4
    emu.store.apply(target)
    wl.reconcile()  # two new, unready pods
    assert len(pods(emu)) == 4
    target = emu.store.get("apps", "deployments", "default", "web")
    assert target is not None
    target["spec"]["replicas"] = 2
    emu.store.apply(target)
    wl.reconcile()
    assert {p["metadata"]["name"] for p in pods(emu)} == old


def test_statefulset_ordinals() -> None:
    sts = deployment(3)
    sts["kind"] = "StatefulSet"
    sts["metadata"]["name"] = "db"
    spec = WorkloadSpec("StatefulSet", "default", "db")
    emu, _, wl = make(spec, sts)
    wl.reconcile()
    assert sorted(p["metadata"]["name"] for p in pods(emu)) == ["db-0", "db-1", "db-2"]
    target = emu.store.get("apps", "statefulsets", "default", "db")
    assert target is not None
    target["spec"]["replicas"] = 1
    emu.store.apply(target)
    wl.reconcile()
    assert [p["metadata"]["name"] for p in pods(emu)] == ["db-0"]


def test_pod_metrics_spread_demand_over_ready_pods() -> None:
    spec = WorkloadSpec(
        "Deployment",
        "default",
        "web",
        pod_ready_after=30,
        demand={"cpu": (DemandPoint(0, 1000), DemandPoint(60, 2000))},
    )
    _emu, clock, wl = make(spec, deployment(3))
    wl.reconcile()
    # Nobody Ready: no pod gets any of the demand.
    assert {c["usage"]["cpu"] for m in wl.pod_metrics() for c in m["containers"]} == {"0"}
    clock.advance(30)
    wl.reconcile()
    metrics = wl.pod_metrics()
    assert len(metrics) == 3
    # 1500m at t=30s over 3 Ready pods, all on the first container.
    assert [m["containers"][0]["usage"]["cpu"] for m in metrics] == ["500m"] * 3
    assert [m["containers"][1]["usage"]["cpu"] for m in metrics] == ["0"] * 3
    assert all(m["window"] == "30s" and "timestamp" not in m for m in metrics)


def test_uneven_split_keeps_the_total() -> None:
    spec = WorkloadSpec("Deployment", "default", "web", demand={"cpu": (DemandPoint(0, 1000),)})
    _emu, _, wl = make(spec, deployment(3))
    wl.reconcile()
    shares = [m["containers"][0]["usage"]["cpu"] for m in wl.pod_metrics()]
    assert sorted(shares) == ["333m", "333m", "334m"]


def test_adopts_scenario_pods_and_deleted_pods_come_back() -> None:
    spec = WorkloadSpec("Deployment", "default", "web")
    emu, _, wl = make(spec, deployment(2))
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "given", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            "status": {"phase": "Running"},
        }
    )
    wl.reconcile()
    names = sorted(p["metadata"]["name"] for p in pods(emu))
    assert len(names) == 2 and "given" in names
    other = next(n for n in names if n != "given")
    emu.store.delete("", "pods", "default", other)
    wl.reconcile()
    assert len(pods(emu)) == 2


def test_target_deleted_takes_its_pods() -> None:
    spec = WorkloadSpec("Deployment", "default", "web")
    emu, _, wl = make(spec, deployment(2))
    wl.reconcile()
    emu.store.delete("apps", "deployments", "default", "web")
    wl.reconcile()
    assert pods(emu) == []


@pytest.mark.parametrize(
    ("kind", "group", "plural"),
    [
        ("ReplicaSet", "apps", "replicasets"),
        ("ReplicationController", "", "replicationcontrollers"),
    ],
)
def test_replicaset_and_replication_controller(kind: str, group: str, plural: str) -> None:
    target = deployment(2)
    target["kind"] = kind
    if kind == "ReplicationController":
        target["apiVersion"] = "v1"
        target["spec"]["selector"] = {"app": "web"}  # a plain map for RCs
    emu, _, wl = make(WorkloadSpec(kind, "default", "web"), target)
    wl.reconcile()
    names = sorted(p["metadata"]["name"] for p in pods(emu))
    assert len(names) == 2
    assert all(n.startswith("web-") and len(n) == len("web-") + 5 for n in names)
    got = emu.store.get(group, plural, "default", "web")
    assert got is not None and got["status"]["replicas"] == 2
