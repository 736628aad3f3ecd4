"""A `workload` target must name an object the scenario creates, of a scalable kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from hpactl.cli import main
from hpactl.simulate.runner import run_scenario
from hpactl.simulate.scenario import ScenarioError, parse_scenario
from tests.simulate.scenarios import cpu_metric, deployment, hpa, pod

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(autouse=True)
def _restore_structlog() -> Any:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def doc(target: dict[str, Any], objects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "objects": objects if objects is not None else [deployment("web", 2), hpa("web")],
        "workload": [{"target": target, "demand": {"cpu": [{"at": "0s", "value": "1"}]}}],
        "steps": [{}, {"repeat": 2}],
    }


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            {"kind": "Deployment", "name": "wbe"},
            "workload[0].target: Deployment/default/wbe matches no object in objects or in "
            "any step's apply; other Deployment objects: default/web",
        ),
        (
            {"kind": "Deployment", "namespace": "shop", "name": "web"},
            "workload[0].target: Deployment/shop/web matches no object in objects or in "
            "any step's apply; other Deployment objects: default/web",
        ),
        (
            {"kind": "StatefulSet", "name": "web"},
            "workload[0].target: StatefulSet/default/web matches no object in objects or in "
            "any step's apply",
        ),
        (
            {"apiVersion": "example.com/v1", "kind": "Deployment", "name": "web"},
            "workload[0].target: Deployment/default/web matches no object in objects or in "
            "any step's apply",
        ),
    ],
)
def test_a_target_that_matches_nothing_is_an_error(target: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc(target))
    assert str(err.value) == message


def test_the_cli_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc({"kind": "Deployment", "name": "wbe"})))
    assert main(["simulate", str(f)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == (
        "hpactl simulate: error: workload[0].target: Deployment/default/wbe matches no object "
        "in objects or in any step's apply; other Deployment objects: default/web\n"
    )


def test_matching_targets_are_accepted() -> None:
    sc = parse_scenario(doc({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}))
    assert [w.key for w in sc.workload] == ["Deployment/default/web"]
    # A namespace given on the object, and the same on the target.
    shop = deployment("web", 2, ns="shop")
    sc = parse_scenario(
        doc({"kind": "Deployment", "namespace": "shop", "name": "web"}, [shop, hpa("web")])
    )
    assert [w.key for w in sc.workload] == ["Deployment/shop/web"]


async def test_a_target_created_by_a_later_step() -> None:
    """Created midway (by `apply`): valid; its pods start when it appears."""
    d = doc({"kind": "Deployment", "name": "web"}, [hpa("web", [cpu_metric(50)])])
    d["steps"] = [{}, {"apply": [deployment("web", 2)]}, {"repeat": 2}]
    results = await run_scenario(parse_scenario(d))
    # No target at first; then its pods run and report the demand: 1 core over 2 pods
    # of 500m is 100% against 50%, so the HPA doubles it once the samples count.
    assert [r.targets["Deployment/default/web"]["replicas"] for r in results] == [None, 2, 2, 4]
    assert results[-1].demand == {"Deployment/default/web": {"cpu": 1.0}}


async def test_a_target_deleted_midway_is_not_an_error() -> None:
    """As on a cluster: the pods go, the HPA cannot get the scale, the run goes on."""
    d = doc({"kind": "Deployment", "name": "web"})
    d["steps"] = [{}, {"delete": [{"kind": "Deployment", "name": "web"}]}, {"repeat": 2}]
    results = await run_scenario(parse_scenario(d))
    assert len(results) == 4
    assert results[-1].targets["Deployment/default/web"]["replicas"] is None
    able = next(
        c for c in results[-1].hpas["default/web"]["conditions"] if c["type"] == "AbleToScale"
    )
    assert (able["status"], able["reason"]) == ("False", "FailedGetScale")


def test_a_target_of_a_kind_without_scale_subresource(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc({"kind": "Pod", "name": "solo"}, [pod("solo"), hpa("web")])))
    assert main(["simulate", str(f)]) == 2
    assert capsys.readouterr().err == (
        "hpactl simulate: error: workload[0].target: Pod has no scale subresource: a workload "
        "target must be something an HPA can scale\n"
    )
