"""Scenario `nodes` (the Topology section of docs/scenario-format.md): parsing,
placement by the workload model, Pending pods, scale-down victims, and the
`pods`/`topology`/`skew` output fields, the timeline line and the plot panel."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.emulator.emulator import Emulator
from hpactl.emulator.scheduling import HOSTNAME_LABEL, ZONE_LABEL, Node, Taint
from hpactl.emulator.workload import DemandPoint, Workload, WorkloadSpec
from hpactl.simulate.output import jsonl_line, write_timeline
from hpactl.simulate.plot import render_svg
from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import ScenarioError, parse_scenario
from tests.simulate.scenarios import cpu_metric, deployment, hpa, pod

pytestmark = pytest.mark.timeout(60)

START = datetime(2026, 1, 1, tzinfo=UTC)
ZONES = {"zones": ["a", "b", "c"], "perZone": 1}


def spread_deployment(replicas: int, when: str = "DoNotSchedule", **kw: Any) -> dict[str, Any]:
    dep = deployment("web", replicas, **kw)
    dep["spec"]["template"]["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    return dep


def workload(ready_after: str = "0s", **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "target": {"kind": "Deployment", "name": "web"},
            "podReadyAfter": ready_after,
            "demand": {"cpu": [{"at": "0s", "value": "1"}]},
            **extra,
        }
    ]


async def run(doc: dict[str, Any]) -> tuple[list[StepResult], list[dict[str, Any]]]:
    async with Simulation(parse_scenario(doc)) as sim:
        results = await sim.run()
        return results, sim.emu.store.list("", "pods", "default")


# ---------------------------------------------------------------------- parsing


def test_shorthand_names_and_labels_nodes_per_zone() -> None:
    sc = parse_scenario(
        {"nodes": {**ZONES, "perZone": 2, "capacity": {"cpu": "4", "memory": "8Gi"}}, "steps": []}
    )
    assert [n.name for n in sc.nodes] == ["a-1", "a-2", "b-1", "b-2", "c-1", "c-2"]
    assert sc.nodes[3].labels == {ZONE_LABEL: "b", HOSTNAME_LABEL: "b-2"}
    assert sc.nodes[0].capacity == {"cpu": 4000, "memory": 8 * 2**30 * 1000}
    assert sc.nodes[0].max_pods == 110  # the kubelet's default


def test_a_list_of_nodes_may_mix_named_nodes_and_the_shorthand() -> None:
    sc = parse_scenario(
        {
            "nodes": [
                {"zones": ["a"], "perZone": 1, "capacity": {"pods": 20}},
                {
                    "name": "big",
                    "labels": {ZONE_LABEL: "b", "disk": "ssd"},
                    "capacity": {"cpu": "16", "pods": "50"},
                    "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
                },
                {"name": "bare"},
            ],
            "steps": [],
        }
    )
    a, big, bare = sc.nodes
    assert (a.name, a.max_pods) == ("a-1", 20)
    # A named node gets the hostname label a kubelet sets.
    assert big.labels == {ZONE_LABEL: "b", "disk": "ssd", HOSTNAME_LABEL: "big"}
    assert (big.capacity, big.max_pods) == ({"cpu": 16000}, 50)
    assert big.taints == (Taint("dedicated", "NoSchedule", "db"),)
    assert (bare.labels, bare.capacity, bare.taints) == ({HOSTNAME_LABEL: "bare"}, {}, ())
    assert parse_scenario({"steps": []}).nodes == ()


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (5, "nodes: expected a list of nodes or a {zones, perZone} map, got number"),
        ([{"labels": {}}], "nodes[0].name: required"),
        ([{"name": 3}], "nodes[0].name: expected a string, got number"),
        (
            [{"name": "a", "zone": "x"}],
            "nodes[0].zone: unknown key (expected one of: name, labels, capacity, taints)",
        ),
        ([{"name": "a"}, {"name": "a"}], 'nodes[1]: node "a" is already declared at nodes[0]'),
        ([{"name": "a-1"}, ZONES], 'nodes[1]: node "a-1" is already declared at nodes[0]'),
        (
            [{"name": "a", "capacity": {"gpu": 1}}],
            "nodes[0].capacity.gpu: unknown key (expected one of: cpu, memory, pods)",
        ),
        ([{"name": "a", "capacity": {"cpu": -1}}], "nodes[0].capacity.cpu: must not be negative"),
        (
            [{"name": "a", "capacity": {"cpu": True}}],
            "nodes[0].capacity.cpu: expected a quantity, got boolean",
        ),
        (
            [{"name": "a", "capacity": {"pods": "1.5"}}],
            'nodes[0].capacity.pods: expected a whole number of pods, got "1.5"',
        ),
        (
            [{"name": "a", "labels": {"rack": 1}}],
            "nodes[0].labels.rack: expected a string, got number",
        ),
        ([{"name": "a", "labels": ["x"]}], "nodes[0].labels: expected a map, got list"),
        ([{"name": "a", "taints": [{"effect": "NoSchedule"}]}], "nodes[0].taints[0].key: required"),
        (
            [{"name": "a", "taints": [{"key": "k", "effect": "Sometimes"}]}],
            'nodes[0].taints[0].effect: unknown effect "Sometimes" '
            "(expected one of: NoSchedule, PreferNoSchedule, NoExecute)",
        ),
        ([{"name": "a", "taints": {"key": "k"}}], "nodes[0].taints: expected a list, got map"),
        ({"zones": [], "perZone": 1}, "nodes.zones: expected a non-empty list of zone names"),
        ({"zones": ["a"], "perZone": 0}, "nodes.perZone: expected a whole number >= 1, got 0"),
        ({"zones": [1]}, "nodes.zones[0]: expected a zone name, got number"),
        (
            {"zones": ["a"], "labels": {}},
            "nodes.labels: unknown key (expected one of: zones, perZone, capacity)",
        ),
        ([ZONES, {**ZONES, "capacity": {"cpu": "x"}}], None),
    ],
)
def test_node_errors_name_the_place(nodes: Any, message: str | None) -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario({"nodes": nodes, "steps": []})
    if message is None:
        assert str(exc.value).startswith("nodes[1].capacity.cpu: ")
    else:
        assert str(exc.value) == message


@pytest.mark.parametrize(
    ("labels", "start"),
    [
        ({"bad key": "x"}, "nodes[0].labels.bad key: invalid label key: "),
        ({"k": "no spaces"}, 'nodes[0].labels.k: invalid label value "no spaces": '),
    ],
)
def test_label_errors_say_why(labels: dict[str, str], start: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario({"nodes": [{"name": "a", "labels": labels}], "steps": []})
    assert str(exc.value).startswith(start)


# ---------------------------------------------------------------------- the workload model


def model(*nodes: Node, dep: dict[str, Any]) -> tuple[Emulator, VirtualClock, Workload]:
    clock = VirtualClock(START)
    emu = Emulator(now=clock.now)
    emu.store.create(dep)
    spec = WorkloadSpec("Deployment", "default", "web", pod_ready_after=10)
    return emu, clock, Workload(emu.store, [spec], start=START, now=clock.now, nodes=nodes)


def where(emu: Emulator) -> dict[str, str | None]:
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName")
        for p in emu.store.list("", "pods", "default")
    }


def set_replicas(emu: Emulator, n: int) -> None:
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None
    dep["spec"]["replicas"] = n
    emu.store.apply(dep, validate=False, replace_status=False)


def test_scale_down_deletes_from_the_most_crowded_node_first() -> None:
    emu, clock, wl = model(Node("n1"), Node("n2"), dep=deployment("web", 3))
    wl.reconcile()
    # Equal empty nodes: the fewest pods, then the name: n1, n2, n1.
    placed = where(emu)
    assert sorted(placed.values()) == ["n1", "n1", "n2"]
    clock.advance(60)
    wl.reconcile()
    set_replicas(emu, 1)
    wl.reconcile()
    # Both of n1's pods go (rank 2 beats rank 1), although the pods are the same age.
    assert list(where(emu).values()) == ["n2"]


def test_a_pod_that_fits_nowhere_stays_pending_without_metrics_and_is_placed_later() -> None:
    emu, clock, wl = model(Node("n1", {}, {"cpu": 1000}), dep=deployment("web", 3))
    wl.reconcile()
    pods = {p["metadata"]["name"]: p for p in emu.store.list("", "pods", "default")}
    pending = [p for p in pods.values() if not p["spec"].get("nodeName")]
    assert len(pending) == 1
    status = pending[0]["status"]
    assert status["phase"] == "Pending" and "startTime" not in status
    assert status["conditions"] == [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None and dep["status"]["replicas"] == 3
    clock.advance(30)
    wl.reconcile()
    dep = emu.store.get("apps", "deployments", "default", "web")
    assert dep is not None and dep["status"]["readyReplicas"] == 2
    placement = wl.placement("Deployment", "apps/v1", "default", "web")
    assert placement is not None and placement.pods == {"Pending": 1, "Running": 2}
    # A running pod goes (deleted by someone): the Pending one takes its room, now,
    # and turns Ready podReadyAfter later.
    running = next(n for n, p in pods.items() if p["spec"].get("nodeName"))
    emu.store.delete("", "pods", "default", running)
    clock.advance(5)
    wl.reconcile()
    bound = emu.store.get("", "pods", "default", pending[0]["metadata"]["name"])
    assert bound is not None and bound["spec"]["nodeName"] == "n1"
    assert bound["status"]["phase"] == "Running"
    assert bound["status"]["startTime"] == "2026-01-01T00:00:35Z"
    # The deleted pod is replaced, and the replacement is the one left Pending.
    assert sorted(str(v) for v in where(emu).values()) == ["None", "n1", "n1"]
    clock.advance(10)
    wl.reconcile()
    bound = emu.store.get("", "pods", "default", pending[0]["metadata"]["name"])
    assert bound is not None
    ready = next(c for c in bound["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["lastTransitionTime"]) == ("True", "2026-01-01T00:00:45Z")


def test_pending_pods_get_no_pod_metrics() -> None:
    clock = VirtualClock(START)
    emu = Emulator(now=clock.now)
    emu.store.create(deployment("web", 2))
    spec = WorkloadSpec("Deployment", "default", "web", demand={"cpu": (_point(0, 1000),)})
    wl = Workload(
        emu.store, [spec], start=START, now=clock.now, nodes=[Node("n1", {}, {"cpu": 500})]
    )
    wl.reconcile()
    on_node = [n for n, node in where(emu).items() if node]
    assert [m["metadata"]["name"] for m in wl.pod_metrics()] == on_node
    assert wl.pod_metrics()[0]["containers"][0]["usage"]["cpu"] == "1"


def _point(at: float, milli: int) -> DemandPoint:
    return DemandPoint(at, milli)


# ---------------------------------------------------------------------- end to end


async def test_output_has_pods_topology_and_skew_only_with_nodes() -> None:
    doc: dict[str, Any] = {
        "objects": [spread_deployment(4), hpa("web", [cpu_metric(50)], max_replicas=4)],
        "workload": workload(),
        "steps": [{}],
    }
    results, _ = await run(doc)
    assert results[0].targets == {"Deployment/default/web": {"replicas": 4}}
    assert results[0].zones == {}
    results, pods = await run({**doc, "nodes": ZONES})
    line = json.loads(jsonl_line(results[0]))
    assert line["targets"] == {
        "Deployment/default/web": {
            "replicas": 4,
            "pods": {"Running": 4},
            "topology": {ZONE_LABEL: {"a": 2, "b": 1, "c": 1}},
            "skew": {ZONE_LABEL: 1},
        }
    }
    assert results[0].zones == {"Deployment/default/web": {"a": 2, "b": 1, "c": 1}}
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["a-1", "a-1", "b-1", "c-1"]


async def test_listed_pods_count_where_they_are_and_targets_outside_the_workload() -> None:
    # No workload: the scenario's pods are the target's pods; two sit in zone c.
    listed = [pod(f"web-{i}") for i in range(3)]
    for p, node in zip(listed, ["c-1", "c-1", None], strict=True):
        if node:
            p["spec"]["nodeName"] = node
    doc = {
        "nodes": ZONES,
        "objects": [spread_deployment(3), *listed, hpa("web", [cpu_metric(50)])],
        "steps": [{}],
    }
    results, _ = await run(doc)
    target = results[0].targets["Deployment/default/web"]
    assert target["pods"] == {"Running": 3}
    assert target["topology"] == {ZONE_LABEL: {"a": 0, "b": 0, "c": 2}}
    assert target["skew"] == {ZONE_LABEL: 2}


async def test_pending_pods_show_in_the_output_and_stay_unready_for_the_hpa() -> None:
    doc = {
        "nodes": {**ZONES, "capacity": {"cpu": "1"}},
        # 500m each: room for 2 per zone, so 6; the other 2 stay Pending.
        "objects": [spread_deployment(8), hpa("web", [cpu_metric(50)], min_replicas=8)],
        "workload": workload(),
        # A minute on: past the 30 s metrics window after the pods turned Ready.
        "steps": [{}, {"after": "1m"}],
    }
    results, pods = await run(doc)
    target = results[-1].targets["Deployment/default/web"]
    assert target["pods"] == {"Pending": 2, "Running": 6}
    assert target["topology"] == {ZONE_LABEL: {"a": 2, "b": 2, "c": 2}}
    messages = {
        c["message"] for p in pods for c in p["status"]["conditions"] if c["status"] == "False"
    }
    assert messages == {"0/3 nodes are available: 3 Insufficient cpu."}
    # 1 core over 6 ready pods of 500m: 33%; the two Pending pods have no metrics.
    status = results[-1].hpas["default/web"]
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 33


async def test_timeline_and_plot_show_pods_per_zone() -> None:
    doc = {
        "nodes": ZONES,
        "objects": [spread_deployment(3), hpa("web", [cpu_metric(50)], max_replicas=3)],
        "workload": workload(),
        "steps": [{}],
    }
    results, _ = await run(doc)
    out = io.StringIO()
    write_timeline(results, out, start=START)
    assert "pods: Running 3; per zone a 1, b 1, c 1; skew zone 0" in out.getvalue()
    svg = render_svg(results, start=START)
    assert "Deployment/default/web: pods per zone" in svg
    assert "zone a" in svg and "skew (zone)" in svg
    plain = {**doc, "nodes": None}
    results, _ = await run(plain)
    assert "pods per zone" not in render_svg(results, start=START)
    out = io.StringIO()
    write_timeline(results, out, start=START)
    assert "per zone" not in out.getvalue()


async def test_schedule_anyway_overflows_where_do_not_schedule_leaves_pending() -> None:
    nodes = [
        {"zones": ["a", "b"], "perZone": 1, "capacity": {"cpu": "4"}},
        {"name": "c-1", "labels": {ZONE_LABEL: "c"}, "capacity": {"cpu": "1"}},
    ]

    async def final(when: str) -> dict[str, Any]:
        doc = {
            "nodes": nodes,
            "objects": [spread_deployment(9, when), hpa("web", [cpu_metric(50)], min_replicas=9)],
            "workload": workload(),
            "steps": [{}],
        }
        results, _ = await run(doc)
        return results[-1].targets["Deployment/default/web"]

    # c holds 2 pods of 500m. DoNotSchedule: a and b may hold one more each
    # (3, 3, 2); a 9th pod would make a skew of 2 anywhere it fits: Pending.
    hard = await final("DoNotSchedule")
    assert hard["pods"] == {"Pending": 1, "Running": 8}
    assert hard["topology"] == {ZONE_LABEL: {"a": 3, "b": 3, "c": 2}}
    assert hard["skew"] == {ZONE_LABEL: 1}
    # ScheduleAnyway places it anyway, in the least skewed way (a and b tie: a).
    soft = await final("ScheduleAnyway")
    assert soft["pods"] == {"Running": 9}
    assert soft["topology"] == {ZONE_LABEL: {"a": 4, "b": 3, "c": 2}}
    assert soft["skew"] == {ZONE_LABEL: 2}
