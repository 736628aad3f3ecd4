"""examples/owned-pods.yaml (KEP-5325, OwnerReference pod selection).

It runs as docs/extensions.md says; with the gate off, or with the annotation
removed, the output is byte for byte upstream's (the stranger pod drives the
Deployment to maxReplicas); a malformed value changes nothing but the condition and
the Warning event.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import ScenarioError, parse_scenario

from .example_runs import EXAMPLES, gate_off, jsonl, load, run

pytestmark = pytest.mark.timeout(120)

ANNOTATION = "hpactl.dev/selection-strategy"
TARGET = "Deployment/shop/web"


def hpa_manifest(data: dict[str, Any]) -> dict[str, Any]:
    hpas: list[dict[str, Any]] = [
        o for o in data["objects"] if o["kind"] == "HorizontalPodAutoscaler"
    ]
    (m,) = hpas
    return m


def with_annotation(data: dict[str, Any], value: str | None) -> dict[str, Any]:
    out = copy.deepcopy(data)
    meta = hpa_manifest(out)["metadata"]
    if value is None:
        meta.pop("annotations", None)
    else:
        meta["annotations"] = {ANNOTATION: value}
    return out


def replicas(results: list[StepResult]) -> list[int]:
    return [r.targets[TARGET]["replicas"] for r in results]


def total_pods(results: list[StepResult]) -> list[int]:
    return [r.decisions["shop/web"]["explanation"]["metrics"][0]["totalPods"] for r in results]


async def test_owner_reference_ignores_the_stranger_through_both_replicasets() -> None:
    results = await run(load("owned-pods"))
    assert set(replicas(results)) == {4}
    # Old and new ReplicaSet pods alike, never the debugging pod (there 1m-4m).
    assert set(total_pods(results)) == {4}
    assert not [e for r in results for e in r.events if e["type"] == "Warning"]


async def test_label_selector_is_upstream_and_the_gate_off_changes_nothing() -> None:
    data = load("owned-pods")
    upstream = await run(gate_off(with_annotation(data, None)))
    # The stranger (1600m on a 200m request) drives web up, then it sticks at 10.
    series = replicas(upstream)
    assert series[4] == 4 and series[5] == 8 and series[6:] == [10] * (len(series) - 6)
    assert 5 in total_pods(upstream)
    assert jsonl(await run(gate_off(data))) == jsonl(upstream)
    assert jsonl(await run(with_annotation(data, None))) == jsonl(upstream)
    assert jsonl(await run(with_annotation(data, "LabelSelector"))) == jsonl(upstream)


def _strip(line: dict[str, Any]) -> dict[str, Any]:
    line = copy.deepcopy(line)
    for hpa in line["hpas"].values():
        hpa["conditions"] = [c for c in hpa["conditions"] if c["type"] != "AnnotationsValid"]
    line["events"] = [e for e in line["events"] if e["reason"] != "InvalidSelectionStrategy"]
    for d in line["decisions"].values():
        d["writes"]["events"] = [
            e for e in d["writes"]["events"] if "InvalidSelectionStrategy" not in json.dumps(e)
        ]
        d["writes"]["status"] = None
    return line


async def test_malformed_value_warns_and_runs_as_unset() -> None:
    data = load("owned-pods")
    bad = await run(with_annotation(data, "owner-reference"))
    unset = await run(with_annotation(data, None))
    assert replicas(bad) == replicas(unset)
    (first, *_) = bad
    conds = {c["type"]: c for c in first.hpas["shop/web"]["conditions"]}
    assert conds["AnnotationsValid"]["status"] == "False"
    assert conds["AnnotationsValid"]["reason"] == "InvalidSelectionStrategy"
    assert (
        "'owner-reference' is neither LabelSelector nor OwnerReference"
        in (conds["AnnotationsValid"]["message"])
    )
    assert any(e["reason"] == "InvalidSelectionStrategy" for e in first.events)
    assert [_strip(r.to_json()) for r in bad] == [_strip(r.to_json()) for r in unset]


async def test_owner_reference_without_uid_must_name_an_earlier_object() -> None:
    data = load("owned-pods")
    pod = next(o for o in data["objects"] if o["kind"] == "Pod")
    data["objects"].remove(pod)
    data["objects"].insert(0, pod)  # before its ReplicaSet exists
    with pytest.raises(ScenarioError) as err:
        await run(data)
    assert str(err.value) == (
        'objects[0].metadata.ownerReferences[0]: ReplicaSet "web-6d9f7" does not exist in '
        "shop: an ownerReference without uid must name an object created before this one"
    )


async def test_owner_reference_uid_is_filled_in() -> None:
    async with Simulation(
        parse_scenario(load("owned-pods"), source="test", base_dir=EXAMPLES)
    ) as sim:
        store = sim.emu.store
        rs = store.get("apps", "replicasets", "shop", "web-6d9f7")
        dep = store.get("apps", "deployments", "shop", "web")
        pod = store.get("", "pods", "shop", "web-6d9f7-a")
        assert rs is not None and dep is not None and pod is not None
        assert rs["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
