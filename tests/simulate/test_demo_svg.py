"""docs/demo.svg (shown in README.md and docs/simulate.md) is the demo's plot as the
current code draws it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpactl.simulate.demo import DEMO_SCENARIO
from hpactl.simulate.plot import render_svg
from hpactl.simulate.runner import Simulation
from hpactl.simulate.scenario import loads_scenario

pytestmark = pytest.mark.timeout(90)

DOC = Path(__file__).resolve().parents[2] / "docs" / "demo.svg"


async def test_docs_demo_svg_is_current() -> None:
    scenario = loads_scenario(DEMO_SCENARIO, source="demo")
    async with Simulation(scenario) as sim:
        results = await sim.run()
    svg = render_svg(results, start=scenario.start, title=f"hpactl simulate: {scenario.name}")
    # What the docs say the picture shows.
    for title in (
        "default/web: replicas",
        "Deployment/default/web: cpu demand (total over its pods, cores)",
        "default/web: cpu (% of request)",
    ):
        assert f">{title}</text>" in svg
    assert ">scale up<" in svg and ">scale down<" in svg
    assert svg == DOC.read_text(encoding="utf-8"), (
        "docs/demo.svg is out of date: regenerate it with "
        "`hpactl demo --no-progress --plot docs/demo.svg`"
    )
