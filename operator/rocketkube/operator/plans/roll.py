"""The rolling update: the ONE broker pod to delete next, or why to wait, or done
(Strimzi's KafkaRoller, for RocketMQ master/slave groups).

The broker StatefulSets use the OnDelete strategy: a pod changes only when the operator
deletes it and the StatefulSet controller recreates it from the current template. The
handler applies the StatefulSets first, then calls :func:`plan` with their template hashes,
deletes the pod it names (or requeues after a delay when told to wait) and calls again.

A pod is *outdated* when its template hash is not its group's, or when a manual roll is
pending (the cluster's ``rocketkube.io/restart`` annotation differs from the value last
handled) and the pod was not created under that value. The rules, first match wins::

    1  no pod outdated                     Done: record the restart value as handled
    2  a pod terminating or missing        Wait: one pod away at a time, cluster-wide
    3  an outdated pod is stuck            Restart it first (it serves nothing, and only
       (crash loop, image pull, Failed,    a new template can cure it); slaves before
       unschedulable)                      their master
    4  a pod not Ready                     Wait: the previous restart is still starting,
                                           or a pod of the new template is unwell and
                                           the roll stops rather than spread it
    5  a group's slaves behind its         Wait until the lag is <= max_lag_bytes, in
       master, or the lag unknown          every group (so the previous pod's too)
    6  otherwise                           Restart the first outdated pod: groups in
                                           order, within a group the slaves (highest
                                           ordinal first) before the master

Nothing is remembered between calls: an operator restarted mid-roll continues where the
previous one was, and a plan asked twice before anything changed answers the same.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rocketkube.operator.api import names
from rocketkube.operator.plans import observed

__all__ = [
    "DEFAULT_MAX_LAG_BYTES",
    "RESTART_ANNOTATION",
    "Decision",
    "Done",
    "Progress",
    "Restart",
    "RestartCause",
    "Target",
    "Wait",
    "WaitCause",
    "plan",
]

RESTART_ANNOTATION: Final = "rocketkube.io/restart"
"""On the BrokerCluster: a new value asks for a roll of every broker pod. The handler
copies the value into the pod template's annotations (outside the template hash), so
every pod shows the request it was created under."""

DEFAULT_MAX_LAG_BYTES: Final = 4 * 1024 * 1024
"""A slave this close to its master has caught up: a few batches in flight under load,
far below RocketMQ's ``haMasterSlaveFallbehindMax`` (256 MiB)."""


@dataclass(frozen=True, slots=True)
class Target:
    """What every broker pod should run: the template hash per broker group (the groups
    to roll: retiring groups are left out), and the manual roll request."""

    cluster: str
    template_hashes: Mapping[int, str]
    replicas: int
    restart_requested: str | None = None
    """The cluster's ``rocketkube.io/restart`` annotation."""
    restart_handled: str | None = None
    """The value of that annotation the last finished roll handled (from the status)."""
    max_lag_bytes: int = DEFAULT_MAX_LAG_BYTES

    @property
    def manual_pending(self) -> bool:
        return self.restart_requested not in (None, self.restart_handled)

    @property
    def total(self) -> int:
        return len(self.template_hashes) * self.replicas

    def in_scope(self, pod: observed.Pod) -> bool:
        return pod.group in self.template_hashes and 0 <= pod.ordinal < self.replicas

    def outdated(self, pod: observed.Pod) -> RestartCause | None:
        """Why ``pod`` must be restarted, or None when it runs what it should."""
        if pod.template_hash != self.template_hashes[pod.group]:
            return RestartCause.TEMPLATE_CHANGED
        if self.manual_pending and pod.restart_token != self.restart_requested:
            return RestartCause.MANUAL
        return None

    def pod_name(self, group: int, ordinal: int) -> str:
        return names.broker_pod(self.cluster, group, ordinal)


class RestartCause(enum.StrEnum):
    STUCK = "stuck on an old template"
    TEMPLATE_CHANGED = "its template changed"
    MANUAL = f"a restart was requested ({RESTART_ANNOTATION})"


class WaitCause(enum.StrEnum):
    POD_TERMINATING = "PodTerminating"
    POD_MISSING = "PodMissing"
    POD_NOT_READY = "PodNotReady"
    REPLICATION_LAG = "ReplicationLag"
    LAG_UNKNOWN = "LagUnknown"


@dataclass(frozen=True, slots=True)
class Progress:
    updated: int
    total: int

    def __str__(self) -> str:
        return f"{self.updated}/{self.total} pods updated"


@dataclass(frozen=True, slots=True)
class Restart:
    """Delete ``pod``; its StatefulSet recreates it from the current template."""

    pod: observed.Pod
    cause: RestartCause
    progress: Progress

    @property
    def message(self) -> str:
        why = str(self.cause)
        if self.cause is RestartCause.STUCK:
            why = f"{why}, {self.pod.trouble()}"
        return f"restarting {self.pod.name}: {why} ({self.progress})"


@dataclass(frozen=True, slots=True)
class Wait:
    """Restart nothing now; ask again later."""

    cause: WaitCause
    detail: str
    progress: Progress

    @property
    def message(self) -> str:
        return f"rolling, {self.detail} ({self.progress})"


@dataclass(frozen=True, slots=True)
class Done:
    """Every pod runs its group's template; record ``restart_handled`` in the status."""

    restart_handled: str | None


Decision = Restart | Wait | Done


def plan(
    target: Target, pods: Iterable[observed.Pod], replication_lag: Mapping[int, int | None]
) -> Decision:
    """The next step of the roll. ``replication_lag`` is, per broker group, how many bytes
    its furthest slave is behind the master (None or absent: unknown)."""
    scoped = sorted((pod for pod in pods if target.in_scope(pod)), key=_roll_order)
    outdated = [(pod, cause) for pod in scoped if (cause := target.outdated(pod)) is not None]
    progress = Progress(len(scoped) - len(outdated), target.total)
    if not outdated:
        handled = target.restart_requested if target.manual_pending else target.restart_handled
        return Done(handled)
    early = _away(target, scoped, progress) or _stuck_first(outdated, progress)
    if early is not None:
        return early
    unready = next((pod for pod in scoped if not pod.ready), None)
    if unready is not None:
        detail = f"waiting for {unready.name} to be Ready ({unready.trouble()})"
        return Wait(WaitCause.POD_NOT_READY, detail, progress)
    lagging = _lagging(target, replication_lag, progress)
    if lagging is not None:
        return lagging
    pod, cause = outdated[0]
    return Restart(pod, cause, progress)


def _roll_order(pod: observed.Pod) -> tuple[int, int]:
    """Groups in order; in a group the highest ordinal first, so the master (0) last."""
    return (pod.group, -pod.ordinal)


def _away(target: Target, scoped: Sequence[observed.Pod], progress: Progress) -> Wait | None:
    """A Wait while a pod is being deleted or not yet recreated."""
    for pod in scoped:
        if pod.terminating:
            detail = f"waiting for {pod.name} to terminate"
            return Wait(WaitCause.POD_TERMINATING, detail, progress)
    present = {(pod.group, pod.ordinal) for pod in scoped}
    for group in sorted(target.template_hashes):
        for ordinal in reversed(range(target.replicas)):
            if (group, ordinal) not in present:
                detail = f"waiting for {target.pod_name(group, ordinal)} to be created"
                return Wait(WaitCause.POD_MISSING, detail, progress)
    return None


def _stuck_first(
    outdated: Sequence[tuple[observed.Pod, RestartCause]], progress: Progress
) -> Restart | None:
    stuck = next((pod for pod, _ in outdated if pod.stuck), None)
    return None if stuck is None else Restart(stuck, RestartCause.STUCK, progress)


def _lagging(
    target: Target, replication_lag: Mapping[int, int | None], progress: Progress
) -> Wait | None:
    if target.replicas < 2:
        return None
    for group in sorted(target.template_hashes):
        lag = replication_lag.get(group)
        master = target.pod_name(group, 0)
        if lag is None:
            detail = f"waiting to learn how far the slaves of {master} are behind"
            return Wait(WaitCause.LAG_UNKNOWN, detail, progress)
        if lag > target.max_lag_bytes:
            detail = (
                f"waiting for the slaves of {master} to catch up"
                f" ({lag} bytes behind, at most {target.max_lag_bytes})"
            )
            return Wait(WaitCause.REPLICATION_LAG, detail, progress)
    return None
