"""The batch reader: plans queue offset ranges, then pulls each straight from its broker.

``partitions()`` runs where Spark plans the read: one admin connection asks the name server
for each topic's brokers, each broker for its queues' bounds (GET_TOPIC_STATS_INFO) and, for
timestamp options, for offsets by time (SEARCH_OFFSET_BY_TIMESTAMP); :mod:`.offsets` turns
them into ranges. Each range travels to an executor as a plain
:class:`~rocketkube.spark.offsets.OffsetRange`.

``read()`` runs on the executor and opens its own connection there: it finds the queue's
broker in the topic's route (a slave first with ``readFromSlave``) and pulls the range with
plain PULL_MESSAGE requests (no consumer group rebalance, nothing committed), the tag
expression sent with each pull and checked again on the messages, as consumers do. A range
the broker no longer holds, or does not hold yet, fails the task with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql.datasource import DataSourceReader, InputPartition

from rocketkube.client import sync
from rocketkube.client.pull import PullResult, PullStatus
from rocketkube.client.routing import MessageQueue
from rocketkube.common.protocol import route as rt
from rocketkube.spark import offsets, schema
from rocketkube.spark import options as opts

__all__ = ["BatchReader", "ReadError", "read_range"]


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
        with sync.AdminClient(o.namesrv_addr) as admin:
            bounds: list[offsets.QueueBounds] = []
            addrs: dict[tuple[str, str], str] = {}
            for topic in o.topics:
                bounds += _queue_bounds(admin, topic)
                addrs.update(_broker_addrs(admin, topic))

            def search(queue: opts.QueueKey, ms: int) -> int:
                mq = MessageQueue(queue.topic, queue.broker_name, queue.queue_id)
                addr = addrs[queue.topic, queue.broker_name]
                return admin.run(lambda a: a.search_offset(mq, ms, broker_addr=addr))

            ranges = offsets.plan(
                bounds, o.starting, o.ending, o.max_messages_per_partition, search
            )
        return [InputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[schema.Row]:
        """The rows of the partition's range (Spark sends ``None`` when there is none)."""
        if partition.value is not None:
            yield from read_range(self.options, partition.value)


def _queue_bounds(admin: sync.AdminClient, topic: str) -> list[offsets.QueueBounds]:
    stats = admin.run(lambda a: a.topic_stats(topic))
    return [
        offsets.QueueBounds(
            opts.QueueKey(mq.topic, mq.broker_name, mq.queue_id), span.min_offset, span.max_offset
        )
        for mq, span in stats.offset_table.items()
    ]


def _broker_addrs(admin: sync.AdminClient, topic: str) -> dict[tuple[str, str], str]:
    """(topic, broker name) -> the address its offsets are asked of (the master)."""
    found = admin.run(lambda a: a.broker_addrs(topic))
    return {(topic, broker): addr for broker, addr in found.items()}


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


def read_range(options: opts.ReadOptions, piece: offsets.OffsetRange) -> Iterator[schema.Row]:
    """Pull ``piece`` from its broker and yield its rows, in offset order."""
    queue = MessageQueue(piece.topic, piece.broker_name, piece.queue_id)
    low, high = offsets.time_window(options.starting, options.ending)
    with sync.AdminClient(options.namesrv_addr) as admin:
        route = admin.run(lambda a: a.topic_route(piece.topic))
        addr = read_address(route, piece.topic, piece.broker_name, options.read_from_slave)
        offset = piece.start
        while offset < piece.end:
            count = min(options.pull_batch_size, piece.end - offset)
            result = _pull(admin, queue, offset, count, options.tag_expression, addr)
            for message in result.messages:
                in_range = offset <= message.queue_offset < piece.end
                if in_range and low <= message.store_timestamp < high:
                    yield schema.message_row(message, piece.broker_name)
            offset = _next_offset(result, offset, piece, addr)


def _pull(
    admin: sync.AdminClient, queue: MessageQueue, offset: int, count: int, tags: str, addr: str
) -> PullResult:
    return admin.run(lambda a: a.pull(queue, offset, count, expression=tags, broker_addr=addr))


def _next_offset(result: PullResult, offset: int, piece: offsets.OffsetRange, addr: str) -> int:
    where = f"{piece.topic} {piece.broker_name} queue {piece.queue_id} at {addr}"
    if result.status is PullStatus.OFFSET_ILLEGAL:
        raise ReadError(
            f"{where}: offset {offset} is not stored (the queue holds "
            f"[{result.min_offset}, {result.max_offset})): removed by retention?"
        )
    if result.status is PullStatus.NO_NEW_MSG:
        raise ReadError(
            f"{where}: no message at offset {offset} (the queue ends at {result.max_offset}), "
            f"but the read was planned up to {piece.end}: a slave behind its master?"
        )
    if result.next_begin_offset <= offset:
        raise ReadError(f"{where}: a pull from offset {offset} did not move forward")
    return result.next_begin_offset
