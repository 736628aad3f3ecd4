"""What the tests of the extension examples (examples/*.yaml) share: load one, run
it in the simulator, and the variants that must reproduce upstream's output byte for
byte (gate off, annotation removed)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import parse_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> dict[str, Any]:
    """examples/``name``.yaml as data."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    return data


async def run(data: dict[str, Any]) -> list[StepResult]:
    async with Simulation(parse_scenario(data, source="test", base_dir=EXAMPLES)) as sim:
        return await sim.run()


def without(data: dict[str, Any], annotation: str) -> dict[str, Any]:
    """The scenario with ``annotation`` removed from every manifest."""
    out = copy.deepcopy(data)
    manifests = [*out["objects"], *(m for s in out["steps"] for m in s.get("apply", []))]
    for m in manifests:
        (m.get("metadata") or {}).get("annotations", {}).pop(annotation, None)
    return out


def gate_off(data: dict[str, Any]) -> dict[str, Any]:
    """The scenario without its flags: the examples turn their feature gate on there."""
    out = copy.deepcopy(data)
    out.pop("flags", None)
    return out


def jsonl(results: list[StepResult]) -> list[str]:
    """The whole output, as compared byte for byte."""
    return [json.dumps(r.to_json(), sort_keys=True) for r in results]
