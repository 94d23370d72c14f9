"""Auto-batching of sends, the shape of RocketMQ 5's ``ProduceAccumulator``.

A producer with ``auto_batch`` hands each batchable message to an :class:`Accumulator`,
which groups messages by key (topic, chosen queue or none, ``WAIT``) and hands a group
to ``flush`` as one :class:`Batch` when the next message would not fit in
``max_bytes`` of batch body, when it holds exactly that much, or ``max_delay`` seconds
after its first message, whichever comes first. Messages keep their order within a
group, and groups are flushed in the order they fill, so one queue's messages are sent in
the order they were given.

The accumulator only groups and times: the producer sends the batch (SEND_BATCH_MESSAGE)
and resolves each message's future, then calls :meth:`Accumulator.release`. Messages
accepted and not yet released count against ``total_max_bytes``; past it,
:meth:`Accumulator.add` declines and the message is sent on its own (as Java does).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rocketkube.common.message.batch import BatchItem, item_size

__all__ = ["Accumulator", "Batch"]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


@dataclass(slots=True, eq=False)
class Batch(Generic[K, R]):
    """Messages gathered under one key: batch items, ids and futures, in arrival order."""

    key: K
    items: list[BatchItem] = field(default_factory=list)
    msg_ids: list[str] = field(default_factory=list)
    futures: list[asyncio.Future[R]] = field(default_factory=list)
    size: int = 0
    """Bytes of the batch body the items make."""
    timer: asyncio.TimerHandle | None = None


class Accumulator(Generic[K, R]):
    """Gathers messages into batches per key; calls ``flush(batch)`` when one is ready.

    Must be made in a running event loop (the delay is a loop timer per batch).
    """

    def __init__(
        self,
        flush: Callable[[Batch[K, R]], None],
        *,
        max_delay: float,
        max_bytes: int,
        total_max_bytes: int,
    ) -> None:
        self._flush = flush
        self._max_delay = max_delay
        self._max_bytes = max_bytes
        self._total_max_bytes = total_max_bytes
        self._loop = asyncio.get_running_loop()
        self._open: dict[K, Batch[K, R]] = {}
        self.held = 0
        """Bytes of the messages accepted and not yet released."""

    def add(self, key: K, item: BatchItem, msg_id: str) -> asyncio.Future[R] | None:
        """The future of ``item``, now part of ``key``'s batch; ``None`` (send it alone)
        when it is bigger than a batch may be or ``total_max_bytes`` are held."""
        size = item_size(item)
        if size is None or size > self._max_bytes or self.held + size > self._total_max_bytes:
            return None
        batch = self._open.get(key)
        if batch is not None and batch.size + size > self._max_bytes:
            self._ready(batch)
            batch = None
        if batch is None:
            batch = self._open[key] = Batch[K, R](key)
            batch.timer = self._loop.call_later(self._max_delay, self._ready, batch)
        future: asyncio.Future[R] = self._loop.create_future()
        batch.items.append(item)
        batch.msg_ids.append(msg_id)
        batch.futures.append(future)
        batch.size += size
        self.held += size
        if batch.size == self._max_bytes:
            self._ready(batch)
        return future

    def flush_all(self) -> None:
        """Hand every batch still gathering to ``flush`` now (on close)."""
        for batch in list(self._open.values()):
            self._ready(batch)

    def release(self, batch: Batch[K, R]) -> None:
        """``batch`` was answered (or failed): its bytes no longer count as held."""
        self.held -= batch.size

    def _ready(self, batch: Batch[K, R]) -> None:
        if self._open.get(batch.key) is not batch:
            return  # already flushed (its timer fired after it filled up)
        del self._open[batch.key]
        if batch.timer is not None:
            batch.timer.cancel()
            batch.timer = None
        self._flush(batch)
