"""Timeline, summary, metric rows and SVG from recorded steps (no emulator)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

from hpactl.simulate.output import metric_rows, summarize, write_summary, write_timeline
from hpactl.simulate.plot import render_svg
from hpactl.simulate.runner import StepResult

START = datetime(2026, 1, 1, tzinfo=UTC)
SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "minReplicas": 1,
    "maxReplicas": 10,
    "metrics": [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue"},
                "target": {"type": "Value", "value": "100"},
            },
        },
    ],
}


def status(current: int, desired: int, cpu: int | None, queue: str | None) -> dict[str, Any]:
    metrics: list[dict[str, Any]] = []
    metrics.append(
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}
        if cpu is not None
        else {"type": ""}
    )
    metrics.append(
        {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": queue}}}
        if queue is not None
        else {"type": ""}
    )
    return {"currentReplicas": current, "desiredReplicas": desired, "currentMetrics": metrics}


def step(
    n: int,
    replicas: int,
    st: dict[str, Any],
    events: list[dict[str, str]] | None = None,
    rescale: tuple[int, int] | None = None,
) -> StepResult:
    return StepResult(
        step=n,
        time=START + timedelta(seconds=15 * n),
        targets={"Deployment/default/web": {"replicas": replicas}},
        hpas={"default/web": st},
        events=events or [],
        specs={"default/web": SPEC},
        rescales={"default/web": rescale} if rescale else {},
    )


WARN = {
    "object": "HorizontalPodAutoscaler/default/web",
    "type": "Warning",
    "reason": "FailedGetResourceMetric",
    "message": "boom",
}
RESCALE = {
    "object": "HorizontalPodAutoscaler/default/web",
    "type": "Normal",
    "reason": "SuccessfulRescale",
    "message": "New size: 4; reason: cpu resource utilization (percentage of request) above target",
}

RESULTS = [
    step(0, 2, status(2, 0, None, "10"), [WARN]),
    step(1, 2, status(2, 0, None, "10"), [WARN]),
    step(2, 2, status(2, 0, None, "10"), [WARN]),
    step(3, 4, status(2, 4, 100, "150"), [RESCALE], rescale=(2, 4)),
    step(4, 4, status(4, 4, 50, "90")),
    step(5, 4, status(4, 4, 50, "90")),
    step(6, 4, status(4, 4, 50, "90")),
    step(7, 3, status(4, 3, 20, "90"), rescale=(4, 3)),
]


def test_metric_rows() -> None:
    cpu, queue = metric_rows(SPEC, status(2, 4, 100, "150"))
    assert (cpu.label, cpu.unit, cpu.current, cpu.target) == ("cpu", "%", 100.0, 50.0)
    assert (cpu.current_text, cpu.target_text) == ("100%", "50%")
    assert (queue.label, queue.current, queue.target) == ("external:queue", 150.0, 100.0)
    unknown, _ = metric_rows(SPEC, status(2, 0, None, "1500m"))
    assert unknown.current is None and unknown.current_text == "?"


def test_timeline_folds_identical_steps() -> None:
    out = io.StringIO()
    write_timeline(RESULTS, out, start=START, header="Scenario t")
    lines = out.getvalue().splitlines()
    assert lines[0] == "Scenario t"
    assert lines[2].startswith("00:00:00      0  default/web")
    assert "replicas 2→2" in lines[2] and "cpu ?/50%, external:queue 10/100" in lines[2]
    assert lines[3].strip() == "Warning FailedGetResourceMetric (default/web): boom"
    assert lines[4].strip() == "… 2 more step(s) the same, events repeated, until 00:00:30"
    assert lines[5].startswith("00:00:45      3") and "replicas 2→4" in lines[5]
    assert lines[7].startswith("00:01:00      4")
    assert lines[8].strip() == "… 2 more step(s) unchanged, until 00:01:30"
    assert lines[9].startswith("00:01:45      7") and "replicas 4→3" in lines[9]
    assert len(lines) == 10


def test_summary() -> None:
    summary = summarize(RESULTS, start=START, period=15)
    (s,) = summary.hpas
    assert (s.peak_replicas, s.peak_time, s.final_replicas) == (4, 45.0, 3)
    assert (s.scale_events, s.scale_ups, s.scale_downs) == (2, 1, 1)
    # Only step 3 has a metric above target (cpu 100% > 50%, queue 150 > 100).
    assert s.above_target_seconds == 15.0
    assert s.warnings == {"FailedGetResourceMetric": 3}
    out = io.StringIO()
    write_summary(summary, out)
    assert "Summary: 8 steps over 1m45s of virtual time" in out.getvalue()
    assert (
        "default/web: peak 4 replicas (at 00:00:45), final 3; 2 scale events (1 up, 1 down); "
        "above target for 15s" in out.getvalue()
    )


def test_svg_has_a_panel_per_metric() -> None:
    svg = render_svg(RESULTS, start=START, title="t")
    assert svg.startswith("<svg ") and svg.rstrip().endswith("</svg>")
    for title in (
        "default/web: replicas",
        "default/web: cpu (% of request)",
        "default/web: external:queue",
    ):
        assert title in svg
    assert render_svg([], start=START).count("no HPAs") == 1
