"""Pulling one planned offset range from its broker, a chunk of messages at a time, with
pulls kept in flight ahead of the one being read.

A broker answers a pull with at most 32 messages (``maxTransferCountOnMessageInMemory``),
so a range of 100,000 offsets is some 3,000 pulls; made one after another, each waits a
round trip and the broker's work. Without a tag filter the offset each pull starts at is
known in advance (the previous one's plus the count asked for), so :class:`RangePuller`
keeps :data:`PULLS_AHEAD` pulls in flight on one connection, at ``o``, ``o + n``,
``o + 2n``..., where ``n`` is how far the last answer moved (the count asked, or fewer when
the broker's byte limit cut the answer short: large bodies come some per pull). An answer
that ends elsewhere than expected only makes the pulls ahead useless: they are cancelled
and made again from where it ended.
With a tag filter the broker skips what does not match, so the next offset is known only
from the answer: one pull at a time.

A puller lives on its client's event loop; the executor's thread asks it for chunks
(:meth:`RangePuller.chunk`) and builds the Arrow batch of one while the loop pulls the
next. The statuses a pull may end with are checked here (:func:`next_offset`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.consumer.pull import PullResult, PullStatus
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message.model import MessageExt
from rocketkube.spark import offsets
from rocketkube.spark import options as opts

__all__ = ["PULLS_AHEAD", "RangePuller", "ReadError", "next_offset"]

#: Pulls in flight per range when there is no tag filter.
PULLS_AHEAD: Final = 4

log = logging.getLogger(__name__)


class ReadError(RuntimeError):
    """A planned range cannot be read from its broker."""


class RangePuller:
    """The messages of ``piece`` stored in ``window`` (``[low, high)`` epoch ms), pulled
    from ``addr`` in offset order; use only on ``admin``'s event loop."""

    def __init__(
        self,
        options: opts.ReadOptions,
        piece: offsets.OffsetRange,
        window: tuple[int, int],
        addr: str,
    ) -> None:
        self._options = options
        self._piece = piece
        self._window = window
        self._addr = addr
        self._queue = MessageQueue(piece.topic, piece.broker_name, piece.queue_id)
        self._ahead = PULLS_AHEAD if options.tag_expression.strip() == "*" else 1
        self._offset = piece.start
        self._stride = options.pull_batch_size
        self._in_flight: dict[int, asyncio.Task[PullResult]] = {}

    async def chunk(self, admin: AdminClient, rows: int) -> list[MessageExt]:
        """The next messages, at least ``rows`` unless the range ends first; empty once it
        has ended."""
        piece, (low, high) = self._piece, self._window
        found: list[MessageExt] = []
        while self._offset < piece.end and len(found) < rows:
            offset = self._offset
            result = await self._pull_at(admin, offset)
            found += [
                m
                for m in result.messages
                if offset <= m.queue_offset < piece.end and low <= m.store_timestamp < high
            ]
            self._offset = next_offset(
                result, offset, piece, self._addr, self._options.fail_on_data_loss
            )
            self._stride = min(max(self._offset - offset, 1), self._options.pull_batch_size)
            self._forget_before(self._offset)
        return found

    def cancel(self) -> None:
        """Cancel the pulls in flight (the reader stopped early)."""
        self._forget_before(self._piece.end + 1)

    async def _pull_at(self, admin: AdminClient, offset: int) -> PullResult:
        size, end = self._options.pull_batch_size, self._piece.end
        for start in range(offset, min(offset + self._stride * self._ahead, end), self._stride):
            if start not in self._in_flight:
                self._in_flight[start] = asyncio.create_task(
                    admin.pull(
                        self._queue,
                        start,
                        min(size, end - start),
                        expression=self._options.tag_expression,
                        broker_addr=self._addr,
                    )
                )
        return await self._in_flight.pop(offset)

    def _forget_before(self, offset: int) -> None:
        for start in [s for s in self._in_flight if s < offset]:
            task = self._in_flight.pop(start)
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a failed pull nobody needs is no error
            task.cancel()


def next_offset(
    result: PullResult, offset: int, piece: offsets.OffsetRange, addr: str, fail_on_loss: bool
) -> int:
    """Where the pull after ``result`` (a pull from ``offset``) starts; raises
    :class:`ReadError` when the broker does not hold what was planned (offsets retention
    removed are skipped with a warning under ``failOnDataLoss=false``)."""
    where = f"{piece.topic} {piece.broker_name} queue {piece.queue_id} at {addr}"
    if result.status is PullStatus.OFFSET_ILLEGAL:
        removed = result.min_offset > offset
        if removed and not fail_on_loss:
            key = opts.QueueKey(piece.topic, piece.broker_name, piece.queue_id)
            log.warning("%s", offsets.lost_message(key, offset, result.min_offset))
            return result.min_offset
        raise ReadError(
            f"{where}: offset {offset} is not stored (the queue holds "
            f"[{result.min_offset}, {result.max_offset})): "
            + ("removed by retention (failOnDataLoss=false skips it)" if removed else "not yet")
        )
    if result.status is PullStatus.NO_NEW_MSG:
        raise ReadError(
            f"{where}: no message at offset {offset} (the queue ends at {result.max_offset}), "
            f"but the read was planned up to {piece.end}: a slave behind its master?"
        )
    if result.next_begin_offset <= offset:
        raise ReadError(f"{where}: a pull from offset {offset} did not move forward")
    return result.next_begin_offset
