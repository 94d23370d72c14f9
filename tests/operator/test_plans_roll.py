"""The rolling update plan: exact decisions for every rule, then properties over any
observed state (one pod away at a time, slaves before a Ready master, always finishing
when pods become Ready)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.operator.api import names
from rocketkube.operator.plans import roll
from rocketkube.operator.plans.observed import Pod, PodPhase
from rocketkube.operator.plans.roll import RestartCause, WaitCause

NEW = "hash-new"
OLD = "hash-old"
CAUGHT_UP: Mapping[int, int | None] = {0: 0, 1: 0, 2: 0}

Brief = tuple[str, object, object]
Lags = Mapping[int, int | None]


def pod(group: int, ordinal: int, template: str | None = NEW, **fields: Any) -> Pod:
    fields.setdefault("ready", True)
    return Pod(names.broker_pod("demo", group, ordinal), group, ordinal, template_hash=template,
               **fields)  # fmt: skip


def cluster(template: str | None = NEW, groups: int = 2, replicas: int = 2) -> list[Pod]:
    return [pod(g, o, template) for g in range(groups) for o in range(replicas)]


def target(groups: int = 2, replicas: int = 2, **fields: Any) -> roll.Target:
    return roll.Target("demo", dict.fromkeys(range(groups), NEW), replicas, **fields)


def replace(pods: Sequence[Pod], name: str, **changes: Any) -> list[Pod]:
    return [dataclasses.replace(p, **changes) if p.name == name else p for p in pods]


def without(pods: Sequence[Pod], name: str) -> list[Pod]:
    return [p for p in pods if p.name != name]


def brief(decision: roll.Decision) -> Brief:
    """A decision as (kind, subject, cause) for exact comparison."""
    if isinstance(decision, roll.Restart):
        return ("restart", decision.pod.name, decision.cause)
    if isinstance(decision, roll.Wait):
        return ("wait", decision.cause, decision.detail)
    return ("done", decision.restart_handled, None)


OUTDATED = cluster(OLD)
G0_DONE = cluster(NEW)[:2] + cluster(OLD)[2:]
CRASHING = {"ready": False, "waiting_reason": "CrashLoopBackOff", "restart_count": 7}

# fmt: off
CASES: list[tuple[str, list[Pod], Lags, roll.Target, Brief]] = [
    ("all updated", cluster(), CAUGHT_UP, target(), ("done", None, None)),
    (
        "a group's slave goes first",
        OUTDATED, CAUGHT_UP, target(),
        ("restart", "demo-broker-0-1", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "the master once its slave is updated",
        replace(OUTDATED, "demo-broker-0-1", template_hash=NEW), CAUGHT_UP, target(),
        ("restart", "demo-broker-0-0", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "the next group once the first is done",
        G0_DONE, CAUGHT_UP, target(),
        ("restart", "demo-broker-1-1", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "slaves highest ordinal first",
        cluster(OLD, groups=1, replicas=3), CAUGHT_UP, target(1, 3),
        ("restart", "demo-broker-0-2", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "the restarted slave is not Ready yet",
        replace(OUTDATED, "demo-broker-0-1", template_hash=NEW, ready=False), CAUGHT_UP, target(),
        ("wait", WaitCause.POD_NOT_READY, "waiting for demo-broker-0-1 to be Ready (not Ready)"),
    ),
    (
        "the restarted slave is still terminating",
        replace(OUTDATED, "demo-broker-0-1", terminating=True, ready=False), CAUGHT_UP, target(),
        ("wait", WaitCause.POD_TERMINATING, "waiting for demo-broker-0-1 to terminate"),
    ),
    (
        "the restarted slave is not recreated yet",
        without(OUTDATED, "demo-broker-0-1"), CAUGHT_UP, target(),
        ("wait", WaitCause.POD_MISSING, "waiting for demo-broker-0-1 to be created"),
    ),
    (
        "the slave has not caught up",
        replace(OUTDATED, "demo-broker-0-1", template_hash=NEW), {0: 5_000_000, 1: 0}, target(),
        (
            "wait", WaitCause.REPLICATION_LAG,
            "waiting for the slaves of demo-broker-0-0 to catch up"
            " (5000000 bytes behind, at most 4194304)",
        ),
    ),
    (
        "a lag at the threshold has caught up",
        replace(OUTDATED, "demo-broker-0-1", template_hash=NEW), {0: 100, 1: 0},
        target(max_lag_bytes=100),
        ("restart", "demo-broker-0-0", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "another group's slave behind holds the roll too",
        G0_DONE, {0: 5_000_000, 1: 0}, target(),
        (
            "wait", WaitCause.REPLICATION_LAG,
            "waiting for the slaves of demo-broker-0-0 to catch up"
            " (5000000 bytes behind, at most 4194304)",
        ),
    ),
    (
        "the lag is unknown",
        OUTDATED, {0: 0, 1: None}, target(),
        (
            "wait", WaitCause.LAG_UNKNOWN,
            "waiting to learn how far the slaves of demo-broker-1-0 are behind",
        ),
    ),
    (
        "no slaves, no lag to wait for",
        cluster(OLD, replicas=1), {}, target(replicas=1),
        ("restart", "demo-broker-0-0", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "a stuck outdated pod goes first, even a master",
        replace(OUTDATED, "demo-broker-1-0", **CRASHING), CAUGHT_UP, target(),
        ("restart", "demo-broker-1-0", RestartCause.STUCK),
    ),
    (
        "a stuck outdated pod goes while another starts",
        replace(
            replace(OUTDATED, "demo-broker-0-1", template_hash=NEW, ready=False),
            "demo-broker-1-1", ready=False, waiting_reason="ImagePullBackOff",
        ),
        {0: None, 1: None}, target(),
        ("restart", "demo-broker-1-1", RestartCause.STUCK),
    ),
    (
        "stuck slaves before their stuck master",
        [pod(0, o, OLD, **CRASHING) for o in range(2)], {}, target(1),
        ("restart", "demo-broker-0-1", RestartCause.STUCK),
    ),
    (
        "an unschedulable outdated pod is stuck",
        replace(OUTDATED, "demo-broker-1-1", ready=False, phase=PodPhase.PENDING,
                unschedulable=True),
        CAUGHT_UP, target(),
        ("restart", "demo-broker-1-1", RestartCause.STUCK),
    ),
    (
        "a failed outdated pod is stuck",
        replace(OUTDATED, "demo-broker-1-1", ready=False, phase=PodPhase.FAILED),
        CAUGHT_UP, target(),
        ("restart", "demo-broker-1-1", RestartCause.STUCK),
    ),
    (
        "a pending outdated pod that is being scheduled is waited for",
        replace(OUTDATED, "demo-broker-1-1", ready=False, phase=PodPhase.PENDING),
        CAUGHT_UP, target(),
        ("wait", WaitCause.POD_NOT_READY, "waiting for demo-broker-1-1 to be Ready (Pending)"),
    ),
    (
        "a stuck pod waits while another is terminating",
        replace(
            replace(OUTDATED, "demo-broker-0-1", terminating=True, ready=False),
            "demo-broker-1-0", **CRASHING,
        ),
        CAUGHT_UP, target(),
        ("wait", WaitCause.POD_TERMINATING, "waiting for demo-broker-0-1 to terminate"),
    ),
    (
        "a pod of the new template crash-looping stops the roll",
        replace(G0_DONE, "demo-broker-0-1", **CRASHING), CAUGHT_UP, target(),
        (
            "wait", WaitCause.POD_NOT_READY,
            "waiting for demo-broker-0-1 to be Ready (CrashLoopBackOff (7 restarts))",
        ),
    ),
    (
        "a pod without a template hash is outdated",
        replace(cluster(), "demo-broker-1-1", template_hash=None), CAUGHT_UP, target(),
        ("restart", "demo-broker-1-1", RestartCause.TEMPLATE_CHANGED),
    ),
    (
        "retiring groups and surplus ordinals are not rolled",
        [*cluster(), pod(2, 0, OLD), pod(2, 1, OLD), pod(0, 2, OLD)], CAUGHT_UP, target(),
        ("done", None, None),
    ),
    (
        "a manual roll restarts pods of the current template",
        cluster(), CAUGHT_UP, target(restart_requested="r1"),
        ("restart", "demo-broker-0-1", RestartCause.MANUAL),
    ),
    (
        "a manual roll resumes at the first pod not created under it",
        replace(cluster(), "demo-broker-0-1", restart_token="r1"), CAUGHT_UP,
        target(restart_requested="r1", restart_handled="r0"),
        ("restart", "demo-broker-0-0", RestartCause.MANUAL),
    ),
    (
        "a manual roll ends when every pod carries it: record it",
        [dataclasses.replace(p, restart_token="r1") for p in cluster()], CAUGHT_UP,
        target(restart_requested="r1", restart_handled="r0"),
        ("done", "r1", None),
    ),
    (
        "a handled request rolls nothing",
        cluster(), CAUGHT_UP, target(restart_requested="r1", restart_handled="r1"),
        ("done", "r1", None),
    ),
    (
        "a removed annotation rolls nothing",
        cluster(), CAUGHT_UP, target(restart_handled="r1"),
        ("done", "r1", None),
    ),
    (
        "a changed template is the cause before a manual request",
        OUTDATED, CAUGHT_UP, target(restart_requested="r1"),
        ("restart", "demo-broker-0-1", RestartCause.TEMPLATE_CHANGED),
    ),
]
# fmt: on


@pytest.mark.parametrize(
    ("pods", "lag", "goal", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_roll_decides(
    pods: list[Pod],
    lag: Lags,
    goal: roll.Target,
    expected: Brief,
) -> None:
    assert brief(roll.plan(goal, pods, lag)) == expected


def test_an_operator_restarted_mid_roll_continues_where_it_was() -> None:
    """Group 0 rolled, group 1's slave restarted and Ready: every fresh plan (nothing
    remembered) names group 1's master, with the progress counted from the pods."""
    mid_roll = replace(G0_DONE, "demo-broker-1-1", template_hash=NEW)
    first = roll.plan(target(), mid_roll, CAUGHT_UP)
    again = roll.plan(target(), list(reversed(mid_roll)), dict(CAUGHT_UP))
    assert first == again
    assert isinstance(first, roll.Restart)
    assert first.message == "restarting demo-broker-1-0: its template changed (3/4 pods updated)"


def test_messages_say_what_and_how_far() -> None:
    stuck = roll.plan(target(), replace(OUTDATED, "demo-broker-1-0", **CRASHING), CAUGHT_UP)
    assert isinstance(stuck, roll.Restart)
    assert stuck.message == (
        "restarting demo-broker-1-0: stuck on an old template, CrashLoopBackOff (7 restarts)"
        " (0/4 pods updated)"
    )
    waiting = roll.plan(target(), without(G0_DONE, "demo-broker-1-1"), CAUGHT_UP)
    assert isinstance(waiting, roll.Wait)
    assert waiting.message == (
        "rolling, waiting for demo-broker-1-1 to be created (2/4 pods updated)"
    )


# -- properties ---------------------------------------------------------------------------

GROUPS = st.integers(1, 3)
REPLICAS = st.integers(1, 3)


@st.composite
def observations(draw: st.DrawFn) -> tuple[roll.Target, list[Pod], dict[int, int | None]]:
    groups, replicas = draw(GROUPS), draw(REPLICAS)
    requested = draw(st.sampled_from([None, "r1"]))
    goal = target(groups, replicas, restart_requested=requested)
    pods: list[Pod] = []
    for group in range(groups):
        for ordinal in range(replicas):
            if draw(st.booleans()) and draw(st.booleans()):
                continue  # missing
            pods.append(
                pod(
                    group, ordinal, draw(st.sampled_from([NEW, OLD, None])),
                    ready=draw(st.booleans()),
                    restart_token=draw(st.sampled_from([None, "r1"])),
                    waiting_reason=draw(st.sampled_from([None, None, "CrashLoopBackOff"])),
                    unschedulable=draw(st.booleans()) and draw(st.booleans()),
                    terminating=draw(st.booleans()) and draw(st.booleans()),
                )
            )  # fmt: skip
    lags = st.one_of(st.none(), st.integers(0, 10_000_000))
    return goal, pods, {group: draw(lags) for group in range(groups)}


@settings(deadline=None, max_examples=300)
@given(observations())
def test_a_restart_is_never_a_second_pod_away_nor_a_ready_master_before_its_slaves(
    observation: tuple[roll.Target, list[Pod], dict[int, int | None]],
) -> None:
    goal, pods, lag = observation
    decision = roll.plan(goal, pods, lag)
    outdated = [p for p in pods if goal.outdated(p) is not None]
    assert isinstance(decision, roll.Done) == (not outdated)
    if not isinstance(decision, roll.Restart):
        return
    chosen = decision.pod
    assert chosen in outdated
    assert not any(p.terminating for p in pods)
    assert len(pods) == goal.total  # nothing missing
    if chosen.is_master and chosen.ready:
        slaves = [p for p in outdated if p.group == chosen.group and not p.is_master]
        assert slaves == []
    if decision.cause is not RestartCause.STUCK:
        assert all(p.ready for p in pods)
        if goal.replicas > 1:
            assert all(v is not None and v <= goal.max_lag_bytes for v in lag.values())


@settings(deadline=None, max_examples=150)
@given(observations(), st.data())
def test_the_roll_always_finishes_when_pods_become_ready(
    observation: tuple[roll.Target, list[Pod], dict[int, int | None]], data: st.DataObject
) -> None:
    """Play the cluster: the plan's restarts delete pods, and between passes the world
    moves one step (a pod terminates, is recreated from the current template, becomes
    Ready; a slave catches up). Old-template pods stuck stay stuck until restarted."""
    goal, pods, lag = observation
    world = World(goal, {(p.group, p.ordinal): p for p in pods}, dict(lag))
    restarted: list[str] = []
    for _ in range(20 * goal.total + 20):
        decision = roll.plan(goal, world.pods.values(), world.lag)
        if isinstance(decision, roll.Done):
            break
        if isinstance(decision, roll.Restart):
            assert world.away() == 0, "a second pod deleted while one is away"
            world.check_master_order(decision.pod)
            restarted.append(decision.pod.name)
            world.delete(decision.pod)
        else:
            world.advance(data)
    else:
        pytest.fail(f"no end after {restarted}")
    assert len(restarted) == len(set(restarted)), "a pod restarted twice"


@dataclasses.dataclass
class World:
    goal: roll.Target
    pods: dict[tuple[int, int], Pod]
    lag: dict[int, int | None]

    def away(self) -> int:
        """Pods being deleted or not yet recreated."""
        missing = self.goal.total - len(self.pods)
        return missing + sum(p.terminating for p in self.pods.values())

    def check_master_order(self, chosen: Pod) -> None:
        if chosen.is_master and chosen.ready:
            group = [p for p in self.pods.values() if p.group == chosen.group]
            assert all(self.goal.outdated(p) is None for p in group if not p.is_master)

    def delete(self, chosen: Pod) -> None:
        self.pods[(chosen.group, chosen.ordinal)] = dataclasses.replace(
            chosen, terminating=True, ready=False
        )

    def advance(self, data: st.DataObject) -> None:
        moves = self.moves()
        assert moves, "the plan waits but nothing can happen"
        key, change = data.draw(st.sampled_from(moves))
        if key is None:
            self.lag = dict.fromkeys(self.lag, 0)
        elif change is None:
            del self.pods[key]
        else:
            self.pods[key] = change

    def moves(self) -> list[tuple[tuple[int, int] | None, Pod | None]]:
        moves: list[tuple[tuple[int, int] | None, Pod | None]] = []
        for key, p in self.pods.items():
            if p.terminating:
                moves.append((key, None))
            elif not p.ready and not (p.stuck and self.goal.outdated(p) is not None):
                moves.append((key, self.well(p)))
        for group in self.goal.template_hashes:
            for ordinal in range(self.goal.replicas):
                if (group, ordinal) not in self.pods:
                    fresh = pod(group, ordinal, NEW, ready=False,
                                restart_token=self.goal.restart_requested)  # fmt: skip
                    moves.append(((group, ordinal), fresh))
        if any(v != 0 for v in self.lag.values()):
            moves.append((None, None))
        return moves

    @staticmethod
    def well(p: Pod) -> Pod:
        return dataclasses.replace(
            p, ready=True, waiting_reason=None, unschedulable=False, phase=PodPhase.RUNNING
        )
