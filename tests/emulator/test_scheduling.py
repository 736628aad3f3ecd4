"""Pod placement (hpactl.emulator.scheduling) against hand-worked cases.

Each case sets matching pods per zone, works out by hand what kube-scheduler's
filters allow (PodTopologySpread: `count + self - global min <= maxSkew`) and
checks the node chosen or the Pending message.
"""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.emulator.scheduling import (
    HOSTNAME_LABEL,
    ZONE_LABEL,
    Node,
    Taint,
    node_object,
    place,
    pod_requests,
    spread_constraints,
    spread_report,
)

Obj = dict[str, Any]
WEB = {"app": "web"}


def node(
    name: str, zone: str | None = None, *, cpu: str | None = None, pods: int = 110, **kw: Any
) -> Node:
    labels = {HOSTNAME_LABEL: name, **({ZONE_LABEL: zone} if zone else {}), **kw.pop("labels", {})}
    capacity = {"cpu": int(float(cpu) * 1000)} if cpu else {}
    return Node(name, labels, capacity, max_pods=pods, **kw)


def three_zones(**kw: Any) -> list[Node]:
    return [node(f"{z}-1", z, **kw) for z in "abc"]


def pod(name: str, on: str | None = None, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    p: Obj = {
        "metadata": {"name": name, "namespace": "default", "labels": dict(labels or WEB)},
        "spec": {"containers": [{"name": "app"}], **spec},
        "status": {"phase": "Running"},
    }
    if on:
        p["spec"]["nodeName"] = on
    return p


def requesting(p: Obj, cpu: str) -> Obj:
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return p


def spread(
    max_skew: int = 1,
    key: str = ZONE_LABEL,
    when: str = "DoNotSchedule",
    selector: Obj | None = None,
    **extra: Any,
) -> Obj:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": WEB} if selector is None else selector,
        **extra,
    }


def existing(
    counts: dict[str, int], labels: dict[str, str] | None = None, prefix: str = "p"
) -> list[Obj]:
    """`counts[node]` running pods on each node."""
    return [
        pod(f"{prefix}-{n}-{i}", on=n, labels=labels) for n, k in counts.items() for i in range(k)
    ]


def new(*constraints: Obj, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return pod("new", labels=labels, topologySpreadConstraints=list(constraints), **spec)


# ---------------------------------------------------------------------- maxSkew


def test_max_skew_1_only_the_emptiest_zone_passes() -> None:
    # a=2, b=1, c=0: min 0; a: 2+1-0=3, b: 1+1-0=2 (> 1), c: 0+1-0=1.
    pods = existing({"a-1": 2, "b-1": 1})
    assert place(new(spread(1)), three_zones(), pods).node == "c-1"


def test_max_skew_2_lets_a_fuller_zone_pass_when_the_emptiest_is_full() -> None:
    # c has no room: the pods already there use its 1 CPU. a=2, b=1, c=0 (+c's own
    # pod is not a web pod). maxSkew 2: a: 3-0 > 2 refused; b: 2-0 = 2 passes.
    nodes = [node("a-1", "a"), node("b-1", "b"), node("c-1", "c", cpu="1")]
    pods = [*existing({"a-1": 2, "b-1": 1}), requesting(pod("other", "c-1", {"app": "x"}), "1")]
    p = requesting(new(spread(2)), "100m")
    assert place(p, nodes, pods).node == "b-1"
    # With maxSkew 1 nothing passes: one node short of CPU, two too skewed.
    placed = place(requesting(new(spread(1)), "100m"), nodes, pods)
    assert placed.node is None
    assert placed.message == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) didn't match pod topology spread constraints."
    )


# ---------------------------------------------------------------------- topologyKey


def test_topology_key_hostname_spreads_over_nodes_not_zones() -> None:
    nodes = [node("a-1", "a"), node("a-2", "a"), node("b-1", "b")]
    pods = existing({"a-1": 1, "b-1": 1})
    # Per zone a=1, b=1: both zones pass; per hostname only the empty a-2 does.
    assert place(new(spread(1, HOSTNAME_LABEL)), nodes, pods).node == "a-2"


def test_a_node_without_the_topology_key_is_refused_and_not_a_domain() -> None:
    nodes = [node("a-1", "a"), node("b-1", "b"), node("bare")]  # "bare" has no zone label
    pods = existing({"a-1": 1})
    # Domains: a=1, b=0 (bare is none): only b passes.
    assert place(new(spread(1)), nodes, pods).node == "b-1"
    full = place(new(spread(1)), [node("bare")], [])
    assert full.message == (
        "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label)."
    )


# ---------------------------------------------------------------------- whenUnsatisfiable


def test_schedule_anyway_places_what_do_not_schedule_leaves_pending() -> None:
    # c is full; a=1, b=1, c=0: for DoNotSchedule a and b are too skewed (2 > 1).
    nodes = [node("a-1", "a"), node("b-1", "b"), node("c-1", "c", pods=0)]
    pods = existing({"a-1": 1, "b-1": 1})
    hard = place(new(spread(1)), nodes, pods)
    assert hard.node is None
    assert "1 Too many pods" in hard.message
    soft = place(new(spread(1, when="ScheduleAnyway")), nodes, pods)
    assert soft.node == "a-1"  # a and b tie on every score: the name decides


def test_schedule_anyway_prefers_the_domain_with_fewest_matching_pods() -> None:
    pods = existing({"a-1": 3, "b-1": 1, "c-1": 2})
    assert place(new(spread(1, when="ScheduleAnyway")), three_zones(), pods).node == "b-1"


def test_do_not_schedule_with_slack_still_picks_the_least_skewed_domain() -> None:
    # maxSkew 5 lets every zone pass; the node that keeps the skew smallest wins.
    pods = existing({"a-1": 3, "b-1": 1, "c-1": 2})
    assert place(new(spread(5)), three_zones(), pods).node == "b-1"


# ---------------------------------------------------------------------- labelSelector


def test_label_selector_counts_only_matching_pods() -> None:
    pods = [*existing({"a-1": 3}, {"app": "other"}), *existing({"b-1": 1, "c-1": 1})]
    # web pods: a=0, b=1, c=1 -> a, whatever the other app runs there.
    assert place(new(spread(1)), three_zones(), pods).node == "a-1"


def test_a_pod_outside_its_own_selector_does_not_count_itself() -> None:
    pods = existing({"a-1": 1, "b-1": 1})  # c=0
    nodes = [node("a-1", "a"), node("b-1", "b"), node("c-1", "c", pods=0)]
    # selfMatch 0: a: 1+0-0 = 1 <= 1 passes.
    outsider = new(spread(1), labels={"app": "batch"})
    assert place(outsider, nodes, pods).node == "a-1"
    assert place(new(spread(1)), nodes, pods).node is None


def test_an_empty_label_selector_counts_nothing() -> None:
    # Upstream's countPodsMatchSelector returns 0 for an empty selector.
    pods = existing({"a-1": 4})
    nodes = [node("a-1", "a"), node("b-1", "b", pods=0)]
    assert place(new(spread(1, selector={})), nodes, pods).node == "a-1"


# ---------------------------------------------------------------------- minDomains


def test_min_domains_above_the_domains_present_makes_the_global_minimum_zero() -> None:
    nodes = [node("a-1", "a"), node("b-1", "b")]
    pods = existing({"a-1": 1, "b-1": 1})
    # Two domains, min 1: 1+1-1 = 1 passes.
    assert place(new(spread(1)), nodes, pods).node == "a-1"
    # minDomains 3 > 2 domains: min counts as 0, 1+1-0 = 2 > 1 everywhere.
    placed = place(new(spread(1, minDomains=3)), nodes, pods)
    assert placed.node is None
    assert "2 node(s) didn't match pod topology spread constraints" in placed.message
    # minDomains 2 == 2 domains: the real minimum again.
    assert place(new(spread(1, minDomains=2)), nodes, pods).node == "a-1"


# ---------------------------------------------------------------------- nodeAffinityPolicy


def test_node_affinity_policy_honor_leaves_unselectable_domains_out() -> None:
    nodes = [
        node("a-1", "a", labels={"disk": "ssd"}),
        node("b-1", "b", labels={"disk": "ssd"}),
        node("c-1", "c"),
    ]
    pods = existing({"a-1": 1, "b-1": 1})
    # Honor (default): c does not match the nodeSelector, so it is no domain; a=1,
    # b=1, min 1: a passes.
    honor = new(spread(1), nodeSelector={"disk": "ssd"})
    assert place(honor, nodes, pods).node == "a-1"
    # Ignore: c counts with 0, so a and b are too skewed and c is not selectable.
    ignore = new(spread(1, nodeAffinityPolicy="Ignore"), nodeSelector={"disk": "ssd"})
    placed = place(ignore, nodes, pods)
    assert placed.node is None
    assert placed.message == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't match pod topology spread constraints."
    )


def test_required_node_affinity_counts_for_the_policy_too() -> None:
    nodes = [node("a-1", "a"), node("b-1", "b"), node("c-1", "c")]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": ZONE_LABEL, "operator": "In", "values": ["a", "b"]}
                        ]
                    }
                ]
            }
        }
    }
    pods = existing({"a-1": 1, "b-1": 1})
    assert place(new(spread(1), affinity=affinity), nodes, pods).node == "a-1"


# ---------------------------------------------------------------------- nodeTaintsPolicy


def test_node_taints_policy_ignore_counts_a_tainted_node_honor_does_not() -> None:
    nodes = [
        node("a-1", "a"),
        node("b-1", "b"),
        node("c-1", "c", taints=(Taint("dedicated", "NoSchedule", "batch"),)),
    ]
    pods = existing({"a-1": 1, "b-1": 1})
    # Ignore (default): c counts with 0; a and b too skewed; c refused by its taint.
    placed = place(new(spread(1)), nodes, pods)
    assert placed.node is None
    assert placed.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: batch}, "
        "2 node(s) didn't match pod topology spread constraints."
    )
    # Honor: c is no domain (its taint is not tolerated); a=1, b=1: a passes.
    assert place(new(spread(1, nodeTaintsPolicy="Honor")), nodes, pods).node == "a-1"
    # A pod that tolerates the taint may go to c itself.
    tolerant = new(spread(1), tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert place(tolerant, nodes, pods).node == "c-1"


# ---------------------------------------------------------------------- matchLabelKeys


def test_match_label_keys_spread_each_revision_on_its_own() -> None:
    old = {"app": "web", "pod-template-hash": "old"}
    now = {"app": "web", "pod-template-hash": "new"}
    pods = [*existing({"a-1": 3}, old, "old"), *existing({"b-1": 1, "c-1": 1}, now, "new")]
    keyed = new(spread(1, matchLabelKeys=["pod-template-hash"]), labels=now)
    # Only hash=new counts: a=0, b=1, c=1 -> a.
    assert place(keyed, three_zones(), pods).node == "a-1"
    # Without matchLabelKeys every web pod counts: a=3, b=1, c=1; b and c pass.
    assert place(new(spread(1), labels=now), three_zones(), pods).node == "b-1"
    # A key the pod does not carry adds nothing.
    c = spread_constraints(new(spread(1, matchLabelKeys=["missing"])))[0]
    assert str(c.selector) == "app=web"


# ---------------------------------------------------------------------- capacity


def test_cpu_requests_must_fit_what_is_left() -> None:
    nodes = [node("a-1", "a", cpu="1"), node("b-1", "b", cpu="2")]
    pods = [requesting(pod("x", "a-1"), "600m"), requesting(pod("y", "b-1"), "1700m")]
    # 400m fits only a-1 (exactly full); b-1 has 300m left.
    assert place(requesting(pod("n"), "400m"), nodes, pods).node == "a-1"
    # 300m fits both: a-1 ends 90% allocated, b-1 100%: the least allocated wins.
    assert place(requesting(pod("n"), "300m"), nodes, pods).node == "a-1"
    placed = place(requesting(pod("n"), "500m"), nodes, pods)
    assert placed.message == "0/2 nodes are available: 2 Insufficient cpu."
    # b-1 at 1000m: 100m more makes a-1 70% and b-1 55% allocated.
    pods[1] = requesting(pod("y", "b-1"), "1")
    assert place(requesting(pod("n"), "100m"), nodes, pods).node == "b-1"


def test_pod_count_and_memory_limits() -> None:
    nodes = [
        Node("m", {}, {"memory": 1024 * 2**20 * 1000}, max_pods=10),
        Node("p", {}, {}, max_pods=1),
    ]
    pods = [pod("x", "p")]
    big = pod("n")
    big["spec"]["containers"][0]["resources"] = {"requests": {"memory": "2Gi"}}
    placed = place(big, nodes, pods)
    assert placed.message == "0/2 nodes are available: 1 Insufficient memory, 1 Too many pods."
    assert place(pod("n"), nodes, pods).node == "m"  # no requests: only the count matters


def test_terminated_pods_free_their_room_and_requests_follow_the_sidecar_formula() -> None:
    nodes = [node("a-1", "a", cpu="1")]
    done = requesting(pod("done", "a-1"), "1")
    done["status"]["phase"] = "Succeeded"
    assert place(requesting(pod("n"), "1"), nodes, [done]).node == "a-1"
    p = requesting(pod("n"), "200m")
    p["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "1"}}},
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
    ]
    p["spec"]["overhead"] = {"cpu": "50m"}
    # containers 200m + sidecar 100m = 300m; the init container needs 1 (before the
    # sidecar starts): max(300m, 1000m) = 1000m; plus 50m overhead.
    assert pod_requests(p) == {"cpu": 1050}


# ---------------------------------------------------------------------- taints


@pytest.mark.parametrize(
    ("toleration", "fits"),
    [
        (None, False),
        ({"key": "gpu", "operator": "Exists"}, True),
        ({"key": "gpu", "operator": "Equal", "value": "yes"}, True),
        ({"key": "gpu", "value": "no"}, False),
        ({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists"}, True),
    ],
)
def test_no_schedule_taints_need_a_toleration(toleration: Obj | None, fits: bool) -> None:
    nodes = [Node("g", {}, {}, taints=(Taint("gpu", "NoSchedule", "yes"),))]
    p = pod("n", tolerations=[toleration] if toleration else [])
    assert (place(p, nodes, []).node == "g") is fits


def test_prefer_no_schedule_is_avoided_but_not_refused() -> None:
    soft = Taint("spot", "PreferNoSchedule")
    nodes = [Node("a", {}, {}, taints=(soft,)), Node("b", {}, {}, max_pods=1)]
    assert place(pod("n"), nodes, []).node == "b"
    assert place(pod("n"), nodes, [pod("x", "b")]).node == "a"
    evict = [Node("e", {}, {}, taints=(Taint("k", "NoExecute", "v"),))]
    assert place(pod("n"), evict, []).node is None


# ---------------------------------------------------------------------- node selection


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ({"key": "tier", "operator": "In", "values": ["gold"]}, ["g"]),
        ({"key": "tier", "operator": "NotIn", "values": ["gold"]}, ["s", "x"]),
        ({"key": "tier", "operator": "Exists"}, ["g", "s"]),
        ({"key": "tier", "operator": "DoesNotExist"}, ["x"]),
        ({"key": "cores", "operator": "Gt", "values": ["8"]}, ["g"]),
        ({"key": "cores", "operator": "Lt", "values": ["8"]}, ["s"]),
    ],
)
def test_required_node_affinity_operators(expr: Obj, want: list[str]) -> None:
    nodes = [
        Node("g", {"tier": "gold", "cores": "16"}),
        Node("s", {"tier": "silver", "cores": "4"}),
        Node("x", {}),
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }
    fits = [n.name for n in nodes if place(pod("p", affinity=affinity), [n], []).node]
    assert fits == want


def test_node_selector_and_match_fields() -> None:
    nodes = [Node("a", {"disk": "ssd"}), Node("b", {"disk": "hdd"})]
    assert place(pod("p", nodeSelector={"disk": "hdd"}), nodes, []).node == "b"
    by_name = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]},
                ]
            }
        }
    }
    assert place(pod("p", affinity=by_name), nodes, []).node == "b"
    placed = place(pod("p", nodeSelector={"disk": "nvme"}), nodes, [])
    assert placed.message == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    )


def test_no_nodes_and_ties() -> None:
    assert place(pod("p"), [], []).message == "no nodes available to schedule pods"
    nodes = [Node("n2"), Node("n1"), Node("n3")]
    assert place(pod("p"), nodes, []).node == "n1"  # equal nodes: the name decides
    assert place(pod("p"), nodes, [pod("x", "n1")]).node == "n2"  # then the fewest pods


# ---------------------------------------------------------------------- reporting


def test_spread_report_counts_scheduled_matching_pods_over_eligible_domains() -> None:
    template = new(spread(1), spread(2, HOSTNAME_LABEL, "ScheduleAnyway"), spread(3))
    nodes = [*three_zones(), node("a-2", "a"), Node("bare")]
    pods = [
        *existing({"a-1": 2, "a-2": 1, "b-1": 1, "bare": 3}),
        pod("pending"),  # not scheduled: not counted
        pod("other", "c-1", {"app": "other"}),  # other selector: not counted
    ]
    topology, skew = spread_report(template, nodes, pods)
    # "bare" has neither key: no domain of either constraint.
    assert topology == {
        ZONE_LABEL: {"a": 3, "b": 1, "c": 0},
        HOSTNAME_LABEL: {"a-1": 2, "a-2": 1, "b-1": 1, "c-1": 0},
    }
    assert skew == {ZONE_LABEL: 3, HOSTNAME_LABEL: 2}
    assert spread_report(pod("plain"), nodes, pods) == ({}, {})


def test_node_object_shows_capacity_and_taints() -> None:
    n = Node(
        "a-1",
        {ZONE_LABEL: "a"},
        {"cpu": 4000, "memory": 2**30 * 1000},
        30,
        (Taint("k", "NoSchedule"),),
    )
    obj = node_object(n)
    assert obj["status"]["capacity"] == {"pods": "30", "cpu": "4", "memory": "1073741824"}
    assert obj["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]
    assert obj["metadata"]["labels"] == {ZONE_LABEL: "a"}


def test_schedule_anyway_score_is_upstreams() -> None:
    from hpactl.emulator.scheduling import _spread_scores

    nodes = [*three_zones(), Node("bare")]
    pods = existing({"a-1": 3, "b-1": 1, "c-1": 2})
    scores = _spread_scores(new(spread(1, when="ScheduleAnyway")), nodes, nodes, pods_by_node(pods))
    # 3 domains: weight ln(5) = 1.609; raw a 4.83 -> 5, b 1.61 -> 2, c 3.22 -> 3;
    # normalized 100 * (max + min - s) / max = 40, 100, 80; "bare" lacks the key: 0.
    assert scores == {"a-1": 40, "b-1": 100, "c-1": 80, "bare": 0}


def pods_by_node(pods: list[Obj]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for p in pods:
        out.setdefault(p["spec"]["nodeName"], []).append(p)
    return out
