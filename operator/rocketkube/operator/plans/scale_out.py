"""Scale-out: the broker groups to create, and what each group's master must hold before
the group counts as ready: every managed Topic that lives on it (its ``brokerGroups``
include it or are unset) and every managed ConsumerGroup.

On a group, consumer groups come before topics: a topic's queues there are routed to
producers and consumers as soon as the topic exists, and with
``autoCreateSubscriptionGroup=false`` a consumer pulling from a master that lacks its group
is refused. Only creation counts here; settings that differ are the Topic and
ConsumerGroup reconcilers' business, so a spec edit never makes a group unready.

Decided from observed state only (which groups have objects, what each master holds): an
operator restarted mid-scale creates what is still missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rocketkube.operator.api import names
from rocketkube.operator.plans import consumer_groups, observed, report, topics

__all__ = ["Provision", "ScaleOut", "plan"]


@dataclass(frozen=True, slots=True)
class Provision:
    """What broker group ``group``'s master still lacks (``known`` False: it did not
    answer, so nothing is known)."""

    group: int
    broker: str
    known: bool
    consumer_groups: tuple[consumer_groups.GroupAction, ...] = ()
    topics: tuple[topics.TopicAction, ...] = ()

    @property
    def done(self) -> bool:
        return self.known and not self.consumer_groups and not self.topics

    @property
    def message(self) -> str:
        if not self.known:
            return f"waiting for {self.broker} to answer"
        parts = [
            report.count(len(actions), noun)
            for actions, noun in ((self.consumer_groups, "consumer group"), (self.topics, "topic"))
            if actions
        ]
        return f"creating {' and '.join(parts)} on {self.broker}"


@dataclass(frozen=True, slots=True)
class ScaleOut:
    add: tuple[int, ...]
    """Groups whose objects do not exist yet: create them."""
    provisions: tuple[Provision, ...]
    """One per desired group, in order."""

    @property
    def pending(self) -> tuple[Provision, ...]:
        """Groups that answered and still lack something: the handler creates it."""
        return tuple(p for p in self.provisions if p.known and not p.done)

    def provisioned(self, group: int) -> bool:
        return any(p.group == group and p.done for p in self.provisions)


def plan(
    cluster: str,
    groups: int,
    existing: Iterable[int],
    desired_topics: Sequence[topics.DesiredTopic],
    desired_groups: Sequence[consumer_groups.DesiredGroup],
    inventories: Mapping[int, observed.Inventory | None],
) -> ScaleOut:
    """``existing``: the groups whose StatefulSet exists; ``inventories``: each group's
    master's tables (None or absent: it did not answer)."""
    have = set(existing)
    add = tuple(group for group in range(groups) if group not in have)
    provisions = tuple(
        _provision(cluster, group, inventories.get(group), desired_topics, desired_groups)
        for group in range(groups)
    )
    return ScaleOut(add, provisions)


def _provision(
    cluster: str,
    group: int,
    inventory: observed.Inventory | None,
    desired_topics: Sequence[topics.DesiredTopic],
    desired_groups: Sequence[consumer_groups.DesiredGroup],
) -> Provision:
    broker = names.broker_name(cluster, group)
    if inventory is None:
        return Provision(group, broker, known=False)
    group_actions = [
        consumer_groups.action(desired, cluster, group, None)
        for desired in desired_groups
        if desired.managed and desired.name not in inventory.consumer_groups
    ]
    topic_actions = [
        topics.action(topic, cluster, group, None)
        for topic in desired_topics
        if topic.managed and topic.lives_on(group) and topic.name not in inventory.topics
    ]
    return Provision(
        group,
        broker,
        known=True,
        consumer_groups=tuple(a for a in group_actions if a is not None),
        topics=tuple(a for a in topic_actions if a is not None),
    )
