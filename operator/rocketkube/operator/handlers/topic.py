"""A Topic pass (observe -> plan -> act -> report) and its deletion.

::

    cluster    missing or not Ready: the waiting condition (ClusterNotFound,
               ClusterNotReady); unmanaged: Ready Unknown, nothing touched
    observe    every group master's topic table; what the status last confirmed
    plan       plans.topics: create or grow on each target group, drift, kept queues
    act        UPDATE_AND_CREATE_TOPIC on each master that needs it; drift is an Event
    report     conditions (Ready once the name servers route it as expected), topicName,
               queues, groups (queues per group), lastChecked, observedGeneration

A master that refuses an action counts as not answering this pass (AdminUnreachable),
so the status never claims what was not done. Deletion (behind kopf's finalizer) removes
the topic from every master and name server, unless ``managed: false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from rocketkube.operator.api import models, names
from rocketkube.operator.handlers import brokers, metadata, resources
from rocketkube.operator.handlers.context import Context
from rocketkube.operator.plans import metadata_status, observed, topics
from rocketkube.operator.plans.metadata_status import ClusterState

__all__ = ["KIND", "delete", "reconcile"]

KIND = "Topic"


async def reconcile(ctx: Context, body: kopf.Body, patch: kopf.Patch, *, retry: bool) -> None:
    """One pass; ``retry``: a change handler (raises kopf.TemporaryError until Ready)."""
    model = resources.parse(models.Topic, body)
    desired = topics.DesiredTopic.of(model)
    cluster = await metadata.find_cluster(ctx, body["metadata"]["namespace"], model.spec.cluster)
    status: dict[str, Any] = {"topicName": desired.name, "lastChecked": ctx.now()}
    if not desired.managed or cluster.state is not ClusterState.READY:
        values = metadata_status.topic(
            topics.TopicPlan(desired.name), desired.managed, cluster.name, cluster.state, None
        )
        metadata.finish(ctx, body, patch, values, retry=retry, status=status)
        return
    groups = cluster.groups
    confirmed = _confirmed(body, cluster.name, groups)
    async with brokers.connect(
        cluster.address(ctx), cluster.name, groups, ctx.timing.admin_timeout
    ) as admin:
        inventories = await admin.topic_inventories(range(groups), desired.name)
        plan = topics.plan(desired, cluster.name, groups, inventories, confirmed)
        _announce(ctx, body, plan, warn_invalid=retry)
        failed = await metadata.carry_out(body, admin, plan.actions, admin.put_topic)
        if failed:
            inventories = {**inventories, **dict.fromkeys(failed)}
            plan = topics.plan(desired, cluster.name, groups, inventories, confirmed)
        routes = await admin.routes(desired.name) if plan.settled else {}
    values = metadata_status.topic(plan, True, cluster.name, ClusterState.READY, routes)
    status["observedGeneration"] = body["metadata"].get("generation")
    status["queues"] = desired.queues
    status["groups"] = _groups(body, cluster.name, groups, plan.expected, set(plan.unknown))
    metadata.finish(ctx, body, patch, values, retry=retry, status=status)


async def delete(ctx: Context, body: kopf.Body) -> None:
    """Remove the topic from the cluster's masters and name servers (unless unmanaged or
    the cluster is gone); kopf keeps its finalizer until this returns."""
    model = resources.parse(models.Topic, body)
    desired = topics.DesiredTopic.of(model)

    async def remove(
        admin: brokers.Brokers, masters: list[str | None], cluster: metadata.ClusterRef
    ) -> None:
        if any(masters):
            await admin.admin.delete_topic(desired.name, names.broker_cluster_name(cluster.name))

    await metadata.delete_from_brokers(
        ctx, body, model.spec.cluster, f"topic {desired.name}", desired.managed, remove
    )


def _confirmed(body: kopf.Body, cluster: str, groups: int) -> topics.Confirmed:
    """What the status says the operator last confirmed on each group."""
    status = body.get("status") or {}
    index = {names.broker_name(cluster, group): group for group in range(groups)}
    queues = {
        index[entry["brokerName"]]: topics.Queues(entry["readQueues"], entry["writeQueues"])
        for entry in status.get("groups") or ()
        if entry.get("brokerName") in index
    }
    settled = status.get("observedGeneration") == body["metadata"].get("generation")
    return topics.Confirmed(queues, settled)


def _announce(ctx: Context, body: kopf.Body, plan: topics.TopicPlan, *, warn_invalid: bool) -> None:
    for drift in plan.drift:
        ctx.metrics.drift_repairs.labels(KIND).inc()
        resources.event(body, "DriftRepaired", drift.message, resources.WARNING)
    if plan.beyond and warn_invalid:
        listed = ", ".join(str(group) for group in plan.beyond)
        message = f"brokerGroups lists {listed}, past the cluster's groups"
        resources.event(body, "InvalidSpec", message, resources.WARNING)


def _groups(
    body: kopf.Body,
    cluster: str,
    groups: int,
    expected: Mapping[int, observed.TopicState],
    unknown: set[int],
) -> list[dict[str, Any]]:
    """``status.groups``: the queues on each target group as its master now holds them;
    a group that did not answer keeps what the status said before."""
    before = {
        entry.get("brokerName"): entry for entry in (body.get("status") or {}).get("groups") or ()
    }
    out: list[dict[str, Any]] = []
    for group in range(groups):
        broker = names.broker_name(cluster, group)
        state = expected.get(group)
        if state is not None:
            entry = models.TopicGroupStatus(
                broker_name=broker, read_queues=state.read_queues, write_queues=state.write_queues
            )
            out.append(resources.dumped(entry))
        elif group in unknown and broker in before:
            out.append(dict(before[broker]))
    return out
