"""A ConsumerGroup pass (observe -> plan -> act -> report) and its deletion: the group on
every master of its cluster (production clusters run with
``autoCreateSubscriptionGroup=false``), and its lag.

::

    cluster    missing or not Ready: the waiting condition; unmanaged: nothing touched
    observe    every master's entry for this group alone; the masters the status last
               confirmed
    plan       plans.consumer_groups: create or update on each master, drift
    act        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP where needed; drift is an Event
    lag        GET_CONSUME_STATS: unconsumed messages per topic on the cluster's brokers
    report     conditions, groupName, brokers (masters holding it as specified),
               totalLag, lag, lastChecked, observedGeneration

Deletion (behind kopf's finalizer) removes the group from every master, unless
``managed: false``.
"""

from __future__ import annotations

from typing import Any

import kopf

from rocketkube.operator.api import models, names
from rocketkube.operator.handlers import brokers, metadata, resources
from rocketkube.operator.handlers.context import Context
from rocketkube.operator.plans import consumer_groups, metadata_status
from rocketkube.operator.plans.metadata_status import ClusterState

__all__ = ["KIND", "delete", "reconcile"]

KIND = "ConsumerGroup"


async def reconcile(ctx: Context, body: kopf.Body, patch: kopf.Patch, *, retry: bool) -> None:
    """One pass; ``retry``: a change handler (raises kopf.TemporaryError until Ready)."""
    model = resources.parse(models.ConsumerGroup, body)
    desired = consumer_groups.DesiredGroup.of(model)
    cluster = await metadata.find_cluster(ctx, body["metadata"]["namespace"], model.spec.cluster)
    status: dict[str, Any] = {"groupName": desired.name, "lastChecked": ctx.now()}
    if not desired.managed or cluster.state is not ClusterState.READY:
        values = metadata_status.consumer_group(
            consumer_groups.GroupPlan(desired.name), desired.managed, cluster.name, cluster.state
        )
        metadata.finish(ctx, body, patch, values, retry=retry, status=status)
        return
    groups = cluster.groups
    async with brokers.connect(
        cluster.address(ctx), cluster.name, groups, ctx.timing.admin_timeout
    ) as admin:
        inventories = await admin.group_inventories(range(groups), desired.name)
        confirmed = _confirmed(body, cluster.name, groups)
        plan = consumer_groups.plan(desired, cluster.name, groups, inventories, confirmed)
        for drift in plan.drift:
            ctx.metrics.drift_repairs.labels(KIND).inc()
            resources.event(body, "DriftRepaired", drift.message, resources.WARNING)
        failed = await metadata.carry_out(body, admin, plan.actions, admin.put_consumer_group)
        if failed:
            inventories = {**inventories, **dict.fromkeys(failed)}
            plan = consumer_groups.plan(desired, cluster.name, groups, inventories, confirmed)
        lag = await admin.consumer_lag(desired.name)
    values = metadata_status.consumer_group(plan, True, cluster.name, ClusterState.READY)
    status["observedGeneration"] = body["metadata"].get("generation")
    status["brokers"] = [
        names.broker_name(cluster.name, group)
        for group in range(groups)
        if group not in plan.unknown
    ]
    if lag is not None:
        status["totalLag"] = sum(lag.values())
        status["lag"] = [
            resources.dumped(models.TopicLag(topic=topic, lag=messages))
            for topic, messages in lag.items()
        ]
    metadata.finish(ctx, body, patch, values, retry=retry, status=status)


async def delete(ctx: Context, body: kopf.Body) -> None:
    """Remove the group from every master of the cluster (unless unmanaged or the cluster
    is gone); kopf keeps its finalizer until this returns."""
    model = resources.parse(models.ConsumerGroup, body)
    desired = consumer_groups.DesiredGroup.of(model)

    async def remove(
        admin: brokers.Brokers, masters: list[str | None], cluster: metadata.ClusterRef
    ) -> None:
        for address in masters:
            if address is not None:
                await admin.admin.delete_subscription_group(desired.name, broker_addr=address)

    await metadata.delete_from_brokers(
        ctx, body, model.spec.cluster, f"consumer group {desired.name}", desired.managed, remove
    )


def _confirmed(body: kopf.Body, cluster: str, groups: int) -> consumer_groups.Confirmed:
    status = body.get("status") or {}
    held = set(status.get("brokers") or ())
    confirmed = frozenset(
        group for group in range(groups) if names.broker_name(cluster, group) in held
    )
    settled = status.get("observedGeneration") == body["metadata"].get("generation")
    return consumer_groups.Confirmed(confirmed, settled)
