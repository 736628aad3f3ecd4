"""Decision records as text a person can act on (``hpactl explain``, the simulate
timeline).

Everything here reads the JSON form (``DecisionRecord.to_dict()``, which holds
``Explanation.to_dict()``), so a record fetched from a running hpactl renders the same
as one made in this process. Pure: no I/O, no clock.

* :func:`answer` — one sentence with the numbers: what happened and the rule that
  decided, e.g. ``held at 6 by the scale-down stabilization window: the highest
  recommendation in the last 300 s was 6 (at 12:03:15); cpu alone would give 4``.
* :func:`limiting_rule` — the rule alone, when it is not the metric itself, e.g.
  ``limited by scale-up policy (Pods 1 per 60s)``; :func:`rule_note` adds what the
  metrics alone would have given (the simulate timeline).
* :func:`render_records` — the newest record in full (the answer, then each metric,
  the pods set aside, the windows, the limits, the writes), then one line per older
  record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["answer", "limiting_rule", "render_one_off", "render_records", "rule_note"]

Doc = Mapping[str, Any]

#: Rules that change the metric proposal, as ``limitedBy`` names them.
_RULES = (
    "stabilization",
    "scale-up-limit",
    "scale-down-limit",
    "max",
    "min",
    "scale-from-zero-min",
)

_SET_ASIDE_MEANING = {
    "unready-pending": "pending",
    "unready-not-ready": "not ready",
    "unready-cpu-initializing": "initializing (cpu samples not trusted yet)",
    "missing-metrics": "no metrics",
    "ignored-deleting": "being deleted",
    "ignored-failed": "failed",
}


def _clock(ts: object) -> str:
    """``12:03:15`` from an RFC 3339 time (UTC, as recorded)."""
    text = str(ts or "")
    _, sep, rest = text.partition("T")
    return rest[:8] if sep else text


def _metrics(e: Doc) -> list[Doc]:
    return [m for m in e.get("metrics") or [] if isinstance(m, Mapping)]


def _label(m: Doc) -> str:
    return str(m.get("label") or m.get("name") or f"metric {m.get('index')}")


def _deciding(e: Doc) -> Doc | None:
    """The metric whose proposal was taken (the highest)."""
    name = e.get("metricName")
    for m in _metrics(e):
        if name and m.get("name") == name:
            return m
    valid = [m for m in _metrics(e) if m.get("proposal") is not None]
    return max(valid, key=lambda m: int(m["proposal"])) if valid else None


def _alone(e: Doc) -> str:
    m = _deciding(e)
    proposal = e.get("metricProposal")
    if proposal is None:
        return ""
    if m is None:
        return f"the metrics alone would give {proposal}"
    return f"{_label(m)} alone would give {proposal}"


def _policy(e: Doc) -> str:
    """``Pods 1 per 60s`` from ``scaleUp Pods 1 per 60s``."""
    text = str(e.get("policy") or "")
    for prefix in ("scaleUp ", "scaleDown "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _rate_limit(e: Doc) -> Doc:
    rl = e.get("rateLimit")
    return rl if isinstance(rl, Mapping) else {}


def _ratio(m: Doc) -> str:
    r = m.get("ratio")
    if not isinstance(r, int | float) or not math.isfinite(r):
        return ""
    return f"{r:.2f}"


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def _tolerance_range(m: Doc) -> str:
    tol = m.get("tolerance")
    if not isinstance(tol, Mapping):
        return ""
    down, up = float(tol.get("scaleDown", 0)), float(tol.get("scaleUp", 0))
    return f"[{1 - down:.2f}, {1 + up:.2f}]"


def _value_vs_target(m: Doc) -> str:
    cur, tgt = m.get("current"), m.get("target")
    if cur is None:
        return f"target {tgt}" if tgt is not None else ""
    return f"{cur} against a target of {tgt}"


def _movement(e: Doc, *, would: bool = False) -> str:
    cur, des = e.get("currentReplicas"), e.get("desiredReplicas")
    if cur is None or des is None:
        return "not scaled"
    if des > cur:
        return f"{'would scale' if would else 'scaled'} up from {cur} to {des}"
    if des < cur:
        return f"{'would scale' if would else 'scaled'} down from {cur} to {des}"
    return f"{'would stay' if would else 'held'} at {cur}"


def limiting_rule(e: Doc, time_text: Callable[[str], str] | None = None) -> str:
    """The rule that set the count when it is not the metric itself ("" otherwise).
    ``time_text`` renders a record's RFC 3339 time (default: the UTC clock time)."""
    when = time_text or _clock
    rules = [r for r in e.get("limitedBy") or [] if r in _RULES]
    if not rules:
        return ""
    rule = rules[-1]
    if rule == "stabilization":
        by = e.get("stabilizedBy") or {}
        prop = e.get("metricProposal")
        direction = (
            "scale-down" if prop is not None and e.get("stabilized", 0) > prop else "scale-up"
        )
        what = "highest" if direction == "scale-down" else "lowest"
        secs = _window_seconds(e, "scaleDown" if direction == "scale-down" else "scaleUp")
        tail = ""
        if by:
            tail = (
                f" (the {what} recommendation in the last {secs} s was {by.get('replicas')}, "
                f"at {when(str(by.get('time')))})"
            )
        return f"held by the {direction} stabilization window{tail}"
    if rule in ("scale-up-limit", "scale-down-limit"):
        direction = "scale-up" if rule == "scale-up-limit" else "scale-down"
        rl = _rate_limit(e)
        policy = _policy(e)
        if policy == "max(2 x current, 4)":
            return f"limited by the scale-up limit max(2 x current, 4) = {rl.get('limit', '?')}"
        return f"limited by {direction} policy ({policy})"
    if rule == "max":
        return f"capped at maxReplicas {e.get('maxReplicas', e.get('desiredReplicas'))}"
    if rule == "min":
        return f"kept at minReplicas {e.get('minReplicas', e.get('desiredReplicas'))}"
    return f"raised to minReplicas {e.get('desiredReplicas')} when scaling from zero"


def rule_note(e: Doc, time_text: Callable[[str], str] | None = None) -> str:
    """``limited by scale-up policy (Pods 2 per 60s); cpu alone would give 9``, or ""
    when the metric proposal was applied as is (or no proposal was made)."""
    rule = limiting_rule(e, time_text)
    if not rule or e.get("path") != "metrics":
        return ""
    alone = _alone(e)
    return f"{rule}; {alone}" if alone else rule


def _window_seconds(e: Doc, direction: str) -> int | None:
    for w in e.get("stabilizationWindows") or []:
        if isinstance(w, Mapping) and w.get("direction") == direction:
            return int(w.get("seconds") or 0)
    return None


def _failed_metrics(e: Doc) -> list[Doc]:
    return [m for m in _metrics(e) if m.get("proposal") is None]


def answer(e: Doc, *, would: bool = False) -> str:
    """One sentence: what the decision was and the rule that decided, with numbers."""
    path = e.get("path")
    cur = e.get("currentReplicas")
    if path == "failed-get-scale":
        return f"not scaled: the target's scale could not be read: {e.get('error')}"
    if path == "scaling-disabled":
        return (
            f"not scaled: the target has {cur} replicas, which turns autoscaling off "
            "(ScalingDisabled); scale the target up to turn it back on"
        )
    if path == "suspended":
        return (
            f"not scaled: the HPA is suspended (autoscaling.kubernetes.io/suspend=true, "
            f"HPASuspend); the target keeps its {cur} replicas until it is resumed"
        )
    if path == "conflicting-autoscaler":
        return (
            f"not scaled (ConflictingAutoscaler): {e.get('error')}; the target keeps its "
            f"{cur} replicas"
        )
    if path == "pre-check-max":
        return (
            f"{_movement(e, would=would)}: the target had {cur} replicas, above maxReplicas "
            "(no metric is read then)"
        )
    if path == "pre-check-min":
        return (
            f"{_movement(e, would=would)}: the target had {cur} replicas, below minReplicas "
            "(no metric is read then)"
        )
    if path in ("invalid-selector", "ambiguous-selector"):
        return f"{'would stay' if would else 'held'} at {cur}: {e.get('error')}"
    if path == "invalid-metrics":
        failed = _failed_metrics(e)
        ok = [m for m in _metrics(e) if m.get("proposal") is not None]
        why = "; ".join(f"{_label(m)} failed: {m.get('error')}" for m in failed) or str(
            e.get("error")
        )
        held = f"{'would stay' if would else 'held'} at {cur}"
        if ok:
            best = max(int(m["proposal"]) for m in ok)
            return (
                f"{held}: {why}; while a metric fails it never scales down "
                f"(the other metrics would give {best})"
            )
        return f"{held}: no metric could be computed: {why}"

    # The metrics path.
    limited = list(e.get("limitedBy") or [])
    move = _movement(e, would=would)
    failed_note = ""
    failed = _failed_metrics(e)
    if failed:
        failed_note = "; " + "; ".join(
            f"{_label(m)} failed ({m.get('error')}), the others decided" for m in failed
        )
    if "failed-rescale" in limited:
        return (
            f"tried to scale from {cur} to {e.get('desiredReplicas')} but the scale write "
            f"failed: {e.get('error')}"
        )
    rules = [r for r in limited if r in _RULES]
    alone = _alone(e)
    if rules:
        rule = rules[-1]
        des = e.get("desiredReplicas")
        prop = e.get("metricProposal")
        not_prop = f", not {prop}," if prop is not None and des != prop and des != cur else ""
        if rule == "stabilization":
            by = e.get("stabilizedBy") or {}
            down = prop is not None and e.get("stabilized", 0) > prop
            direction = "scale-down" if down else "scale-up"
            secs = _window_seconds(e, "scaleDown" if down else "scaleUp")
            what = "highest" if down else "lowest"
            text = f"{move}{not_prop} by the {direction} stabilization window"
            if by:
                text += (
                    f": the {what} recommendation in the last {secs} s was "
                    f"{by.get('replicas')} (at {_clock(by.get('time'))})"
                )
            return f"{text}; {alone}{failed_note}"
        if rule in ("scale-up-limit", "scale-down-limit"):
            rl = _rate_limit(e)
            bound = "at most" if rule == "scale-up-limit" else "at least"
            return (
                f"{move}{not_prop} {limiting_rule(e)}: {bound} {rl.get('limit', des)} "
                f"replicas now; {alone}{failed_note}"
            )
        return f"{move}{not_prop} {limiting_rule(e)}; {alone}{failed_note}"
    deciding = _deciding(e)
    if deciding is None:
        return f"{move}{failed_note}"
    failed_note = _aside_note(deciding) + failed_note
    ratio = _ratio(deciding)
    if "tolerance" in limited:
        tol = deciding.get("tolerance") or {}
        down, up = _pct(float(tol.get("scaleDown", 0))), _pct(float(tol.get("scaleUp", 0)))
        return (
            f"{move}: {_label(deciding)} is within tolerance: {_value_vs_target(deciding)} "
            f"is a ratio of {ratio}, inside {_tolerance_range(deciding)} "
            f"(tolerance {down} down, {up} up){failed_note}"
        )
    detail = _value_vs_target(deciding)
    if ratio:
        detail += f" (ratio {ratio})"
    return f"{move}: {_label(deciding)} is at {detail}{failed_note}"


def _aside_note(m: Doc) -> str:
    """``; 2 of 4 pods set aside (not ready: web-2, web-3)`` for the deciding metric."""
    aside = [a for a in m.get("setAside") or [] if isinstance(a, Mapping)]
    if not aside:
        return ""
    by_meaning: dict[str, list[str]] = {}
    for a in aside:
        reason = str(a.get("reason"))
        by_meaning.setdefault(_SET_ASIDE_MEANING.get(reason, reason), []).append(str(a.get("pod")))
    groups = "; ".join(f"{k}: {', '.join(v)}" for k, v in by_meaning.items())
    total = m.get("totalPods")
    of = f" of {total}" if total is not None else ""
    return f"; {len(aside)}{of} pods set aside ({groups}), the ratio adjusted for them"


def _metric_lines(e: Doc) -> list[str]:
    lines: list[str] = []
    for m in _metrics(e):
        label = _label(m)
        if m.get("proposal") is None:
            reason = f" ({m.get('failureReason')})" if m.get("failureReason") else ""
            lines.append(f"{label}: failed{reason}: {m.get('error')}")
            continue
        parts = [f"{label}: {m.get('current')} / target {m.get('target')}"]
        ratio = _ratio(m)
        if ratio:
            parts.append(f"ratio {ratio} (tolerance {_tolerance_range(m)})")
        if m.get("readyPods") is not None and m.get("totalPods") is not None:
            parts.append(f"{m['readyPods']} of {m['totalPods']} pods counted")
        verdict = "within tolerance, stays at " if m.get("withinTolerance") else "proposes "
        lines.append(", ".join(parts) + f" → {verdict}{m.get('proposal')}")
        aside = [a for a in m.get("setAside") or [] if isinstance(a, Mapping)]
        if aside:
            by_reason: dict[str, list[str]] = {}
            for a in aside:
                by_reason.setdefault(str(a.get("reason")), []).append(str(a.get("pod")))
            groups = "; ".join(
                f"{_SET_ASIDE_MEANING.get(r, r)} ({r}): {', '.join(pods)}"
                for r, pods in by_reason.items()
            )
            lines.append(f"  {len(aside)} pod(s) set aside: {groups}")
            reasons = set(by_reason)
            if reasons & {"missing-metrics"}:
                lines.append(
                    "  pods without metrics count as using 100% of their request "
                    "(the target, for a value) when scaling down, 0 when scaling up"
                )
            if any(r.startswith("unready") for r in reasons):
                lines.append(
                    "  unready pods count as using 0 when the others would scale up, "
                    "and are left out otherwise"
                )
    return lines


def _limit_lines(e: Doc) -> list[str]:
    lines: list[str] = []
    for w in e.get("stabilizationWindows") or []:
        if not isinstance(w, Mapping):
            continue
        recs = ", ".join(
            f"{r.get('replicas')} at {_clock(r.get('time'))}"
            for r in w.get("recommendations") or []
            if isinstance(r, Mapping)
        )
        direction = "scale-up" if w.get("direction") == "scaleUp" else "scale-down"
        lines.append(f"{direction} window {w.get('seconds')} s: {recs or 'empty'}")
    if e.get("stabilized") is not None:
        lines.append(f"stabilized recommendation: {e.get('stabilized')}")
    rl = _rate_limit(e)
    if rl:
        bound = "at most" if rl.get("direction") == "scaleUp" else "at least"
        applied = " (applied)" if rl.get("applied") else " (not reached)"
        lines.append(f"rate limit: {bound} {rl.get('limit')} by {rl.get('policy')}{applied}")
    if e.get("minReplicas") is not None:
        lines.append(f"minReplicas {e.get('minReplicas')}, maxReplicas {e.get('maxReplicas')}")
    return lines


def _write_lines(r: Doc) -> list[str]:
    w = r.get("writes")
    if not isinstance(w, Mapping):
        return []
    scale = w.get("scale") or {}
    if w.get("shadow"):
        would = scale.get("replicas")
        what = f"a writer would set the scale to {would}" if would is not None else "no rescale"
        return [f"writes: none (shadow mode; {what})"]
    if scale.get("result") == "ok":
        s = f"scale set to {scale.get('replicas')}"
    elif scale.get("result") == "failed":
        s = f"scale write to {scale.get('replicas')} failed: {scale.get('error')}"
    else:
        s = "no scale write"
    status = "status written" if w.get("status") else "status unchanged"
    events = ", ".join(
        f"{ev.get('type')} {ev.get('reason')}"
        for ev in w.get("events") or []
        if isinstance(ev, Mapping)
    )
    return [f"writes: {s}; {status}; events: {events or 'none'}"]


def _record_answer(r: Doc) -> str:
    if r.get("skipped"):
        errors = "; ".join(str(x) for x in r.get("errors") or [])
        return f"not synced ({r.get('skipped')})" + (f": {errors}" if errors else "")
    e = r.get("explanation")
    if not isinstance(e, Mapping):
        errors = "; ".join(str(x) for x in r.get("errors") or [])
        return f"no decision: {errors or 'the sync failed'}"
    writes = r.get("writes")
    if isinstance(writes, Mapping) and writes.get("shadow"):
        return f"(shadow) {answer(e, would=True)}"
    return answer(e)


def render_records(doc: Doc) -> str:
    """A ``{"hpa", "records"}`` document: the newest record in full, then the rest."""
    records = [r for r in doc.get("records") or [] if isinstance(r, Mapping)]
    key = doc.get("hpa", "?")
    if not records:
        return f"{key}: no decision recorded yet\n"
    newest = records[-1]
    out = [f"{key} at {newest.get('time')}: {_record_answer(newest)}"]
    e = newest.get("explanation")
    if isinstance(e, Mapping):
        out += [f"  {line}" for line in _metric_lines(e) + _limit_lines(e)]
    out += [f"  {line}" for line in _write_lines(newest)]
    for err in newest.get("errors") or []:
        out.append(f"  error: {err}")
    if len(records) > 1:
        out.append("earlier:")
        for r in reversed(records[:-1]):
            out.append(f"  {_clock(r.get('time'))}  {_record_answer(r)}")
    return "\n".join(out) + "\n"


def render_one_off(doc: Doc) -> str:
    """A one-off decision (``hpactl explain`` without a running hpactl)."""
    key = doc.get("hpa", "?")
    e = doc.get("explanation")
    out: list[str] = []
    if isinstance(e, Mapping):
        out.append(f"{key} (computed now from the cluster): {answer(e, would=True)}")
        out += [f"  {line}" for line in _metric_lines(e) + _limit_lines(e)]
    for line in doc.get("cannotKnow") or []:
        out.append(f"  not known here: {line}")
    writer = doc.get("writerStatus")
    if isinstance(writer, Mapping) and writer.get("desiredReplicas") is None:
        out.append("  no controller has written this HPA's status yet")
    elif isinstance(writer, Mapping):
        out.append(
            f"  the controller that scales it last wrote desiredReplicas "
            f"{writer.get('desiredReplicas')}"
        )
        for c in writer.get("conditions") or []:
            if isinstance(c, Mapping):
                out.append(
                    f"    {c.get('type')}={c.get('status')} ({c.get('reason')}): {c.get('message')}"
                )
    return "\n".join(out) + "\n"
