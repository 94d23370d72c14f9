"""Status summaries: a cluster's four conditions and readyGroups from one pass's observed
pods and plans; a Topic's and a ConsumerGroup's conditions (a topic Ready only once the
name servers route it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from rocketkube.operator.api import names
from rocketkube.operator.plans import (
    cluster_status,
    consumer_groups,
    metadata_status,
    report,
    roll,
    scale_in,
    scale_out,
    topics,
)
from rocketkube.operator.plans.consumer_groups import DesiredGroup
from rocketkube.operator.plans.metadata_status import ClusterState
from rocketkube.operator.plans.observed import GroupSettings, Inventory, Lag, Pod, TopicState
from rocketkube.operator.plans.scale_in import GroupState
from rocketkube.operator.plans.topics import DesiredTopic, Queues

Row = tuple[str, bool | None, str, str]


def rows(values: Sequence[report.ConditionValue]) -> list[Row]:
    return [(str(v.type), v.status, str(v.reason), v.message) for v in values]


def pod(group: int, ordinal: int, **fields: Any) -> Pod:
    fields.setdefault("ready", True)
    return Pod(names.broker_pod("demo", group, ordinal), group, ordinal, template_hash="h",
               **fields)  # fmt: skip


PODS = [pod(g, o) for g in range(2) for o in range(2)]
ORDERS = DesiredTopic("Orders", 8)
FULL = Inventory(topics={"Orders": TopicState(8, 8)})


def view(**changes: Any) -> cluster_status.ClusterView:
    healthy = cluster_status.ClusterView(
        cluster="demo",
        groups=2,
        replicas=2,
        pods=PODS,
        roll=roll.Done(None),
        scale_out=scale_out.plan("demo", 2, {0, 1}, [ORDERS], [], {0: FULL, 1: FULL}),
        scale_in=scale_in.ScaleIn(()),
        namesrv_ready=2,
        namesrv_replicas=2,
    )
    return dataclasses.replace(healthy, **changes)


IDLE: Row = ("Progressing", False, "Idle", "")
HEALTHY: Row = ("Degraded", False, "Healthy", "")
NOT_BLOCKED: Row = ("ScaleDownBlocked", False, "NotBlocked", "")


def test_a_healthy_cluster() -> None:
    summary = cluster_status.summarize(view())
    assert rows(summary.conditions) == [
        ("Ready", True, "Reconciled", "2/2 broker groups ready, name servers 2/2 ready"),
        IDLE, HEALTHY, NOT_BLOCKED,
    ]  # fmt: skip
    assert (summary.ready_groups, summary.ready) == ("2/2", (0, 1))


def test_a_new_cluster_is_creating() -> None:
    out = scale_out.plan("demo", 2, set(), [ORDERS], [], {})
    summary = cluster_status.summarize(view(pods=[], scale_out=out, namesrv_ready=0))
    assert rows(summary.conditions) == [
        (
            "Ready", False, "PodsNotReady",
            "0/2 broker groups ready; demo-broker-0: demo-broker-0-0 missing;"
            " demo-broker-1: demo-broker-1-0 missing; name servers 0/2 ready",
        ),
        ("Progressing", True, "Creating", "creating broker groups demo-broker-0, demo-broker-1"),
        HEALTHY, NOT_BLOCKED,
    ]  # fmt: skip
    assert summary.ready_groups == "0/2"


def test_pods_starting_after_creation() -> None:
    pods = [pod(0, 0), pod(0, 1), pod(1, 0, ready=False), pod(1, 1)]
    summary = cluster_status.summarize(view(pods=pods))
    assert rows(summary.conditions)[:2] == [
        (
            "Ready", False, "PodsNotReady",
            "1/2 broker groups ready; demo-broker-1: demo-broker-1-0 not Ready;"
            " name servers 2/2 ready",
        ),
        ("Progressing", True, "Starting", "demo-broker-1-0 not Ready"),
    ]  # fmt: skip
    nothing_ready = cluster_status.summarize(view(pods=[pod(0, 0, ready=False)], replicas=1,
                                                  groups=1))  # fmt: skip
    assert rows(nothing_ready.conditions)[1] == (
        "Progressing", True, "Creating", "demo-broker-0-0 not Ready",
    )  # fmt: skip


def test_scaling_out_until_the_new_group_holds_every_topic() -> None:
    held = dataclasses.replace(FULL, consumer_groups={"billing": GroupSettings()})
    out = scale_out.plan("demo", 3, {0, 1, 2}, [ORDERS], [DesiredGroup("billing")],
                         {0: held, 1: held, 2: Inventory(topics=FULL.topics)})  # fmt: skip
    pods = [*PODS, pod(2, 0), pod(2, 1)]
    summary = cluster_status.summarize(view(groups=3, pods=pods, scale_out=out))
    assert rows(summary.conditions)[:2] == [
        (
            "Ready", False, "PodsNotReady",
            "2/3 broker groups ready; demo-broker-2: creating 1 consumer group on demo-broker-2;"
            " name servers 2/2 ready",
        ),
        ("Progressing", True, "ScalingOut", "creating 1 consumer group on demo-broker-2"),
    ]  # fmt: skip
    assert summary.ready_groups == "2/3"


def test_rolling() -> None:
    decision = roll.Restart(PODS[1], roll.RestartCause.TEMPLATE_CHANGED, roll.Progress(0, 4))
    summary = cluster_status.summarize(view(roll=decision))
    assert rows(summary.conditions)[1] == (
        "Progressing", True, "Rolling",
        "restarting demo-broker-0-1: its template changed (0/4 pods updated)",
    )  # fmt: skip


def test_a_blocked_scale_in_shows_the_lag() -> None:
    lag = [Lag("billing", "Orders", 120)]
    plan = scale_in.plan(
        "demo", 2, [GroupState(2, objects=True, write_revoked=True, lag=lag)], False
    )
    summary = cluster_status.summarize(view(scale_in=plan))
    message = (
        "demo-broker-2: waiting for consumers to drain it (messages left): billing has 120"
        " on Orders"
    )
    assert rows(summary.conditions)[1:] == [
        ("Progressing", True, "ScalingIn", message),
        HEALTHY,
        ("ScaleDownBlocked", True, "ConsumerLag", message),
    ]
    assert summary.ready_groups == "2/2"


def test_a_scale_in_whose_lag_is_unknown_is_blocked_too() -> None:
    plan = scale_in.plan("demo", 2, [GroupState(2, objects=True, write_revoked=None)], False)
    summary = cluster_status.summarize(view(scale_in=plan))
    assert rows(summary.conditions)[3] == (
        "ScaleDownBlocked", True, "AdminUnreachable",
        "demo-broker-2: waiting for its write permission and consumer lag to be known",
    )  # fmt: skip


def test_a_scale_in_undone_restores_writes() -> None:
    plan = scale_in.plan("demo", 2, [GroupState(1, objects=True, write_revoked=True)], False)
    summary = cluster_status.summarize(view(scale_in=plan))
    assert rows(summary.conditions)[1] == (
        "Progressing", True, "ScalingIn", "demo-broker-1: restoring write permission",
    )  # fmt: skip


def test_degraded_by_stuck_pods_and_an_unreachable_admin() -> None:
    stuck = pod(1, 0, ready=False, waiting_reason="CrashLoopBackOff", restart_count=7)
    summary = cluster_status.summarize(
        view(pods=[*PODS[:2], stuck, PODS[3]], admin_error="demo-broker-1-0:10911 refused")
    )
    assert rows(summary.conditions)[2] == (
        "Degraded", True, "AdminUnreachable",
        "demo-broker-1-0:10911 refused; demo-broker-1-0: CrashLoopBackOff (7 restarts)",
    )  # fmt: skip


def test_paused() -> None:
    summary = cluster_status.summarize(view(paused=True))
    assert rows(summary.conditions)[1] == (
        "Progressing", False, "Paused", "spec.paused: the operator changes nothing",
    )  # fmt: skip


def test_a_summary_is_set_on_the_status_conditions() -> None:
    first = report.apply([], cluster_status.summarize(view()).conditions, now="t1", generation=3)
    assert [(c.type, c.status, c.last_transition_time, c.observed_generation) for c in first] == [
        ("Ready", "True", "t1", 3), ("Progressing", "False", "t1", 3),
        ("Degraded", "False", "t1", 3), ("ScaleDownBlocked", "False", "t1", 3),
    ]  # fmt: skip
    decision = roll.Wait(roll.WaitCause.POD_NOT_READY, "waiting", roll.Progress(1, 4))
    later = cluster_status.summarize(view(roll=decision)).conditions
    second = report.apply(first, later, now="t2", generation=4)
    assert [(c.type, c.status, c.last_transition_time) for c in second] == [
        ("Ready", "True", "t1"), ("Progressing", "True", "t2"),
        ("Degraded", "False", "t1"), ("ScaleDownBlocked", "False", "t1"),
    ]  # fmt: skip


# -- topics and consumer groups -----------------------------------------------------------

ROUTED = {"demo-broker-0": Queues(8, 8), "demo-broker-1": Queues(8, 8)}


def topic_plan(*inventories: Inventory | None, **fields: Any) -> topics.TopicPlan:
    desired = dataclasses.replace(ORDERS, **fields)
    return topics.plan(desired, "demo", len(inventories), dict(enumerate(inventories)))


def topic_rows(
    plan: topics.TopicPlan,
    routes: dict[str, Queues] | None = ROUTED,
    state: ClusterState = ClusterState.READY,
    managed: bool = True,
) -> list[Row]:
    return rows(metadata_status.topic(plan, managed, "demo", state, routes))


def test_a_topic_is_ready_once_routed_on_every_group() -> None:
    assert topic_rows(topic_plan(FULL, FULL)) == [
        ("Ready", True, "Reconciled", "routed on 2 broker groups"), IDLE, HEALTHY,
    ]  # fmt: skip


def test_a_topic_created_but_not_routed_yet_is_not_ready() -> None:
    grown = Inventory(topics={"Orders": TopicState(16, 16)})
    plan = topic_plan(grown, grown, queues=16)
    assert topic_rows(plan, {"demo-broker-0": Queues(8, 8)})[0] == (
        "Ready", False, "NotRouted",
        "demo-broker-0 routed with 8/8 queues, 16/16 expected; not routed on demo-broker-1 yet",
    )  # fmt: skip


def test_a_topic_with_actions_left_is_progressing() -> None:
    old = Inventory(topics={"Orders": TopicState(4, 4)})
    assert topic_rows(topic_plan(old, Inventory()))[:2] == [
        (
            "Ready", False, "NotApplied",
            "update topic Orders on demo-broker-0: 8/8 queues, perm 6;"
            " create topic Orders on demo-broker-1: 8/8 queues, perm 6",
        ),
        (
            "Progressing", True, "Creating",
            "update topic Orders on demo-broker-0: 8/8 queues, perm 6;"
            " create topic Orders on demo-broker-1: 8/8 queues, perm 6",
        ),
    ]  # fmt: skip
    assert topic_rows(topic_plan(old))[1][2] == "Updating"


def test_a_topic_notes_queues_kept_and_groups_left_out() -> None:
    more = Inventory(topics={"Orders": TopicState(16, 16)})
    plan = topic_plan(more, FULL, broker_groups=frozenset({0}))
    assert topic_rows(plan, {"demo-broker-0": Queues(16, 16)})[0] == (
        "Ready", True, "Reconciled",
        "routed on 1 broker group; demo-broker-0 keeps 16/16 queues of Orders, more than the"
        " spec's 8: queues never shrink; also on demo-broker-1, which brokerGroups leaves out",
    )  # fmt: skip


def test_a_topic_on_an_unreachable_cluster_is_degraded() -> None:
    unreachable: Row = (
        "Degraded", True, "AdminUnreachable",
        "demo-broker-1 did not answer; the name servers did not answer",
    )  # fmt: skip
    found = topic_rows(topic_plan(FULL, None), routes=None)
    assert (found[0][:3], found[2]) == (("Ready", False, "AdminUnreachable"), unreachable)


def test_a_topic_listing_groups_the_cluster_lacks_is_an_invalid_spec() -> None:
    plan = topic_plan(FULL, FULL, broker_groups=frozenset({0, 1, 7}))
    assert topic_rows(plan)[2] == (
        "Degraded", True, "InvalidSpec", "brokerGroups lists 7, past the cluster's groups",
    )  # fmt: skip


def test_a_topic_whose_drift_is_being_repaired() -> None:
    confirmed = topics.Confirmed({1: Queues(8, 8)}, settled=True)
    plan = topics.plan(ORDERS, "demo", 2, {0: FULL, 1: Inventory()}, confirmed)
    assert topic_rows(plan)[2] == (
        "Degraded", False, "DriftRepaired",
        "repairing: topic Orders deleted on demo-broker-1 behind the operator's back",
    )  # fmt: skip


def test_a_topic_waits_for_its_cluster_or_is_unmanaged() -> None:
    empty = topics.TopicPlan("Orders")
    assert topic_rows(empty, state=ClusterState.MISSING) == [
        ("Ready", False, "ClusterNotFound", "BrokerCluster demo not found"), IDLE, HEALTHY,
    ]  # fmt: skip
    assert topic_rows(empty, state=ClusterState.NOT_READY)[0] == (
        "Ready", False, "ClusterNotReady", "waiting for BrokerCluster demo to be Ready",
    )  # fmt: skip
    assert topic_rows(empty, managed=False)[0] == (
        "Ready", None, "Unmanaged", "managed: false: the operator leaves topic Orders as it is",
    )  # fmt: skip


def cluster_object(ready: str, reported_for: int | None, generation: int = 2,
                   **metadata: Any) -> dict[str, Any]:  # fmt: skip
    condition: dict[str, Any] = {"type": "Ready", "status": ready, "reason": "Reconciled"}
    if reported_for is not None:
        condition["observedGeneration"] = reported_for
    return {
        "metadata": {"name": "demo", "generation": generation, **metadata},
        "status": {"observedGeneration": reported_for, "conditions": [condition]},
    }


def test_a_cluster_is_ready_for_its_topics_only_when_ready_for_its_current_spec() -> None:
    state = metadata_status.cluster_state
    assert state(cluster_object("True", 2)) is ClusterState.READY
    assert state(cluster_object("False", 2)) is ClusterState.NOT_READY
    # its spec changed (a scale-out applied) and its status does not say so yet
    assert state(cluster_object("True", 1)) is ClusterState.NOT_READY
    assert state(cluster_object("True", None)) is ClusterState.NOT_READY
    assert state({"metadata": {"name": "demo", "generation": 1}}) is ClusterState.NOT_READY
    assert state(None) is ClusterState.MISSING
    deleting = cluster_object("True", 2, deletionTimestamp="2026-01-01T00:00:00Z")
    assert state(deleting) is ClusterState.MISSING


def test_consumer_group_conditions() -> None:
    billing = DesiredGroup("billing")
    held = Inventory(consumer_groups={"billing": billing.settings})

    def group_rows(*inventories: Inventory | None) -> list[Row]:
        plan = consumer_groups.plan(billing, "demo", 2, dict(enumerate(inventories)))
        return rows(metadata_status.consumer_group(plan, True, "demo", ClusterState.READY))

    assert group_rows(held, held) == [("Ready", True, "Reconciled", "on every master"), IDLE,
                                      HEALTHY]  # fmt: skip
    assert group_rows(held, Inventory())[:2] == [
        ("Ready", False, "NotApplied", "create consumer group billing on demo-broker-1"),
        ("Progressing", True, "Creating", "create consumer group billing on demo-broker-1"),
    ]
    assert group_rows(held, None)[0] == (
        "Ready", False, "AdminUnreachable", "demo-broker-1 did not answer",
    )  # fmt: skip
