"""Suspend an HPA (KEP-3428, gate ``HPASuspend``): no scale writes while suspended.

KEP-3428 proposes the annotation ``autoscaling.kubernetes.io/suspend``: ``"true"``
suspends the HPA (the controller calculates nothing and sets ``ScalingActive`` to
False with reason ``Suspended``); ``"false"`` or no annotation, normal syncs. The
value is read as Go's ``strconv.ParseBool`` reads it; anything else is a problem
reported on the HPA (see :mod:`hpactl.core.extension_conditions`), and the HPA is
synced as if the annotation were unset. Gate off: ignored. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpactl.model.featuregates import parse_go_bool
from hpactl.model.hpa import HPA

__all__ = [
    "INVALID_SUSPEND",
    "MSG_SUSPENDED",
    "SUSPENDED_REASON",
    "SUSPEND_ANNOTATION",
    "Suspension",
    "parse_suspension",
]

SUSPEND_ANNOTATION = "autoscaling.kubernetes.io/suspend"
#: The ScalingActive=False reason KEP-3428 names.
SUSPENDED_REASON = "Suspended"
MSG_SUSPENDED = (
    f"the HPA is suspended ({SUSPEND_ANNOTATION}=true): no metrics are computed and "
    "the target is not scaled until the annotation is removed or set to false"
)
#: Reason of the Warning event and of the condition when the annotation is malformed.
INVALID_SUSPEND = "InvalidSuspend"


@dataclass(frozen=True, slots=True)
class Suspension:
    suspended: bool = False
    problem: str = ""


def parse_suspension(hpa: HPA, enabled: bool) -> Suspension:
    """Whether ``hpa`` is suspended; gate off: never."""
    if not enabled:
        return Suspension()
    raw = hpa.annotations.get(SUSPEND_ANNOTATION)
    if raw is None:
        return Suspension()
    try:
        return Suspension(parse_go_bool(raw))
    except ValueError:
        shown = raw.replace("\n", " ").replace('"', "'")
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return Suspension(
            problem=f'annotation {SUSPEND_ANNOTATION}="{shown}" is not a boolean '
            "(true or false); the HPA is not suspended"
        )
