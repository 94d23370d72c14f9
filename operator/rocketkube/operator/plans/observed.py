"""Observed state: what the handlers read from Kubernetes and from the brokers' admin API,
as plain frozen data the plans decide on.

A plan never asks anything itself: a value it needs and the handler could not observe is
given as ``None`` (unknown), and the plan waits or reports instead of guessing.

Where each value comes from::

    Pod.template_hash    the pod's template-hash annotation: the rendered template it was
                         created from (the StatefulSets use OnDelete: only the operator's
                         deletes replace a pod, with the template applied at that moment)
    Pod.restart_token    the pod's ``rocketkube.io/restart`` annotation: the manual roll
                         request it was created under (kept out of the template hash)
    Pod.waiting_reason   the broker container's ``state.waiting.reason``
    Pod.unschedulable    the ``PodScheduled`` condition is False with reason Unschedulable
    Inventory            one master's topic and subscription group tables, or None when it
                         did not answer
    Lag                  a consumer group's unconsumed messages on one broker group
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Final

__all__ = [
    "STUCK_REASONS",
    "GroupSettings",
    "Inventory",
    "Lag",
    "Pod",
    "PodPhase",
    "TopicState",
]

STUCK_REASONS: Final = frozenset(
    {
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "RunContainerError",
    }
)
"""Container waiting reasons that do not resolve by waiting (Strimzi restarts such pods
first): the pod needs a new template, not more time."""


class PodPhase(enum.StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Pod:
    """A broker pod: ``group`` is its broker group, ``ordinal`` its brokerId (0 the
    master)."""

    name: str
    group: int
    ordinal: int
    ready: bool
    template_hash: str | None
    restart_token: str | None = None
    phase: PodPhase = PodPhase.RUNNING
    waiting_reason: str | None = None
    restart_count: int = 0
    unschedulable: bool = False
    terminating: bool = False
    """It has a deletion timestamp: a delete is under way."""

    @property
    def is_master(self) -> bool:
        return self.ordinal == 0

    @property
    def stuck(self) -> bool:
        """Not Ready for a reason that time does not cure: crash-looping, an image that
        cannot be pulled, unschedulable, or failed."""
        if self.ready or self.terminating:
            return False
        return (
            self.waiting_reason in STUCK_REASONS
            or self.unschedulable
            or self.phase is PodPhase.FAILED
        )

    def trouble(self) -> str:
        """Why the pod is not Ready, for messages."""
        if self.waiting_reason is not None:
            return f"{self.waiting_reason} ({self.restart_count} restarts)"
        if self.unschedulable:
            return "Unschedulable"
        return str(self.phase) if self.phase is not PodPhase.RUNNING else "not Ready"


@dataclass(frozen=True, slots=True)
class TopicState:
    """A topic's configuration on one broker group's master."""

    read_queues: int
    write_queues: int
    perm: int = 6
    order: bool = False

    def queues(self) -> str:
        return f"{self.read_queues}/{self.write_queues}"


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """A subscription group's settings, as ``ConsumerGroup`` specifies and a master holds
    them (RocketMQ ``SubscriptionGroupConfig``)."""

    retry_max_times: int = 16
    consume_broadcast_enable: bool = True
    consume_from_min_enable: bool = True
    retry_queue_nums: int = 1
    which_broker_when_consume_slowly: int = 1

    def differences(self, other: GroupSettings) -> tuple[str, ...]:
        """``name a -> b`` for each setting where ``other`` differs from this one."""
        return tuple(
            f"{name} {getattr(self, name)} -> {getattr(other, name)}"
            for name in (setting.name for setting in fields(self))
            if getattr(self, name) != getattr(other, name)
        )


@dataclass(frozen=True, slots=True)
class Inventory:
    """What one broker group's master holds: topics and subscription groups by name."""

    topics: Mapping[str, TopicState] = field(default_factory=dict)
    consumer_groups: Mapping[str, GroupSettings] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Lag:
    """``messages`` published on ``topic`` that ``consumer_group`` has not consumed yet,
    on one broker group."""

    consumer_group: str
    topic: str
    messages: int

    def describe(self) -> str:
        return f"{self.consumer_group} has {self.messages} on {self.topic}"
