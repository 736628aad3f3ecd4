"""KEP-5325's pod selection strategy, carried by an annotation until the field ships.

Upstream's HPA counts every pod its target's label selector matches. KEP-5325
("Improve pod selection accuracy across workload types", gate
``HPASelectionStrategy``) adds ``spec.selectionStrategy``:

* ``LabelSelector`` (the default): as today.
* ``OwnerReference``: the label-selected pods are filtered further, keeping only
  those the target owns through owner references (Pod → ReplicaSet → Deployment,
  or Pod → StatefulSet/ReplicaSet/ReplicationController directly). The pods
  filtered out are dropped from the pod metrics too (the KEP's
  ``removeMetricsForPods(metrics, unfilteredPodNames)``), so they count neither for
  usage nor for readiness, missing pods or the ready-pod count.

The API server would drop an unknown spec field, so hpactl reads the value from the
annotation :data:`ANNOTATION` with the KEP's values. "Owns" is the controller
ownerReference (``metav1.GetControllerOf``), the one the workload controllers
themselves count replicas by. The selector validation (empty, unparsable,
``AmbiguousSelector``) runs on the label-selected pods before any filtering, as in
the KEP (which changes ``GetResourceReplicas`` and its siblings, not
``validateAndParseSelector``).

A malformed value is reported as every malformed extension annotation is
(``AnnotationsValid=False``, reason :data:`INVALID_REASON`, and a Warning event: see
:mod:`hpactl.core.extension_conditions`), and the HPA is otherwise synced as if the
annotation were unset.
With the gate off nothing here runs (status, conditions and events are upstream's).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from hpactl.core.metrics_eval import MetricInput
from hpactl.model.hpa import HPA
from hpactl.model.pod import PodView

__all__ = [
    "ANNOTATION",
    "INVALID_REASON",
    "LABEL_SELECTOR",
    "OWNER_REFERENCE",
    "StrategyChoice",
    "owned_only",
    "owner_uids",
    "selection_strategy",
    "wants_owned_pods",
]

Strategy = Literal["LabelSelector", "OwnerReference"]

ANNOTATION = "hpactl.dev/selection-strategy"
LABEL_SELECTOR: Final[Strategy] = "LabelSelector"
OWNER_REFERENCE: Final[Strategy] = "OwnerReference"
#: Reason of the Warning event and of ``AnnotationsValid=False`` for a malformed value.
INVALID_REASON = "InvalidSelectionStrategy"


@dataclass(frozen=True, slots=True)
class StrategyChoice:
    """The strategy in force and, when the annotation is malformed, why it was ignored."""

    strategy: Strategy
    error: str | None = None


def selection_strategy(hpa: HPA, enabled: bool) -> StrategyChoice:
    """The HPA's strategy (``LabelSelector`` when the gate is off or nothing is set)."""
    if not enabled:
        return StrategyChoice(LABEL_SELECTOR)
    raw = hpa.annotations.get(ANNOTATION)
    if raw is None:
        return StrategyChoice(LABEL_SELECTOR)
    if raw == OWNER_REFERENCE:
        return StrategyChoice(OWNER_REFERENCE)
    if raw == LABEL_SELECTOR:
        return StrategyChoice(LABEL_SELECTOR)
    return StrategyChoice(
        LABEL_SELECTOR,
        f"annotation {ANNOTATION}={raw!r} is neither {LABEL_SELECTOR} nor "
        f"{OWNER_REFERENCE}; selecting pods by label ({LABEL_SELECTOR})",
    )


def wants_owned_pods(hpa: HPA, enabled: bool) -> bool:
    """Whether this HPA's pods are to be filtered by owner (the shell then looks up
    the target's ReplicaSets)."""
    return selection_strategy(hpa, enabled).strategy == OWNER_REFERENCE


def owner_uids(target_uid: str, replicasets: Iterable[tuple[str, str]]) -> frozenset[str] | None:
    """The controller uids a pod of the target may have: the target's own and those
    of the ReplicaSets it controls (``replicasets``: (uid, controller uid) pairs of
    the namespace's ReplicaSets). None when the target's uid is unknown: then no
    filtering, as the KEP falls back to every label-selected pod when the ownership
    cannot be checked."""
    if not target_uid:
        return None
    return frozenset((target_uid, *(uid for uid, owner in replicasets if owner == target_uid)))


def owned_only(
    pods: Sequence[PodView], metrics: Sequence[MetricInput], owners: frozenset[str]
) -> tuple[tuple[PodView, ...], tuple[MetricInput, ...]]:
    """The pods whose controller is in ``owners``; the per-pod metrics without the
    pods filtered out (object and external values are left as they are)."""
    kept = tuple(p for p in pods if p.owner_uid in owners)
    if len(kept) == len(pods):
        return kept, tuple(metrics)
    dropped = frozenset(p.name for p in pods if p.owner_uid not in owners)
    out: list[MetricInput] = []
    for m in metrics:
        if isinstance(m, Mapping):
            out.append({k: v for k, v in m.items() if k not in dropped})
        else:
            out.append(m)
    return kept, tuple(out)
