"""A BrokerCluster's status summary: its four conditions and ``readyGroups``, from the
observed pods and the roll, scale-out and scale-in plans of the same pass.

::

    Ready             True when every desired group is ready (all its pods Ready, its
                      master holding every Topic and ConsumerGroup) and every name server
                      is Ready; else PodsNotReady, naming what is not
    Progressing       Creating / ScalingOut / ScalingIn / Rolling / Starting, the first
                      that applies as the reason, every one in the message; Paused; Idle
    Degraded          AdminUnreachable, PodsStuck (crash loop, image pull, ...); Healthy
    ScaleDownBlocked  ConsumerLag naming the blocking lag (group, topic, messages), or
                      AdminUnreachable when the lag is unknown; NotBlocked
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocketkube.operator.api import names
from rocketkube.operator.api.conditions import ConditionType, Reason
from rocketkube.operator.plans import observed, report, roll, scale_in, scale_out

__all__ = ["ClusterSummary", "ClusterView", "summarize"]


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What one pass observed and planned for a cluster."""

    cluster: str
    groups: int
    replicas: int
    pods: Sequence[observed.Pod]
    roll: roll.Decision
    scale_out: scale_out.ScaleOut
    scale_in: scale_in.ScaleIn
    namesrv_ready: int
    namesrv_replicas: int
    admin_error: str | None = None
    """Why the admin API failed this pass, if it did."""
    paused: bool = False


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    conditions: tuple[report.ConditionValue, ...]
    ready_groups: str
    """``ready/desired`` broker groups, for ``kubectl get``."""
    ready: tuple[int, ...]
    """The ready groups."""


def summarize(view: ClusterView) -> ClusterSummary:
    troubles = {group: _group_trouble(view, group) for group in range(view.groups)}
    ready = tuple(group for group, trouble in troubles.items() if trouble is None)
    conditions = (
        _ready(view, troubles, len(ready)),
        _progressing(view, troubles),
        _degraded(view),
        _scale_down_blocked(view.scale_in),
    )
    return ClusterSummary(conditions, f"{len(ready)}/{view.groups}", ready)


def _group_pods(view: ClusterView, group: int) -> dict[int, observed.Pod]:
    return {
        pod.ordinal: pod
        for pod in view.pods
        if pod.group == group and 0 <= pod.ordinal < view.replicas
    }


def _group_trouble(view: ClusterView, group: int) -> str | None:
    """Why ``group`` is not ready, or None when it is."""
    pods = _group_pods(view, group)
    for ordinal in range(view.replicas):
        pod = pods.get(ordinal)
        if pod is None:
            return f"{names.broker_pod(view.cluster, group, ordinal)} missing"
        if not pod.ready or pod.terminating:
            return f"{pod.name} {'terminating' if pod.terminating else pod.trouble()}"
    if view.scale_out.provisioned(group):
        return None
    messages = (p.message for p in view.scale_out.provisions if p.group == group)
    return next(messages, "topics and consumer groups not checked")


def _ready(view: ClusterView, troubles: dict[int, str | None], ready: int) -> report.ConditionValue:
    counts = f"{ready}/{view.groups} broker groups ready"
    namesrv = f"name servers {view.namesrv_ready}/{view.namesrv_replicas} ready"
    if ready == view.groups and view.namesrv_ready >= view.namesrv_replicas:
        return report.ConditionValue(
            ConditionType.READY, True, Reason.RECONCILED, f"{counts}, {namesrv}"
        )
    not_ready = [
        f"{names.broker_name(view.cluster, group)}: {trouble}"
        for group, trouble in troubles.items()
        if trouble is not None
    ]
    message = report.join([counts, *not_ready, namesrv])
    return report.ConditionValue(ConditionType.READY, False, Reason.PODS_NOT_READY, message)


def _progressing(view: ClusterView, troubles: dict[int, str | None]) -> report.ConditionValue:
    if view.paused:
        message = "spec.paused: the operator changes nothing"
        return report.ConditionValue(ConditionType.PROGRESSING, False, Reason.PAUSED, message)
    items = _progress_items(view, troubles)
    if not items:
        return report.ConditionValue(ConditionType.PROGRESSING, False, Reason.IDLE)
    message = report.join(text for _, text in items)
    return report.ConditionValue(ConditionType.PROGRESSING, True, items[0][0], message)


def _progress_items(view: ClusterView, troubles: dict[int, str | None]) -> list[tuple[Reason, str]]:
    items: list[tuple[Reason, str]] = []
    out = view.scale_out
    if out.add:
        creating = len(out.add) == view.groups
        added = ", ".join(names.broker_name(view.cluster, group) for group in out.add)
        reason = Reason.CREATING if creating else Reason.SCALING_OUT
        items.append((reason, f"creating broker groups {added}"))
    items.extend((Reason.SCALING_OUT, provision.message) for provision in out.pending)
    items.extend((Reason.SCALING_IN, step.message) for step in view.scale_in.active)
    restore = view.scale_in.restore_write
    items.extend((Reason.SCALING_IN, _restore(view, group)) for group in restore)
    if isinstance(view.roll, roll.Restart | roll.Wait):
        items.append((Reason.ROLLING, view.roll.message))
    elif not items and any(troubles.values()):
        detail = report.join(text for text in troubles.values() if text is not None)
        reason = Reason.CREATING if all(troubles.values()) else Reason.STARTING
        items.append((reason, detail))
    return items


def _restore(view: ClusterView, group: int) -> str:
    return f"{names.broker_name(view.cluster, group)}: restoring write permission"


def _degraded(view: ClusterView) -> report.ConditionValue:
    items: list[tuple[Reason, str]] = []
    if view.admin_error is not None:
        items.append((Reason.ADMIN_UNREACHABLE, view.admin_error))
    stuck = [f"{pod.name}: {pod.trouble()}" for pod in view.pods if pod.stuck]
    if stuck:
        items.append((Reason.PODS_STUCK, report.join(stuck)))
    if not items:
        return report.ConditionValue(ConditionType.DEGRADED, False, Reason.HEALTHY)
    message = report.join(text for _, text in items)
    return report.ConditionValue(ConditionType.DEGRADED, True, items[0][0], message)


def _scale_down_blocked(plan: scale_in.ScaleIn) -> report.ConditionValue:
    blocked = plan.blocked
    if not blocked:
        return report.ConditionValue(ConditionType.SCALE_DOWN_BLOCKED, False, Reason.NOT_BLOCKED)
    draining = any(step.phase is scale_in.Phase.DRAINING for step in blocked)
    reason = Reason.CONSUMER_LAG if draining else Reason.ADMIN_UNREACHABLE
    message = report.join(step.message for step in blocked)
    return report.ConditionValue(ConditionType.SCALE_DOWN_BLOCKED, True, reason, message)
