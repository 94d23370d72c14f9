"""Scale-out and scale-in plans: groups to add and what they must hold first; the phase of
each retiring group, derived from observed state only (so resumable mid-scale)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.operator.plans import scale_in, scale_out
from rocketkube.operator.plans.consumer_groups import DesiredGroup
from rocketkube.operator.plans.observed import GroupSettings, Inventory, Lag, TopicState
from rocketkube.operator.plans.scale_in import GroupState, Phase
from rocketkube.operator.plans.topics import DesiredTopic

TOPICS = [
    DesiredTopic("Orders", 8),
    DesiredTopic("Payments", 4, broker_groups=frozenset({0, 2})),
    DesiredTopic("Audit", 2, broker_groups=frozenset({0})),
    DesiredTopic("Legacy", 8, managed=False),
]
GROUPS = [DesiredGroup("billing"), DesiredGroup("audit"), DesiredGroup("old", managed=False)]
FULL = Inventory(
    topics={name: TopicState(8, 8) for name in ("Orders", "Payments", "Audit")},
    consumer_groups={"billing": GroupSettings(), "audit": GroupSettings()},
)


def provisions(plan: scale_out.ScaleOut) -> list[tuple[int, bool, list[str], list[str]]]:
    return [
        (
            p.group, p.known,
            [a.consumer_group for a in p.consumer_groups],
            [f"{a.topic} {a.state.queues()}" for a in p.topics],
        )
        for p in plan.provisions
    ]  # fmt: skip


def test_scaling_out_adds_the_missing_groups_whose_masters_are_unknown_yet() -> None:
    plan = scale_out.plan("demo", 3, {0, 1}, TOPICS, GROUPS, {0: FULL, 1: FULL})
    assert plan.add == (2,)
    assert provisions(plan) == [(0, True, [], []), (1, True, [], []), (2, False, [], [])]
    assert plan.pending == ()
    assert [plan.provisioned(g) for g in range(3)] == [True, True, False]
    assert plan.provisions[2].message == "waiting for demo-broker-2 to answer"


def test_a_new_group_gets_every_consumer_group_and_its_managed_topics_first() -> None:
    plan = scale_out.plan("demo", 3, {0, 1, 2}, TOPICS, GROUPS, {0: FULL, 1: FULL, 2: Inventory()})
    assert plan.add == ()
    assert provisions(plan)[2] == (2, True, ["billing", "audit"], ["Orders 8/8", "Payments 4/4"])
    assert [p.group for p in plan.pending] == [2]
    assert plan.pending[0].message == "creating 2 consumer groups and 2 topics on demo-broker-2"
    assert not plan.provisioned(2)


def test_scaling_out_resumes_with_what_is_still_missing() -> None:
    partial = Inventory(
        topics={"Orders": TopicState(8, 8)}, consumer_groups={"billing": GroupSettings()}
    )
    plan = scale_out.plan("demo", 3, {0, 1, 2}, TOPICS, GROUPS, {0: FULL, 1: FULL, 2: partial})
    assert provisions(plan)[2] == (2, True, ["audit"], ["Payments 4/4"])
    assert plan.pending[0].message == "creating 1 consumer group and 1 topic on demo-broker-2"


def test_only_existence_counts_for_a_new_group_not_settings() -> None:
    different = Inventory(
        topics={"Orders": TopicState(2, 2, perm=4), "Payments": TopicState(1, 1)},
        consumer_groups={"billing": GroupSettings(retry_max_times=0), "audit": GroupSettings()},
    )
    plan = scale_out.plan("demo", 3, {0, 1, 2}, TOPICS, GROUPS, {0: FULL, 1: FULL, 2: different})
    assert plan.provisioned(2)
    assert plan.pending == ()


def test_a_new_cluster_adds_every_group() -> None:
    plan = scale_out.plan("demo", 2, set(), TOPICS, GROUPS, {})
    assert plan.add == (0, 1)
    assert [p.known for p in plan.provisions] == [False, False]


# -- scale-in -----------------------------------------------------------------------------

LAGGING = (
    Lag("audit", "Orders", 0),
    Lag("billing", "Orders", 120),
    Lag("billing", "%RETRY%billing", 3),
    Lag("reports", "Payments", 120),
)


def phases(plan: scale_in.ScaleIn) -> list[tuple[int, Phase]]:
    return [(step.group, step.phase) for step in plan.steps]


def kept(
    group: int, write_revoked: bool | None = False, lag: Sequence[Lag] | None = ()
) -> GroupState:
    """A group with its objects and two claims."""
    return GroupState(group, objects=True, claims=2, write_revoked=write_revoked, lag=lag)


PHASE_CASES: list[tuple[str, Sequence[GroupState], bool, list[tuple[int, Phase]]]] = [
    ("nothing to retire", [kept(0), kept(1)], False, []),
    ("first: revoke writes", [kept(0), kept(1), kept(2)], False, [(2, Phase.REVOKE_WRITE)]),
    (
        "revoked with lag: draining",
        [kept(0), kept(1), kept(2, write_revoked=True, lag=LAGGING)], False,
        [(2, Phase.DRAINING)],
    ),
    (
        "revoked and drained: remove",
        [kept(0), kept(1), kept(2, write_revoked=True, lag=LAGGING[:1])], False,
        [(2, Phase.REMOVE)],
    ),
    (
        "gone, claims kept without deleteClaim: done",
        [kept(0), kept(1), GroupState(2, objects=False, claims=2)], False, [(2, Phase.DONE)],
    ),
    (
        "gone, claims left with deleteClaim: remove them",
        [kept(0), kept(1), GroupState(2, objects=False, claims=2)], True, [(2, Phase.REMOVE)],
    ),
    (
        "gone with its claims: done",
        [kept(0), kept(1), GroupState(2, objects=False, claims=0)], True, [(2, Phase.DONE)],
    ),
    (
        "write permission unknown",
        [kept(0), kept(1), kept(2, write_revoked=None)], False, [(2, Phase.UNKNOWN)],
    ),
    (
        "lag unknown",
        [kept(0), kept(1), kept(2, write_revoked=True, lag=None)], False, [(2, Phase.UNKNOWN)],
    ),
    (
        "every retiring group revoked at once, highest first",
        [kept(0), kept(1), kept(2), kept(3)], False,
        [(3, Phase.REVOKE_WRITE), (2, Phase.REVOKE_WRITE)],
    ),
    (
        "a drained group waits for the higher one to go",
        [kept(0), kept(1), kept(2, write_revoked=True), kept(3, write_revoked=True, lag=LAGGING)],
        False, [(3, Phase.DRAINING), (2, Phase.DRAINED)],
    ),
    (
        "then goes once the higher one is done",
        [kept(0), kept(1), kept(2, write_revoked=True), GroupState(3, objects=False, claims=2)],
        False, [(3, Phase.DONE), (2, Phase.REMOVE)],
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("states", "delete_claim", "expected"),
    [c[1:] for c in PHASE_CASES],
    ids=[c[0] for c in PHASE_CASES],
)
def test_scale_in_phases(
    states: Sequence[GroupState], delete_claim: bool, expected: list[tuple[int, Phase]]
) -> None:
    assert phases(scale_in.plan("demo", 2, states, delete_claim)) == expected


def test_a_blocked_scale_in_names_the_lag_that_blocks_it() -> None:
    plan = scale_in.plan(
        "demo", 2, [kept(0), kept(1), kept(2, write_revoked=True, lag=LAGGING)], False
    )
    step = plan.steps[0]
    assert step.blocking == (LAGGING[1], LAGGING[3], LAGGING[2])
    assert step.message == (
        "demo-broker-2: waiting for consumers to drain it (messages left):"
        " billing has 120 on Orders; reports has 120 on Payments; billing has 3 on %RETRY%billing"
    )
    assert plan.blocked == (step,)
    assert plan.active == (step,)


def test_a_long_list_of_lags_is_cut() -> None:
    lags = [Lag(f"group{i}", "Orders", 10 + i) for i in range(5)]
    plan = scale_in.plan("demo", 0, [kept(0, write_revoked=True, lag=lags)], False)
    assert plan.steps[0].message == (
        "demo-broker-0: waiting for consumers to drain it (messages left):"
        " group4 has 14 on Orders; group3 has 13 on Orders; group2 has 12 on Orders;"
        " and 2 more"
    )


def test_removal_deletes_claims_only_with_delete_claim() -> None:
    drained = [kept(0), kept(1), kept(2, write_revoked=True)]
    assert scale_in.plan("demo", 2, drained, False).steps[0].delete_claims is False
    assert scale_in.plan("demo", 2, drained, True).steps[0].delete_claims is True
    assert scale_in.plan("demo", 2, drained, True).steps[0].message == "demo-broker-2: removing"


def test_an_operator_restarted_after_revoking_does_not_revoke_again() -> None:
    """Nothing is remembered: the revoked permission observed says where the scale-in is."""
    states = [kept(0), kept(1), kept(2, write_revoked=True, lag=LAGGING[:1])]
    first = scale_in.plan("demo", 2, states, False)
    again = scale_in.plan("demo", 2, list(reversed(states)), False)
    assert first == again
    assert phases(first) == [(2, Phase.REMOVE)]


def test_a_scale_in_undone_restores_write_permission() -> None:
    states = [kept(0), kept(1, write_revoked=True), kept(2, write_revoked=True)]
    plan = scale_in.plan("demo", 3, states, False)
    assert (plan.steps, plan.restore_write) == ((), (1, 2))


LAGS = st.lists(
    st.builds(Lag, st.sampled_from(["a", "b"]), st.sampled_from(["T", "U"]), st.integers(0, 9)),
    max_size=3,
)
STATES = st.builds(
    GroupState,
    group=st.integers(0, 5),
    objects=st.booleans(),
    claims=st.integers(0, 2),
    write_revoked=st.one_of(st.none(), st.booleans()),
    lag=st.one_of(st.none(), LAGS),
)


@settings(deadline=None, max_examples=300)
@given(
    st.integers(0, 4),
    st.lists(STATES, max_size=6, unique_by=lambda state: state.group),
    st.booleans(),
)
def test_a_group_is_removed_only_drained_and_after_every_group_above_it(
    groups: int, states: list[GroupState], delete_claim: bool
) -> None:
    plan = scale_in.plan("demo", groups, states, delete_claim)
    by_group = {state.group: state for state in states}
    assert [step.group for step in plan.steps] == sorted(
        (g for g in by_group if g >= groups), reverse=True
    )
    for i, step in enumerate(plan.steps):
        state = by_group[step.group]
        if step.phase is not Phase.REMOVE:
            continue
        assert all(higher.phase is Phase.DONE for higher in plan.steps[:i])
        assert step.delete_claims == (delete_claim and state.claims > 0)
        if state.objects:
            assert state.write_revoked is True
            assert all(lag.messages == 0 for lag in state.lag or ())
            assert state.lag is not None
