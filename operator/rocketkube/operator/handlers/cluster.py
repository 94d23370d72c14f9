"""A BrokerCluster pass: observe -> plan -> act -> report.

::

    discover   whether PodMonitors are served (how Prometheus is to find the pods)
    render     specs.cluster.objects (InvalidSpec: the Degraded condition, an Event, no
               retries until the spec changes)
    apply      ensure every object of the name servers and of each desired group, and the
               PodMonitor, owned by the cluster; a PodMonitor no longer wanted deleted
               (skipped while ``paused``)
    observe    pods, group objects and claims (Kubernetes); each master's topics and
               groups, replication lag, write permissions, drain lag (admin API)
    plan       roll, scale-out, scale-in; the status summary
    act        a timer tick only: the first step that applies (``cluster_steps``)
    report     status: conditions, observedGeneration, nameServerAddress, image, groups,
               readyGroups, restartHandled

The create/update/resume handler runs render, apply, observe, plan and report; the timer
runs the whole pass. Nothing is kept between passes: what to do next is always decided
from what is observed, so an operator restarted mid-roll or mid-scale resumes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import kopf

from rocketkube.operator.api import models, names
from rocketkube.operator.handlers import brokers, cluster_steps, resources, workloads
from rocketkube.operator.handlers.context import Context
from rocketkube.operator.kube.client import Kube, Obj
from rocketkube.operator.plans import (
    cluster_status,
    consumer_groups,
    observed,
    report,
    roll,
    scale_in,
    scale_out,
    topics,
)
from rocketkube.operator.specs import base
from rocketkube.operator.specs import cluster as cluster_specs

__all__ = ["Readings", "reconcile"]

TOPIC: tuple[str, str] = (f"{models.GROUP}/{models.VERSION}", "Topic")
CONSUMER_GROUP: tuple[str, str] = (f"{models.GROUP}/{models.VERSION}", "ConsumerGroup")
M = TypeVar("M", models.Topic, models.ConsumerGroup)


@dataclass(frozen=True)
class Readings:
    """What the admin API said this pass (None: unknown)."""

    inventories: dict[int, observed.Inventory | None]
    replication: dict[int, int | None]
    revoked: dict[int, bool | None]
    lag: dict[int, list[observed.Lag] | None]


async def reconcile(ctx: Context, body: kopf.Body, patch: kopf.Patch, *, act: bool) -> None:
    """One pass over the cluster in ``body``; ``act``: carry out a plan step (timers)."""
    meta = body["metadata"]
    model = resources.parse(models.BrokerCluster, body)
    monitors = await ctx.kube.serves(*cluster_steps.POD_MONITOR)
    cluster = base.Cluster.of(model, meta["name"], meta["namespace"], pod_monitors=monitors)
    token = (meta.get("annotations") or {}).get(roll.RESTART_ANNOTATION)
    desired = cluster_steps.with_restart_token(cluster_specs.objects(cluster), token)
    paused = cluster.spec.paused
    if not paused:
        written = await cluster_steps.apply(ctx, body, desired)
        if written:
            resources.event(body, "Applied", "applied " + ", ".join(written))
        dropped = await cluster_steps.drop_pod_monitor(ctx, cluster)
        if dropped is not None:
            resources.event(body, "Deleted", f"deleted {dropped}")
    found = await workloads.observe(ctx.kube, cluster.namespace, cluster.name)
    wanted_topics, wanted_groups = await _metadata(ctx.kube, cluster.namespace, cluster.name)
    address = ctx.address_of(cluster.name, cluster.namespace, cluster.spec.name_servers.replicas)
    groups = cluster.spec.brokers.groups
    async with brokers.connect(address, cluster.name, groups, ctx.timing.admin_timeout) as admin:
        target = _target(cluster, body, desired)
        rolling = any(target.in_scope(pod) and target.outdated(pod) for pod in found.pods)
        readings = await _read(admin, cluster, found, rolling=rolling)
        plans = _plans(cluster, body, target, found, readings, wanted_topics, wanted_groups)
        if act and not paused:
            try:
                await cluster_steps.act(ctx, body, admin, plans, found)
            except brokers.ADMIN_ERRORS as exc:
                admin.errors.append(f"the admin API refused a step: {exc}")
                resources.event(body, "StepFailed", str(exc), resources.WARNING)
        errors = admin.errors if any(pod.ready for pod in found.pods) else []
    view = cluster_status.ClusterView(
        cluster=cluster.name,
        groups=groups,
        replicas=cluster.spec.brokers.replicas_per_group,
        pods=found.pods,
        roll=plans.roll,
        scale_out=plans.scale_out,
        scale_in=plans.scale_in,
        namesrv_ready=found.namesrv_ready,
        namesrv_replicas=cluster.spec.name_servers.replicas,
        admin_error=report.join(errors) or None,
        paused=paused,
    )
    summary = cluster_status.summarize(view)
    _report(ctx, body, patch, cluster, summary, found, readings, plans, paused=paused)


async def _metadata(
    kube: Kube, namespace: str, cluster: str
) -> tuple[list[topics.DesiredTopic], list[consumer_groups.DesiredGroup]]:
    """The cluster's Topics and ConsumerGroups (those being deleted left out)."""
    wanted_topics = [
        topics.DesiredTopic.of(model)
        for obj in await kube.list(*TOPIC, namespace, {})
        if (model := _model_of(models.Topic, obj, cluster)) is not None
    ]
    wanted_groups = [
        consumer_groups.DesiredGroup.of(group)
        for obj in await kube.list(*CONSUMER_GROUP, namespace, {})
        if (group := _model_of(models.ConsumerGroup, obj, cluster)) is not None
    ]
    return wanted_topics, wanted_groups


def _model_of(model: type[M], obj: Obj, cluster: str) -> M | None:
    if (obj.get("spec") or {}).get("cluster") != cluster:
        return None
    if obj["metadata"].get("deletionTimestamp"):
        return None
    try:
        return resources.parse(model, obj)
    except base.InvalidSpec:
        return None


async def _read(
    admin: brokers.Brokers, cluster: base.Cluster, found: workloads.Workloads, *, rolling: bool
) -> Readings:
    """The admin API's readings; replication lag only while a roll needs it."""
    groups = cluster.spec.brokers.groups
    replicas = cluster.spec.brokers.replicas_per_group
    existing = sorted(found.objects | set(range(groups)))
    revoked = {group: await admin.write_revoked(group) for group in existing}
    retiring = [group for group in existing if group >= groups and revoked[group]]
    return Readings(
        inventories=await admin.inventories(range(groups)),
        replication={
            group: await admin.replication_lag(group, replicas)
            for group in (range(groups) if rolling else ())
        },
        revoked=revoked,
        lag={group: await admin.lag_on(group) for group in retiring},
    )


def _target(cluster: base.Cluster, body: kopf.Body, desired: Sequence[Obj]) -> roll.Target:
    """What every broker pod should run: the rendered templates, the restart request."""
    brokers_spec = cluster.spec.brokers
    return roll.Target(
        cluster=cluster.name,
        template_hashes=cluster_steps.template_hashes(desired, cluster.name, brokers_spec.groups),
        replicas=brokers_spec.replicas_per_group,
        restart_requested=(body["metadata"].get("annotations") or {}).get(roll.RESTART_ANNOTATION),
        restart_handled=(body.get("status") or {}).get("restartHandled"),
    )


def _plans(
    cluster: base.Cluster,
    body: kopf.Body,
    target: roll.Target,
    found: workloads.Workloads,
    readings: Readings,
    wanted_topics: Sequence[topics.DesiredTopic],
    wanted_groups: Sequence[consumer_groups.DesiredGroup],
) -> cluster_steps.Plans:
    brokers_spec = cluster.spec.brokers
    status = body.get("status") or {}
    out = scale_out.plan(
        cluster.name,
        brokers_spec.groups,
        found.statefulsets,
        wanted_topics,
        wanted_groups,
        readings.inventories,
    )
    states = found.group_states(readings.revoked, readings.lag)
    return cluster_steps.Plans(
        roll=roll.plan(target, found.pods, readings.replication),
        scale_out=_new_groups_only(out, _provisioned(cluster.name, status, brokers_spec.groups)),
        scale_in=scale_in.plan(
            cluster.name, brokers_spec.groups, states, brokers_spec.storage.delete_claim
        ),
    )


def _provisioned(cluster: str, status: Mapping[str, Any], groups: int) -> frozenset[int]:
    """The groups (of ``groups``) the status says were provisioned once."""
    done = {
        entry.get("brokerName") for entry in status.get("groups") or () if entry.get("provisioned")
    }
    return frozenset(g for g in range(groups) if names.broker_name(cluster, g) in done)


def _new_groups_only(plan: scale_out.ScaleOut, before: frozenset[int]) -> scale_out.ScaleOut:
    """Scale-out provisions only groups never provisioned: on the others, a missing Topic
    or ConsumerGroup is its own handler's to create (a new one) or repair (drift, with an
    Event), and the group counts as ready once its master answers."""
    provisions = tuple(
        scale_out.Provision(p.group, p.broker, p.known) if p.group in before else p
        for p in plan.provisions
    )
    return scale_out.ScaleOut(plan.add, provisions)


def _report(
    ctx: Context,
    body: kopf.Body,
    patch: kopf.Patch,
    cluster: base.Cluster,
    summary: cluster_status.ClusterSummary,
    found: workloads.Workloads,
    readings: Readings,
    plans: cluster_steps.Plans,
    *,
    paused: bool,
) -> None:
    provisioning = plans.scale_out
    decision = plans.roll
    spec = cluster.spec
    status = patch.status
    status["conditions"] = resources.report_conditions(body, summary.conditions, now=ctx.now())
    if not paused:
        status["observedGeneration"] = body["metadata"].get("generation")
        status["image"] = spec.image
    status["nameServerAddress"] = names.namesrv_address(
        cluster.name, cluster.namespace, spec.name_servers.replicas
    )
    status["readyGroups"] = summary.ready_groups
    status["groups"] = [
        resources.dumped(
            _group_status(
                cluster.name, group, found.pods, readings, provisioning.provisioned(group)
            )
        )
        for group in range(spec.brokers.groups)
    ]
    if isinstance(decision, roll.Done):
        status["restartHandled"] = decision.restart_handled


def _group_status(
    cluster: str, group: int, pods: Sequence[observed.Pod], readings: Readings, done: bool
) -> models.GroupStatus:
    members = sorted((pod for pod in pods if pod.group == group), key=lambda pod: pod.ordinal)
    return models.GroupStatus(
        broker_name=names.broker_name(cluster, group),
        pods=[
            models.PodStatus(
                name=pod.name,
                role="MASTER" if pod.is_master else "SLAVE",
                broker_id=pod.ordinal,
                ready=pod.ready,
            )
            for pod in members
        ],
        writable=not readings.revoked.get(group),
        provisioned=done,
    )
