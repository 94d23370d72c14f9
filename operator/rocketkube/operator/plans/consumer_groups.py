"""ConsumerGroup reconciliation: the group's settings on every master of the cluster
(production clusters run with ``autoCreateSubscriptionGroup=false``, so a group missing on
a master cannot consume from it).

On each broker group: absent -> create; other settings (retryMaxTimes,
consumeBroadcastEnable, consumeFromMinEnable, retryQueueNums,
whichBrokerWhenConsumeSlowly) -> update; no answer -> unknown. Drift is a difference from
:class:`Confirmed`: the group deleted where the operator had confirmed it, or its settings
changed while the spec did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketkube.operator.api import models, names
from rocketkube.operator.plans import observed, repair

__all__ = ["Confirmed", "DesiredGroup", "GroupAction", "GroupPlan", "action", "plan"]


@dataclass(frozen=True, slots=True)
class DesiredGroup:
    """A ConsumerGroup resource's spec, its name resolved."""

    name: str
    settings: observed.GroupSettings = field(default_factory=observed.GroupSettings)
    managed: bool = True

    @classmethod
    def of(cls, resource: models.ConsumerGroup) -> DesiredGroup:
        spec = resource.spec
        settings = observed.GroupSettings(
            retry_max_times=spec.retry_max_times,
            consume_broadcast_enable=spec.consume_broadcast_enable,
            consume_from_min_enable=spec.consume_from_min_enable,
            retry_queue_nums=spec.retry_queue_nums,
            which_broker_when_consume_slowly=spec.which_broker_when_consume_slowly,
        )
        return cls(spec.group_name or str(resource.metadata["name"]), settings, spec.managed)


@dataclass(frozen=True, slots=True)
class Confirmed:
    """What the operator last confirmed: the broker groups that held the group with the
    spec's settings, and whether that was for the current generation."""

    groups: frozenset[int] = frozenset()
    settled: bool = False


@dataclass(frozen=True, slots=True)
class GroupAction:
    """Create or update ``consumer_group`` on broker group ``group``."""

    kind: repair.ActionKind
    group: int
    broker: str
    consumer_group: str
    settings: observed.GroupSettings

    @property
    def message(self) -> str:
        return f"{self.kind} consumer group {self.consumer_group} on {self.broker}"


@dataclass(frozen=True, slots=True)
class GroupPlan:
    consumer_group: str
    actions: tuple[GroupAction, ...] = ()
    drift: tuple[repair.Drift, ...] = ()
    unknown: tuple[int, ...] = ()
    """Broker groups whose master did not answer."""

    @property
    def settled(self) -> bool:
        return not self.actions and not self.unknown


def action(
    desired: DesiredGroup, cluster: str, group: int, current: observed.GroupSettings | None
) -> GroupAction | None:
    """What broker group ``group`` needs, holding ``current``; None when nothing."""
    if current == desired.settings:
        return None
    kind = repair.ActionKind.CREATE if current is None else repair.ActionKind.UPDATE
    broker = names.broker_name(cluster, group)
    return GroupAction(kind, group, broker, desired.name, desired.settings)


def plan(
    desired: DesiredGroup,
    cluster: str,
    groups: int,
    inventories: Mapping[int, observed.Inventory | None],
    confirmed: Confirmed | None = None,
) -> GroupPlan:
    """Reconcile ``desired`` on the masters of ``groups`` broker groups."""
    if not desired.managed:
        return GroupPlan(desired.name)
    confirmed = confirmed or Confirmed()
    actions: list[GroupAction] = []
    drift: list[repair.Drift] = []
    unknown: list[int] = []
    for group in range(groups):
        inventory = inventories.get(group)
        if inventory is None:
            unknown.append(group)
            continue
        current = inventory.consumer_groups.get(desired.name)
        step = action(desired, cluster, group, current)
        actions.extend([step] if step is not None else [])
        if group in confirmed.groups:
            found = _drift(desired, cluster, group, current, confirmed.settled)
            drift.extend([found] if found is not None else [])
    return GroupPlan(desired.name, tuple(actions), tuple(drift), tuple(unknown))


def _drift(
    desired: DesiredGroup,
    cluster: str,
    group: int,
    current: observed.GroupSettings | None,
    settled: bool,
) -> repair.Drift | None:
    broker = names.broker_name(cluster, group)
    subject = f"consumer group {desired.name}"
    if current is None:
        return repair.Drift(repair.DriftKind.DELETED, group, broker, subject)
    details = desired.settings.differences(current) if settled else ()
    if not details:
        return None
    return repair.Drift(repair.DriftKind.CHANGED, group, broker, subject, details)
