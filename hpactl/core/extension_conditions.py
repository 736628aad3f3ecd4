"""How a malformed opt-in annotation is reported: one condition, one Warning event.

An hpactl extension configured by an annotation (docs/extensions.md) that cannot use
the annotation's value syncs the HPA exactly as if the annotation were unset, and
says so: a Warning event per problem (reason e.g. ``InvalidSyncPeriod``, the message
naming the annotation and the value), and the condition ``AnnotationsValid=False``
with the first problem's reason and every message. With every annotation fine (or
the gates off) the condition is absent, so the status is upstream's. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from hpactl.core import conditions as C
from hpactl.core.suspend import INVALID_SUSPEND, parse_suspension
from hpactl.core.sync_period import INVALID_SYNC_PERIOD, parse_sync_period
from hpactl.model.hpa import HPA, HPACondition

__all__ = ["ANNOTATIONS_VALID", "AnnotationProblem", "annotation_problems", "apply_problems"]

#: hpactl's own condition type (upstream has none for annotations).
ANNOTATIONS_VALID = "AnnotationsValid"


@dataclass(frozen=True, slots=True)
class AnnotationProblem:
    reason: str
    message: str


def annotation_problems(
    hpa: HPA, *, sync_period: bool, suspend: bool
) -> tuple[AnnotationProblem, ...]:
    """What is wrong with the annotations of the extensions whose gates are on."""
    out: list[AnnotationProblem] = []
    period = parse_sync_period(hpa, sync_period)
    if period.problem:
        out.append(AnnotationProblem(INVALID_SYNC_PERIOD, period.problem))
    susp = parse_suspension(hpa, suspend)
    if susp.problem:
        out.append(AnnotationProblem(INVALID_SUSPEND, susp.problem))
    return tuple(out)


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
        problems[0].reason,
        "; ".join(p.message for p in problems),
        now,
    )
