"""`--plot FILE`: replicas, desired replicas and each metric against its target.

`.svg` and `.html` (the SVG inline, with the summary) are written with no extra
dependency; `.png` uses matplotlib when it is installed and says so when it is not.
One panel shows the scale target's replicas and the HPA's desired replicas (with the
min/max bounds); one panel per metric shows the current value against the target.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hpactl.simulate.output import format_offset, metric_rows
from hpactl.simulate.runner import StepResult

__all__ = ["PLOT_SUFFIXES", "PlotError", "check_plot_path", "render_svg", "write_plot"]

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
}


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


@dataclass(slots=True)
class _Series:
    label: str
    unit: str
    current: list[tuple[float, float | None]] = field(default_factory=list)
    target: list[tuple[float, float | None]] = field(default_factory=list)


@dataclass(slots=True)
class _HPAData:
    key: str
    replicas: list[tuple[float, float | None]] = field(default_factory=list)
    desired: list[tuple[float, float | None]] = field(default_factory=list)
    min_r: list[tuple[float, float | None]] = field(default_factory=list)
    max_r: list[tuple[float, float | None]] = field(default_factory=list)
    metrics: dict[str, _Series] = field(default_factory=dict)


def _collect(results: Sequence[StepResult], start: datetime) -> list[_HPAData]:
    data: dict[str, _HPAData] = {}
    for r in results:
        t = (r.time - start).total_seconds()
        for key in sorted(r.hpas):
            d = data.setdefault(key, _HPAData(key))
            status = r.hpas[key]
            spec = r.specs.get(key) or {}
            ref = spec.get("scaleTargetRef") or {}
            ns = key.partition("/")[0]
            reps = (r.targets.get(f"{ref.get('kind')}/{ns}/{ref.get('name')}") or {}).get(
                "replicas"
            )
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
    return [data[k] for k in sorted(data)]


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

    def line(
        self, pts: Sequence[tuple[float, float | None]], color: str, *, step: bool, dash: str = ""
    ) -> None:
        segs: list[list[tuple[float, float]]] = [[]]
        prev: tuple[float, float] | None = None
        for t, v in pts:
            if v is None:
                if segs[-1]:
                    segs.append([])
                prev = None
                continue
            x, y = self.x(t), self.y(min(v, self.v_max))
            if step and prev is not None:
                segs[-1].append((x, prev[1]))
            segs[-1].append((x, y))
            prev = (x, y)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        for seg in segs:
            if not seg:
                continue
            if len(seg) == 1:
                x, y = seg[0]
                self.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{color}"/>')
                continue
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in seg)
            self.parts.append(
                f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"{dash_attr}/>'
            )

    def legend(self, items: Sequence[tuple[str, str, str]]) -> None:
        x = self.x1
        for label, color, dash in reversed(items):
            w = 34 + 7 * len(label)
            x -= w
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            y = self.y0 - 12
            self.parts.append(
                f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 22:.1f}" y2="{y:.1f}" '
                f'stroke="{color}" stroke-width="2"{dash_attr}/>'
            )
            self.parts.append(
                f'<text x="{x + 26:.1f}" y="{y + 4:.1f}" class="legend">{html.escape(label)}</text>'
            )


def _nice_time_step(t_max: float) -> float:
    for s in (15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400):
        if t_max / s <= 10:
            return float(s)
    return 86400.0


def _vmax(*series: Sequence[tuple[float, float | None]]) -> float:
    vals = [v for s in series for _, v in s if v is not None]
    return max(vals) * 1.1 if vals else 1.0


def render_svg(results: Sequence[StepResult], *, start: datetime, title: str = "") -> str:
    """The whole plot as one standalone SVG document."""
    hpas = _collect(results, start)
    t_max = max(((r.time - start).total_seconds() for r in results), default=0.0)
    panels: list[_Panel] = []
    y = float(TITLE_H if title else 8)
    for d in hpas:
        vmax = _vmax(d.replicas, d.desired, d.max_r)
        p = _Panel(y, PANEL_H, t_max, vmax, f"{d.key}: replicas", integer=True)
        p.axes()
        p.line(d.max_r, COLORS["bounds"], step=True, dash="2,3")
        p.line(d.min_r, COLORS["bounds"], step=True, dash="2,3")
        p.line(d.replicas, COLORS["replicas"], step=True)
        # Dashed on top, so both show where they agree.
        p.line(d.desired, COLORS["desired"], step=True, dash="6,4")
        p.legend(
            [
                ("replicas", COLORS["replicas"], ""),
                ("desired", COLORS["desired"], "6,3"),
                ("min/max", COLORS["bounds"], "2,3"),
            ]
        )
        panels.append(p)
        y += PANEL_H + GAP
        for s in d.metrics.values():
            unit = " (% of request)" if s.unit == "%" else ""
            mp = _Panel(y, METRIC_H, t_max, _vmax(s.current, s.target), f"{d.key}: {s.label}{unit}")
            mp.axes()
            mp.line(s.target, COLORS["target"], step=True, dash="6,3")
            mp.line(s.current, COLORS["current"], step=False)
            mp.legend([("current", COLORS["current"], ""), ("target", COLORS["target"], "6,3")])
            panels.append(mp)
            y += METRIC_H + GAP
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
    if not hpas:
        head.append(f'<text x="{MARGIN_L}" y="{y + 20}" font-size="13">no HPAs</text>')
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


def _write_png(results: Sequence[StepResult], path: Path, start: datetime, title: str) -> None:
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt: Any = importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:  # checked earlier; a broken install still lands here
        raise PlotError(f"--plot {path}: matplotlib is not usable: {exc}") from None
    hpas = _collect(results, start)
    n = sum(1 + len(d.metrics) for d in hpas) or 1
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.6 * n), sharex=True, squeeze=False)
    i = 0
    for d in hpas:
        ax = axes[i][0]
        i += 1
        for pts, label, color, style in (
            (d.replicas, "replicas", COLORS["replicas"], "-"),
            (d.desired, "desired", COLORS["desired"], "--"),
            (d.max_r, "max", COLORS["bounds"], ":"),
        ):
            xs = [t / 60 for t, v in pts if v is not None]
            ys = [v for _, v in pts if v is not None]
            ax.step(xs, ys, where="post", label=label, color=color, linestyle=style)
        ax.set_title(f"{d.key}: replicas", fontsize=10)
        ax.legend(loc="upper right", fontsize=8)
        for s in d.metrics.values():
            ax = axes[i][0]
            i += 1
            xs = [t / 60 for t, v in s.current if v is not None]
            ax.plot(
                xs,
                [v for _, v in s.current if v is not None],
                color=COLORS["current"],
                label="current",
            )
            xt = [t / 60 for t, v in s.target if v is not None]
            ax.step(
                xt,
                [v for _, v in s.target if v is not None],
                where="post",
                color=COLORS["target"],
                linestyle="--",
                label="target",
            )
            unit = " (% of request)" if s.unit == "%" else ""
            ax.set_title(f"{d.key}: {s.label}{unit}", fontsize=10)
            ax.legend(loc="upper right", fontsize=8)
    axes[-1][0].set_xlabel("minutes since start")
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
