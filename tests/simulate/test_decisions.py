"""`simulate` explains: each HPA's decision record in the jsonl output (an optional
field; the contract's fields unchanged), and the timeline names the rule that set
the count when it is not the metric itself."""

from __future__ import annotations

import io
import json
from typing import Any

from hpactl.simulate.output import jsonl_line, write_timeline
from hpactl.simulate.runner import run_scenario
from hpactl.simulate.scenario import parse_scenario
from tests.simulate.scenarios import cpu_metric, deployment, hpa

CONTRACT_FIELDS = ["step", "time", "targets", "hpas", "events"]


def rate_limited() -> dict[str, Any]:
    """2 replicas at 4x their target, at most one more pod per minute."""
    h = hpa(
        metrics=[cpu_metric(50)],
        max_replicas=20,
        behavior={
            "scaleUp": {
                "stabilizationWindowSeconds": 0,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        },
    )
    return {
        "name": "rate-limited",
        "objects": [deployment("web", 2), h],
        "workload": [
            {
                "target": {"kind": "Deployment", "name": "web"},
                "podReadyAfter": "0s",
                "demand": {"cpu": [{"at": "0s", "value": "2"}]},
            }
        ],
        "steps": [{"after": "10m"}, {}],
    }


async def test_jsonl_keeps_the_contract_and_adds_decisions() -> None:
    sc = parse_scenario(rate_limited())
    results = await run_scenario(sc)
    last = json.loads(jsonl_line(results[-1]))
    assert list(last)[:5] == CONTRACT_FIELDS and list(last)[5:] == ["decisions"]
    # The contract's fields are exactly what they were without decisions.
    without = dict(last)
    del without["decisions"]
    assert (
        json.dumps(without, separators=(", ", ": "), ensure_ascii=False)
        == jsonl_line(results[-1]).split(', "decisions": ')[0] + "}"
    )
    rec = last["decisions"]["default/web"]
    assert rec["hpa"] == "default/web" and rec["time"] == last["time"]
    e = rec["explanation"]
    assert e["limitedBy"] == ["scale-up-limit"] and e["policy"] == "scaleUp Pods 1 per 60s"
    assert e["rateLimit"] == {
        "direction": "scaleUp",
        "limit": e["desiredReplicas"],
        "policy": "scaleUp Pods 1 per 60s",
        "applied": True,
    }
    # The second step is held at 3 (the period's one pod is spent): nothing written.
    assert (e["currentReplicas"], e["desiredReplicas"]) == (3, 3)
    assert rec["writes"]["scale"] == {
        "attempted": False,
        "replicas": None,
        "result": "not-attempted",
        "error": None,
    }
    first = results[0].decisions["default/web"]
    assert first["writes"]["scale"] == {
        "attempted": True,
        "replicas": 3,
        "result": "ok",
        "error": None,
    }


async def test_timeline_names_the_policy_that_limited_a_scale_up() -> None:
    sc = parse_scenario(rate_limited())
    results = await run_scenario(sc)
    out = io.StringIO()
    write_timeline(results, out, start=sc.start)
    text = out.getvalue()
    rescales = [line for line in text.splitlines() if "SuccessfulRescale" in line]
    assert rescales, text
    notes = [line.strip() for line in text.splitlines() if "limited by" in line]
    proposal = results[0].decisions["default/web"]["explanation"]["metricProposal"]
    assert notes[0] == (
        f"default/web: limited by scale-up policy (Pods 1 per 60s); cpu alone would give {proposal}"
    )
    # Each note sits under its HPA's line.
    lines = text.splitlines()
    i = lines.index(next(line for line in lines if "limited by" in line))
    assert "default/web" in lines[i - 1] and "replicas 2→3" in lines[i - 1]
