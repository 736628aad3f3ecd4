"""Shadow mode (``hpactl run --shadow``): decide beside the controller that writes,
write nothing, and compare.

:class:`ShadowComparer` is given to :class:`~hpactl.controller.horizontal.HorizontalController`
(its ``shadow`` attribute). The controller then syncs as usual (same informers, metrics
fetching and decision core) but never writes: a decision that rescales is finalized as
if the write had succeeded (so its status, conditions and desired replicas are what the
writer's would be) and nothing is sent. Three hooks feed the comparer:

* ``observe_writer(key, old, new)`` from the HPA informer: every status the writing
  controller records is one of its decisions (:mod:`hpactl.core.agreement`), timed when
  it arrives. A status whose ``lastScaleTime`` moved is a rescale (the writer's scale
  write and SuccessfulRescale event).
* ``follow(hpa, scale, history)`` before each decision: **the shadow's history follows
  reality**. It never stores a scale event of its own (it made none); when the target's
  spec.replicas changed since its last read and a writer status with a new
  ``lastScaleTime`` arrived after that read, it stores that scale event, timed when
  that status arrived (the writer stored its event just before writing it), but no
  later than a second after its ``lastScaleTime`` (the writer's clock truncated to the
  second: a late watch must not delay the event by more). So the shadow's rate-limit
  periods end as the writer's do, on the shadow's own clock, later by the latency of
  the writer's writes and of the watch (ms); timed at the truncated ``lastScaleTime``
  they ended up to a second earlier, and the shadow took rate-limited steps a sync
  before the writer, up to two seconds before it. A step the shadow takes a sync after
  the writer is decided from the writer's starting point (``compare``). Rate limits
  and stabilization thus count the scale events that actually happened, and the
  shadow's recommendations are its
  own, made from the same inputs as the writer's. So a controller applying the same
  rules makes the same decisions within one sync period of the writer; a shadow that
  counted its own would-be scale events would instead rate-limit itself against
  scale-ups that never happened (or, if it never counted any, never rate-limit at
  all) and diverge for that reason alone.
* ``compare(...)`` after each decision: records hpactl's decision and judges what can be
  judged. When the target moved since the last sync, it also decides from the writer's
  starting point (the replicas before the move, the history before that scale event):
  the decision "from the same inputs" that the writer made, which the shadow would
  otherwise never see when the writer's sync came first. When that decision does not
  take the writer's step, it decides so again at its next syncs within the window of
  the writer's rescale, until it does: with the same rules hpactl may take a step one
  sync after the writer (a stabilization window that still held the last high
  recommendation, sampled a few ms later), and the target has moved by then.

Inputs fingerprint (what both sides record of their inputs): the target's
spec.replicas the decision started from, ``status.currentReplicas`` and
``status.currentMetrics``. Fields compared: ``desiredReplicas``, ``replicas`` (the
scale write: its new size, None when not rescaling) and each condition's
``status/reason`` (``AbleToScale``, ``ScalingActive``, ``ScalingLimited``,
``ScaledToZero``). Divergences go to ``hpactl_shadow_divergences_total``, one
``hpa.shadow_divergence`` log line and a ``hpactl.shadow.divergence`` span event on the
sync that found them.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import structlog
from opentelemetry import trace

from hpactl.clock import Clock
from hpactl.core.agreement import Comparison, Decision, Divergence
from hpactl.core.behavior import get_longest_policy_period
from hpactl.core.decide import (
    CoreConfig,
    Outcome,
    Plan,
    ScaleWriteResult,
    SyncInputs,
    decide,
    finalize,
    record_rescale,
)
from hpactl.core.history import History
from hpactl.model.hpa import HPA, HPACondition, HPAStatus, status_to_raw
from hpactl.obs.metrics import ControllerMetrics

__all__ = ["SLACK_SECONDS", "ShadowComparer", "comparison_window", "warmup_seconds"]

log = structlog.get_logger("hpactl.shadow")

#: Added to the sync period to make the agreement window: scheduling jitter and the
#: whole-second times the API stores.
SLACK_SECONDS = 1.0


def comparison_window(sync_period: float) -> float:
    """One sync period plus :data:`SLACK_SECONDS`."""
    return sync_period + SLACK_SECONDS


def warmup_seconds(hpa: HPA, config: CoreConfig) -> float:
    """How long the shadow's own history is incomplete for ``hpa``: its longest
    stabilization window or rate-limit period."""
    down = config.downscale_stabilization.total_seconds()
    b = hpa.spec.behavior
    if b is None:
        return down
    if b.scale_down.stabilization_window_seconds is not None:
        down = float(b.scale_down.stabilization_window_seconds)
    up = float(b.scale_up.stabilization_window_seconds or 0)
    periods = max(get_longest_policy_period(b.scale_up), get_longest_policy_period(b.scale_down))
    return max(down, up, float(periods))


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _conditions(conds: tuple[HPACondition, ...]) -> dict[str, str]:
    return {c.type: f"{c.status}/{c.reason}" for c in conds}


def _metrics_key(raw_status: dict[str, Any]) -> str:
    return json.dumps(raw_status.get("currentMetrics") or [], sort_keys=True)


@dataclass(slots=True)
class _Target:
    comparison: Comparison
    first_seen: float
    warmup: float
    spec_known: int | None = None  # the target's replicas as last known (read or written)
    spec_prev: int | None = None  # ... and before its last change
    spec_read: int | None = None  # what our last read of the target said
    read_at: datetime | None = None
    rescale_at: datetime | None = None  # arrival of the writer's latest rescale status
    rescale_mono: float = 0.0  # ... on the monotonic clock
    status_before: HPAStatus | None = None  # ... and the status it replaced
    rescale_time: datetime | None = None  # ... and its lastScaleTime
    pending: tuple[int, int, datetime] | None = None  # (from, to, read before) not stored yet
    spec_before: int | None = None  # the target moved since the last sync: from here
    moved_after: datetime | None = None  # ... after our read at this time
    # Deciding again from the writer's start (spec, scale events before its step) while
    # the target stays at the writer's new size and the window of its rescale lasts.
    replay: tuple[int, int, History] | None = None
    compared: bool = False
    diverged: set[str] = field(default_factory=set)


class ShadowComparer:
    """See the module docstring. ``window``: the agreement window in seconds."""

    def __init__(
        self,
        *,
        clock: Clock,
        config: CoreConfig,
        window: float,
        metrics: ControllerMetrics | None = None,
    ) -> None:
        self.clock = clock
        self.config = config
        self.window = window
        self.metrics = metrics
        self._targets: dict[str, _Target] = {}
        self._compared = 0
        self._diverged = 0

    # -- state ------------------------------------------------------------------------

    def _target(self, hpa: HPA) -> _Target:
        st = self._targets.get(hpa.key)
        if st is None:
            st = _Target(
                Comparison(self.window),
                self.clock.monotonic(),
                warmup_seconds(hpa, self.config),
            )
            self._targets[hpa.key] = st
        return st

    def forget(self, key: str) -> None:
        st = self._targets.pop(key, None)
        if st is None:
            return
        if st.compared:
            self._compared -= 1
            if st.diverged:
                self._diverged -= 1
        if self.metrics is not None:
            ns, _, name = key.partition("/")
            for f in sorted(st.diverged):
                with contextlib.suppress(KeyError):
                    self.metrics.shadow_divergences.remove(ns, name, f)
        self._gauges()

    def _gauges(self) -> None:
        if self.metrics is not None:
            self.metrics.shadow_hpas_compared.set(self._compared)
            self.metrics.shadow_hpas_agreeing.set(self._compared - self._diverged)

    # -- the writer's decisions ---------------------------------------------------------

    def observe_writer(self, key: str, old: HPA | None, new: HPA) -> None:
        """An HPA as the informer delivers it: a new status is a writer decision."""
        status = new.status
        if old is not None and old.status == status:
            return
        if not status.conditions:
            return  # not synced by any controller yet
        st = self._target(new)
        now = self.clock.now()
        old_lst = old.status.last_scale_time if old is not None else None
        lst = status.last_scale_time
        rescaled = old is not None and lst is not None and (old_lst is None or lst > old_lst)
        desired = status.desired_replicas
        if rescaled:
            before = st.spec_known
            if before == desired and st.spec_prev is not None:
                before = st.spec_prev  # our read of the target already saw the new size
            st.spec_prev, st.spec_known = before, desired
            st.rescale_at, st.rescale_time = now, lst
            st.rescale_mono = self.clock.monotonic()
            st.status_before = old.status if old is not None else None
            spec = before
        else:
            # Not rescaling, the writer left the target where it was (which we may not
            # have read yet: then where its status says it wants it).
            spec = st.spec_known if st.spec_known is not None else desired
        raw = status_to_raw(status)
        values: dict[str, Any] = {
            "desiredReplicas": desired,
            "replicas": desired if rescaled else None,
            **_conditions(status.conditions),
        }
        log.debug(
            "hpa.shadow_writer_decision",
            hpa=key,
            desired=desired,
            rescaled=rescaled,
            spec=spec,
            status_replicas=status.current_replicas,
        )
        st.comparison.add_writer(
            self.clock.monotonic(),
            (spec, status.current_replicas, _metrics_key(raw)),
            values,
            {
                "time": _iso(now),
                "specReplicas": spec,
                "statusReplicas": status.current_replicas,
                "currentMetrics": raw.get("currentMetrics") or [],
                "lastScaleTime": raw.get("lastScaleTime"),
            },
        )

    # -- before a decision ----------------------------------------------------------------

    def follow(self, hpa: HPA, spec_replicas: int | None, history: History) -> History:
        """``history`` with the writer's scale events stored (see the module docstring)."""
        st = self._target(hpa)
        now = self.clock.now()
        st.spec_before = None
        if spec_replicas is None:
            return history
        prev, read_at = st.spec_read, st.read_at
        st.spec_read, st.read_at = spec_replicas, now
        if spec_replicas != st.spec_known:
            st.spec_prev, st.spec_known = st.spec_known, spec_replicas
        if prev is not None and read_at is not None and spec_replicas != prev:
            st.spec_before, st.moved_after = prev, read_at
            st.pending = (prev, spec_replicas, read_at)
        return self._store_pending(hpa, st, history, now)

    def _store_pending(self, hpa: HPA, st: _Target, history: History, now: datetime) -> History:
        if st.pending is None:
            return history
        prev, new, read_before = st.pending
        if st.rescale_at is not None and st.rescale_at >= read_before:
            st.pending = None
            log.debug("hpa.shadow_scale_event", hpa=hpa.key, previous=prev, desired=new)
            at = st.rescale_at
            if st.rescale_time is not None:
                at = min(at, st.rescale_time + timedelta(seconds=1))
            return record_rescale(history, hpa, prev, new, min(at, now))
        if (now - read_before).total_seconds() > 2 * self.window:
            st.pending = None  # no writer status says it rescaled: someone else did
        return history

    # -- after a decision -----------------------------------------------------------------

    def compare(
        self,
        inputs: SyncInputs,
        plan: Plan,
        outcome: Outcome,
        prior: History,
        span: trace.Span,
    ) -> None:
        """Record hpactl's decision (and, when the target moved since the last sync, the
        decision from the writer's starting point), then judge what can be judged."""
        hpa = inputs.hpa
        st = self._target(hpa)
        at = self.clock.monotonic()
        now = self.clock.now()
        cmp = st.comparison
        self._add(cmp, at, now, plan, outcome, None)
        scale = inputs.scale
        if st.spec_before is not None and scale is not None:
            start = st.spec_before
            st.spec_before = None
            st.replay = (start, scale.spec_replicas, prior)
        elif st.replay is not None and (
            scale is None
            or scale.spec_replicas != st.replay[1]
            or at - st.rescale_mono > self.window
        ):
            st.replay = None
        if st.replay is not None and scale is not None:
            start, moved_to, before = st.replay
            history = replace(
                prior,
                scale_up_events=before.scale_up_events,
                scale_down_events=before.scale_down_events,
            )
            cf_inputs = replace(
                inputs,
                hpa=replace(hpa, status=self._status_before(st, hpa)),
                scale=replace(scale, spec_replicas=start),
                history=history,
            )
            cf_plan = decide(cf_inputs)
            cf = finalize(cf_plan, ScaleWriteResult.succeeded() if cf_plan.rescale else None)
            self._add(cmp, at, now, cf_plan, cf, start)
            if cf.desired_replicas == moved_to:
                st.replay = None  # hpactl took the writer's step
        since = st.first_seen + st.warmup
        settled = cmp.settle(at, since)
        if self.metrics is not None:
            m = self.metrics.shadow_comparisons
            if settled.agreed:
                m.labels("agree").inc(settled.agreed)
            if settled.not_compared:
                m.labels("not-compared").inc(settled.not_compared)
            if settled.divergences:
                m.labels("diverge").inc(len(settled.divergences))
        if (settled.agreed or settled.divergences) and not st.compared:
            st.compared = True
            self._compared += 1
        for d in settled.divergences:
            if not st.diverged:
                self._diverged += 1
            st.diverged.add(d.field)
            self._report(hpa, d, span)
        self._gauges()
        cmp.prune(at, since)

    @staticmethod
    def _status_before(st: _Target, hpa: HPA) -> HPAStatus:
        """The HPA's status before the writer's step: conditions a decision does not set
        carry over from it (ScaledToZero is set only by a rescale)."""
        arrived = st.rescale_at is not None and (
            st.moved_after is None or st.rescale_at >= st.moved_after
        )
        if arrived and st.status_before is not None:
            return st.status_before
        return hpa.status  # the writer's status for the step has not arrived yet

    @staticmethod
    def _add(
        cmp: Comparison,
        at: float,
        now: datetime,
        plan: Plan,
        outcome: Outcome,
        counterfactual_from: int | None,
    ) -> Decision:
        status: HPAStatus = outcome.status
        desired = outcome.desired_replicas
        rescale = plan.rescale and plan.current_replicas is not None
        values: dict[str, Any] = {
            "desiredReplicas": desired,
            "replicas": desired if rescale else None,
            **_conditions(status.conditions),
        }
        raw = outcome.status_raw
        expl = outcome.explanation
        detail: dict[str, Any] = {
            "time": _iso(now),
            "specReplicas": plan.current_replicas,
            "statusReplicas": status.current_replicas,
            "currentMetrics": raw.get("currentMetrics") or [],
            "metricProposal": expl.metric_proposal,
            "limitedBy": list(expl.limited_by),
        }
        if counterfactual_from is not None:
            detail["fromWriterStart"] = True
        return cmp.add_hpactl(
            at, (plan.current_replicas, status.current_replicas, _metrics_key(raw)), values, detail
        )

    def _report(self, hpa: HPA, d: Divergence, span: trace.Span) -> None:
        if self.metrics is not None:
            self.metrics.shadow_divergences.labels(hpa.namespace, hpa.key_name, d.field).inc()
        writer_value = d.writer.values.get(d.field)
        hpactl_values = [h.values.get(d.field) for h in d.hpactl]
        log.warning(
            "hpa.shadow_divergence",
            hpa=hpa.key,
            field=d.field,
            unmatched=d.side,
            writer={"value": writer_value, **d.writer.detail},
            hpactl=[{"value": h.values.get(d.field), **h.detail} for h in d.hpactl],
        )
        span.add_event(
            "hpactl.shadow.divergence",
            {
                "hpactl.shadow.field": d.field,
                "hpactl.shadow.unmatched": d.side,
                "hpactl.shadow.writer": json.dumps(writer_value),
                "hpactl.shadow.hpactl": json.dumps(hpactl_values),
                "hpactl.shadow.writer_time": str(d.writer.detail.get("time", "")),
            },
        )
