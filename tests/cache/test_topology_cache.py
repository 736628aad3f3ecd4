"""What the caches keep for the topology skew report: a workload's spread
constraints (compact, beside its scale), the pods' node, and the Nodes' labels."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hpactl.cache.factory import NODES, SharedInformers
from hpactl.cache.projections import node_labels_from_raw, workload_scale_from_raw
from hpactl.clock import VirtualClock
from hpactl.emulator import Emulator
from hpactl.kube.session import KubeSession
from hpactl.model.pod import pod_view_from_raw
from hpactl.model.topology import NodeLabels

from .test_informer_emulator import WAIT, deploy_obj, until

ZONE = "topology.kubernetes.io/zone"


def with_spread(d: dict[str, Any], constraints: list[Any]) -> dict[str, Any]:
    d["spec"]["template"]["spec"]["topologySpreadConstraints"] = constraints
    return d


def test_workload_keeps_its_spread_constraints_beside_the_scale() -> None:
    raw = with_spread(
        deploy_obj("web", 3),
        [
            {
                "maxSkew": 2,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 3,
            }
        ],
    )
    ws = workload_scale_from_raw("Deployment", raw)
    assert (ws.spec_replicas, ws.selector) == (3, "app=web")
    assert ws.spread is not None
    (c,) = ws.spread.constraints
    assert (c.max_skew, c.topology_key, c.when_unsatisfiable, c.min_domains) == (
        2,
        ZONE,
        "ScheduleAnyway",
        3,
    )
    assert c.selector.matches({"app": "web"}) and not c.selector.matches({"app": "db"})
    assert workload_scale_from_raw("Deployment", deploy_obj("plain", 1)).spread is None


def test_an_unreadable_constraint_never_costs_the_scale() -> None:
    raw = with_spread(deploy_obj("web", 2), [{"maxSkew": 1}])  # no topologyKey
    ws = workload_scale_from_raw("Deployment", raw)
    assert ws.spec_replicas == 2 and ws.spread is None


def test_node_and_pod_projections() -> None:
    node = node_labels_from_raw(
        {
            "metadata": {"name": "n1", "labels": {ZONE: "a"}, "annotations": {"big": "x" * 999}},
            "status": {"images": [{"names": ["img"] * 50}]},
        }
    )
    assert node == NodeLabels("n1", {ZONE: "a"})
    pod = pod_view_from_raw({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}})
    assert pod.node_name == "n1"
    assert pod_view_from_raw({"metadata": {"name": "q"}, "spec": {}}).node_name == ""


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(bookmark_interval=0.1) as e:
        yield e


async def test_node_informer_follows_labels(emu: Emulator) -> None:
    emu.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    async with KubeSession(master=emu.url, qps=0) as s:
        informers = SharedInformers(s, clock=VirtualClock(), watch_read_timeout=WAIT)
        nodes = informers.node_lister()
        assert informers.informer_for_kind(NODES) is nodes.informer
        informers.start()
        try:
            assert await informers.wait_for_cache_sync(WAIT)
            await nodes.informer.wait_synced(WAIT)  # optional: not part of cache sync
            assert nodes.synced and nodes.list() == [NodeLabels("n1", {})]
            raw = emu.store.get("", "nodes", "", "n1")
            assert raw is not None
            raw["metadata"]["labels"] = {ZONE: "b"}
            emu.store.apply(raw)
            await until(
                lambda: (nodes.get("n1") or NodeLabels("", {})).labels == {ZONE: "b"}, "relabel"
            )
        finally:
            await informers.stop()


def test_node_cache_cost() -> None:
    """What a node costs in the cache: its name and labels (measured, not timed)."""
    labels = {
        ZONE: "eu-west-1a",
        "topology.kubernetes.io/region": "eu-west-1",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.xlarge",
    }
    views = [
        node_labels_from_raw(
            {
                "metadata": {
                    "name": f"ip-10-0-{i // 250}-{i % 250}",
                    "labels": {**labels, "kubernetes.io/hostname": f"h{i}"},
                }
            }
        )
        for i in range(1000)
    ]
    per_node = sum(
        sys.getsizeof(v) + sys.getsizeof(v.labels) + sys.getsizeof(v.name) for v in views
    ) / len(views)
    # Label keys and the repeated values are interned, shared by every node.
    assert views[0].labels[ZONE] is views[1].labels[ZONE]
    assert per_node < 1024


async def test_nodes_that_cannot_be_listed_never_hold_back_the_caches() -> None:
    """Nodes serve only the skew report: without the RBAC rule (403 on every list),
    the caches still sync, resync and count as connected, and the 403 is retried."""
    from hpactl.emulator.faults import FaultInjector, FaultRule

    faults = FaultInjector(seed=1)
    refused = faults.add(FaultRule.error(403, path="/api/v1/nodes"))
    async with (
        Emulator(bookmark_interval=0.05, faults=faults) as emu,
        KubeSession(master=emu.url, qps=0) as s,
    ):
        informers = SharedInformers(s, clock=VirtualClock())
        informers.hpas()
        informers.pods()
        nodes = informers.nodes()
        informers.start()
        try:
            assert await informers.wait_for_cache_sync(WAIT)
            assert informers.has_synced and not nodes.has_synced
            await until(lambda: faults.hits(refused) >= 1, "a refused node list")
            assert informers.connected() == (True, "")
            informers.relist()
            assert await informers.wait_for_resync(WAIT)
            await informers.wait_for_rv(emu.store.current_resource_version(), WAIT)
        finally:
            await informers.stop()
