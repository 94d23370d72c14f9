"""Topic and ConsumerGroup reconciliation plans: exact actions, drift, queues kept."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.operator.api import models
from rocketkube.operator.plans import consumer_groups, repair, topics
from rocketkube.operator.plans.consumer_groups import DesiredGroup
from rocketkube.operator.plans.observed import GroupSettings, Inventory, TopicState
from rocketkube.operator.plans.repair import ActionKind, DriftKind
from rocketkube.operator.plans.topics import Confirmed, DesiredTopic, Queues

ORDERS = DesiredTopic("Orders", queues=8)

Inventories = Mapping[int, Inventory | None]
Actions = list[tuple[str, int, str]]


def holding(**found: TopicState) -> Inventory:
    return Inventory(topics=found)


def brief(plan: topics.TopicPlan) -> Actions:
    return [(a.kind, a.group, f"{a.state.queues()} p{a.state.perm} o{a.state.order}")
            for a in plan.actions]  # fmt: skip


def drift(plan: topics.TopicPlan | consumer_groups.GroupPlan) -> list[tuple[str, int, str]]:
    return [(d.kind, d.group, d.message) for d in plan.drift]


# fmt: off
CASES: list[tuple[str, DesiredTopic, Inventories, Actions]] = [
    ("absent everywhere: created on every group", ORDERS, {0: holding(), 1: holding()},
     [(ActionKind.CREATE, 0, "8/8 p6 oFalse"), (ActionKind.CREATE, 1, "8/8 p6 oFalse")]),
    ("as specified: nothing", ORDERS,
     {0: holding(Orders=TopicState(8, 8)), 1: holding(Orders=TopicState(8, 8))}, []),
    ("brokerGroups limits the targets", DesiredTopic("Orders", 8, broker_groups=frozenset({1})),
     {0: holding(), 1: holding()}, [(ActionKind.CREATE, 1, "8/8 p6 oFalse")]),
    ("the spec grew: queues grow", DesiredTopic("Orders", 16),
     {0: holding(Orders=TopicState(8, 8)), 1: holding(Orders=TopicState(16, 16))},
     [(ActionKind.UPDATE, 0, "16/16 p6 oFalse")]),
    ("more queues than the spec: kept", ORDERS,
     {0: holding(Orders=TopicState(16, 16)), 1: holding(Orders=TopicState(16, 8))}, []),
    ("fewer write queues only: the writes grow, the reads stay", ORDERS,
     {0: holding(Orders=TopicState(16, 4)), 1: holding(Orders=TopicState(8, 8))},
     [(ActionKind.UPDATE, 0, "16/8 p6 oFalse")]),
    ("perm and order follow the spec", DesiredTopic("Orders", 8, perm=4, order=True),
     {0: holding(Orders=TopicState(8, 8, 6, False)), 1: holding(Orders=TopicState(8, 8, 4, True))},
     [(ActionKind.UPDATE, 0, "8/8 p4 oTrue")]),
    ("a master that did not answer: nothing decided there", ORDERS,
     {0: None, 1: holding()}, [(ActionKind.CREATE, 1, "8/8 p6 oFalse")]),
    ("unmanaged: nothing", DesiredTopic("Orders", 8, managed=False), {0: holding(), 1: None}, []),
]
# fmt: on


@pytest.mark.parametrize(
    ("topic", "inventories", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_topic_actions(
    topic: DesiredTopic,
    inventories: Inventories,
    expected: Actions,
) -> None:
    assert brief(topics.plan(topic, "demo", 2, inventories)) == expected


def test_an_action_says_what_it_does() -> None:
    plan = topics.plan(DesiredTopic("Orders", 8, perm=4, order=True), "demo", 1, {0: holding()})
    assert [a.message for a in plan.actions] == [
        "create topic Orders on demo-broker-0: 8/8 queues, perm 4, ordered"
    ]
    assert plan.actions[0].broker == "demo-broker-0"


def test_queues_never_shrink_and_the_plan_says_so() -> None:
    plan = topics.plan(
        ORDERS, "demo", 2,
        {0: holding(Orders=TopicState(16, 16)), 1: holding(Orders=TopicState(16, 8))},
    )  # fmt: skip
    assert plan.actions == ()
    assert plan.settled
    assert [k.message for k in plan.kept] == [
        "demo-broker-0 keeps 16/16 queues of Orders, more than the spec's 8: queues never shrink",
        "demo-broker-1 keeps 16/8 queues of Orders, more than the spec's 8: queues never shrink",
    ]
    assert plan.expected == {0: TopicState(16, 16), 1: TopicState(16, 8)}


def test_a_topic_deleted_behind_the_operators_back_is_drift_and_recreated() -> None:
    confirmed = Confirmed({0: Queues(8, 8), 1: Queues(8, 8)}, settled=True)
    plan = topics.plan(
        ORDERS, "demo", 2, {0: holding(Orders=TopicState(8, 8)), 1: holding()}, confirmed
    )
    assert brief(plan) == [(ActionKind.CREATE, 1, "8/8 p6 oFalse")]
    assert drift(plan) == [
        (
            DriftKind.DELETED, 1,
            "topic Orders deleted on demo-broker-1 behind the operator's back",
        )
    ]  # fmt: skip


def test_a_topic_changed_behind_the_operators_back_is_drift_and_repaired() -> None:
    confirmed = Confirmed({0: Queues(16, 16)}, settled=True)
    plan = topics.plan(
        DesiredTopic("Orders", 16), "demo", 1, {0: holding(Orders=TopicState(8, 16, 2))},
        confirmed,
    )  # fmt: skip
    assert brief(plan) == [(ActionKind.UPDATE, 0, "16/16 p6 oFalse")]
    assert drift(plan) == [
        (
            DriftKind.CHANGED, 0,
            "topic Orders changed on demo-broker-0 behind the operator's back"
            " (queues 16/16 -> 8/16, perm 6 -> 2)",
        )
    ]  # fmt: skip


def test_queues_grown_behind_the_operators_back_are_drift_but_kept() -> None:
    confirmed = Confirmed({0: Queues(8, 8)}, settled=True)
    plan = topics.plan(ORDERS, "demo", 1, {0: holding(Orders=TopicState(12, 12))}, confirmed)
    assert plan.actions == ()
    assert [d.details for d in plan.drift] == [("queues 8/8 -> 12/12",)]
    assert [k.held for k in plan.kept] == [Queues(12, 12)]


@pytest.mark.parametrize(
    ("confirmed", "why"),
    [
        (Confirmed({0: Queues(8, 8)}, settled=False), "the spec changed: not drift"),
        (Confirmed({}, settled=True), "never confirmed there (a new group): not drift"),
    ],
)
def test_differences_the_operator_did_not_confirm_are_not_drift(
    confirmed: Confirmed, why: str
) -> None:
    plan = topics.plan(
        DesiredTopic("Orders", 8, perm=4), "demo", 2,
        {0: holding(Orders=TopicState(8, 8, 6)), 1: holding()}, confirmed,
    )  # fmt: skip
    assert brief(plan) == [
        (ActionKind.UPDATE, 0, "8/8 p4 oFalse"),
        (ActionKind.CREATE, 1, "8/8 p4 oFalse"),
    ], why
    assert plan.drift == (), why


def test_groups_beyond_the_cluster_unknown_and_untargeted_are_reported() -> None:
    topic = DesiredTopic("Orders", 8, broker_groups=frozenset({0, 1, 5}))
    plan = topics.plan(
        topic, "demo", 3, {0: holding(), 1: None, 2: holding(Orders=TopicState(8, 8))}
    )
    assert brief(plan) == [(ActionKind.CREATE, 0, "8/8 p6 oFalse")]
    assert (plan.unknown, plan.beyond, plan.untargeted) == ((1,), (5,), (2,))
    assert not plan.settled
    assert plan.expected == {0: TopicState(8, 8)}


def test_a_topic_resource_resolves_its_name() -> None:
    resource = models.Topic.model_validate(
        {"metadata": {"name": "orders"}, "spec": {"cluster": "demo", "queues": 16,
         "brokerGroups": [1, 0], "order": True}}
    )  # fmt: skip
    assert DesiredTopic.of(resource) == DesiredTopic(
        "orders", 16, 6, True, frozenset({0, 1}), managed=True
    )
    named = models.Topic.model_validate(
        {"metadata": {"name": "orders"}, "spec": {"cluster": "demo", "topicName": "Orders"}}
    )
    assert DesiredTopic.of(named) == DesiredTopic("Orders", 8)


# -- consumer groups ----------------------------------------------------------------------

BILLING = DesiredGroup("billing", GroupSettings(retry_max_times=3))


def groups_on(**found: GroupSettings) -> Inventory:
    return Inventory(consumer_groups=found)


def test_a_consumer_group_is_created_on_every_master_and_updated_where_it_differs() -> None:
    plan = consumer_groups.plan(
        BILLING, "demo", 3,
        {0: groups_on(), 1: groups_on(billing=GroupSettings()),
         2: groups_on(billing=GroupSettings(retry_max_times=3))},
    )  # fmt: skip
    assert [(a.kind, a.group, a.settings) for a in plan.actions] == [
        (ActionKind.CREATE, 0, BILLING.settings),
        (ActionKind.UPDATE, 1, BILLING.settings),
    ]
    assert [a.message for a in plan.actions] == [
        "create consumer group billing on demo-broker-0",
        "update consumer group billing on demo-broker-1",
    ]
    assert plan.drift == ()


def test_a_consumer_group_deleted_or_changed_behind_the_operators_back_is_drift() -> None:
    changed = GroupSettings(retry_max_times=3, consume_broadcast_enable=False)
    plan = consumer_groups.plan(
        BILLING, "demo", 3, {0: groups_on(), 1: groups_on(billing=changed), 2: groups_on()},
        consumer_groups.Confirmed(frozenset({0, 1}), settled=True),
    )  # fmt: skip
    assert [a.group for a in plan.actions] == [0, 1, 2]
    assert drift(plan) == [
        (DriftKind.DELETED, 0,
         "consumer group billing deleted on demo-broker-0 behind the operator's back"),
        (DriftKind.CHANGED, 1,
         "consumer group billing changed on demo-broker-1 behind the operator's back"
         " (consume_broadcast_enable True -> False)"),
    ]  # fmt: skip


def test_a_consumer_group_spec_change_is_not_drift() -> None:
    plan = consumer_groups.plan(
        BILLING, "demo", 1, {0: groups_on(billing=GroupSettings())},
        consumer_groups.Confirmed(frozenset({0}), settled=False),
    )  # fmt: skip
    assert [a.kind for a in plan.actions] == [ActionKind.UPDATE]
    assert plan.drift == ()


def test_a_consumer_group_master_that_does_not_answer_is_unknown() -> None:
    plan = consumer_groups.plan(BILLING, "demo", 2, {0: groups_on(billing=BILLING.settings)})
    assert (plan.actions, plan.unknown, plan.settled) == ((), (1,), False)
    unmanaged = DesiredGroup("billing", managed=False)
    assert consumer_groups.plan(unmanaged, "demo", 2, {}) == consumer_groups.GroupPlan("billing")


def test_a_consumer_group_resource_resolves_its_name_and_settings() -> None:
    resource = models.ConsumerGroup.model_validate(
        {"metadata": {"name": "billing"}, "spec": {"cluster": "demo", "retryMaxTimes": 3,
         "consumeBroadcastEnable": False, "whichBrokerWhenConsumeSlowly": 0}}
    )  # fmt: skip
    assert DesiredGroup.of(resource) == DesiredGroup(
        "billing",
        GroupSettings(3, consume_broadcast_enable=False, which_broker_when_consume_slowly=0),
    )


def test_drift_messages_without_details() -> None:
    found = repair.Drift(DriftKind.DELETED, 0, "demo-broker-0", "topic T")
    assert found.message == "topic T deleted on demo-broker-0 behind the operator's back"


TOPIC_STATES = st.one_of(
    st.none(),
    st.builds(TopicState, st.integers(1, 64), st.integers(1, 64), st.sampled_from([2, 4, 6])),
)


@settings(deadline=None, max_examples=300)
@given(st.integers(1, 64), st.sampled_from([2, 4, 6]), st.lists(TOPIC_STATES, max_size=4))
def test_queues_never_shrink_and_always_reach_the_spec(
    queues: int, perm: int, found: list[TopicState | None]
) -> None:
    topic = DesiredTopic("T", queues, perm)
    inventories = {
        group: Inventory(topics={} if state is None else {"T": state})
        for group, state in enumerate(found)
    }
    plan = topics.plan(topic, "demo", len(found), inventories)
    for action in plan.actions:
        held = found[action.group]
        target = action.state
        assert min(target.read_queues, target.write_queues) >= queues
        assert target.perm == perm
        if held is not None:
            assert target.read_queues >= held.read_queues
            assert target.write_queues >= held.write_queues
    assert set(plan.expected) == set(range(len(found)))
    assert len(plan.kept) == sum(
        1 for s in found if s is not None and max(s.read_queues, s.write_queues) > queues
    )
