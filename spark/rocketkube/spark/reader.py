"""The batch reader: plans queue offset ranges, then pulls each straight from its broker.

``partitions()`` runs where Spark plans the read: :class:`~rocketkube.spark.lookups.Planner`
asks the name server for the topics (by name or ``topicPattern``) and their brokers, each
broker for its queues' bounds (GET_TOPIC_STATS_INFO) and, for timestamp options and
``committed``, for offsets by time or the group's; :mod:`.offsets` turns them into ranges.
Each range travels to an executor as a plain :class:`~rocketkube.spark.offsets.OffsetRange`.

``read()`` runs on the executor and opens its own connection there: it finds the queue's
broker in the topic's route (a slave first with ``readFromSlave``) and pulls the range with
plain PULL_MESSAGE requests (no consumer group rebalance, nothing committed), the tag
expression sent with each pull and checked again on the messages, as consumers do. A range
the broker no longer holds, or does not hold yet, fails the task with the reason (offsets
retention removed are skipped with a warning instead under ``failOnDataLoss=false``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from rocketkube.client import sync
from rocketkube.client.pull import PullResult, PullStatus
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message.model import MessageExt
from rocketkube.common.protocol import route as rt
from rocketkube.spark import lookups, offsets, schema
from rocketkube.spark import options as opts

__all__ = ["BATCH_ROWS", "BatchReader", "ReadError", "read_batches", "read_messages"]

#: Rows per Arrow batch handed to Spark.
BATCH_ROWS: Final = 4096

log = logging.getLogger(__name__)


class ReadError(RuntimeError):
    """A planned range cannot be read from its broker."""


class BatchReader(DataSourceReader):
    """Reads the queue ranges that :class:`~rocketkube.spark.options.ReadOptions` cover."""

    def __init__(self, options: opts.ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        """One partition per queue range, split so each holds at most
        ``maxMessagesPerPartition`` offsets."""
        o = self.options
        with lookups.Planner(o) as planner:
            ranges = offsets.plan(
                planner.bounds(),
                o.starting,
                o.ending,
                o.max_messages_per_partition,
                planner.search,
                committed=planner.committed,
                on_loss=None if o.fail_on_data_loss else log.warning,
            )
        return [InputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of the partition's range (Spark sends ``None`` when there is none)."""
        if partition.value is not None:
            window = offsets.time_window(self.options.starting, self.options.ending)
            yield from read_batches(self.options, partition.value, window)


def read_address(route: rt.TopicRouteData, topic: str, broker_name: str, from_slave: bool) -> str:
    """Where to read ``broker_name``'s queues: its master (lowest-numbered slave first when
    ``from_slave``), else whichever of its brokers the route lists."""
    for data in route.broker_datas:
        if data.broker_name != broker_name or not data.broker_addrs:
            continue
        slaves = sorted(i for i in data.broker_addrs if i != rt.MASTER_ID)
        if from_slave and slaves:
            return data.broker_addrs[slaves[0]]
        return data.master_addr or data.broker_addrs[min(data.broker_addrs)]
    raise ReadError(f"broker {broker_name} is not in the route of {topic}")


def read_batches(
    options: opts.ReadOptions, piece: offsets.OffsetRange, window: tuple[int, int]
) -> Iterator[pa.RecordBatch]:
    """The rows of :func:`read_messages` as Arrow batches of up to :data:`BATCH_ROWS`."""
    pending: list[MessageExt] = []
    for message in read_messages(options, piece, window):
        pending.append(message)
        if len(pending) >= BATCH_ROWS:
            yield schema.record_batch(pending, piece.broker_name)
            pending = []
    if pending:
        yield schema.record_batch(pending, piece.broker_name)


def read_messages(
    options: opts.ReadOptions, piece: offsets.OffsetRange, window: tuple[int, int]
) -> Iterator[MessageExt]:
    """Pull ``piece`` from its broker and yield its messages, in offset order, keeping those
    stored in ``window`` (``[low, high)`` epoch ms)."""
    queue = MessageQueue(piece.topic, piece.broker_name, piece.queue_id)
    low, high = window
    with sync.AdminClient(options.namesrv_addr, **options.security.client_kwargs()) as admin:
        route = admin.run(lambda a: a.topic_route(piece.topic))
        addr = read_address(route, piece.topic, piece.broker_name, options.read_from_slave)
        offset = piece.start
        while offset < piece.end:
            count = min(options.pull_batch_size, piece.end - offset)
            result = _pull(admin, queue, offset, count, options.tag_expression, addr)
            for message in result.messages:
                in_range = offset <= message.queue_offset < piece.end
                if in_range and low <= message.store_timestamp < high:
                    yield message
            offset = _next_offset(result, offset, piece, addr, options.fail_on_data_loss)


def _pull(
    admin: sync.AdminClient, queue: MessageQueue, offset: int, count: int, tags: str, addr: str
) -> PullResult:
    return admin.run(lambda a: a.pull(queue, offset, count, expression=tags, broker_addr=addr))


def _next_offset(
    result: PullResult, offset: int, piece: offsets.OffsetRange, addr: str, fail_on_loss: bool
) -> int:
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
