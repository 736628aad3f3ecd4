"""The steady-sync fast path (``decide``'s ``ReplicaMemo``) changes nothing a sync does.

Every scenario the tests run (examples/*.yaml, the recorded day, and scenarios built
from tests/simulate/scenarios.py that hold the samples still while pods cross the CPU
initialization period, restart, change requests or get deleted) is simulated twice,
with the reuse switched on and off; each step's HPA statuses (conditions and their
times included), targets, Events, rescales and decision records (the whole
explanation) must be identical. The reuse must also actually happen, and a memo that
ignores its time bound must be caught.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from hpactl.core import decide as decide_module
from hpactl.simulate.runner import Simulation
from hpactl.simulate.scenario import parse_scenario
from tests.simulate.scenarios import cpu_metric, deployment, hpa, pod, pod_metrics

pytestmark = pytest.mark.timeout(600)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _examples() -> list[tuple[str, dict[str, Any], Path]]:
    out = []
    for path in sorted([*EXAMPLES.glob("*.yaml"), *EXAMPLES.glob("*/*.yaml")]):
        out.append((path.stem, yaml.safe_load(path.read_text()), path.parent))
    return out


def _still_samples(*, init: str = "5m") -> dict[str, Any]:
    """Sample values that never change (the emulator stamps them at each read, as
    metrics-server does) while pods start inside the CPU initialization period and
    leave it mid-run, each at its own step, and one pod is unready: the memo's time
    bound decides every flip."""
    return {
        "flags": {"horizontal-pod-autoscaler-cpu-initialization-period": init},
        "objects": [
            deployment("web", 4),
            pod("web-a", started="2025-12-31T23:58:00Z"),
            pod("web-b", started="2025-12-31T23:59:07Z"),
            pod("web-c", started="2026-01-01T00:00:40Z", ready=False),
            pod("web-d", started="2025-12-31T00:00:00Z"),
            hpa("web", [cpu_metric(60)], min_replicas=2, max_replicas=8),
        ],
        "metrics": {
            "pods": [
                pod_metrics("web-a", "600m"),
                pod_metrics("web-b", "450m"),
                pod_metrics("web-c", "100m"),
                pod_metrics("web-d", "250m"),
            ]
        },
        "steps": [{}, {"repeat": 60}],
    }


def _changing_pods() -> dict[str, Any]:
    """Still sample values, while the pods and the HPA change under it."""
    doc = _still_samples(init="1m")
    late = pod("web-e", started="2026-01-01T00:02:00Z")
    doc["steps"] = [
        {},
        {"repeat": 8},
        {"apply": [late]},
        {"repeat": 8},
        {"apply": [pod("web-b", started="2026-01-01T00:04:00Z", cpu_request="250m")]},
        {"repeat": 8},
        {"delete": [{"kind": "Pod", "name": "web-a"}]},
        {"repeat": 8},
        {"apply": [hpa("web", [cpu_metric(40)], min_replicas=2, max_replicas=8)]},
        {"repeat": 8},
        # The target's replicas change under the same pods (scaled by hand).
        {"apply": [deployment("web", 7)]},
        {"repeat": 4},
    ]
    return doc


def _behavior() -> dict[str, Any]:
    """Still samples under a scale-down window and rate limits that expire mid-run."""
    doc = _still_samples(init="1m")
    doc["objects"][-1] = hpa(
        "web",
        [cpu_metric(80)],
        min_replicas=1,
        max_replicas=8,
        behavior={
            "scaleDown": {
                "stabilizationWindowSeconds": 60,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 45}],
            }
        },
    )
    return doc


def _scenarios() -> list[tuple[str, dict[str, Any], Path | None]]:
    return [
        *_examples(),
        ("still-samples", _still_samples(), None),
        ("changing-pods", _changing_pods(), None),
        ("behavior-expiry", _behavior(), None),
    ]


SCENARIOS = _scenarios()


async def _run(doc: dict[str, Any], base: Path | None, *, reuse: bool) -> list[dict[str, Any]]:
    decide_module.REUSE_REPLICA_CALCULATION = reuse
    try:
        scenario = parse_scenario(copy.deepcopy(doc), source="test", base_dir=base)
        async with Simulation(scenario) as sim:
            results = await sim.run()
    finally:
        decide_module.REUSE_REPLICA_CALCULATION = True
    return [{**r.to_json(), "rescales": r.rescales} for r in results]


class _Count:
    """Counts the replica calculations decide runs (to see the reuse happen)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = decide_module.__dict__["compute_replicas_for_metrics"]

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(decide_module, "compute_replicas_for_metrics", counted)


def _first_difference(fast: list[dict[str, Any]], full: list[dict[str, Any]]) -> str:
    for i, (a, b) in enumerate(zip(fast, full, strict=False)):
        if a != b:
            keys = [k for k in a if a[k] != b.get(k)]
            return f"step {i}: {keys}"
    return f"{len(fast)} vs {len(full)} steps"


@pytest.mark.parametrize(("name", "doc", "base"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
async def test_fast_path_decides_as_the_full_path(
    name: str, doc: dict[str, Any], base: Path | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = _Count(monkeypatch)
    full = await _run(doc, base, reuse=False)
    computed_full = count.calls
    count.calls = 0
    fast = await _run(doc, base, reuse=True)
    assert fast == full, f"{name}: {_first_difference(fast, full)}"
    assert count.calls <= computed_full


@pytest.mark.parametrize("name", ["still-samples", "changing-pods", "behavior-expiry"])
async def test_still_samples_are_reused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the sample values stand still the calculation runs only while a pod is
    initializing (its samples' timestamps count then), when an input changed or when
    a pod's CPU-initialization test flipped."""
    doc = next(d for n, d, _ in SCENARIOS if n == name)
    count = _Count(monkeypatch)
    full = await _run(doc, None, reuse=False)
    computed_full = count.calls
    count.calls = 0
    await _run(doc, None, reuse=True)
    assert computed_full >= len(full)
    assert count.calls < computed_full / 2


async def test_a_memo_without_its_time_bound_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check has teeth: a memo trusted past a pod's end of CPU initialization
    decides differently, and the comparison sees it."""
    doc = _still_samples()
    full = await _run(doc, None, reuse=False)
    real = decide_module._memo_valid

    def unbounded(memo: Any, inputs: Any, *args: Any) -> bool:
        if memo is None:
            return False
        widened = decide_module.ReplicaMemo(
            **{
                **{f: getattr(memo, f) for f in memo.__slots__},
                "valid_from": decide_module._EVER,
                "valid_until": decide_module._NEVER,
            }
        )
        return real(widened, inputs, *args)

    monkeypatch.setattr(decide_module, "_memo_valid", unbounded)
    broken = await _run(doc, None, reuse=True)
    assert broken != full
