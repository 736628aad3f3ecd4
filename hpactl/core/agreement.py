"""Shadow mode's agreement rule: does hpactl decide as the controller that writes?

Pure: decisions in, verdicts out (the caller passes ``now``; no clock, no I/O).

A :class:`Decision` is what one controller concluded in one sync: when (``at``,
seconds on one clock for both sides), from what (``inputs``, any hashable
fingerprint; shadow mode uses the target's spec.replicas, the status' currentReplicas
and currentMetrics, which is what the writing controller records of its own inputs)
and the value of each compared field (``values``).

The writer's decisions are known only through what it records in the HPA's status,
and it records only what changed: its timeline is a step function, each decision in
effect from its ``at`` until the next one's.

The two controllers sync at different moments and react to a change of their inputs
at their first sync after it, so with the same rules each makes the same decision
within one sync period of the other. Hence, with ``window`` one sync period (plus
slack for jitter and the API's whole-second timestamps):

* a writer decision W is *reproduced* when an hpactl decision made from the same
  inputs within ``window`` of W has W's value; when hpactl made decisions from the
  same inputs within the window and none has W's value, W *diverges*; when it made
  none from the same inputs, W is *not compared*;
* an hpactl decision H *agrees* when a writer decision made from the same inputs was
  in effect at some moment within ``window`` of H with H's value; when such writer
  decisions were in effect and none has H's value, H *diverges* (charged to the
  nearest of them); when none was, H is *not compared*;
* except for a step both take at different moments (the two changed their minds a
  moment apart, e.g. a rate-limit period that ended between hpactl's sync and the
  writer's, 3 ms later):

  - H does not diverge from the writer decision W it is charged to when hpactl
    reproduced W and either W was made within ``window`` of H, or the writer took H's
    value after W, within ``window`` of H (its inputs may have changed meanwhile);
  - W does not diverge when the writer's next decision N came within ``window`` of W
    and hpactl, from W's inputs, gave N's value: hpactl took the writer's next step
    a sync before it (its first sync with W's inputs may come after the writer's
    step, or it never held W's value at all);
  - W is not compared with the hpactl decisions made before it that reproduced the
    writer's previous decision, from the same inputs: they match what the writer
    said at the time, and W is a step in time (a rate-limit period or stabilization
    window that ended); when hpactl made no other decision from W's inputs (they
    changed before its next sync), W is not compared.

  A difference that lasts longer than the window is still found: the writer's step
  then comes more than a window after the decisions it would excuse.

Each (writer decision, field) is reported as a divergence at most once, so one
decision taken differently counts once per field, however many syncs repeat it.
Decisions are judged once ``now >= at + window`` (everything that could match them
has been seen). Decisions before ``since`` (a warm-up: hpactl's stabilization and
rate-limit history is incomplete until the longest window has passed) are neither
judged nor used to judge.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Comparison",
    "Decision",
    "Divergence",
    "Settled",
    "judge_hpactl",
    "judge_writer",
    "writer_in_effect",
]

Verdict = Literal["agree", "diverge", "not-compared"]


@dataclass(frozen=True, slots=True, eq=False)
class Decision:
    """One decision of one controller (see the module docstring)."""

    seq: int
    at: float
    inputs: Hashable
    values: Mapping[str, Hashable]
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Divergence:
    """A field on which a writer decision and hpactl's decisions from the same inputs
    differ. ``side`` is whose decision found no match: ``writer`` (hpactl did not
    reproduce it) or ``hpactl`` (no writer decision in effect had hpactl's value)."""

    field: str
    writer: Decision
    hpactl: tuple[Decision, ...]
    side: Literal["writer", "hpactl"]


def _value(d: Decision, name: str) -> Hashable:
    return d.values.get(name)


def _same(w: Decision, hpactl: Sequence[Decision], window: float) -> tuple[Decision, ...]:
    return tuple(h for h in hpactl if abs(h.at - w.at) <= window and h.inputs == w.inputs)


def judge_writer(
    w: Decision,
    hpactl: Sequence[Decision],
    window: float,
    following: Decision | None = None,
    previous: Decision | None = None,
) -> dict[str, tuple[Verdict, tuple[Decision, ...]]]:
    """Each field of writer decision ``w``: its verdict and the hpactl decisions from the
    same inputs within ``window`` of it (the ones it was compared with). ``following``
    and ``previous``: the writer's next and previous decisions, if any (hpactl may have
    taken the next step first; its decisions before ``w`` that reproduced the previous
    one, from the same inputs, say nothing of ``w``)."""
    step = following if following is not None and following.at - w.at <= window else None
    held = previous if previous is not None and previous.inputs == w.inputs else None
    near = _same(w, hpactl, window)
    out: dict[str, tuple[Verdict, tuple[Decision, ...]]] = {}
    for name in w.values:
        same = near
        if held is not None:
            same = tuple(h for h in near if h.at >= w.at or _value(h, name) != _value(held, name))
        if not same:
            out[name] = ("not-compared", same)
        elif any(_value(h, name) == _value(w, name) for h in same):
            out[name] = ("agree", same)
        elif step is not None and any(_value(h, name) == _value(step, name) for h in same):
            out[name] = ("agree", same)  # hpactl took the writer's next step first
        else:
            out[name] = ("diverge", same)
    return out


def writer_in_effect(writer: Sequence[Decision], start: float, end: float) -> list[Decision]:
    """The writer decisions in effect at some moment of ``[start, end]`` (sorted by at)."""
    out: list[Decision] = []
    for i, w in enumerate(writer):
        until = writer[i + 1].at if i + 1 < len(writer) else float("inf")
        if w.at <= end and until > start:
            out.append(w)
    return out


def judge_hpactl(
    h: Decision, writer: Sequence[Decision], hpactl: Sequence[Decision], window: float
) -> dict[str, tuple[Verdict, Decision | None]]:
    """Each field of hpactl decision ``h`` (one of ``hpactl``): its verdict and the writer
    decision it is charged to (the nearest in effect from the same inputs; None when
    not compared)."""
    same = [
        w for w in writer_in_effect(writer, h.at - window, h.at + window) if w.inputs == h.inputs
    ]
    out: dict[str, tuple[Verdict, Decision | None]] = {}
    for name in h.values:
        if not same:
            out[name] = ("not-compared", None)
            continue
        if any(_value(w, name) == _value(h, name) for w in same):
            out[name] = ("agree", None)
            continue
        nearest = min(same, key=lambda w: abs(w.at - h.at))
        held = any(_value(o, name) == _value(nearest, name) for o in _same(nearest, hpactl, window))
        if held and (
            abs(nearest.at - h.at) <= window
            or any(
                w.at > nearest.at
                and abs(w.at - h.at) <= window
                and _value(w, name) == _value(h, name)
                for w in writer
            )
        ):
            out[name] = ("agree", None)  # the same step, taken a moment apart
            continue
        out[name] = ("diverge", nearest)
    return out


@dataclass(frozen=True, slots=True)
class Settled:
    """What one :meth:`Comparison.settle` judged: counts of field verdicts and the new
    divergences (each (writer decision, field) at most once)."""

    agreed: int = 0
    not_compared: int = 0
    divergences: tuple[Divergence, ...] = ()


class Comparison:
    """The two timelines of one HPA and what has been judged of them.

    ``add_writer`` / ``add_hpactl`` append decisions (in time order per side);
    ``settle(now, since)`` judges every decision that can be judged and returns what
    is new; ``prune(now)`` drops what can no longer matter.
    """

    __slots__ = ("_judged_h", "_judged_w", "_reported", "_seq", "hpactl", "window", "writer")

    def __init__(self, window: float) -> None:
        if window <= 0:
            raise ValueError("window must be positive")
        self.window = window
        self.writer: list[Decision] = []
        self.hpactl: list[Decision] = []
        self._judged_w: set[int] = set()
        self._judged_h: set[int] = set()
        self._reported: set[tuple[int, str]] = set()
        self._seq = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _add(
        self,
        side: list[Decision],
        at: float,
        inputs: Hashable,
        values: Mapping[str, Hashable],
        detail: Mapping[str, Any] | None,
    ) -> Decision:
        d = Decision(self.next_seq(), at, inputs, dict(values), dict(detail or {}))
        _insert(side, d)
        return d

    def add_writer(
        self,
        at: float,
        inputs: Hashable,
        values: Mapping[str, Hashable],
        detail: Mapping[str, Any] | None = None,
    ) -> Decision:
        return self._add(self.writer, at, inputs, values, detail)

    def add_hpactl(
        self,
        at: float,
        inputs: Hashable,
        values: Mapping[str, Hashable],
        detail: Mapping[str, Any] | None = None,
    ) -> Decision:
        return self._add(self.hpactl, at, inputs, values, detail)

    def settle(self, now: float, since: float = float("-inf")) -> Settled:
        window = self.window
        hpactl = [h for h in self.hpactl if h.at >= since]
        agreed = not_compared = 0
        found: list[Divergence] = []
        for i, w in enumerate(self.writer):
            if w.seq in self._judged_w or w.at < since or now < w.at + window:
                continue
            self._judged_w.add(w.seq)
            following = self.writer[i + 1] if i + 1 < len(self.writer) else None
            previous = self.writer[i - 1] if i > 0 else None
            verdicts = judge_writer(w, hpactl, window, following, previous)
            for name, (verdict, same) in verdicts.items():
                if verdict == "agree":
                    agreed += 1
                elif verdict == "not-compared":
                    not_compared += 1
                elif (w.seq, name) not in self._reported:
                    self._reported.add((w.seq, name))
                    found.append(Divergence(name, w, same, "writer"))
        for h in hpactl:
            if h.seq in self._judged_h or now < h.at + window:
                continue
            self._judged_h.add(h.seq)
            for name, (verdict, charged) in judge_hpactl(h, self.writer, hpactl, window).items():
                if verdict == "agree":
                    agreed += 1
                elif verdict == "not-compared" or charged is None:
                    not_compared += 1
                elif (charged.seq, name) not in self._reported:
                    self._reported.add((charged.seq, name))
                    found.append(Divergence(name, charged, (h,), "hpactl"))
        return Settled(agreed, not_compared, tuple(found))

    def prune(self, now: float, since: float = float("-inf")) -> None:
        """Forget decisions judged (or never to be judged: before ``since``) and older
        than three windows; the writer's latest decision is kept (it is in effect)."""
        horizon = now - 3 * self.window
        self.hpactl = [
            h
            for h in self.hpactl
            if h.at >= horizon or (h.seq not in self._judged_h and h.at >= since)
        ]
        keep: list[Decision] = []
        for i, w in enumerate(self.writer):
            until = self.writer[i + 1].at if i + 1 < len(self.writer) else float("inf")
            if until >= horizon or (w.seq not in self._judged_w and w.at >= since):
                keep.append(w)
        self.writer = keep
        live = {w.seq for w in self.writer}
        self._judged_w &= live
        self._judged_h &= {h.seq for h in self.hpactl}
        self._reported = {r for r in self._reported if r[0] in live}


def _insert(timeline: list[Decision], d: Decision) -> None:
    if not timeline or timeline[-1].at <= d.at:
        timeline.append(d)
        return
    keys = [x.at for x in timeline]
    timeline.insert(bisect.bisect_right(keys, d.at), d)
