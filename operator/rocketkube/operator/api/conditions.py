"""Condition types and reasons (constants), and setting one in a conditions list.

Every resource carries the standard three: ``Ready`` (it does what its spec says),
``Progressing`` (the operator is changing something) and ``Degraded`` (something is
wrong that the operator cannot fix alone); a cluster adds ``ScaleDownBlocked``. Reasons
are CamelCase constants, so alerts and tests can match them.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from rocketkube.operator.api import models

__all__ = ["ConditionType", "Reason", "set_condition"]


class ConditionType(enum.StrEnum):
    READY = "Ready"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SCALE_DOWN_BLOCKED = "ScaleDownBlocked"


class Reason(enum.StrEnum):
    # Ready
    RECONCILED = "Reconciled"
    PODS_NOT_READY = "PodsNotReady"
    CLUSTER_NOT_FOUND = "ClusterNotFound"
    CLUSTER_NOT_READY = "ClusterNotReady"
    NOT_APPLIED = "NotApplied"
    NOT_ROUTED = "NotRouted"
    UNMANAGED = "Unmanaged"
    # Progressing
    CREATING = "Creating"
    ROLLING = "Rolling"
    SCALING_OUT = "ScalingOut"
    SCALING_IN = "ScalingIn"
    STARTING = "Starting"
    UPDATING = "Updating"
    PAUSED = "Paused"
    IDLE = "Idle"
    # Degraded
    ADMIN_UNREACHABLE = "AdminUnreachable"
    INVALID_SPEC = "InvalidSpec"
    API_ERROR = "ApiError"
    PODS_STUCK = "PodsStuck"
    DRIFT_REPAIRED = "DriftRepaired"
    HEALTHY = "Healthy"
    # ScaleDownBlocked
    CONSUMER_LAG = "ConsumerLag"
    NOT_BLOCKED = "NotBlocked"


def set_condition(
    conditions: Sequence[models.Condition],
    type_: ConditionType,
    status: bool | None,
    reason: Reason,
    message: str,
    *,
    now: str,
    generation: int | None,
) -> list[models.Condition]:
    """``conditions`` with ``type_`` set; ``lastTransitionTime`` moves only when the status
    changes (Kubernetes' convention). ``status`` None is Unknown."""
    text = "Unknown" if status is None else ("True" if status else "False")
    out: list[models.Condition] = []
    found = False
    for condition in conditions:
        if condition.type != type_:
            out.append(condition)
            continue
        found = True
        since = condition.last_transition_time if condition.status == text else now
        out.append(_condition(type_, text, reason, message, since, generation))
    if not found:
        out.append(_condition(type_, text, reason, message, now, generation))
    return out


def _condition(
    type_: ConditionType, status: str, reason: Reason, message: str, since: str | None,
    generation: int | None,
) -> models.Condition:  # fmt: skip
    return models.Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=since,
        observed_generation=generation,
    )
