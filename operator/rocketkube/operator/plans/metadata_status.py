"""Status summaries of a Topic and a ConsumerGroup: Ready, Progressing and Degraded from
their cluster's state and their plan of the same pass.

Their cluster's state (:func:`cluster_state`) is MISSING when the BrokerCluster is absent
or being deleted, READY when its Ready condition is True and was reported for its
current generation, else NOT_READY. A Ready of an older generation says nothing about
the spec now: right after a scale-out is applied, the cluster still says Ready while
the groups it adds do not run yet, and a Topic or ConsumerGroup reconciled on them then
would report them unreachable (Degraded) for what is only a planned change.

::

    Ready        Unknown/Unmanaged with managed: false; False/ClusterNotFound,
                 ClusterNotReady (nothing is planned then); False/AdminUnreachable when a
                 master or the name servers did not answer; False/NotApplied while actions
                 remain; for a topic False/NotRouted until the name servers route it on
                 every target group with the expected queues (a client started right
                 after sees it); else True/Reconciled
    Progressing  Creating or Updating, naming the actions; else Idle
    Degraded     AdminUnreachable; InvalidSpec (brokerGroups past the cluster's groups);
                 else False, DriftRepaired naming the drift found this pass, or Healthy
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from rocketkube.operator.api import names
from rocketkube.operator.api.conditions import ConditionType, Reason
from rocketkube.operator.plans import consumer_groups, observed, repair, report, topics

__all__ = ["ClusterState", "cluster_state", "consumer_group", "topic"]

Value = report.ConditionValue


class ClusterState(enum.StrEnum):
    MISSING = "Missing"
    NOT_READY = "NotReady"
    READY = "Ready"


def cluster_state(cluster: Mapping[str, Any] | None) -> ClusterState:
    """The state of a BrokerCluster object (None: not found), as the module says."""
    if cluster is None:
        return ClusterState.MISSING
    metadata = cluster.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return ClusterState.MISSING
    for condition in (cluster.get("status") or {}).get("conditions") or ():
        if condition.get("type") == ConditionType.READY:
            current = condition.get("observedGeneration") == metadata.get("generation")
            if condition.get("status") == "True" and current:
                return ClusterState.READY
    return ClusterState.NOT_READY


def topic(
    plan: topics.TopicPlan,
    managed: bool,
    cluster: str,
    state: ClusterState,
    routes: Mapping[str, topics.Queues] | None,
) -> tuple[Value, ...]:
    """``routes``: the queue counts the name servers route per brokerName (None: they did
    not answer)."""
    subject = f"topic {plan.topic}"
    waiting = _waiting(subject, managed, cluster, state)
    if waiting is not None:
        return waiting
    unreachable = [_silent(cluster, group) for group in plan.unknown]
    if routes is None:
        unreachable.append("the name servers did not answer")
    invalid = [f"brokerGroups lists {group}, past the cluster's groups" for group in plan.beyond]
    return (
        _topic_ready(plan, cluster, routes, unreachable),
        _progressing(plan.actions),
        _degraded(unreachable, invalid, plan.drift),
    )


def consumer_group(
    plan: consumer_groups.GroupPlan, managed: bool, cluster: str, state: ClusterState
) -> tuple[Value, ...]:
    subject = f"consumer group {plan.consumer_group}"
    waiting = _waiting(subject, managed, cluster, state)
    if waiting is not None:
        return waiting
    unreachable = [_silent(cluster, group) for group in plan.unknown]
    if unreachable:
        message = report.join(unreachable)
        ready = Value(ConditionType.READY, False, Reason.ADMIN_UNREACHABLE, message)
    elif plan.actions:
        ready = _not_applied(plan.actions)
    else:
        ready = Value(ConditionType.READY, True, Reason.RECONCILED, "on every master")
    return ready, _progressing(plan.actions), _degraded(unreachable, [], plan.drift)


def _waiting(
    subject: str, managed: bool, cluster: str, state: ClusterState
) -> tuple[Value, ...] | None:
    """The conditions while nothing is planned: unmanaged, or no ready cluster."""
    if not managed:
        message = f"managed: false: the operator leaves {subject} as it is"
        ready = Value(ConditionType.READY, None, Reason.UNMANAGED, message)
    elif state is ClusterState.MISSING:
        message = f"BrokerCluster {cluster} not found"
        ready = Value(ConditionType.READY, False, Reason.CLUSTER_NOT_FOUND, message)
    elif state is ClusterState.NOT_READY:
        message = f"waiting for BrokerCluster {cluster} to be Ready"
        ready = Value(ConditionType.READY, False, Reason.CLUSTER_NOT_READY, message)
    else:
        return None
    idle = Value(ConditionType.PROGRESSING, False, Reason.IDLE)
    return ready, idle, Value(ConditionType.DEGRADED, False, Reason.HEALTHY)


def _topic_ready(
    plan: topics.TopicPlan,
    cluster: str,
    routes: Mapping[str, topics.Queues] | None,
    unreachable: Sequence[str],
) -> Value:
    if unreachable:
        return Value(ConditionType.READY, False, Reason.ADMIN_UNREACHABLE, report.join(unreachable))
    if plan.actions:
        return _not_applied(plan.actions)
    assert routes is not None  # else unreachable
    unrouted = [
        _unrouted(names.broker_name(cluster, group), wanted, routes)
        for group, wanted in sorted(plan.expected.items())
    ]
    if any(unrouted):
        return Value(ConditionType.READY, False, Reason.NOT_ROUTED, report.join(unrouted))
    routed = f"routed on {report.count(len(plan.expected), 'broker group')}"
    notes = [kept.message for kept in plan.kept] + [
        f"also on {names.broker_name(cluster, group)}, which brokerGroups leaves out"
        for group in plan.untargeted
    ]
    return Value(ConditionType.READY, True, Reason.RECONCILED, report.join([routed, *notes]))


def _unrouted(broker: str, wanted: observed.TopicState, routes: Mapping[str, topics.Queues]) -> str:
    """Why the name servers' route of ``broker`` is not yet ``wanted`` ("" when it is)."""
    route = routes.get(broker)
    expected = topics.Queues(wanted.read_queues, wanted.write_queues)
    if route is None:
        return f"not routed on {broker} yet"
    if route != expected:
        return f"{broker} routed with {route} queues, {expected} expected"
    return ""


def _not_applied(
    actions: Sequence[topics.TopicAction] | Sequence[consumer_groups.GroupAction],
) -> Value:
    message = report.join(action.message for action in actions)
    return Value(ConditionType.READY, False, Reason.NOT_APPLIED, message)


def _progressing(
    actions: Sequence[topics.TopicAction] | Sequence[consumer_groups.GroupAction],
) -> Value:
    if not actions:
        return Value(ConditionType.PROGRESSING, False, Reason.IDLE)
    creating = any(action.kind is repair.ActionKind.CREATE for action in actions)
    reason = Reason.CREATING if creating else Reason.UPDATING
    message = report.join(action.message for action in actions)
    return Value(ConditionType.PROGRESSING, True, reason, message)


def _degraded(
    unreachable: Sequence[str], invalid: Sequence[str], drift: Sequence[repair.Drift]
) -> Value:
    if unreachable:
        message = report.join(unreachable)
        return Value(ConditionType.DEGRADED, True, Reason.ADMIN_UNREACHABLE, message)
    if invalid:
        return Value(ConditionType.DEGRADED, True, Reason.INVALID_SPEC, report.join(invalid))
    if drift:
        message = "repairing: " + report.join(found.message for found in drift)
        return Value(ConditionType.DEGRADED, False, Reason.DRIFT_REPAIRED, message)
    return Value(ConditionType.DEGRADED, False, Reason.HEALTHY)


def _silent(cluster: str, group: int) -> str:
    return f"{names.broker_name(cluster, group)} did not answer"
