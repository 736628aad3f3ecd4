"""Spread constraints of a pod template and the skew of pods as placed, worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.model.topology import (
    NodeLabels,
    PodPlacement,
    observed_skew,
    skew_by_key,
    spread_from_template,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def template(constraints: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web", "track": "stable"}},
        "spec": {"topologySpreadConstraints": constraints, **spec},
    }


def zone_constraint(**kw: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **kw,
    }


NODES = [
    NodeLabels("a1", {ZONE: "a", HOST: "a1", "disk": "ssd"}),
    NodeLabels("a2", {ZONE: "a", HOST: "a2"}),
    NodeLabels("b1", {ZONE: "b", HOST: "b1", "disk": "ssd"}),
    NodeLabels("c1", {ZONE: "c", HOST: "c1"}),
    NodeLabels("nozone", {HOST: "nozone"}),
]


def web(node: str, **labels: str) -> PodPlacement:
    return PodPlacement({"app": "web", **labels}, node)


def test_no_constraints_is_none() -> None:
    assert spread_from_template({"spec": {"containers": []}}) is None
    assert spread_from_template(template([])) is None
    assert spread_from_template(None) is None


def test_max_minus_min_over_every_eligible_zone() -> None:
    spread = spread_from_template(template([zone_constraint()]))
    assert spread is not None
    pods = [web("a1"), web("a2"), web("a1"), web("b1")]
    (s,) = observed_skew(spread, NODES, pods)
    # a: 3, b: 1, c: 0 (an empty zone still counts); the zoneless node is no domain.
    assert s.counts == (("a", 3), ("b", 1), ("c", 0))
    assert s.skew == 3 and s.exceeded


def test_unscheduled_terminating_and_foreign_pods_do_not_count() -> None:
    spread = spread_from_template(template([zone_constraint()]))
    assert spread is not None
    pods = [
        web("a1"),
        web("b1"),
        web("c1"),
        web(""),  # Pending, not scheduled
        PodPlacement({"app": "web"}, "a1", deleting=True),
        PodPlacement({"app": "other"}, "a1"),
        web("nozone"),  # its node has no zone: no domain
    ]
    (s,) = observed_skew(spread, NODES, pods)
    assert s.counts == (("a", 1), ("b", 1), ("c", 1)) and s.skew == 0
    assert not s.exceeded


def test_min_domains_makes_the_minimum_zero() -> None:
    spread = spread_from_template(template([zone_constraint(minDomains=4)]))
    assert spread is not None
    pods = [web("a1"), web("b1"), web("c1")]
    (s,) = observed_skew(spread, NODES, pods)
    # Three zones, fewer than minDomains 4: the global minimum is taken as 0.
    assert s.skew == 1
    spread = spread_from_template(template([zone_constraint(minDomains=3)]))
    assert spread is not None
    assert observed_skew(spread, NODES, pods)[0].skew == 0


@pytest.mark.parametrize(
    ("policy", "counts", "skew"),
    [
        # Honor (default): only nodes matching nodeSelector disk=ssd are eligible,
        # so zone c (no ssd node) is no domain, and the pod on a2 is not counted.
        ("Honor", (("a", 1), ("b", 1)), 0),
        ("Ignore", (("a", 2), ("b", 1), ("c", 0)), 2),
    ],
)
def test_node_affinity_policy(policy: str, counts: tuple[Any, ...], skew: int) -> None:
    spread = spread_from_template(
        template([zone_constraint(nodeAffinityPolicy=policy)], nodeSelector={"disk": "ssd"})
    )
    assert spread is not None
    (s,) = observed_skew(spread, NODES, [web("a1"), web("a2"), web("b1")])
    assert (s.counts, s.skew) == (counts, skew)


def test_required_node_affinity_terms_are_ored() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]},
                    {"matchExpressions": [{"key": HOST, "operator": "In", "values": ["c1"]}]},
                ]
            }
        }
    }
    spread = spread_from_template(template([zone_constraint()], affinity=affinity))
    assert spread is not None
    (s,) = observed_skew(spread, NODES, [web("a1"), web("a2"), web("b1")])
    assert s.counts == (("a", 2), ("c", 0)) and s.skew == 2


def test_match_label_keys_narrow_the_selector_to_the_templates_values() -> None:
    spread = spread_from_template(template([zone_constraint(matchLabelKeys=["track", "missing"])]))
    assert spread is not None
    pods = [web("a1", track="stable"), web("a2", track="canary"), web("b1", track="stable")]
    (s,) = observed_skew(spread, NODES, pods)
    # Only track=stable counts; "missing" is not a template label and is ignored.
    assert s.counts == (("a", 1), ("b", 1), ("c", 0)) and s.skew == 1


def test_no_label_selector_matches_no_pod() -> None:
    c = zone_constraint()
    del c["labelSelector"]
    spread = spread_from_template(template([c]))
    assert spread is not None
    (s,) = observed_skew(spread, NODES, [web("a1"), web("a2")])
    assert s.skew == 0 and s.counts == (("a", 0), ("b", 0), ("c", 0))


def test_nodes_need_every_constraints_key_and_skew_by_key_takes_the_largest() -> None:
    spread = spread_from_template(
        template(
            [
                zone_constraint(),
                zone_constraint(maxSkew=2, whenUnsatisfiable="ScheduleAnyway", labelSelector={}),
                {
                    "maxSkew": 1,
                    "topologyKey": HOST,
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                },
            ]
        )
    )
    assert spread is not None
    pods = [web("a1"), web("a1"), web("nozone"), PodPlacement({"app": "x"}, "b1")]
    zone, zone_all, host = observed_skew(spread, NODES, pods)
    assert zone.counts == (("a", 2), ("b", 0), ("c", 0))
    # {} selects every pod of the namespace: the "x" pod counts too.
    assert zone_all.counts == (("a", 2), ("b", 1), ("c", 0))
    # The zoneless node is no hostname domain either: nodes need every key.
    assert [d for d, _ in host.counts] == ["a1", "a2", "b1", "c1"] and host.skew == 2
    assert skew_by_key((zone, zone_all, host)) == {ZONE: 2, HOST: 2}


def test_a_constraint_without_topology_key_is_an_error() -> None:
    with pytest.raises(ValueError, match="topologyKey"):
        spread_from_template(template([{"maxSkew": 1}]))
