"""What Kubernetes says about a cluster's workloads, as the plans' observed data: its broker
pods (:class:`~rocketkube.operator.plans.observed.Pod`), its ready name servers, and which
broker groups still have objects or volume claims (for scale-in).

Everything is found by the labels the specs put on it (``api.names.selector``), so one
list per kind and cluster, whatever the group count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rocketkube.operator.api import names
from rocketkube.operator.kube.client import Kube, Obj
from rocketkube.operator.plans import observed, roll, scale_in

__all__ = ["GROUP_KINDS", "Workloads", "broker_pod", "observe"]

GROUP_KINDS: Final = (
    ("apps/v1", "StatefulSet"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("policy/v1", "PodDisruptionBudget"),
)
"""A broker group's objects, as ``specs.cluster.group_objects`` renders them."""
CLAIM: Final = ("v1", "PersistentVolumeClaim")


@dataclass(frozen=True)
class Workloads:
    """One pass's reading of a cluster's pods and group objects."""

    pods: tuple[observed.Pod, ...]
    namesrv_ready: int
    objects: frozenset[int]
    """Broker groups that still have a StatefulSet, Service, ConfigMap or PDB."""
    statefulsets: frozenset[int]
    """Broker groups whose StatefulSet exists."""
    claims: Mapping[int, tuple[str, ...]]
    """Each broker group's volume claims, by name."""

    def group_states(
        self,
        revoked: Mapping[int, bool | None],
        lag: Mapping[int, Sequence[observed.Lag] | None],
    ) -> list[scale_in.GroupState]:
        """Every group that exists in any form, for :func:`scale_in.plan`."""
        groups = sorted(self.objects | set(self.claims))
        return [
            scale_in.GroupState(
                group,
                objects=group in self.objects,
                claims=len(self.claims.get(group, ())),
                write_revoked=revoked.get(group, False),
                lag=lag.get(group, ()),
            )
            for group in groups
        ]


async def observe(kube: Kube, namespace: str, cluster: str) -> Workloads:
    brokers = names.selector(cluster, names.BROKER_COMPONENT)
    pods = [
        pod
        for obj in await kube.list("v1", "Pod", namespace, brokers)
        if (pod := broker_pod(obj)) is not None
    ]
    namesrv = await kube.list(
        "v1", "Pod", namespace, names.selector(cluster, names.NAMESRV_COMPONENT)
    )
    objects: set[int] = set()
    statefulsets: set[int] = set()
    for api_version, kind in GROUP_KINDS:
        found = _groups(await kube.list(api_version, kind, namespace, brokers))
        objects |= found
        if kind == "StatefulSet":
            statefulsets |= found
    claims: dict[int, list[str]] = {}
    for obj in await kube.list(*CLAIM, namespace, brokers):
        group = _group(obj)
        if group is not None:
            claims.setdefault(group, []).append(obj["metadata"]["name"])
    return Workloads(
        pods=tuple(pods),
        namesrv_ready=sum(1 for obj in namesrv if _ready(obj) and not _terminating(obj)),
        objects=frozenset(objects),
        statefulsets=frozenset(statefulsets),
        claims={group: tuple(sorted(found)) for group, found in claims.items()},
    )


def broker_pod(obj: Obj) -> observed.Pod | None:
    """A broker pod as the plans see it; None for a pod not named as a group's."""
    meta = obj.get("metadata", {})
    group = _group(obj)
    prefix, _, ordinal = str(meta.get("name", "")).rpartition("-")
    if group is None or not ordinal.isdigit() or not prefix:
        return None
    status = obj.get("status") or {}
    annotations = meta.get("annotations") or {}
    container = _container_status(status, names.BROKER_COMPONENT)
    waiting = (container.get("state") or {}).get("waiting") or {}
    return observed.Pod(
        name=meta["name"],
        group=group,
        ordinal=int(ordinal),
        ready=_ready(obj),
        template_hash=annotations.get(names.TEMPLATE_HASH_ANNOTATION),
        restart_token=annotations.get(roll.RESTART_ANNOTATION),
        phase=_phase(status.get("phase")),
        waiting_reason=waiting.get("reason"),
        restart_count=int(container.get("restartCount", 0)),
        unschedulable=_condition(obj, "PodScheduled") == ("False", "Unschedulable"),
        terminating=_terminating(obj),
    )


def _group(obj: Obj) -> int | None:
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(names.GROUP_LABEL, "")
    return int(value) if str(value).isdigit() else None


def _groups(objs: Sequence[Obj]) -> set[int]:
    return {group for obj in objs if (group := _group(obj)) is not None}


def _condition(obj: Obj, type_: str) -> tuple[str, str] | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == type_:
            return str(condition.get("status")), str(condition.get("reason", ""))
    return None


def _ready(obj: Obj) -> bool:
    found = _condition(obj, "Ready")
    return found is not None and found[0] == "True"


def _terminating(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _phase(value: Any) -> observed.PodPhase:
    try:
        return observed.PodPhase(value)
    except ValueError:
        return observed.PodPhase.PENDING


def _container_status(status: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for container in status.get("containerStatuses") or ():
        if container.get("name") == name:
            return dict(container)
    return {}
