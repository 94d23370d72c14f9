"""Consumer rebalancing: which queues of its topics a push consumer owns, and taking and
dropping them (Java's ``RebalanceImpl`` and ``RebalancePushImpl``; docs/protocol.md §13.3).

A rebalance runs every ``interval`` seconds and at once when asked (:meth:`Rebalancer.request`:
a broker sent NOTIFY_CONSUMER_IDS_CHANGED (40), or a subscription was added). For every
subscribed topic, the topic's readable queues and the group's client ids go through the
``allocate`` strategy (:mod:`.allocation`); broadcasting takes every queue. Then::

    lost queue     its pull loop stops, the consume service lets go of it, its offset is
                   persisted and forgotten; an orderly consumer unlocks it on its broker
    gained queue   an orderly consumer locks it first (:mod:`.queue_locks`: not granted,
                   it is tried again at the next rebalance); it starts from its stored
                   offset, else per ``consume_from`` (docs/protocol.md §6.2), and gets a
                   :class:`~rocketkube.client.consumer.process_queue.ProcessQueue` and a pull loop

RESET_CONSUMER_CLIENT_OFFSET (220) goes through here too (:meth:`Rebalancer.reset`): each
listed queue the consumer owns is dropped and taken again from its new offset, under the
same lock as a rebalance, so the two never interleave. What a pull loop does is the
consumer's (:mod:`.push_consumer`); this module only starts and stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from rocketkube.client import errors as client_errors
from rocketkube.client.consumer import queue_locks
from rocketkube.client.consumer.allocation import AllocateStrategy
from rocketkube.client.consumer.core import ConsumeFrom, ConsumerCore
from rocketkube.client.consumer.offset_store import OffsetStore
from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.client.routing import MessageQueue
from rocketkube.common import errors
from rocketkube.common.names import ClientId, GroupName
from rocketkube.common.tasks import cancel_and_wait

__all__ = ["Membership", "OwnedQueue", "Rebalancer"]

log = logging.getLogger(__name__)

StartPull = Callable[[MessageQueue, ProcessQueue, int], asyncio.Task[None]]
"""Start the pull loop of a queue just taken, from an offset."""


@dataclasses.dataclass(frozen=True, slots=True)
class Membership:
    """How this consumer takes part in its group's share of the queues."""

    group: GroupName
    client_id: ClientId
    clustering: bool
    """The group shares the queues; broadcasting: every member takes every queue."""
    locking: bool
    """Orderly clustering: a queue is consumed only while its broker lock is held."""
    allocate: AllocateStrategy
    consume_from: ConsumeFrom
    consume_timestamp_ms: int | None


@dataclasses.dataclass(slots=True)
class OwnedQueue:
    """A queue this consumer owns: its held messages and its pull loop."""

    process_queue: ProcessQueue
    pull_task: asyncio.Task[None]


class Rebalancer:
    """The queues one started push consumer owns (see the module docstring).

    ``start_pull`` starts a gained queue's pull loop; ``release`` is awaited for a queue
    dropped, once its pull loop has stopped (the consume service lets go of it).
    """

    def __init__(
        self,
        core: ConsumerCore,
        store: OffsetStore,
        membership: Membership,
        *,
        start_pull: StartPull,
        release: Callable[[MessageQueue], Awaitable[None]],
    ) -> None:
        self.owned: dict[MessageQueue, OwnedQueue] = {}
        self._core = core
        self._store = store
        self._membership = membership
        self._start_pull = start_pull
        self._release = release
        self._wanted = asyncio.Event()
        self._lock = asyncio.Lock()

    def request(self) -> None:
        """Rebalance now rather than at the end of the interval."""
        self._wanted.set()

    async def run(
        self, topics: Callable[[], Iterable[str]], interval: float, closed: Callable[[], bool]
    ) -> None:
        """Rebalance ``topics()`` every ``interval`` seconds or when requested, until
        ``closed()`` (tested too: Python 3.11's wait_for can swallow a cancellation)."""
        while not closed():
            self._wanted.clear()
            try:
                await self.rebalance(list(topics()))
            except errors.RocketKubeError as exc:
                log.warning("rebalance of %s failed: %s", self._membership.group, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wanted.wait(), interval)

    async def rebalance(self, topics: Iterable[str]) -> None:
        """Take this consumer's share of every topic's queues."""
        async with self._lock:
            for topic in topics:
                mine = await self._share(topic)
                if mine is not None:
                    await self._update_topic(topic, mine)

    async def _share(self, topic: str) -> set[MessageQueue] | None:
        """This consumer's queues of ``topic``; None while that cannot be known (no route
        yet, or no member of the group registered on the brokers)."""
        membership = self._membership
        try:
            queues = await self._core.readable_queues(topic)
        except client_errors.RouteNotFoundError:
            log.debug("rebalance of %s: no route for %s yet", membership.group, topic)
            return None
        if not membership.clustering:
            return set(queues)
        cids = await self._core.consumer_ids(topic)
        if not cids:
            return None
        return set(membership.allocate(membership.group, membership.client_id, queues, cids))

    async def _update_topic(self, topic: str, mine: set[MessageQueue]) -> None:
        client_id = self._membership.client_id
        for queue in [q for q in self.owned if q.topic == topic and q not in mine]:
            log.info("%s: dropping %s", client_id, queue)
            await self.drop(queue, persist=True)
            if self._membership.locking:
                await queue_locks.unlock(self._core, [queue])
        for queue in sorted(mine - set(self.owned)):
            try:
                await self.take(queue)
            except errors.RocketKubeError as exc:
                log.warning("%s: cannot start %s yet: %s", client_id, queue, exc)

    async def take(self, queue: MessageQueue, offset: int | None = None) -> None:
        """Own ``queue``: lock it (orderly), find its first offset, start its pull loop."""
        membership, store = self._membership, self._store
        pq = ProcessQueue()
        if membership.locking:
            if queue not in await queue_locks.lock(self._core, [queue]):
                return
            pq.locked, pq.last_lock_time = True, time.monotonic()
        if offset is None:
            store.remove(queue)
            committed = await store.read_stored(queue)
            offset = await self._core.first_offset(
                queue, committed, membership.consume_from, membership.consume_timestamp_ms
            )
        store.update(queue, offset)
        log.info("%s: consuming %s from offset %d", membership.client_id, queue, offset)
        self.owned[queue] = OwnedQueue(pq, self._start_pull(queue, pq, offset))

    async def drop(self, queue: MessageQueue, *, persist: bool) -> None:
        """Stop owning ``queue``: its pull loop ends and late results are ignored."""
        owned = self.owned.pop(queue, None)
        if owned is None:
            return
        owned.process_queue.dropped = True
        await cancel_and_wait(owned.pull_task)
        await self._release(queue)
        if persist:
            try:
                await self._store.persist([queue])
            except errors.RocketKubeError as exc:
                log.warning("persisting %s on drop failed: %s", queue, exc)
        self._store.remove(queue)

    async def reset(self, offsets: dict[MessageQueue, int]) -> None:
        """Restart every listed queue this consumer owns from its new offset."""
        async with self._lock:
            for queue, offset in sorted(offsets.items()):
                if queue not in self.owned:
                    continue
                await self.drop(queue, persist=False)
                self._store.update(queue, offset)
                try:
                    await self._store.persist([queue])
                    await self.take(queue, offset)
                except errors.RocketKubeError as exc:
                    log.warning("reset of %s to %d failed: %s", queue, offset, exc)
        log.info("%s: reset %d queue(s)", self._membership.client_id, len(offsets))
