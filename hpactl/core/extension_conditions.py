"""How a malformed opt-in annotation is reported: one condition, one Warning event each.

Every hpactl extension configured by an annotation (docs/extensions.md, "Malformed
annotations") reports a value it cannot use the same way, so users learn one rule:

* the HPA is synced exactly as if the annotation were unset;
* a Warning event per malformed annotation, reason ``Invalid<Feature>`` and a
  one-line message naming the annotation and what is wrong (repeated at every sync,
  aggregated by the event recorder as upstream's events are);
* the condition ``AnnotationsValid=False``: with one problem its reason and message;
  with several, their reasons joined by ``,`` and their messages by ``; ``, in the
  order of the annotation names (sorted), so the text is the same at every sync;
* with every annotation valid (or unset, or its gate off) the condition is absent,
  not True: the status is then upstream's byte for byte.

Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from hpactl.core import conditions as C
from hpactl.core import metric_fallback as FB
from hpactl.core import metric_sources as MS
from hpactl.core import pod_selection as PS
from hpactl.core.suspend import INVALID_SUSPEND, SUSPEND_ANNOTATION, parse_suspension
from hpactl.core.sync_period import INVALID_SYNC_PERIOD, SYNC_PERIOD_ANNOTATION, parse_sync_period
from hpactl.model.hpa import HPA, HPACondition

__all__ = [
    "ANNOTATIONS_VALID",
    "AnnotationProblem",
    "annotation_problems",
    "apply_problems",
]

#: hpactl's own condition type (upstream has none for annotations).
ANNOTATIONS_VALID = "AnnotationsValid"


@dataclass(frozen=True, slots=True)
class AnnotationProblem:
    """One malformed annotation: the event's and condition's reason, and the message."""

    annotation: str
    reason: str
    message: str


def annotation_problems(
    hpa: HPA,
    *,
    sync_period: bool = False,
    suspend: bool = False,
    selection_strategy: bool = False,
    metric_sources: bool = False,
    metric_fallback: bool = False,
) -> tuple[AnnotationProblem, ...]:
    """What is wrong with the annotations of the extensions whose gates are on,
    sorted by annotation name."""
    out: list[AnnotationProblem] = []
    period = parse_sync_period(hpa, sync_period)
    if period.problem:
        out.append(AnnotationProblem(SYNC_PERIOD_ANNOTATION, INVALID_SYNC_PERIOD, period.problem))
    susp = parse_suspension(hpa, suspend)
    if susp.problem:
        out.append(AnnotationProblem(SUSPEND_ANNOTATION, INVALID_SUSPEND, susp.problem))
    strategy = PS.selection_strategy(hpa, selection_strategy)
    if strategy.error is not None:
        out.append(AnnotationProblem(PS.ANNOTATION, PS.INVALID_REASON, strategy.error))
    sources = MS.metric_sources(hpa, metric_sources)
    if sources.error is not None:
        out.append(AnnotationProblem(MS.ANNOTATION, MS.INVALID_REASON, sources.error))
    fallback = FB.fallback_problem(hpa, metric_fallback)
    if fallback:
        out.append(AnnotationProblem(FB.ANNOTATION, FB.INVALID_METRIC_FALLBACK, fallback))
    return tuple(sorted(out, key=lambda p: p.annotation))


def apply_problems(
    conds: tuple[HPACondition, ...], problems: tuple[AnnotationProblem, ...], now: datetime
) -> tuple[HPACondition, ...]:
    """``conds`` with ``AnnotationsValid`` set from ``problems`` (removed when none)."""
    if not problems:
        return C.remove_condition(conds, ANNOTATIONS_VALID)
    return C.set_condition_in_list(
        conds,
        ANNOTATIONS_VALID,
        C.FALSE,
        ",".join(p.reason for p in problems),
        "; ".join(p.message for p in problems),
        now,
    )
