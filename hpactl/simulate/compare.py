"""`hpactl simulate A.yaml --compare B.yaml`: two HPA specs on the same load.

Both scenarios run, one after the other, each on its own emulator and controller.
What is compared, per HPA (matched by namespace/name) and per scale target:

* replicas over time (the target's `spec.replicas` after each sync);
* pod-hours: replicas integrated over virtual time;
* time above target, per metric (the metric's current value above its target);
* scale events, up and down (from the controller's decisions, as in the summary);
* the highest replica count.

Time accounting is the summary's: each step's state holds until the next step, and
the last step's for one sync period, so a day of 15 s steps counts exactly 24 h.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from hpactl.model.times import format_go_duration
from hpactl.simulate.output import format_offset, metric_rows
from hpactl.simulate.plot import Line, PanelSpec, PlotError, check_plot_path, render_panels_svg
from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import Scenario

__all__ = [
    "COMPARE_PLOT_SUFFIXES",
    "HPAStats",
    "Variant",
    "check_compare_plot_path",
    "demand_differences",
    "hpa_stats",
    "render_compare_svg",
    "replicas_changes",
    "run_variant",
    "write_compare_plot",
    "write_comparison",
    "write_comparison_jsonl",
]

COMPARE_PLOT_SUFFIXES = (".svg", ".html", ".htm")
_COLORS = {"a": "#1f77b4", "b": "#ff7f0e", "target": "#d62728"}


@dataclass(slots=True)
class Variant:
    """One side of the comparison: its label (`A`, `B`), the file, what it did."""

    label: str
    path: str
    scenario: Scenario
    results: list[StepResult]

    @property
    def start(self) -> datetime:
        return self.scenario.start


@dataclass(slots=True)
class HPAStats:
    key: str
    target: str = ""  # the scale target's key, `Kind/namespace/name`
    pod_seconds: float = 0.0
    max_replicas: int | None = None
    scale_ups: int = 0
    scale_downs: int = 0
    above_target: dict[str, float] = field(default_factory=dict)  # metric label -> seconds

    @property
    def pod_hours(self) -> float:
        return self.pod_seconds / 3600

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "podHours": round(self.pod_hours, 3),
            "maxReplicas": self.max_replicas,
            "scaleUps": self.scale_ups,
            "scaleDowns": self.scale_downs,
            "aboveTargetSeconds": {k: round(v, 3) for k, v in self.above_target.items()},
        }


async def run_variant(scenario: Scenario) -> list[StepResult]:
    async with Simulation(scenario) as sim:
        return await sim.run()


def _target_key(result: StepResult, hpa_key: str) -> str:
    ref = (result.specs.get(hpa_key) or {}).get("scaleTargetRef") or {}
    return f"{ref.get('kind')}/{hpa_key.partition('/')[0]}/{ref.get('name')}"


def _spans(results: Sequence[StepResult], period: float) -> list[float]:
    """How long each step's state holds: until the next step; the last, one period."""
    out = []
    for i, r in enumerate(results):
        if i + 1 < len(results):
            out.append(max(0.0, (results[i + 1].time - r.time).total_seconds()))
        else:
            out.append(period)
    return out


def hpa_stats(results: Sequence[StepResult], *, period: float) -> dict[str, HPAStats]:
    """Pod-hours, highest count, scale events and time above target, per HPA."""
    stats: dict[str, HPAStats] = {}
    for r, span in zip(results, _spans(results, period), strict=True):
        for key in sorted(r.hpas):
            s = stats.setdefault(key, HPAStats(key))
            s.target = _target_key(r, key)
            reps = (r.targets.get(s.target) or {}).get("replicas")
            if isinstance(reps, int):
                s.pod_seconds += reps * span
                s.max_replicas = reps if s.max_replicas is None else max(s.max_replicas, reps)
            for row in metric_rows(r.specs.get(key) or {}, r.hpas[key]):
                above = s.above_target.setdefault(row.label, 0.0)
                if row.current is not None and row.target is not None and row.current > row.target:
                    s.above_target[row.label] = above + span
        for key, (before, after) in r.rescales.items():
            s = stats.setdefault(key, HPAStats(key))
            if before is not None and after is not None:
                if after > before:
                    s.scale_ups += 1
                elif after < before:
                    s.scale_downs += 1
    return dict(sorted(stats.items()))


def replicas_changes(
    results: Sequence[StepResult], start: datetime
) -> dict[str, list[tuple[float, int | None]]]:
    """Per scale target: (seconds since start, replicas) at the first step and at
    every step where the count differs from the step before."""
    out: dict[str, list[tuple[float, int | None]]] = {}
    for r in results:
        t = (r.time - start).total_seconds()
        for tkey, info in r.targets.items():
            reps = info.get("replicas")
            value = reps if isinstance(reps, int) else None
            series = out.setdefault(tkey, [])
            if not series or series[-1][1] != value:
                series.append((t, value))
    return out


def demand_differences(a: Scenario, b: Scenario) -> list[str]:
    """Where the two scenarios' workload demand is not the same (`target resource`)."""
    da = {s.key: dict(s.demand) for s in a.workload}
    db = {s.key: dict(s.demand) for s in b.workload}
    out = []
    for key in sorted(da.keys() | db.keys()):
        ra, rb = da.get(key, {}), db.get(key, {})
        for res in sorted(ra.keys() | rb.keys()):
            if ra.get(res) != rb.get(res):
                out.append(f"{key} {res}")
    return out


# ------------------------------------------------------------------------ text


def _dur(seconds: float) -> str:
    return format_go_duration(timedelta(seconds=round(seconds)))


def _hours(h: float) -> str:
    return f"{h:.1f}" if h >= 10 else f"{h:.2f}"


def _pct(a: float, b: float) -> str:
    if a == 0:
        return ""
    return f"({(b - a) / a * 100:+.0f}%)"


def _held(series: Sequence[tuple[float, int | None]], t: float) -> int | None:
    value: int | None = None
    for ts, v in series:
        if ts > t:
            break
        value = v
    return value


def write_comparison(a: Variant, b: Variant, out: TextIO) -> None:
    """The comparison as readable text: a table per HPA, then replicas at each change."""
    sa = hpa_stats(a.results, period=a.scenario.sync_period)
    sb = hpa_stats(b.results, period=b.scenario.sync_period)
    out.write("Comparing two scenarios on the same load\n")
    for v in (a, b):
        dur = sum(_spans(v.results, v.scenario.sync_period))
        out.write(
            f"  {v.label}: {v.path} ({v.scenario.name}), {len(v.results)} steps covering "
            f"{_dur(dur)} of virtual time\n"
        )
    diff = demand_differences(a.scenario, b.scenario)
    if diff:
        out.write(f"  note: the workload demand differs ({', '.join(diff)})\n")
    w = 28
    for key in sorted(sa.keys() | sb.keys()):
        x, y = sa.get(key), sb.get(key)
        out.write(f"\n{key:<{w}}  {a.label:>14}  {b.label:>14}\n")

        def row(name: str, va: str, vb: str, note: str = "") -> None:
            out.write(f"  {name:<{w - 2}}  {va:>14}  {vb:>14}  {note}".rstrip() + "\n")

        row(
            "pod-hours",
            _hours(x.pod_hours) if x else "-",
            _hours(y.pod_hours) if y else "-",
            _pct(x.pod_hours, y.pod_hours) if x and y else "",
        )
        row(
            "max replicas",
            str(x.max_replicas) if x and x.max_replicas is not None else "-",
            str(y.max_replicas) if y and y.max_replicas is not None else "-",
        )
        row(
            "scale events (up/down)",
            f"{x.scale_ups + x.scale_downs} ({x.scale_ups}/{x.scale_downs})" if x else "-",
            f"{y.scale_ups + y.scale_downs} ({y.scale_ups}/{y.scale_downs})" if y else "-",
        )
        labels = list(x.above_target if x else {})
        labels += [m for m in (y.above_target if y else {}) if m not in labels]
        for m in labels:
            row(
                f"above target: {m}",
                _dur(x.above_target[m]) if x and m in x.above_target else "-",
                _dur(y.above_target[m]) if y and m in y.above_target else "-",
            )
    ca = replicas_changes(a.results, a.start)
    cb = replicas_changes(b.results, b.start)
    for tkey in sorted(ca.keys() | cb.keys()):
        sa_, sb_ = ca.get(tkey, []), cb.get(tkey, [])
        times = sorted({t for t, _ in sa_} | {t for t, _ in sb_})
        out.write(f"\nReplicas of {tkey} at each change\n")
        out.write(f"  {'time':<8}  {a.label:>5}  {b.label:>5}\n")
        for t in times:
            va, vb = _held(sa_, t), _held(sb_, t)
            out.write(f"  {format_offset(t):<8}  {_n(va):>5}  {_n(vb):>5}\n")


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)


def write_comparison_jsonl(a: Variant, b: Variant, out: TextIO) -> None:
    """One line per step time, `{"time", "replicas": {target: {"a": n, "b": n}}}`
    (each side's count at that time, null before its first step), then one
    `{"summary": {"a": {hpa: stats}, "b": {...}}}` line."""
    ca = replicas_changes(a.results, a.start)
    cb = replicas_changes(b.results, b.start)
    times = sorted(
        {(r.time - a.start).total_seconds() for r in a.results}
        | {(r.time - b.start).total_seconds() for r in b.results}
    )
    targets = sorted(ca.keys() | cb.keys())
    ia = {k: 0 for k in targets}
    ib = {k: 0 for k in targets}
    now_a: dict[str, int | None] = dict.fromkeys(targets)
    now_b: dict[str, int | None] = dict.fromkeys(targets)
    for t in times:
        line: dict[str, Any] = {"time": _stamp(a.start, t), "replicas": {}}
        for k in targets:
            for series, idx, now in ((ca.get(k, []), ia, now_a), (cb.get(k, []), ib, now_b)):
                while idx[k] < len(series) and series[idx[k]][0] <= t:
                    now[k] = series[idx[k]][1]
                    idx[k] += 1
            line["replicas"][k] = {"a": now_a[k], "b": now_b[k]}
        out.write(json.dumps(line, separators=(", ", ": ")) + "\n")
    summary = {
        "a": {
            "file": a.path,
            "hpas": {
                k: s.to_json()
                for k, s in hpa_stats(a.results, period=a.scenario.sync_period).items()
            },
        },
        "b": {
            "file": b.path,
            "hpas": {
                k: s.to_json()
                for k, s in hpa_stats(b.results, period=b.scenario.sync_period).items()
            },
        },
    }
    out.write(json.dumps({"summary": summary}, separators=(", ", ": ")) + "\n")


def _stamp(start: datetime, t: float) -> str:
    return (start + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------ plot


def check_compare_plot_path(path: str | Path) -> None:
    """Fail before running anything: the combined plot is `.svg` or `.html`."""
    check_plot_path(path)
    if Path(path).suffix.lower() not in COMPARE_PLOT_SUFFIXES:
        raise PlotError(f"--plot {path}: with --compare the plot is .svg or .html")


def _metric_points(
    results: Sequence[StepResult], start: datetime
) -> dict[
    tuple[str, str], tuple[list[tuple[float, float | None]], list[tuple[float, float | None]]]
]:
    """(hpa, metric label) -> (current, target) points."""
    out: dict[
        tuple[str, str], tuple[list[tuple[float, float | None]], list[tuple[float, float | None]]]
    ] = {}
    for r in results:
        t = (r.time - start).total_seconds()
        for key in sorted(r.hpas):
            for row in metric_rows(r.specs.get(key) or {}, r.hpas[key]):
                cur, tgt = out.setdefault(
                    (key, row.label + (" (%)" if row.unit == "%" else "")), ([], [])
                )
                cur.append((t, row.current))
                tgt.append((t, row.target))
    return out


def render_compare_svg(a: Variant, b: Variant, *, title: str = "") -> str:
    """Replicas of A and B in one panel per scale target, then each metric of each
    HPA: A's and B's current value against the target (drawn by hpactl.simulate.plot)."""
    t_max = max([(r.time - v.start).total_seconds() for v in (a, b) for r in v.results] or [0.0])
    specs: list[PanelSpec] = []
    ra, rb = _replicas_points(a), _replicas_points(b)
    for tkey in sorted(ra.keys() | rb.keys()):
        specs.append(
            PanelSpec(
                f"{tkey}: replicas",
                [
                    Line(f"{a.label}: {a.scenario.name}", _COLORS["a"], ra.get(tkey, [])),
                    Line(
                        f"{b.label}: {b.scenario.name}",
                        _COLORS["b"],
                        rb.get(tkey, []),
                        dash="6,3",
                    ),
                ],
                integer=True,
            )
        )
    ma, mb = _metric_points(a.results, a.start), _metric_points(b.results, b.start)
    for mkey in sorted(ma.keys() | mb.keys()):
        lines = []
        if mkey in ma:
            lines.append(Line(a.label, _COLORS["a"], ma[mkey][0], step=False))
        if mkey in mb:
            lines.append(Line(b.label, _COLORS["b"], mb[mkey][0], step=False))
        lines.append(Line("target", _COLORS["target"], (ma.get(mkey) or mb[mkey])[1], dash="6,3"))
        specs.append(PanelSpec(f"{mkey[0]}: {mkey[1]}", lines))
    return render_panels_svg(specs, t_max=t_max, title=title)


def _replicas_points(v: Variant) -> dict[str, list[tuple[float, float | None]]]:
    out: dict[str, list[tuple[float, float | None]]] = {}
    for r in v.results:
        t = (r.time - v.start).total_seconds()
        for tkey, info in r.targets.items():
            reps = info.get("replicas")
            out.setdefault(tkey, []).append((t, float(reps) if isinstance(reps, int) else None))
    return out


def write_compare_plot(path: str | Path, a: Variant, b: Variant, *, text: str = "") -> Path:
    """The combined plot; `.html` adds the comparison text below the SVG."""
    p = Path(path)
    check_compare_plot_path(p)
    title = f"hpactl simulate: {a.scenario.name} ({a.label}) vs {b.scenario.name} ({b.label})"
    if p.suffix.lower() == ".svg":
        p.write_text(render_compare_svg(a, b, title=title), encoding="utf-8")
        return p
    svg = render_compare_svg(a, b)
    doc = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:24px;color:#222}"
        "pre{background:#f6f6f6;padding:12px;overflow-x:auto}</style>",
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
        svg,
    ]
    if text:
        doc.append(f"<pre>{html.escape(text.strip())}</pre>")
    doc.append("</body></html>")
    p.write_text("\n".join(doc) + "\n", encoding="utf-8")
    return p
