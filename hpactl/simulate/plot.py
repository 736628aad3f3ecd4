"""`--plot FILE`: replicas, scale events, demand and each metric against its target.

`.svg` and `.html` (the SVG inline, with the summary) are written with no extra
dependency; `.png` uses matplotlib when it is installed and says so when it is not.

Each HPA gets a stack of panels, top to bottom: the scale target's replicas and the
HPA's desired replicas (with the min/max bounds and a marker at every rescale); the
workload's total demand per resource when the scenario has a `workload` demand; one
panel per metric, the current value against the target. A panel is a `PanelSpec`
(lines and markers) built from the recorded steps by one of the functions in
`PANELS`; the SVG and PNG writers draw any `PanelSpec`, so another view of the run
is one more function there.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hpactl.simulate.output import format_offset, metric_rows
from hpactl.simulate.runner import StepResult

__all__ = [
    "PANELS",
    "PLOT_SUFFIXES",
    "HPAData",
    "Line",
    "Marker",
    "PanelSpec",
    "PlotError",
    "check_plot_path",
    "hpa_panels",
    "render_svg",
    "write_plot",
]

PLOT_SUFFIXES = (".svg", ".html", ".htm", ".png")

WIDTH = 960
PANEL_H = 200
METRIC_H = 160
MARGIN_L = 64
MARGIN_R = 24
TITLE_H = 34
GAP = 46

COLORS = {
    "replicas": "#1f77b4",
    "desired": "#ff7f0e",
    "bounds": "#9a9a9a",
    "current": "#2ca02c",
    "target": "#d62728",
    "demand": "#9467bd",
    "scale up": "#111111",
    "scale down": "#111111",
}
# For panels with one line per domain (zones, nodes): distinct, readable on white.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)

Points = list[tuple[float, float | None]]  # (seconds since start, value or None: a gap)


class PlotError(Exception):
    """The plot cannot be written (unknown suffix, matplotlib missing)."""


def check_plot_path(path: str | Path) -> None:
    """Fail before running anything when the plot could not be written."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        raise PlotError(
            f"--plot {path}: unsupported file type {suffix or '(none)'!r}; use .svg, .html or .png"
        )
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise PlotError(f"--plot {path}: directory {parent} does not exist")
    if suffix == ".png" and importlib.util.find_spec("matplotlib") is None:
        raise PlotError(
            f"--plot {path}: writing PNG needs matplotlib, which is not installed "
            "(pip install matplotlib); .svg and .html need nothing extra"
        )


# ------------------------------------------------------------------------ what to draw


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    color: str
    points: Points
    step: bool = True  # hold each value until the next point (counts); False: straight
    dash: str = ""  # SVG dash pattern, e.g. "6,3"; "" is solid
    width: float = 2.0
    legend: bool = True


@dataclass(frozen=True, slots=True)
class Marker:
    """A point event drawn as a triangle: a rescale, up or down."""

    t: float
    value: float
    up: bool

    @property
    def label(self) -> str:
        return "scale up" if self.up else "scale down"


@dataclass(slots=True)
class PanelSpec:
    title: str
    lines: list[Line]
    markers: list[Marker] = field(default_factory=list)
    integer: bool = False  # a whole-number y axis (counts)
    height: int = METRIC_H


@dataclass(slots=True)
class _Series:
    label: str
    unit: str
    current: Points = field(default_factory=list)
    target: Points = field(default_factory=list)


@dataclass(slots=True)
class HPAData:
    """One HPA's recorded run, as the panel functions read it."""

    key: str  # namespace/name
    target: str = ""  # the scale target's key in StepResult.targets (kind/namespace/name)
    replicas: Points = field(default_factory=list)
    desired: Points = field(default_factory=list)
    min_r: Points = field(default_factory=list)
    max_r: Points = field(default_factory=list)
    metrics: dict[str, _Series] = field(default_factory=dict)
    demand: dict[str, Points] = field(default_factory=dict)  # resource -> total demand
    rescales: list[Marker] = field(default_factory=list)
    # Every step as recorded (seconds since start, result): for panels that read
    # other fields of the results (a target's pods per zone, ...).
    steps: list[tuple[float, StepResult]] = field(default_factory=list)


def _collect(results: Sequence[StepResult], start: datetime) -> list[HPAData]:
    data: dict[str, HPAData] = {}
    for r in results:
        t = (r.time - start).total_seconds()
        for key in sorted(r.hpas):
            d = data.setdefault(key, HPAData(key))
            d.steps.append((t, r))
            status = r.hpas[key]
            spec = r.specs.get(key) or {}
            ref = spec.get("scaleTargetRef") or {}
            ns = key.partition("/")[0]
            d.target = f"{ref.get('kind')}/{ns}/{ref.get('name')}"
            reps = (r.targets.get(d.target) or {}).get("replicas")
            d.replicas.append((t, float(reps) if isinstance(reps, int) else None))
            des = status.get("desiredReplicas")
            d.desired.append((t, float(des) if isinstance(des, int) else None))
            d.min_r.append((t, float(spec.get("minReplicas", 1))))
            mx = spec.get("maxReplicas")
            d.max_r.append((t, float(mx) if isinstance(mx, int) else None))
            for row in metric_rows(spec, status):
                s = d.metrics.setdefault(row.label, _Series(row.label, row.unit))
                s.current.append((t, row.current))
                s.target.append((t, row.target))
            for res, value in (r.demand.get(d.target) or {}).items():
                d.demand.setdefault(res, []).append((t, value))
            before, after = r.rescales.get(key, (None, None))
            if after is not None:
                d.rescales.append(Marker(t, float(after), up=before is None or after > before))
    return [data[k] for k in sorted(data)]


def _replicas_panel(d: HPAData) -> list[PanelSpec]:
    lines = [
        Line("min/max", COLORS["bounds"], d.max_r, dash="2,3", width=1.5),
        Line("min", COLORS["bounds"], d.min_r, dash="2,3", width=1.5, legend=False),
        # Wide and drawn first, then desired thin and dashed on top: where the two
        # agree the replicas line still shows on both sides of the desired one.
        Line("replicas", COLORS["replicas"], d.replicas, width=5.0),
        Line("desired", COLORS["desired"], d.desired, dash="6,3", width=1.8),
    ]
    return [
        PanelSpec(f"{d.key}: replicas", lines, markers=d.rescales, integer=True, height=PANEL_H)
    ]


def _demand_unit(resource: str) -> tuple[str, float]:
    """(unit text, divisor) for a resource's demand, given in the resource's unit."""
    if resource == "cpu":
        return "cores", 1.0
    if resource == "memory":
        return "MiB", float(2**20)
    return "", 1.0


def _demand_panels(d: HPAData) -> list[PanelSpec]:
    """The workload's total demand, beside the metric it drives."""
    out = []
    for res, pts in d.demand.items():
        unit, div = _demand_unit(res)
        scaled: Points = [(t, None if v is None else v / div) for t, v in pts]
        title = f"{d.target}: {res} demand (total over its pods{', ' + unit if unit else ''})"
        out.append(PanelSpec(title, [Line("demand", COLORS["demand"], scaled, step=False)]))
    return out


def _metric_panels(d: HPAData) -> list[PanelSpec]:
    out = []
    for s in d.metrics.values():
        unit = " (% of request)" if s.unit == "%" else ""
        out.append(
            PanelSpec(
                f"{d.key}: {s.label}{unit}",
                [
                    Line("current", COLORS["current"], s.current, step=False),
                    Line("target", COLORS["target"], s.target, dash="6,3"),
                ],
            )
        )
    return out


# ---- pods per zone (scenarios with `nodes`) ------------------------------------


def _zone_panels(d: HPAData) -> list[PanelSpec]:
    """The target's scheduled pods per zone, its Pending pods, and the skew per
    topology key of its spread constraints; nothing when the scenario has no nodes."""
    zones: dict[str, Points] = {}
    pending: Points = []
    skews: dict[str, Points] = {}
    for t, r in d.steps:
        target = r.targets.get(d.target) or {}
        if "pods" not in target:
            continue
        for zone, n in (r.zones.get(d.target) or {}).items():
            zones.setdefault(zone, []).append((t, float(n)))
        pending.append((t, float(target["pods"].get("Pending", 0))))
        for key, v in (target.get("skew") or {}).items():
            skews.setdefault(key, []).append((t, float(v)))
    if not pending:
        return []
    lines = [
        Line(f"zone {z}", PALETTE[i % len(PALETTE)], pts)
        for i, (z, pts) in enumerate(zones.items())
    ]
    if any(v for _, v in pending):
        lines.append(Line("Pending", COLORS["bounds"], pending, dash="4,3"))
    for key, pts in skews.items():
        short = key.rpartition("/")[2]
        lines.append(Line(f"skew ({short})", "#111111", pts, dash="1,3", width=1.5))
    return [PanelSpec(f"{d.target}: pods per zone", lines, integer=True)]


# The panels of one HPA, top to bottom: each function returns zero or more panels.
PANELS: list[Callable[[HPAData], list[PanelSpec]]] = [
    _replicas_panel,
    _zone_panels,
    _demand_panels,
    _metric_panels,
]


def hpa_panels(d: HPAData) -> list[PanelSpec]:
    return [p for build in PANELS for p in build(d)]


# ------------------------------------------------------------------------ SVG


def _nice_step(span: float, ticks: int = 5, *, integer: bool = False) -> float:
    if span <= 0:
        return 1.0
    raw = span / ticks
    if integer and raw <= 1:
        return 1.0
    mag = float(10.0 ** math.floor(math.log10(raw)))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt_num(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:.3g}"


def _thin(pts: Sequence[tuple[float, float]], columns: float) -> list[tuple[float, float]]:
    """At most about four points per pixel column (first, lowest, highest, last in
    time order): a week of steps draws the same picture in a fraction of the size."""
    if len(pts) <= 4 * columns:
        return list(pts)
    out: list[tuple[float, float]] = []
    bucket: list[tuple[float, float]] = []
    col = math.floor(pts[0][0])

    def flush() -> None:
        if not bucket:
            return
        lo = min(bucket, key=lambda p: p[1])
        hi = max(bucket, key=lambda p: p[1])
        keep = sorted({bucket[0], lo, hi, bucket[-1]}, key=lambda p: p[0])
        out.extend(keep)
        bucket.clear()

    for p in pts:
        c = math.floor(p[0])
        if c != col:
            flush()
            col = c
        bucket.append(p)
    flush()
    return out


class _Panel:
    def __init__(
        self, y0: float, h: float, t_max: float, v_max: float, title: str, *, integer: bool = False
    ) -> None:
        self.x0 = MARGIN_L
        self.x1 = WIDTH - MARGIN_R
        self.y0 = y0 + 22  # room for the title/legend line
        self.y1 = y0 + h
        self.t_max = t_max if t_max > 0 else 1.0
        self.v_step = _nice_step(v_max if v_max > 0 else 1.0, integer=integer)
        if integer and self.v_step != int(self.v_step):
            self.v_step = float(math.ceil(self.v_step))
        self.v_max = math.ceil((v_max if v_max > 0 else 1.0) / self.v_step) * self.v_step
        self.title = title
        self.parts: list[str] = []

    def x(self, t: float) -> float:
        return self.x0 + (self.x1 - self.x0) * t / self.t_max

    def y(self, v: float) -> float:
        return self.y1 - (self.y1 - self.y0) * v / self.v_max

    def axes(self) -> None:
        p = self.parts
        p.append(
            f'<text x="{self.x0}" y="{self.y0 - 8:.1f}" class="title">{html.escape(self.title)}</text>'
        )
        v = 0.0
        while v <= self.v_max + 1e-9:
            y = self.y(v)
            p.append(
                f'<line x1="{self.x0}" y1="{y:.1f}" x2="{self.x1}" y2="{y:.1f}" class="grid"/>'
            )
            p.append(f'<text x="{self.x0 - 6}" y="{y + 4:.1f}" class="ylab">{_fmt_num(v)}</text>')
            v += self.v_step
        t_step = _nice_time_step(self.t_max)
        t = 0.0
        while t <= self.t_max + 1e-9:
            x = self.x(t)
            p.append(
                f'<line x1="{x:.1f}" y1="{self.y0}" x2="{x:.1f}" y2="{self.y1}" class="grid"/>'
            )
            p.append(
                f'<text x="{x:.1f}" y="{self.y1 + 16:.1f}" class="xlab">{format_offset(t)}</text>'
            )
            t += t_step
        p.append(
            f'<rect x="{self.x0}" y="{self.y0}" width="{self.x1 - self.x0}" '
            f'height="{self.y1 - self.y0}" class="frame"/>'
        )

    def line(self, ln: Line) -> None:
        segs: list[list[tuple[float, float]]] = [[]]
        prev: tuple[float, float] | None = None
        last = len(ln.points) - 1
        for i, (t, v) in enumerate(ln.points):
            if v is None:
                if segs[-1]:
                    segs.append([])
                prev = None
                continue
            x, y = self.x(t), self.y(min(v, self.v_max))
            if ln.step and prev is not None:
                if y == prev[1] and i < last and ln.points[i + 1][1] is not None:
                    continue  # a held value: the next change draws it
                segs[-1].append((x, prev[1]))
            segs[-1].append((x, y))
            prev = (x, y)
        dash_attr = f' stroke-dasharray="{ln.dash}"' if ln.dash else ""
        for seg in segs:
            if not seg:
                continue
            if len(seg) == 1:
                x, y = seg[0]
                r = max(2.0, ln.width / 2)
                self.parts.append(
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{ln.color}"/>'
                )
                continue
            if not ln.step:
                seg = _thin(seg, self.x1 - self.x0)
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in seg)
            self.parts.append(
                f'<polyline points="{d}" fill="none" stroke="{ln.color}" '
                f'stroke-width="{ln.width:g}"{dash_attr}/>'
            )

    def _triangle(self, x: float, y: float, up: bool, color: str, size: float = 5.0) -> str:
        tip = -size if up else size
        pts = f"{x:.1f},{y + tip:.1f} {x - size:.1f},{y - tip:.1f} {x + size:.1f},{y - tip:.1f}"
        return f'<polygon points="{pts}" fill="{color}" stroke="white" stroke-width="0.8"/>'

    def markers(self, markers: Sequence[Marker]) -> None:
        for m in markers:
            x = self.x(m.t)
            # Beside the new count, pointing the way the count moved.
            y = self.y(min(m.value, self.v_max)) + (-9 if m.up else 9)
            self.parts.append(self._triangle(x, y, m.up, COLORS[m.label]))

    def legend(self, spec: PanelSpec) -> None:
        items: list[tuple[str, str, str, float, bool | None]] = [
            (ln.label, ln.color, ln.dash, ln.width, None) for ln in spec.lines if ln.legend
        ]
        for direction in (True, False):
            if any(m.up == direction for m in spec.markers):
                name = "scale up" if direction else "scale down"
                items.append((name, COLORS[name], "", 0.0, direction))
        x: float = self.x1
        y = self.y0 - 12
        for label, color, dash, width, up in reversed(items):
            x -= 34 + 6.5 * len(label)
            if up is not None:
                self.parts.append(self._triangle(x + 11, y, up, color, 4.5))
            else:
                dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
                self.parts.append(
                    f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 22:.1f}" y2="{y:.1f}" '
                    f'stroke="{color}" stroke-width="{min(width, 3.0):g}"{dash_attr}/>'
                )
            self.parts.append(
                f'<text x="{x + 26:.1f}" y="{y + 4:.1f}" class="legend">{html.escape(label)}</text>'
            )


def _nice_time_step(t_max: float) -> float:
    for s in (15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400):
        if t_max / s <= 10:
            return float(s)
    return 86400.0 * math.ceil(t_max / 86400 / 10)


def _vmax(lines: Sequence[Line], markers: Sequence[Marker] = ()) -> float:
    vals = [v for ln in lines for _, v in ln.points if v is not None]
    vals.extend(m.value for m in markers)
    return max(vals) * 1.1 if vals else 1.0


def render_svg(results: Sequence[StepResult], *, start: datetime, title: str = "") -> str:
    """The whole plot as one standalone SVG document."""
    hpas = _collect(results, start)
    t_max = max(((r.time - start).total_seconds() for r in results), default=0.0)
    specs = [spec for d in hpas for spec in hpa_panels(d)]
    return render_panels_svg(specs, t_max=t_max, title=title, empty="" if hpas else "no HPAs")


def render_panels_svg(
    specs: Sequence[PanelSpec], *, t_max: float, title: str = "", empty: str = ""
) -> str:
    """Panels stacked on one time axis (0 .. ``t_max`` seconds), as one SVG document;
    ``empty`` is shown when there are none (``hpactl simulate --compare`` draws its
    own panels with this too)."""
    panels: list[_Panel] = []
    y = float(TITLE_H if title else 8)
    for spec in specs:
        p = _Panel(
            y,
            spec.height,
            t_max,
            _vmax(spec.lines, spec.markers),
            spec.title,
            integer=spec.integer,
        )
        p.axes()
        for ln in spec.lines:
            p.line(ln)
        p.markers(spec.markers)
        p.legend(spec)
        panels.append(p)
        y += spec.height + GAP
    height = int(y + 4)
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">',
        "<style>"
        ".title{font-size:13px;font-weight:bold;fill:#222}"
        ".legend{font-size:11px;fill:#333}"
        ".xlab{font-size:10px;fill:#555;text-anchor:middle}"
        ".ylab{font-size:10px;fill:#555;text-anchor:end}"
        ".grid{stroke:#e6e6e6;stroke-width:1}"
        ".frame{fill:none;stroke:#999;stroke-width:1}"
        "</style>",
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
    ]
    if title:
        head.append(
            f'<text x="{MARGIN_L}" y="22" font-size="16" font-weight="bold" fill="#111">'
            f"{html.escape(title)}</text>"
        )
    if empty:
        head.append(f'<text x="{MARGIN_L}" y="{y + 20}" font-size="13">{html.escape(empty)}</text>')
    body = [part for p in panels for part in p.parts]
    return "\n".join([*head, *body, "</svg>"]) + "\n"


def _render_html(svg: str, title: str, description: str, summary_text: str) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:24px;color:#222}"
        "pre{background:#f6f6f6;padding:12px;overflow-x:auto}</style>",
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if description:
        parts.append(f"<p>{html.escape(description)}</p>")
    parts.append(svg)
    if summary_text:
        parts.append(f"<pre>{html.escape(summary_text.strip())}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------ PNG


def _write_png(results: Sequence[StepResult], path: Path, start: datetime, title: str) -> None:
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt: Any = importlib.import_module("matplotlib.pyplot")
        transforms: Any = importlib.import_module("matplotlib.transforms")
    except ImportError as exc:  # checked earlier; a broken install still lands here
        raise PlotError(f"--plot {path}: matplotlib is not usable: {exc}") from None
    specs = [spec for d in _collect(results, start) for spec in hpa_panels(d)]
    t_max = max(((r.time - start).total_seconds() for r in results), default=0.0)
    unit, div = ("hours", 3600.0) if t_max > 3 * 3600 else ("minutes", 60.0)
    n = len(specs) or 1
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.6 * n), sharex=True, squeeze=False)
    for ax_row, spec in zip(axes, specs, strict=False):
        ax = ax_row[0]
        for ln in spec.lines:
            xs = [t / div for t, _ in ln.points]
            ys = [math.nan if v is None else v for _, v in ln.points]
            style: dict[str, Any] = {"color": ln.color, "linewidth": ln.width}
            if ln.legend:
                style["label"] = ln.label
            if ln.dash:
                dashes = tuple(float(x) / max(ln.width, 1.0) for x in ln.dash.split(","))
                style["linestyle"] = (0, dashes)
            if ln.step:
                ax.step(xs, ys, where="post", **style)
            else:
                ax.plot(xs, ys, **style)
        for up in (True, False):
            ms = [m for m in spec.markers if m.up == up]
            if ms:
                label = "scale up" if up else "scale down"
                # Beside the new count (7 points above or below), as in the SVG.
                shifted = transforms.offset_copy(
                    ax.transData, fig=fig, y=7 if up else -7, units="points"
                )
                ax.scatter(
                    [m.t / div for m in ms],
                    [m.value for m in ms],
                    marker="^" if up else "v",
                    color=COLORS[label],
                    s=24,
                    zorder=5,
                    label=label,
                    transform=shifted,
                )
        if spec.integer:
            ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, _vmax(spec.lines, spec.markers))
        ax.set_title(spec.title, fontsize=10, loc="left")
        # Above the panel, right-aligned (the title is on the left): never over a line.
        n_items = sum(ln.legend for ln in spec.lines) + len({m.up for m in spec.markers})
        ax.legend(
            loc="lower right",
            bbox_to_anchor=(1.0, 1.0),
            ncol=max(1, n_items),
            fontsize=8,
            frameon=False,
            borderaxespad=0.2,
        )
    axes[-1][0].set_xlabel(f"{unit} since start")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_plot(
    path: str | Path,
    results: Sequence[StepResult],
    *,
    start: datetime,
    title: str = "",
    description: str = "",
    summary_text: str = "",
) -> Path:
    """Write the plot; the format follows the file's suffix."""
    p = Path(path)
    check_plot_path(p)
    suffix = p.suffix.lower()
    if suffix == ".png":
        _write_png(results, p, start, title)
        return p
    svg = render_svg(results, start=start, title=title if suffix == ".svg" else "")
    if suffix == ".svg":
        p.write_text(svg, encoding="utf-8")
    else:
        p.write_text(_render_html(svg, title, description, summary_text), encoding="utf-8")
    return p
