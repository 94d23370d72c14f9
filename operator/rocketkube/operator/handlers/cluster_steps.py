"""What a BrokerCluster pass writes: its objects (rendered by ``specs``, owned by the
cluster), and the one plan step a timer tick carries out.

Steps, the first that applies (one per tick, so each is observed before the next)::

    provision    a group's master lacks managed ConsumerGroups or Topics: create them
                 (groups first: a topic is routed to consumers as soon as it exists)
    restore      a desired group's write permission is revoked: ADD_WRITE_PERM
    revoke       retiring groups still writable: WIPE_WRITE_PERM, all at once
    remove       a drained retiring group: delete its StatefulSet, Service, ConfigMap,
                 PDB (its claims too with deleteClaim)
    restart      the roll's pod: delete it (OnDelete: its StatefulSet recreates it from
                 the current template)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import kopf

from rocketkube.operator.api import names
from rocketkube.operator.handlers import brokers, resources, workloads
from rocketkube.operator.handlers.context import Context
from rocketkube.operator.kube.client import Obj
from rocketkube.operator.plans import roll, scale_in, scale_out
from rocketkube.operator.specs import base, monitoring

__all__ = ["POD_MONITOR", "Plans", "act", "apply", "drop_pod_monitor", "with_restart_token"]

POD_MONITOR: Final = (monitoring.API_VERSION, monitoring.KIND)


@dataclass(frozen=True)
class Plans:
    """One pass's decisions."""

    roll: roll.Decision
    scale_out: scale_out.ScaleOut
    scale_in: scale_in.ScaleIn


def with_restart_token(objects: Sequence[base.Manifest], token: str | None) -> list[Obj]:
    """``objects`` with the manual roll request on the broker pod templates, outside the
    template hash: a pod shows the request it was created under."""
    out = [copy.deepcopy(obj) for obj in objects]
    if token is None:
        return out
    for obj in out:
        labels = obj["metadata"].get("labels", {})
        if obj["kind"] == "StatefulSet" and names.GROUP_LABEL in labels:
            template = obj["spec"]["template"]["metadata"]
            template.setdefault("annotations", {})[roll.RESTART_ANNOTATION] = token
    return out


async def apply(ctx: Context, body: kopf.Body, objects: Sequence[Obj]) -> list[str]:
    """Create or update each object, owned by the cluster; the objects written."""
    written: list[str] = []
    for obj in objects:
        owned = copy.deepcopy(obj)
        kopf.append_owner_reference(owned, owner=body)
        _, changed = await ctx.kube.ensure(owned)
        if changed:
            written.append(f"{owned['kind']} {owned['metadata']['name']}")
    return written


async def drop_pod_monitor(ctx: Context, cluster: base.Cluster) -> str | None:
    """Delete the cluster's PodMonitor once it is no longer wanted (metrics turned off);
    what was deleted (None: nothing)."""
    if not cluster.pod_monitors or cluster.scraped_by_pod_monitor:
        return None
    name = names.pod_monitor(cluster.name)
    if await ctx.kube.get(*POD_MONITOR, cluster.namespace, name) is None:
        return None
    await ctx.kube.delete(*POD_MONITOR, cluster.namespace, name)
    return f"{monitoring.KIND} {name}"


async def act(
    ctx: Context,
    body: kopf.Body,
    admin: brokers.Brokers,
    plans: Plans,
    found: workloads.Workloads,
) -> str | None:
    """Carry out the first step that applies; what was done (None: nothing to do).
    Admin failures propagate (as :data:`brokers.ADMIN_ERRORS`), API ones as ApiError."""
    for step in (_provision, _restore, _revoke, _remove, _restart):
        done = await step(ctx, body, admin, plans, found)
        if done is not None:
            return done
    return None


async def _provision(
    ctx: Context, body: kopf.Body, admin: brokers.Brokers, plans: Plans, _: workloads.Workloads
) -> str | None:
    pending = plans.scale_out.pending
    if not pending:
        return None
    provision = pending[0]
    message = provision.message
    for group_action in provision.consumer_groups:
        await admin.put_consumer_group(group_action)
    for topic_action in provision.topics:
        await admin.put_topic(topic_action)
    resources.event(body, "Provisioned", message)
    return message


async def _restore(
    ctx: Context, body: kopf.Body, admin: brokers.Brokers, plans: Plans, _: workloads.Workloads
) -> str | None:
    if not plans.scale_in.restore_write:
        return None
    broker = names.broker_name(admin.cluster, plans.scale_in.restore_write[0])
    await admin.admin.add_write_perm(broker)
    message = f"restored the write permission of {broker}"
    resources.event(body, "WritePermissionRestored", message)
    return message


async def _revoke(
    ctx: Context, body: kopf.Body, admin: brokers.Brokers, plans: Plans, _: workloads.Workloads
) -> str | None:
    steps = [s for s in plans.scale_in.active if s.phase is scale_in.Phase.REVOKE_WRITE]
    if not steps:
        return None
    for step in steps:
        await admin.admin.wipe_write_perm(step.broker)
    message = "revoked the write permission of " + ", ".join(step.broker for step in steps)
    resources.event(body, "WritePermissionRevoked", message)
    return message


async def _remove(
    ctx: Context, body: kopf.Body, admin: brokers.Brokers, plans: Plans, found: workloads.Workloads
) -> str | None:
    step = next((s for s in plans.scale_in.active if s.phase is scale_in.Phase.REMOVE), None)
    if step is None:
        return None
    namespace = body["metadata"]["namespace"]
    name = names.broker_group(admin.cluster, step.group)
    for api_version, kind in workloads.GROUP_KINDS:
        await ctx.kube.delete(api_version, kind, namespace, name)
    removed = [f"removed {step.broker}"]
    if step.delete_claims:
        claims = found.claims.get(step.group, ())
        for claim in claims:
            await ctx.kube.delete(*workloads.CLAIM, namespace, claim)
        removed.append(f"deleted {len(claims)} volume claims")
    message = ", ".join(removed)
    resources.event(body, "BrokerGroupRemoved", message)
    return message


async def _restart(
    ctx: Context, body: kopf.Body, admin: brokers.Brokers, plans: Plans, _: workloads.Workloads
) -> str | None:
    decision = plans.roll
    if not isinstance(decision, roll.Restart):
        return None
    await ctx.kube.delete("v1", "Pod", body["metadata"]["namespace"], decision.pod.name)
    ctx.metrics.roll_restarts.inc()
    resources.event(body, "PodRestarted", decision.message)
    return decision.message


def template_hashes(objects: Sequence[Obj], cluster: str, groups: int) -> dict[int, str]:
    """Each desired group's pod template hash, from its rendered StatefulSet."""
    by_name: Mapping[str, Any] = {
        obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "StatefulSet"
    }
    return {
        group: by_name[names.broker_group(cluster, group)]["spec"]["template"]["metadata"][
            "annotations"
        ][names.TEMPLATE_HASH_ANNOTATION]
        for group in range(groups)
    }
