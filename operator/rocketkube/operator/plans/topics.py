"""Topic reconciliation: a Topic's spec against what each target broker group's master
holds, giving create/update actions, drift, and queues kept.

On each target group (``brokerGroups``, or every group of the cluster when unset)::

    the master holds          action
    nothing                   create: the spec's queues (read = write), perm, order
    fewer queues than spec    update: they grow to the spec
    more queues than spec     kept, and reported: queues never shrink (a dropped read
                              queue loses the messages not consumed from it)
    another perm or order     update
    (no answer)               unknown: nothing decided there, the topic is not Ready

Drift is a difference from :class:`Confirmed`, what the operator last saw there (the
status's per-group queue counts; perm and order when the status is of the current
generation): a topic deleted or changed behind the operator's back. Groups that
``brokerGroups`` names past the cluster's group count are reported (a spec the schema
cannot check); groups it leaves out that hold the topic are reported and left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from rocketkube.operator.api import models, names
from rocketkube.operator.plans import observed, repair

__all__ = [
    "Confirmed",
    "DesiredTopic",
    "KeptQueues",
    "Queues",
    "TopicAction",
    "TopicPlan",
    "action",
    "plan",
]


class Queues(NamedTuple):
    read: int
    write: int

    def __str__(self) -> str:
        return f"{self.read}/{self.write}"


@dataclass(frozen=True, slots=True)
class DesiredTopic:
    """A Topic resource's spec, its name resolved."""

    name: str
    queues: int
    perm: int = 6
    order: bool = False
    broker_groups: frozenset[int] | None = None
    managed: bool = True

    @classmethod
    def of(cls, resource: models.Topic) -> DesiredTopic:
        spec = resource.spec
        groups = None if spec.broker_groups is None else frozenset(spec.broker_groups)
        name = spec.topic_name or str(resource.metadata["name"])
        return cls(name, spec.queues, spec.perm, spec.order, groups, spec.managed)

    def lives_on(self, group: int) -> bool:
        return self.broker_groups is None or group in self.broker_groups

    def targets(self, groups: int) -> tuple[int, ...]:
        """The broker groups (of ``groups``) the topic lives on."""
        return tuple(group for group in range(groups) if self.lives_on(group))

    def wanted(self, current: observed.TopicState | None) -> observed.TopicState:
        """The state to reach from ``current``: the spec, never fewer queues."""
        read = self.queues if current is None else max(self.queues, current.read_queues)
        write = self.queues if current is None else max(self.queues, current.write_queues)
        return observed.TopicState(read, write, self.perm, self.order)


@dataclass(frozen=True, slots=True)
class Confirmed:
    """What the operator last confirmed on the brokers, read back from the status."""

    queues: Mapping[int, Queues] = field(default_factory=dict)
    """Per broker group (``status.groups``)."""
    settled: bool = False
    """The status is of the current generation: perm and order there were the spec's."""


@dataclass(frozen=True, slots=True)
class TopicAction:
    """Create or update the topic on broker group ``group`` as ``state`` says."""

    kind: repair.ActionKind
    group: int
    broker: str
    topic: str
    state: observed.TopicState

    @property
    def message(self) -> str:
        state = self.state
        order = ", ordered" if state.order else ""
        return (
            f"{self.kind} topic {self.topic} on {self.broker}:"
            f" {state.queues()} queues, perm {state.perm}{order}"
        )


@dataclass(frozen=True, slots=True)
class KeptQueues:
    """``broker`` holds more queues than the spec asks: they stay."""

    group: int
    broker: str
    topic: str
    held: Queues
    spec: int

    @property
    def message(self) -> str:
        return (
            f"{self.broker} keeps {self.held} queues of {self.topic}, more than the spec's"
            f" {self.spec}: queues never shrink"
        )


@dataclass(frozen=True, slots=True)
class TopicPlan:
    topic: str
    actions: tuple[TopicAction, ...] = ()
    drift: tuple[repair.Drift, ...] = ()
    kept: tuple[KeptQueues, ...] = ()
    unknown: tuple[int, ...] = ()
    """Target groups whose master did not answer."""
    beyond: tuple[int, ...] = ()
    """Groups ``brokerGroups`` lists that the cluster does not have."""
    untargeted: tuple[int, ...] = ()
    """Groups ``brokerGroups`` leaves out that hold the topic (left as they are)."""
    expected: Mapping[int, observed.TopicState] = field(default_factory=dict)
    """Each answering target group's state once the actions are done (for the status)."""

    @property
    def settled(self) -> bool:
        """Every target group answered and needs nothing."""
        return not self.actions and not self.unknown


def action(
    topic: DesiredTopic, cluster: str, group: int, current: observed.TopicState | None
) -> TopicAction | None:
    """What broker group ``group`` needs, holding ``current``; None when nothing."""
    wanted = topic.wanted(current)
    if current == wanted:
        return None
    kind = repair.ActionKind.CREATE if current is None else repair.ActionKind.UPDATE
    return TopicAction(kind, group, names.broker_name(cluster, group), topic.name, wanted)


def plan(
    topic: DesiredTopic,
    cluster: str,
    groups: int,
    inventories: Mapping[int, observed.Inventory | None],
    confirmed: Confirmed | None = None,
) -> TopicPlan:
    """Reconcile ``topic`` on a cluster of ``groups`` broker groups; ``inventories`` holds
    each group's master's tables (None or absent: it did not answer)."""
    if not topic.managed:
        return TopicPlan(topic.name)
    confirmed = confirmed or Confirmed()
    targets = topic.targets(groups)
    actions: list[TopicAction] = []
    drift: list[repair.Drift] = []
    kept: list[KeptQueues] = []
    unknown: list[int] = []
    expected: dict[int, observed.TopicState] = {}
    for group in targets:
        inventory = inventories.get(group)
        if inventory is None:
            unknown.append(group)
            continue
        current = inventory.topics.get(topic.name)
        expected[group] = topic.wanted(current)
        step = action(topic, cluster, group, current)
        actions.extend([step] if step is not None else [])
        found = _drift(topic, cluster, group, current, confirmed)
        drift.extend([found] if found is not None else [])
        kept.extend(_kept(topic, cluster, group, current))
    listed = topic.broker_groups or frozenset()
    return TopicPlan(
        topic.name,
        tuple(actions),
        tuple(drift),
        tuple(kept),
        tuple(unknown),
        beyond=tuple(sorted(group for group in listed if group >= groups)),
        untargeted=_untargeted(topic, targets, groups, inventories),
        expected=expected,
    )


def _kept(
    topic: DesiredTopic, cluster: str, group: int, current: observed.TopicState | None
) -> list[KeptQueues]:
    if current is None or max(current.read_queues, current.write_queues) <= topic.queues:
        return []
    held = Queues(current.read_queues, current.write_queues)
    return [KeptQueues(group, names.broker_name(cluster, group), topic.name, held, topic.queues)]


def _drift(
    topic: DesiredTopic,
    cluster: str,
    group: int,
    current: observed.TopicState | None,
    confirmed: Confirmed,
) -> repair.Drift | None:
    was = confirmed.queues.get(group)
    if was is None:
        return None
    broker = names.broker_name(cluster, group)
    subject = f"topic {topic.name}"
    if current is None:
        return repair.Drift(repair.DriftKind.DELETED, group, broker, subject)
    details: list[str] = []
    now = Queues(current.read_queues, current.write_queues)
    if now != was:
        details.append(f"queues {was} -> {now}")
    if confirmed.settled and current.perm != topic.perm:
        details.append(f"perm {topic.perm} -> {current.perm}")
    if confirmed.settled and current.order != topic.order:
        details.append(f"order {topic.order} -> {current.order}")
    if not details:
        return None
    return repair.Drift(repair.DriftKind.CHANGED, group, broker, subject, tuple(details))


def _untargeted(
    topic: DesiredTopic,
    targets: tuple[int, ...],
    groups: int,
    inventories: Mapping[int, observed.Inventory | None],
) -> tuple[int, ...]:
    return tuple(
        group
        for group in range(groups)
        if group not in targets
        and (inventory := inventories.get(group)) is not None
        and topic.name in inventory.topics
    )
