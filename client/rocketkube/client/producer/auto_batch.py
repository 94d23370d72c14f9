"""The producer's side of auto-batching: which sends may share a batch, and sending one.

The :class:`~rocketkube.client.producer.accumulator.Accumulator` groups and times; an
:class:`AutoBatcher` decides what goes to it, sends each gathered batch through the
producer's retrying send as SEND_BATCH_MESSAGE, and gives every message its own
:class:`SendResult` (or the batch's error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, NamedTuple

from rocketkube.client import routing
from rocketkube.client.producer.accumulator import Accumulator, Batch
from rocketkube.client.producer.outgoing import RETRY_TOPIC_PREFIX, Outgoing, batch_request
from rocketkube.client.producer.send_result import SendResult, split_batch_result
from rocketkube.common.message import batch as batch_codec
from rocketkube.common.message import properties as props
from rocketkube.common.message.model import Message

SendOne = Callable[[Outgoing, "routing.MessageQueue | None"], Coroutine[Any, Any, SendResult]]
"""The producer's retrying send of one request, to the queue given or one it picks."""


class _BatchKey(NamedTuple):
    """What messages must share to be batched together (Java's ``AggregateKey``)."""

    topic: str
    queue: routing.MessageQueue | None
    """The queue the caller chose, ``None`` when the batch's send chooses."""
    wait_store_ok: bool


class AutoBatcher:
    """Gathers batchable sends for up to ``max_delay`` seconds or ``max_bytes`` of batch
    body and sends them with ``send``, run as a task by ``spawn`` (the producer's, which
    its close waits for). Must be made in a running event loop."""

    __slots__ = ("_accumulator", "_send", "_spawn")

    def __init__(
        self,
        send: SendOne,
        spawn: Callable[[Coroutine[Any, Any, None]], object],
        *,
        max_delay: float,
        max_bytes: int,
        total_max_bytes: int,
    ) -> None:
        self._send = send
        self._spawn = spawn
        self._accumulator: Accumulator[_BatchKey, SendResult] = Accumulator(
            self._flush,
            max_delay=max_delay,
            max_bytes=max_bytes,
            total_max_bytes=total_max_bytes,
        )

    def add(
        self, message: Message, outgoing: Outgoing, queue: routing.MessageQueue | None
    ) -> asyncio.Future[SendResult] | None:
        """The future of ``message`` put into a batch; ``None`` when it is to be sent alone:
        delayed, transactional (the PREPARED sysFlag), compressed (a batch is never), to a
        retry topic (as Java), or declined by the accumulator (too much in flight)."""
        if (
            outgoing.sys_flag
            or outgoing.topic.startswith(RETRY_TOPIC_PREFIX)
            or props.PropertyName.DELAY in message.properties
        ):
            return None
        item = batch_codec.BatchItem(outgoing.flag, outgoing.body, outgoing.properties or "")
        key = _BatchKey(outgoing.topic, queue, message.wait_store_ok)
        return self._accumulator.add(key, item, outgoing.msg_id)

    def flush_all(self) -> None:
        """Send every batch now, without waiting out its delay."""
        self._accumulator.flush_all()

    def _flush(self, batch: Batch[_BatchKey, SendResult]) -> None:
        self._spawn(self._send_batch(batch))

    async def _send_batch(self, batch: Batch[_BatchKey, SendResult]) -> None:
        """Send a gathered batch (retried as any send) and resolve each message's future."""
        topic, queue, _ = batch.key
        try:
            result = await self._send(batch_request(topic, batch.items, batch.msg_ids), queue)
        except asyncio.CancelledError:
            for future in batch.futures:
                future.cancel()
            raise
        except Exception as exc:
            for future in batch.futures:
                if not future.done():
                    future.set_exception(exc)
            return
        finally:
            self._accumulator.release(batch)
        for future, own in zip(
            batch.futures, split_batch_result(result, batch.msg_ids), strict=True
        ):
            if not future.done():
                future.set_result(own)
