"""HPA conditions: types, reasons, message texts and upstream's merge rule.

Texts are observable behaviour (hpa-behavior.md §11) and are byte-exact copies of
the strings ``horizontal.go`` passes to ``setCondition``.
"""

from __future__ import annotations

from datetime import datetime

from hpactl.model.hpa import HPACondition

__all__ = [
    "ABLE_TO_SCALE",
    "SCALED_TO_ZERO",
    "SCALING_ACTIVE",
    "SCALING_LIMITED",
    "remove_condition",
    "set_condition_in_list",
]

# Condition types (Go autoscalingv2.HorizontalPodAutoscalerConditionType).
ABLE_TO_SCALE = "AbleToScale"
SCALING_ACTIVE = "ScalingActive"
SCALING_LIMITED = "ScalingLimited"
SCALED_TO_ZERO = "ScaledToZero"

TRUE = "True"
FALSE = "False"

# Messages (format with % where upstream uses %v / %d / %s).
MSG_SUCCEEDED_GET_SCALE = "the HPA controller was able to get the target's current scale"
MSG_FAILED_GET_SCALE = "the HPA controller was unable to get the target's current scale: {}"
MSG_READY_FOR_NEW_SCALE = "recommended size matches current size"
MSG_SCALE_DOWN_STABILIZED = (
    "recent recommendations were higher than current one, "
    "applying the highest recent recommendation"
)
MSG_SCALE_UP_STABILIZED = (
    "recent recommendations were lower than current one, applying the lowest recent recommendation"
)
MSG_SUCCEEDED_RESCALE = "the HPA controller was able to update the target scale to {}"
MSG_FAILED_UPDATE_SCALE = "the HPA controller was unable to update the target scale: {}"
MSG_VALID_METRIC_FOUND = "the HPA was able to successfully calculate a replica count from {}"
MSG_SCALING_DISABLED = "scaling is disabled since the replica count of the target is zero"
MSG_MISSING_SELECTOR = "the HPA target's scale is missing a selector"
MSG_UNABLE_TO_COMPUTE = "the HPA was unable to compute the replica count: {}"
MSG_DESIRED_WITHIN_RANGE = "the desired count is within the acceptable range"
MSG_TOO_MANY_REPLICAS = "the desired replica count is more than the maximum replica count"
MSG_TOO_FEW_REPLICAS = "the desired replica count is less than the minimum replica count"
MSG_SCALE_UP_LIMIT = "the desired replica count is increasing faster than the maximum scale rate"
MSG_SCALE_DOWN_LIMIT = "the desired replica count is decreasing faster than the maximum scale rate"
MSG_SCALED_TO_ZERO = "the HPA controller scaled the workload to zero"
MSG_NOT_SCALED_TO_ZERO = "the HPA controller did not scale the workload to zero"


def set_condition_in_list(
    conditions: tuple[HPACondition, ...],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> tuple[HPACondition, ...]:
    """``horizontal.go: setConditionInList``.

    Updates the first condition of ``type_`` in place (appending a new one when
    absent); ``lastTransitionTime`` moves to ``now`` only when the status changes or
    the condition is created.
    """
    for i, c in enumerate(conditions):
        if c.type == type_:
            if c.status == status and c.reason == reason and c.message == message:
                return conditions  # unchanged: the same condition, the same time
            ltt = now if c.status != status else c.last_transition_time
            new = HPACondition(c.type, status, reason, message, ltt)
            return (*conditions[:i], new, *conditions[i + 1 :])
    return (*conditions, HPACondition(type_, status, reason, message, now))


def remove_condition(conditions: tuple[HPACondition, ...], type_: str) -> tuple[HPACondition, ...]:
    """Drop every condition of ``type_`` (used for ScaledToZero when its gate is off);
    ``conditions`` itself when there is none."""
    if all(c.type != type_ for c in conditions):
        return conditions
    return tuple(c for c in conditions if c.type != type_)
