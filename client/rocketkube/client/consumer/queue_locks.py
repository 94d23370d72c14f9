"""Broker-side queue locks of orderly clustering consumers (docs/protocol.md §7.4, codes 41
and 42).

A queue is consumed in order by one client at a time: the client locks it on its broker
(LOCK_BATCH_MQ, 41) before consuming, renews the lock periodically (the broker lets a lock
lapse 60 s after its last renewal) and releases it (UNLOCK_BATCH_MQ, 42) when the queue is
rebalanced away. Both requests carry :class:`LockBatchRequestBody`; the lock response
lists the queues granted to this client.

A broker that answers REQUEST_CODE_NOT_SUPPORTED (one predating code 41) gets a warning at
each lock round and is treated as granting every lock: order then holds within a consumer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from rocketkube.client.consumer.core import ConsumerCore
from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.client.routing import MessageQueue
from rocketkube.common import errors
from rocketkube.common.protocol import admin_bodies
from rocketkube.common.protocol.consumer_headers import (
    LockBatchRequestBody,
    LockBatchResponseBody,
)
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["holds", "lock", "renew", "unlock"]

log = logging.getLogger(__name__)


async def lock(core: ConsumerCore, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
    """LOCK_BATCH_MQ (41) per broker; the queues granted to ``core``'s client."""
    granted: set[MessageQueue] = set()
    for name, batch in _by_broker(queues).items():
        response = await _request(core, RequestCode.LOCK_BATCH_MQ, name, batch)
        if response is None:
            continue
        if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            log.warning("broker %s cannot lock queues: order holds per consumer only", name)
            granted.update(batch)
            continue
        body = LockBatchResponseBody.decode(response.body_bytes())
        granted.update(
            MessageQueue(q.topic, q.broker_name, q.queue_id) for q in body.lock_ok_mq_set
        )
    return granted


async def renew(core: ConsumerCore, held: Mapping[MessageQueue, ProcessQueue]) -> None:
    """Renew the locks of the ``held`` queues; a queue not granted stops consuming."""
    granted = await lock(core, list(held))
    now = time.monotonic()
    for queue, process_queue in held.items():
        process_queue.locked = queue in granted
        if process_queue.locked:
            process_queue.last_lock_time = now


def holds(process_queue: ProcessQueue, lock_interval: float) -> bool:
    """Whether the queue's lock is still good: granted, and renewed recently enough
    (``lock_interval`` is the renewal period) that the broker has not let it lapse."""
    return (
        process_queue.locked
        and time.monotonic() - process_queue.last_lock_time < 2 * lock_interval + 10
    )


async def unlock(core: ConsumerCore, queues: Iterable[MessageQueue]) -> None:
    """UNLOCK_BATCH_MQ (42) per broker, best effort."""
    for name, batch in _by_broker(queues).items():
        await _request(core, RequestCode.UNLOCK_BATCH_MQ, name, batch)


async def _request(
    core: ConsumerCore, code: int, name: str, queues: list[MessageQueue]
) -> RemotingCommand | None:
    body = LockBatchRequestBody(
        core.group,
        core.client_id,
        frozenset(admin_bodies.MessageQueue(q.topic, q.broker_name, q.queue_id) for q in queues),
    )
    try:
        return await core.call(
            queues[0], code, body=body.encode(), accept={ResponseCode.REQUEST_CODE_NOT_SUPPORTED}
        )
    except errors.RocketKubeError as exc:
        log.warning("request %d to %s failed: %s", code, name, exc)
        return None


def _by_broker(queues: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
    out: dict[str, list[MessageQueue]] = {}
    for queue in sorted(queues):
        out.setdefault(queue.broker_name, []).append(queue)
    return out
