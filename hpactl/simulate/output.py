"""What `hpactl simulate` prints: the readable timeline, `--output jsonl`, a summary.

The metric helpers here (`metric_rows`) are shared with the plot: for each entry of
an HPA's `spec.metrics` they give a label, the current value from
`status.currentMetrics` (same position) and the target, in the same unit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from hpactl.controller.explain_text import rule_note
from hpactl.model.quantity import parse_quantity
from hpactl.model.times import format_go_duration, parse_time
from hpactl.simulate.runner import StepResult

__all__ = [
    "MetricRow",
    "Summary",
    "TimelineWriter",
    "format_offset",
    "metric_rows",
    "summarize",
    "write_jsonl",
    "write_summary",
    "write_timeline",
]


def jsonl_line(result: StepResult) -> str:
    return json.dumps(result.to_json(), separators=(", ", ": "), ensure_ascii=False)


def write_jsonl(results: Iterable[StepResult], out: TextIO) -> None:
    for r in results:
        out.write(jsonl_line(r) + "\n")


# ------------------------------------------------------------------------ metrics


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric of one HPA at one step."""

    label: str  # "cpu", "pods:requests_per_second", "external:queue_length"
    unit: str  # "%" for utilization, "" for plain values
    current: float | None  # None when the controller could not read it
    target: float | None
    current_text: str  # as the status shows it ("175%", "875m", "?")
    target_text: str


def _num(q: Any) -> float | None:
    if q is None:
        return None
    try:
        return parse_quantity(q).as_float()
    except (ValueError, TypeError):
        return None


def _target_of(target: Mapping[str, Any]) -> tuple[str, float | None, str]:
    """(unit, value, text) of a MetricTarget."""
    if target.get("averageUtilization") is not None:
        v = target["averageUtilization"]
        return "%", float(v), f"{v}%"
    for k in ("averageValue", "value"):
        if target.get(k) is not None:
            return "", _num(target[k]), str(target[k])
    return "", None, "?"


def _current_of(current: Mapping[str, Any], unit: str, kind: str) -> tuple[float | None, str]:
    if unit == "%":
        v = current.get("averageUtilization")
        return (float(v), f"{v}%") if v is not None else (None, "?")
    keys = ("averageValue", "value") if kind != "value" else ("value", "averageValue")
    for k in keys:
        if current.get(k) is not None:
            return _num(current[k]), str(current[k])
    return None, "?"


_SOURCE_KEY = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def metric_rows(spec: Mapping[str, Any], status: Mapping[str, Any]) -> list[MetricRow]:
    """Current against target for every metric of an HPA (spec order)."""
    rows: list[MetricRow] = []
    current_list = status.get("currentMetrics") or []
    for i, m in enumerate(spec.get("metrics") or []):
        mtype = str(m.get("type") or "")
        key = _SOURCE_KEY.get(mtype, "")
        src = m.get(key) or {}
        target = src.get("target") or {}
        unit, tval, ttext = _target_of(target)
        if mtype in ("Resource", "ContainerResource"):
            label = str(src.get("name") or "?")
            if mtype == "ContainerResource":
                label = f"{label}({src.get('container', '?')})"
        else:
            label = f"{key}:{(src.get('metric') or {}).get('name', '?')}"
        cur_raw: Mapping[str, Any] = {}
        if i < len(current_list):
            entry = current_list[i] or {}
            if entry.get("type") == mtype:
                cur_raw = (entry.get(key) or {}).get("current") or {}
        cval, ctext = _current_of(cur_raw, unit, str(target.get("type") or "").lower())
        rows.append(MetricRow(label, unit, cval, tval, ctext, ttext))
    return rows


# ------------------------------------------------------------------------ timeline


def format_offset(seconds: float) -> str:
    """`+1m15s` style offset from the scenario start (whole seconds as Go prints them)."""
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{sec:02d}"


def _conditions_note(status: Mapping[str, Any]) -> str:
    notes = []
    for c in status.get("conditions") or []:
        t, st, reason = c.get("type"), c.get("status"), c.get("reason", "")
        if (t in ("AbleToScale", "ScalingActive") and st == "False") or (
            t == "ScalingLimited" and st == "True"
        ):
            notes.append(f"{t}={st}({reason})")
    return " ".join(notes)


def _hpa_line(result: StepResult, key: str) -> str:
    status = result.hpas.get(key) or {}
    spec = result.specs.get(key) or {}
    ref = spec.get("scaleTargetRef") or {}
    ns = key.partition("/")[0]
    tkey = f"{ref.get('kind')}/{ns}/{ref.get('name')}"
    replicas = (result.targets.get(tkey) or {}).get("replicas")
    current = status.get("currentReplicas", 0)  # omitempty: absent means 0
    desired = status.get("desiredReplicas")
    metrics = ", ".join(
        f"{r.label} {r.current_text}/{r.target_text}" for r in metric_rows(spec, status)
    )
    rep = f"{_n(current)}→{_n(replicas)}"
    parts = [f"{key:<20}", f"replicas {rep:<7}", f"desired {_n(desired):<4}", metrics]
    note = _conditions_note(status)
    if note:
        parts.append(note)
    line = "  ".join(p for p in parts if p)
    placed = placement_note(result, tkey)
    if placed:  # on its own line, indented like the notes below an HPA
        line += f"\n{'':<8}  {'':>5}    {placed}"
    return line


_SHORT_KEYS = {"topology.kubernetes.io/zone": "zone", "kubernetes.io/hostname": "hostname"}


def placement_note(result: StepResult, target: str) -> str:
    """With nodes: the target's pods by phase, per zone, and the skew per topology
    key, e.g. `pods: Running 5, Pending 1; per zone a 2, b 2, c 1; skew zone 1`."""
    t = result.targets.get(target) or {}
    if "pods" not in t:
        return ""
    phases = ", ".join(f"{phase} {n}" for phase, n in t["pods"].items()) or "none"
    parts = [f"pods: {phases}"]
    zones = result.zones.get(target) or {}
    if zones:
        parts.append("per zone " + ", ".join(f"{z} {n}" for z, n in zones.items()))
    skew = t.get("skew") or {}
    if skew:
        parts.append("skew " + ", ".join(f"{_SHORT_KEYS.get(k, k)} {v}" for k, v in skew.items()))
    return "; ".join(parts)


def _rule_note(result: StepResult, key: str, start: datetime) -> str:
    """The rule that set the count when it is not the metric itself (from the record),
    times as offsets from the scenario start like the time column."""

    def offset(text: str) -> str:
        try:
            return format_offset((parse_time(text) - start).total_seconds())
        except ValueError:
            return text

    expl = (result.decisions.get(key) or {}).get("explanation")
    return rule_note(expl, offset) if isinstance(expl, Mapping) else ""


def _n(v: Any) -> str:
    return "-" if v is None else str(v)


def write_timeline(
    results: Sequence[StepResult], out: TextIO, *, start: datetime, header: str = ""
) -> None:
    """One line per HPA per step, events indented below (see `TimelineWriter`)."""
    w = TimelineWriter(start=start, header=header)
    out.write(w.head())
    for r in results:
        out.write(w.feed(r))
    out.write(w.close())


class TimelineWriter:
    """The timeline, step by step, for streaming: `feed()` returns the text a step
    adds (possibly nothing yet), `close()` what remains after the last step.

    A step that looks exactly like the one before (same lines, same events) is
    folded into a `… N more step(s)` note, written when a different step comes (or
    at the end), so a long steady state or an error repeated every sync takes one
    line. The last step is always written in full.
    """

    def __init__(self, *, start: datetime, header: str = "") -> None:
        self.start = start
        self.header = header
        self._previous: tuple[Any, ...] = ()
        self._quiet = 0  # folded steps not yet noted
        self._held: list[StepResult] = []  # the last two folded steps

    def head(self) -> str:
        head = self.header + "\n" if self.header else ""
        return head + f"{'time':<8}  {'step':>5}  hpa / replicas (current→target) / metrics\n"

    def _signature(self, r: StepResult) -> tuple[Any, ...]:
        lines = {k: _hpa_line(r, k) for k in sorted(r.hpas)}
        notes = {k: n for k in sorted(r.hpas) if (n := _rule_note(r, k, self.start))}
        events = tuple((e["object"], e["type"], e["reason"], e["message"]) for e in r.events)
        return (lines, events, notes)

    def _note(self, quiet: int, last: StepResult) -> str:
        until = format_offset((last.time - self.start).total_seconds())
        what = "the same, events repeated" if self._previous[1] else "unchanged"
        return f"{'':<8}  {'':>5}  … {quiet} more step(s) {what}, until {until}\n"

    def _step(self, r: StepResult, signature: tuple[Any, ...]) -> str:
        lines, _, notes = signature
        offset = format_offset((r.time - self.start).total_seconds())
        out: list[str] = []
        if not lines:
            out.append(f"{offset:<8}  {r.step:>5}  (no HPAs)\n")
        for i, k in enumerate(sorted(lines)):
            prefix = f"{offset:<8}  {r.step:>5}" if i == 0 else f"{'':<8}  {'':>5}"
            out.append(f"{prefix}  {lines[k]}\n")
            if k in notes:
                out.append(f"{'':<8}  {'':>5}    {k}: {notes[k]}\n")
        for ev in r.events:
            obj = ev["object"].split("/", 1)[-1]
            out.append(
                f"{'':<8}  {'':>5}    {ev['type']} {ev['reason']} ({obj}): {ev['message']}\n"
            )
        self._previous = signature
        return "".join(out)

    def feed(self, r: StepResult) -> str:
        signature = self._signature(r)
        if signature == self._previous:
            self._quiet += 1
            self._held = [*self._held[-1:], r]
            return ""
        text = self._note(self._quiet, self._held[-1]) if self._quiet else ""
        self._quiet = 0
        self._held = []
        return text + self._step(r, signature)

    def close(self) -> str:
        """The last step in full (it was folded if it looked like the one before)."""
        if not self._quiet:
            return ""
        *before, last = self._held
        text = self._note(self._quiet - 1, before[-1]) if self._quiet > 1 else ""
        self._quiet = 0
        self._held = []
        return text + self._step(last, self._previous)


# ------------------------------------------------------------------------ summary


@dataclass(slots=True)
class HPASummary:
    key: str
    peak_replicas: int = 0
    peak_time: float = 0.0
    final_replicas: int | None = None
    scale_events: int = 0
    scale_ups: int = 0
    scale_downs: int = 0
    above_target_seconds: float = 0.0
    warnings: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Summary:
    steps: int
    duration: float
    hpas: list[HPASummary]


def summarize(results: Sequence[StepResult], *, start: datetime, period: float) -> Summary:
    """Peak replicas, scale events and time above target, per HPA."""
    by_key: dict[str, HPASummary] = {}
    for i, r in enumerate(results):
        t = (r.time - start).total_seconds()
        nxt = (results[i + 1].time - start).total_seconds() if i + 1 < len(results) else t + period
        for key, status in r.hpas.items():
            s = by_key.setdefault(key, HPASummary(key))
            spec = r.specs.get(key) or {}
            ref = spec.get("scaleTargetRef") or {}
            ns = key.partition("/")[0]
            reps = (r.targets.get(f"{ref.get('kind')}/{ns}/{ref.get('name')}") or {}).get(
                "replicas"
            )
            if isinstance(reps, int):
                if reps > s.peak_replicas:
                    s.peak_replicas, s.peak_time = reps, t
                s.final_replicas = reps
            rows = metric_rows(spec, status)
            if any(
                row.current is not None and row.target is not None and row.current > row.target
                for row in rows
            ):
                s.above_target_seconds += max(0.0, nxt - t)
        for ev in r.events:
            if ev["type"] == "Warning":
                key = ev["object"].split("/", 1)[-1]
                s = by_key.setdefault(key, HPASummary(key))
                s.warnings[ev["reason"]] = s.warnings.get(ev["reason"], 0) + 1
        for key, (before, after) in r.rescales.items():
            s = by_key.setdefault(key, HPASummary(key))
            s.scale_events += 1
            if before is not None and after is not None:
                if after > before:
                    s.scale_ups += 1
                elif after < before:
                    s.scale_downs += 1
    duration = (results[-1].time - start).total_seconds() if results else 0.0
    return Summary(len(results), duration, [by_key[k] for k in sorted(by_key)])


def _dur(seconds: float) -> str:
    from datetime import timedelta

    return format_go_duration(timedelta(seconds=round(seconds)))


def write_summary(summary: Summary, out: TextIO) -> None:
    out.write(f"\nSummary: {summary.steps} steps over {_dur(summary.duration)} of virtual time\n")
    for s in summary.hpas:
        out.write(
            f"  {s.key}: peak {s.peak_replicas} replicas (at {format_offset(s.peak_time)}), "
            f"final {_n(s.final_replicas)}; {s.scale_events} "
            f"scale event{'' if s.scale_events == 1 else 's'} "
            f"({s.scale_ups} up, {s.scale_downs} down); "
            f"above target for {_dur(s.above_target_seconds)}\n"
        )
        if s.warnings:
            w = ", ".join(f"{k} x{v}" for k, v in sorted(s.warnings.items()))
            out.write(f"    warnings: {w}\n")
