"""Two autoscalers on one workload: an hpactl HPA and a built-in one (``--hpa-sources=crd``).

On a managed cluster the built-in controller always scales the autoscaling/v2 HPAs;
an hpactl HorizontalPodAutoscaler (autoscaling.hpactl.dev) naming the same target
would fight it, each sync undoing the other's write. hpactl therefore leaves such a
target alone and says so on its own object, as upstream says so for two HPAs
selecting the same pods (``AmbiguousSelector``): ``ScalingActive=False`` with reason
``ConflictingAutoscaler`` and a Warning event of that reason, both naming the other
HPA. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpactl.model.hpa import HPA

__all__ = ["CONFLICTING_AUTOSCALER", "conflict_message"]

#: The ScalingActive=False reason, and the reason of the Warning event.
CONFLICTING_AUTOSCALER = "ConflictingAutoscaler"


def conflict_message(hpa: HPA, others: Sequence[HPA]) -> str:
    """The condition's and the event's message ("" when there is no conflict)."""
    if not others:
        return ""
    ref = hpa.spec.scale_target_ref
    names = ", ".join(f"{o.namespace}/{o.name}" for o in others)
    noun = "HorizontalPodAutoscaler" if len(others) == 1 else "HorizontalPodAutoscalers"
    return (
        f"the autoscaling/v2 {noun} {names} also targets {ref.kind}/{ref.name}: the "
        "built-in controller scales it, so hpactl does not while that HPA exists "
        "(two controllers would undo each other's writes)"
    )
