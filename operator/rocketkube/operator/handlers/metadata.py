"""What Topic and ConsumerGroup handlers share: their BrokerCluster (missing, not ready,
ready), reporting while they wait for it, and the end of a pass (Ready, or a retry).

A Topic or ConsumerGroup waits while its cluster is missing or not Ready for its current
generation (``plans.metadata_status.cluster_state``): the condition says which, and the
change handler asks kopf to call again later (``kopf.TemporaryError``); the timer only
reports.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import kopf

from rocketkube.operator.api import models
from rocketkube.operator.api.conditions import ConditionType
from rocketkube.operator.handlers import brokers, resources
from rocketkube.operator.handlers.context import Context
from rocketkube.operator.plans import metadata_status, report
from rocketkube.operator.plans.metadata_status import ClusterState

__all__ = ["ClusterRef", "carry_out", "find_cluster", "finish"]

CLUSTER: tuple[str, str] = (f"{models.GROUP}/{models.VERSION}", "BrokerCluster")


class Action(Protocol):
    """A topic's or a consumer group's create or update on one broker group."""

    @property
    def group(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def message(self) -> str: ...


A = TypeVar("A", bound=Action)


@dataclass(frozen=True)
class ClusterRef:
    """A Topic's or ConsumerGroup's BrokerCluster, as found this pass."""

    name: str
    namespace: str
    state: ClusterState
    model: models.BrokerCluster | None = None

    @property
    def groups(self) -> int:
        return 0 if self.model is None else self.model.spec.brokers.groups

    def address(self, ctx: Context) -> str:
        assert self.model is not None
        replicas = self.model.spec.name_servers.replicas
        return ctx.address_of(self.name, self.namespace, replicas)


async def find_cluster(ctx: Context, namespace: str, name: str) -> ClusterRef:
    obj = await ctx.kube.get(*CLUSTER, namespace, name)
    state = metadata_status.cluster_state(obj)
    if obj is None or state is ClusterState.MISSING:
        return ClusterRef(name, namespace, state)
    model = resources.parse(models.BrokerCluster, obj)
    return ClusterRef(name, namespace, state, model)


def finish(
    ctx: Context,
    body: kopf.Body,
    patch: kopf.Patch,
    values: Sequence[report.ConditionValue],
    *,
    retry: bool,
    status: dict[str, Any],
) -> None:
    """Write what changed in the status (``lastChecked`` at most once per
    ``status_refresh`` seconds while nothing else does); with ``retry`` (a change
    handler), ask kopf to call again unless the resource is Ready, unmanaged, or only
    waits on a spec the user must fix."""
    wanted = {"conditions": resources.report_conditions(body, values, now=ctx.now()), **status}
    changes = resources.status_changes(body, wanted, refresh=ctx.timing.status_refresh)
    for key, value in changes.items():
        patch.status[key] = value
    ready = next(value for value in values if value.type is ConditionType.READY)
    if not retry or ready.status is not False:
        return
    delay = ctx.timing.retry_delay
    raise kopf.TemporaryError(ready.message or str(ready.reason), delay=delay)


async def carry_out(
    body: kopf.Body,
    admin: brokers.Brokers,
    actions: Sequence[A],
    put: Callable[[A], Awaitable[None]],
) -> set[int]:
    """``put`` each action, an Event each; the broker groups whose master refused (kept in
    ``admin.errors`` too)."""
    failed: set[int] = set()
    for action in actions:
        try:
            await put(action)
        except brokers.ADMIN_ERRORS as exc:
            failed.add(action.group)
            message = f"{action.message}: {exc}"
            admin.errors.append(message)
            resources.event(body, "ActionFailed", message, resources.WARNING)
        else:
            resources.event(body, f"{str(action.kind).capitalize()}d", action.message)
    return failed


Remove = Callable[[brokers.Brokers, list[str | None], ClusterRef], Awaitable[None]]
"""Deletes a Topic's or ConsumerGroup's name from the brokers: given the connection, the
master of each group (None where it is not known) and the cluster."""


async def delete_from_brokers(
    ctx: Context, body: kopf.Body, cluster_name: str, what: str, managed: bool, remove: Remove
) -> None:
    """The delete handler of a Topic or ConsumerGroup (``what``: ``topic Orders``): leave
    it on the brokers when unmanaged or when the cluster is gone, else ``remove`` it
    there once every group's master is known; kopf keeps the finalizer until this
    returns, and retries while a master cannot be reached."""
    if not managed:
        resources.event(body, "Unmanaged", f"{what} left on the brokers")
        return
    cluster = await find_cluster(ctx, body["metadata"]["namespace"], cluster_name)
    if cluster.model is None:
        return
    async with brokers.connect(
        cluster.address(ctx), cluster.name, cluster.groups, ctx.timing.admin_timeout
    ) as admin:
        masters = [await admin.master(group) for group in range(cluster.groups)]
        if admin.errors:
            raise kopf.TemporaryError("; ".join(admin.errors), delay=ctx.timing.retry_delay)
        await remove(admin, masters, cluster)
    resources.event(body, "Deleted", f"{what} deleted from the brokers")
