"""The agreement rule of shadow mode, on timelines built by hand or by two simulated
controllers that sync at different moments (pure: no clock, no I/O)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from hpactl.core.agreement import Comparison, judge_hpactl, judge_writer

Load = Callable[[float], int]


def _steps(points: list[tuple[float, int]]) -> Load:
    def load(t: float) -> int:
        value = points[0][1]
        for at, v in points:
            if t >= at:
                value = v
        return value

    return load


def _run(
    cmp: Comparison,
    load: Load,
    *,
    period: float,
    writer_phase: float,
    hpactl_phase: float,
    writer_window: float,
    hpactl_window: float,
    until: float,
) -> None:
    """Two controllers applying "the highest load seen at my syncs in the last
    `window` seconds" (a stabilization window). The writer records only changes (as a
    status write), hpactl every decision."""

    def decisions(phase: float, window: float) -> list[tuple[float, int, int]]:
        out: list[tuple[float, int, int]] = []
        samples: list[tuple[float, int]] = []
        t = phase
        while t <= until:
            samples.append((t, load(t)))
            value = max(v for at, v in samples if at > t - window)
            out.append((t, load(t), value))
            t += period
        return out

    last: tuple[int, int] | None = None
    events: list[tuple[float, str, int, int]] = []
    for t, inp, value in decisions(writer_phase, writer_window):
        if (inp, value) != last:
            events.append((t, "w", inp, value))
            last = (inp, value)
    for t, inp, value in decisions(hpactl_phase, hpactl_window):
        events.append((t, "h", inp, value))
    for t, side, inp, value in sorted(events):
        if side == "w":
            cmp.add_writer(t, inp, {"desiredReplicas": value})
        else:
            cmp.add_hpactl(t, inp, {"desiredReplicas": value})


LOAD = _steps([(0, 4), (20, 9), (35, 3), (70, 3)])


@pytest.mark.parametrize("seed", range(8))
def test_the_same_rule_at_other_moments_never_diverges(seed: int) -> None:
    rng = random.Random(seed)
    period = 1.0
    cmp = Comparison(window=period + 1.0)
    _run(
        cmp,
        LOAD,
        period=period,
        writer_phase=rng.random(),
        hpactl_phase=rng.random(),
        writer_window=10.0,
        hpactl_window=10.0,
        until=80,
    )
    settled = cmp.settle(now=100.0)
    assert settled.divergences == ()
    assert settled.agreed > 0


@pytest.mark.parametrize("seed", range(8))
def test_a_shorter_stabilization_window_diverges_where_it_changes_the_outcome(
    seed: int,
) -> None:
    rng = random.Random(seed)
    cmp = Comparison(window=2.0)
    _run(
        cmp,
        LOAD,
        period=1.0,
        writer_phase=rng.random(),
        hpactl_phase=rng.random(),
        writer_window=3.0,  # the writer scales down 7 s earlier than hpactl would
        hpactl_window=10.0,
        until=80,
    )
    settled = cmp.settle(now=100.0)
    assert settled.divergences, "a different rule must show"
    # Only around the scale-down after the peak (t=35): the rule matters nowhere else.
    for d in settled.divergences:
        assert 35 <= d.writer.at <= 46, d
        assert d.field == "desiredReplicas"


def test_a_writer_decision_hpactl_did_not_reproduce_is_one_divergence_per_field() -> None:
    cmp = Comparison(window=2.0)
    w = cmp.add_writer(10.0, ("in", 4), {"desiredReplicas": 5, "replicas": 5, "AbleToScale": "x"})
    for t in (9.5, 10.5, 11.5):
        cmp.add_hpactl(t, ("in", 4), {"desiredReplicas": 4, "replicas": None, "AbleToScale": "x"})
    settled = cmp.settle(now=20.0)
    assert sorted(d.field for d in settled.divergences) == ["desiredReplicas", "replicas"]
    assert all(d.writer is w for d in settled.divergences)
    # Judged once: settling again reports nothing new.
    assert cmp.settle(now=30.0).divergences == ()


def test_decisions_from_other_inputs_are_not_compared() -> None:
    cmp = Comparison(window=2.0)
    cmp.add_writer(10.0, ("spec", 4), {"desiredReplicas": 5})
    cmp.add_hpactl(10.2, ("spec", 5), {"desiredReplicas": 5})
    cmp.add_hpactl(10.4, ("spec", 5), {"desiredReplicas": 7})
    settled = cmp.settle(now=20.0)
    assert settled.divergences == ()
    assert settled.agreed == 0 and settled.not_compared == 3


def test_a_decision_the_writer_held_against_is_charged_to_the_writer_decision_once() -> None:
    """The writer holds 6 (its state stays in effect, nothing more is written); hpactl,
    from the same inputs, keeps saying 3."""
    cmp = Comparison(window=2.0)
    held = cmp.add_writer(0.0, "low-load", {"desiredReplicas": 6})
    for t in range(1, 12):
        cmp.add_hpactl(float(t), "low-load", {"desiredReplicas": 6 if t < 5 else 3})
    settled = cmp.settle(now=30.0)
    assert [(d.field, d.side, d.writer is held) for d in settled.divergences] == [
        ("desiredReplicas", "hpactl", True)
    ]


def test_nothing_is_judged_before_the_window_has_passed_or_during_the_warm_up() -> None:
    cmp = Comparison(window=2.0)
    cmp.add_writer(10.0, "i", {"desiredReplicas": 5})
    cmp.add_hpactl(10.5, "i", {"desiredReplicas": 4})
    assert cmp.settle(now=11.0).divergences == ()  # hpactl could still reproduce it
    assert cmp.settle(now=13.0, since=12.0).divergences == ()  # inside the warm-up
    cmp2 = Comparison(window=2.0)
    cmp2.add_writer(10.0, "i", {"desiredReplicas": 5})
    cmp2.add_hpactl(10.5, "i", {"desiredReplicas": 4})
    assert len(cmp2.settle(now=13.0).divergences) == 1


def test_judges_directly() -> None:
    cmp = Comparison(window=1.0)
    w = cmp.add_writer(5.0, "i", {"desiredReplicas": 3})
    h_far = cmp.add_hpactl(7.5, "i", {"desiredReplicas": 3})  # outside the window
    h_near = cmp.add_hpactl(5.5, "i", {"desiredReplicas": 2})
    verdicts = judge_writer(w, [h_far, h_near], 1.0)
    assert verdicts["desiredReplicas"][0] == "diverge"
    # The writer's decision stays in effect: at 7.5 it is still 3, so hpactl agrees.
    assert judge_hpactl(h_far, [w], [h_near, h_far], 1.0)["desiredReplicas"] == ("agree", None)
    assert judge_hpactl(h_near, [w], [h_near, h_far], 1.0)["desiredReplicas"] == ("diverge", w)


def test_the_same_step_taken_a_moment_apart_is_agreement() -> None:
    """A rate-limit period ends between hpactl's sync and the writer's, 3 ms later:
    hpactl still says 4, the writer already 6; hpactl says 6 at its next sync."""
    cmp = Comparison(window=2.0)
    cmp.add_writer(35.0, "i", {"desiredReplicas": 4})
    cmp.add_hpactl(37.125, "i", {"desiredReplicas": 4})
    cmp.add_writer(37.128, "i", {"desiredReplicas": 6})
    cmp.add_hpactl(38.125, "i", {"desiredReplicas": 6})
    settled = cmp.settle(now=50.0)
    assert settled.divergences == ()
    # The same step a window apart is not: the writer moved, hpactl did not follow.
    late = Comparison(window=2.0)
    late.add_writer(35.0, "i", {"desiredReplicas": 4})
    late.add_writer(37.1, "i", {"desiredReplicas": 6})
    for t in (37.0, 38.0, 39.0, 40.0):
        late.add_hpactl(t, "i", {"desiredReplicas": 4})
    late.add_hpactl(41.0, "i", {"desiredReplicas": 6})
    assert [d.field for d in late.settle(now=50.0).divergences] == ["desiredReplicas"]


def test_prune_keeps_the_writer_decision_still_in_effect() -> None:
    cmp = Comparison(window=1.0)
    cmp.add_writer(0.0, "i", {"desiredReplicas": 3})
    for t in range(1, 50):
        cmp.add_hpactl(float(t), "i", {"desiredReplicas": 3})
    cmp.settle(now=60.0)
    cmp.prune(now=60.0)
    assert len(cmp.writer) == 1 and cmp.hpactl == []
    later = cmp.add_hpactl(61.0, "i", {"desiredReplicas": 4})
    (d,) = cmp.settle(now=70.0).divergences
    assert d.hpactl == (later,)


def test_prune_drops_what_the_warm_up_will_never_judge() -> None:
    cmp = Comparison(window=1.0)
    for t in range(0, 300, 15):
        cmp.add_writer(float(t), "i", {"desiredReplicas": 3})
        cmp.add_hpactl(float(t) + 0.5, "i", {"desiredReplicas": 3})
    cmp.settle(now=300.0, since=310.0)
    cmp.prune(now=300.0, since=310.0)
    assert len(cmp.writer) == 1 and cmp.hpactl == []


def test_hpactl_taking_the_writers_next_step_a_sync_first_is_agreement() -> None:
    """The shadow times the writer's rescale by the whole-second lastScaleTime, so its
    rate-limit period ends up to a second before the writer's: with both syncing a few
    ms apart, hpactl steps 4 -> 6 at its first sync with new inputs while the writer,
    from the same inputs, still holds 4 and steps at its next sync (a real run)."""
    cmp = Comparison(window=2.0)
    cmp.add_writer(54.217, "i-old", {"desiredReplicas": 4})
    cmp.add_hpactl(55.047, "i-old", {"desiredReplicas": 4})
    cmp.add_hpactl(56.032, "i-old", {"desiredReplicas": 6})
    cmp.add_writer(56.212, "i", {"desiredReplicas": 4})  # hpactl never held 4 from "i"
    cmp.add_hpactl(57.033, "i", {"desiredReplicas": 6})
    cmp.add_writer(57.216, "i", {"desiredReplicas": 6})
    cmp.add_hpactl(58.040, "i", {"desiredReplicas": 6})
    assert cmp.settle(now=70.0).divergences == ()
    # A writer that holds 4 longer than the window before stepping is a difference.
    slow = Comparison(window=2.0)
    held = slow.add_writer(56.212, "i", {"desiredReplicas": 4})
    for t in (57.033, 58.033, 59.033):
        slow.add_hpactl(t, "i", {"desiredReplicas": 6})
    slow.add_writer(59.216, "i", {"desiredReplicas": 6})
    found = slow.settle(now=70.0).divergences
    assert [(d.field, d.side, d.writer is held) for d in found] == [
        ("desiredReplicas", "writer", True)
    ]


def test_hpactl_taking_a_step_the_writer_takes_from_newer_inputs_a_moment_later_agrees() -> None:
    """Both hold 6 from "i"; hpactl steps to 8 from "i" (and decides so again from the
    writer's starting point at its next sync), the writer steps to 8 half a second
    later, from newer metrics: one step, taken a moment apart (a real run)."""
    cmp = Comparison(window=2.0)
    cmp.add_writer(49.731, "i", {"desiredReplicas": 6})
    cmp.add_hpactl(50.181, "i", {"desiredReplicas": 6})
    cmp.add_hpactl(51.183, "i", {"desiredReplicas": 8})
    cmp.add_writer(51.733, "i-newer", {"desiredReplicas": 8})
    cmp.add_hpactl(52.176, "i", {"desiredReplicas": 8})
    assert cmp.settle(now=70.0).divergences == ()
    # The writer staying at 6: hpactl's 8s are a difference.
    stays = Comparison(window=2.0)
    held = stays.add_writer(49.731, "i", {"desiredReplicas": 6})
    stays.add_hpactl(50.181, "i", {"desiredReplicas": 6})
    for t in (51.183, 52.176):
        stays.add_hpactl(t, "i", {"desiredReplicas": 8})
    stays.add_writer(54.9, "i-newer", {"desiredReplicas": 8})  # too late to excuse 52.176
    found = stays.settle(now=70.0).divergences
    assert [(d.field, d.side, d.writer is held) for d in found] == [
        ("desiredReplicas", "hpactl", True)
    ]


def test_a_step_whose_inputs_hpactl_saw_only_before_it_is_not_compared() -> None:
    """Both hold 4 from "i" (a rate-limit period); the writer steps to 6 from "i" as
    its period ends, 80 ms after hpactl's sync that saw newer metrics ("i2"); hpactl's
    4 from "i" matched what the writer said then (a real run)."""
    cmp = Comparison(window=2.0)
    cmp.add_writer(38.787, "i", {"desiredReplicas": 4})
    cmp.add_hpactl(39.709, "i", {"desiredReplicas": 4})
    cmp.add_hpactl(40.713, "i2", {"desiredReplicas": 4})
    cmp.add_writer(40.794, "i", {"desiredReplicas": 6})
    cmp.add_hpactl(41.714, "i3", {"desiredReplicas": 6})
    settled = cmp.settle(now=70.0)
    assert settled.divergences == ()
    assert settled.agreed == 2 and settled.not_compared == 3
    # hpactl deciding from "i" after the writer's step, and holding: a difference.
    holds = Comparison(window=2.0)
    holds.add_writer(38.787, "i", {"desiredReplicas": 4})
    holds.add_hpactl(39.709, "i", {"desiredReplicas": 4})
    step = holds.add_writer(40.794, "i", {"desiredReplicas": 6})
    holds.add_hpactl(41.714, "i", {"desiredReplicas": 4})
    found = holds.settle(now=70.0).divergences
    assert [(d.field, d.writer is step) for d in found] == [("desiredReplicas", True)]
