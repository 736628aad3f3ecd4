"""The plot's panels: replicas with scale markers, demand, metrics (no emulator)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from hpactl.simulate import plot
from hpactl.simulate.plot import HPAData, Line, Marker, PanelSpec, render_svg
from hpactl.simulate.runner import StepResult
from tests.simulate.test_output import RESULTS, START, status, step

TARGET = "Deployment/default/web"


def with_demand(results: list[StepResult]) -> list[StepResult]:
    return [replace(r, demand={TARGET: {"cpu": 0.5 + 0.25 * r.step}}) for r in results]


def collected(results: list[StepResult]) -> HPAData:
    (d,) = plot._collect(results, START)
    return d


def test_scale_events_are_markers_at_the_new_count() -> None:
    d = collected(RESULTS)
    # RESULTS rescales 2 -> 4 at step 3 (45 s) and 4 -> 3 at step 7 (105 s).
    assert d.rescales == [Marker(45.0, 4.0, up=True), Marker(105.0, 3.0, up=False)]
    (replicas_panel,) = plot._replicas_panel(d)
    assert replicas_panel.markers == d.rescales
    svg = render_svg(RESULTS, start=START)
    # One triangle per rescale plus one legend triangle per direction.
    assert svg.count("<polygon") == 4
    assert ">scale up<" in svg and ">scale down<" in svg


def test_no_rescale_no_marker() -> None:
    steady = [step(n, 2, status(2, 2, 50, "90")) for n in range(4)]
    assert collected(steady).rescales == []
    svg = render_svg(steady, start=START)
    assert "<polygon" not in svg and "scale up" not in svg


def test_replicas_stay_visible_under_desired() -> None:
    # Equal all along: the replicas line must not be hidden by the desired one.
    steady = [step(n, 2, status(2, 2, 50, "90")) for n in range(4)]
    svg = render_svg(steady, start=START)
    lines = re.findall(
        r'<polyline points="([^"]*)" fill="none" stroke="(#\w+)" '
        r'stroke-width="([\d.]+)"',
        svg,
    )
    by_color = {color: (i, pts, float(w)) for i, (pts, color, w) in enumerate(lines)}
    rep_i, rep_pts, rep_w = by_color[plot.COLORS["replicas"]]
    des_i, des_pts, des_w = by_color[plot.COLORS["desired"]]
    assert rep_pts == des_pts  # the same path...
    assert rep_i < des_i  # ...replicas drawn first (underneath)...
    assert rep_w >= 2 * des_w  # ...and wide enough to show on both sides of desired


def test_demand_panel_only_with_a_workload_demand() -> None:
    titles = [p.title for p in plot.hpa_panels(collected(RESULTS))]
    assert not any("demand" in t for t in titles)
    d = collected(with_demand(RESULTS))
    panels = plot.hpa_panels(d)
    titles = [p.title for p in panels]
    # Right after the replicas panel, before the metric panels.
    assert titles == [
        "default/web: replicas",
        "Deployment/default/web: cpu demand (total over its pods, cores)",
        "default/web: cpu (% of request)",
        "default/web: external:queue",
    ]
    (line,) = panels[1].lines
    assert [v for _, v in line.points] == [0.5 + 0.25 * n for n in range(len(RESULTS))]
    assert "cpu demand" in render_svg(with_demand(RESULTS), start=START)


def test_memory_demand_in_mib() -> None:
    results = [replace(r, demand={TARGET: {"memory": 64.0 * 2**20}}) for r in RESULTS]
    (panel,) = plot._demand_panels(collected(results))
    assert "MiB" in panel.title
    assert {v for _, v in panel.lines[0].points} == {64.0}


def test_a_panel_function_adds_a_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another view (pods per zone, ...) is one function appended to PANELS."""

    def zones(d: HPAData) -> list[PanelSpec]:
        pts = [(t, float(r.step % 3)) for t, r in d.steps]
        return [PanelSpec(f"{d.target}: pods per zone", [Line("zone-a", plot.PALETTE[0], pts)])]

    monkeypatch.setattr(plot, "PANELS", [*plot.PANELS, zones])
    svg = render_svg(RESULTS, start=START)
    assert "Deployment/default/web: pods per zone" in svg
    assert ">zone-a<" in svg


def test_a_long_run_stays_small() -> None:
    """A week at 15 s: held values and dense curves are thinned, not the picture."""
    week = 7 * 24 * 3600 // 15
    results = []
    for n in range(week):
        reps = 2 + (n // 2000) % 5
        cpu = 40 + (n * 7919) % 41  # jumps between 40 and 80
        r = step(n, reps, status(reps, reps, cpu, "90"))
        results.append(replace(r, demand={TARGET: {"cpu": cpu / 100}}))
    svg = render_svg(results, start=START)
    assert len(svg) < 400_000
    assert results[-1].time - START == timedelta(seconds=15 * (week - 1))
    # The extremes of the noisy series survive the thinning: 40% and 80% drawn.
    d = collected(results)
    (cpu_panel,) = [p for p in plot.hpa_panels(d) if p.title.endswith("cpu (% of request)")]
    p = plot._Panel(0, 160, week * 15.0, plot._vmax(cpu_panel.lines), "t")
    p.line(cpu_panel.lines[0])
    ys = [
        float(y)
        for pts in re.findall(r'points="([^"]*)"', "".join(p.parts))
        for y in re.findall(r",([\d.]+)", pts)
    ]
    assert min(ys) == pytest.approx(p.y(80), abs=0.1)
    assert max(ys) == pytest.approx(p.y(40), abs=0.1)


def test_demand_of_another_target_is_not_drawn() -> None:
    # Demand for another target is not drawn under this HPA.
    results = [replace(r, demand={"Deployment/default/other": {"cpu": 1.0}}) for r in RESULTS]
    assert not plot._demand_panels(collected(results))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_png_draws_the_same_panels(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plain, with_d = tmp_path / "a.png", tmp_path / "b.png"
    plot.write_plot(plain, RESULTS, start=START, title="t")
    plot.write_plot(with_d, with_demand(RESULTS), start=START, title="t")
    (w1, h1), (w2, h2) = png_size(plain.read_bytes()), png_size(with_d.read_bytes())
    # One panel per PanelSpec, 2.6 inches at 100 dpi each: the demand adds one.
    assert w1 == w2 == 1000
    assert (h1, h2) == (3 * 260, 4 * 260)
