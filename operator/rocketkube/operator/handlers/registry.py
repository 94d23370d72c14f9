"""The operator's kopf handlers, registered on a registry this module builds (never kopf's
default, process-wide one): per kind, the "ensure" idiom (resume + create + update on one
function), a timer, a watch that counts objects, and for Topics and ConsumerGroups a
delete handler behind kopf's finalizer.

Every handler is thin: it takes the :class:`~.context.Context` from kopf's ``memo`` and
runs one pass of its kind's module under :func:`~.outcomes.guarded`. A timer's pass runs
on a snapshot of its object (:func:`~.resources.snapshot`): kopf's timers get a live view.

=================  ================================  ==================================
kind               on resume / create / update        every ``timer_interval`` seconds
=================  ================================  ==================================
BrokerCluster      apply, observe, report             the same, plus one plan step
Topic              reconcile; retry until Ready       reconcile (drift repaired)
ConsumerGroup      reconcile; retry until Ready       reconcile, lag read
=================  ================================  ==================================

A spec the schema let through but the operator cannot use is reported (Degraded,
InvalidSpec) with a warning Event by the change handler, which then stops retrying
(kopf.PermanentError); the timer reports it again without an Event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import kopf

from rocketkube.operator.api import models
from rocketkube.operator.handlers import cluster, consumer_group, outcomes, resources, topic
from rocketkube.operator.handlers.context import DEFAULT_TIMER_INTERVAL, Context, context_of
from rocketkube.operator.specs import base

__all__ = ["CLUSTERS", "CONSUMER_GROUPS", "TOPICS", "build"]

CLUSTERS: Final = (models.GROUP, models.VERSION, "brokerclusters")
TOPICS: Final = (models.GROUP, models.VERSION, "topics")
CONSUMER_GROUPS: Final = (models.GROUP, models.VERSION, "consumergroups")

Pass = Callable[[Context, kopf.Body, kopf.Patch, bool], Awaitable[None]]


async def _checked(ctx: Context, body: kopf.Body, patch: kopf.Patch, run: Awaitable[None], *,
                   announce: bool) -> None:  # fmt: skip
    """Run a pass; an invalid spec is reported, and raised only when ``announce`` (a change
    handler: kopf stops retrying), so a timer tick neither warns nor fails again."""
    try:
        await run
    except base.InvalidSpec as exc:
        resources.report_invalid(body, patch, str(exc), now=ctx.now(), announce=announce)
        if announce:
            raise


def _cluster_pass(ctx: Context, body: kopf.Body, patch: kopf.Patch, timer: bool) -> Awaitable[None]:
    return _checked(
        ctx, body, patch, cluster.reconcile(ctx, body, patch, act=timer), announce=not timer
    )


def _topic_pass(ctx: Context, body: kopf.Body, patch: kopf.Patch, timer: bool) -> Awaitable[None]:
    return _checked(
        ctx, body, patch, topic.reconcile(ctx, body, patch, retry=not timer), announce=not timer
    )


def _group_pass(ctx: Context, body: kopf.Body, patch: kopf.Patch, timer: bool) -> Awaitable[None]:
    run = consumer_group.reconcile(ctx, body, patch, retry=not timer)
    return _checked(ctx, body, patch, run, announce=not timer)


def build(timer_interval: float = DEFAULT_TIMER_INTERVAL) -> kopf.OperatorRegistry:
    """A registry holding every handler; timers every ``timer_interval`` seconds."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
        return await context_of(memo).login()

    _register(registry, CLUSTERS, "BrokerCluster", _cluster_pass, timer_interval)
    _register(registry, TOPICS, topic.KIND, _topic_pass, timer_interval)
    _register(registry, CONSUMER_GROUPS, consumer_group.KIND, _group_pass, timer_interval)

    @kopf.on.delete(*TOPICS, registry=registry)
    async def topic_deleted(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
        ctx = context_of(memo)
        await outcomes.guarded(ctx, topic.KIND, retry, topic.delete(ctx, body))

    @kopf.on.delete(*CONSUMER_GROUPS, registry=registry)
    async def consumer_group_deleted(
        body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any
    ) -> None:
        ctx = context_of(memo)
        await outcomes.guarded(ctx, consumer_group.KIND, retry, consumer_group.delete(ctx, body))

    return registry


def _register(
    registry: kopf.OperatorRegistry,
    resource: tuple[str, str, str],
    kind: str,
    run: Pass,
    interval: float,
) -> None:
    """The ensure handler, the timer and the counting watch of one kind."""
    plural = resource[2]

    async def changed(
        body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, retry: int, **_: Any
    ) -> None:
        ctx = context_of(memo)
        await outcomes.guarded(ctx, kind, retry, run(ctx, body, patch, False))

    async def tick(
        body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, retry: int = 0, **_: Any
    ) -> None:
        ctx = context_of(memo)
        now = resources.snapshot(body)  # a timer's body is live: see snapshot
        await outcomes.guarded(ctx, kind, retry, run(ctx, now, patch, True))

    def seen(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
        meta = body.get("metadata") or {}
        present = type != "DELETED"
        conditions = (body.get("status") or {}).get("conditions") or ()
        context_of(memo).metrics.track(
            kind, meta.get("namespace", ""), meta["name"], present, conditions
        )

    changed_id = f"{plural}-changed"
    for decorate in (kopf.on.resume, kopf.on.create, kopf.on.update):
        decorate(*resource, registry=registry, id=changed_id)(changed)
    kopf.timer(*resource, registry=registry, id=f"{plural}-timer", interval=interval)(tick)
    kopf.on.event(*resource, registry=registry, id=f"{plural}-seen")(seen)
