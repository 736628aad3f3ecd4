"""Every example opens on its steady state: the first sync already reads every metric.

A scenario's initial pods are new unless it lists pods started before `start`; with
CPU metrics the first syncs then find no usable sample (the CPU initialization
period) and report desired 0. The examples list warmed-up pods, except the one
whose subject is that start-up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpactl.simulate.output import metric_rows
from hpactl.simulate.runner import Simulation
from hpactl.simulate.scenario import load_scenario

pytestmark = pytest.mark.timeout(90)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COLD_BY_DESIGN = {"unready-startup"}  # its subject: pods that are still starting
# Warnings an example shows on purpose (its subject: a malformed annotation).
WARNINGS_BY_DESIGN = {"per-hpa-period": {"InvalidSyncPeriod"}}
ALL = sorted(p for p in EXAMPLES.rglob("*.yaml"))


@pytest.mark.parametrize("path", ALL, ids=[str(p.relative_to(EXAMPLES)) for p in ALL])
async def test_the_first_sync_sees_the_steady_state(path: Path) -> None:
    async with Simulation(load_scenario(path)) as sim:
        (first,) = await sim.run(until=0.0)
    if path.stem in COLD_BY_DESIGN:
        # The contrast: without warmed-up pods the first sync has no CPU sample.
        (status,) = first.hpas.values()
        assert status["desiredReplicas"] == 0
        return
    assert first.hpas, "no HPA in the example"
    expected = WARNINGS_BY_DESIGN.get(path.stem, set())
    assert [e for e in first.events if e["type"] == "Warning" and e["reason"] not in expected] == []
    for key, status in first.hpas.items():
        spec = first.specs[key]
        ref = spec["scaleTargetRef"]
        target = first.targets[f"{ref['kind']}/{key.partition('/')[0]}/{ref['name']}"]
        assert status["desiredReplicas"] == status["currentReplicas"] == target["replicas"], key
        rows = metric_rows(spec, status)
        assert rows and all(r.current is not None for r in rows), (key, rows)
        active = next(c for c in status["conditions"] if c["type"] == "ScalingActive")
        assert active["status"] == "True", active
