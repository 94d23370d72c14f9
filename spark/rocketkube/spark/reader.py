"""The batch reader: plans queue offset ranges, then pulls each straight from its broker.

``partitions()`` runs where Spark plans the read: :class:`~rocketkube.spark.lookups.Planner`
asks the name server for the topics (by name or ``topicPattern``) and their brokers, each
broker for its queues' bounds (GET_TOPIC_STATS_INFO) and, for timestamp options and
``committed``, for offsets by time or the group's; :mod:`.offsets` turns them into ranges.
Each range travels to an executor as a plain :class:`~rocketkube.spark.offsets.OffsetRange`.

``read()`` runs on the executor and opens its own connection there: it finds the queue's
broker in the topic's route (a slave first with ``readFromSlave``) and pulls the range with
plain PULL_MESSAGE requests, several in flight (:mod:`.pulling`; no consumer group
rebalance, nothing committed), the tag expression sent with each pull and checked again on
the messages, as consumers do. A range
the broker no longer holds, or does not hold yet, fails the task with the reason (offsets
retention removed are skipped with a warning instead under ``failOnDataLoss=false``).

With ``filterPushdown=true`` the reader is a :class:`FilteringReader`, which takes the
query's filters on topic, queue, tags and store time (:mod:`.pushdown`): queues they rule
out are not planned, ranges are narrowed to the time, and the tags are pulled by.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Generator, Iterable, Iterator
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition

from rocketkube.client import sync
from rocketkube.common.protocol import route as rt
from rocketkube.spark import lookups, offsets, pulling, pushdown, schema
from rocketkube.spark import options as opts

__all__ = ["BATCH_ROWS", "BatchReader", "FilteringReader", "read_address", "read_batches"]

#: Rows per Arrow batch handed to Spark.
BATCH_ROWS: Final = 4096

log = logging.getLogger(__name__)


class BatchReader(DataSourceReader):
    """Reads the queue ranges that :class:`~rocketkube.spark.options.ReadOptions` cover,
    and of them what ``pushed`` filters keep."""

    def __init__(
        self, options: opts.ReadOptions, pushed: pushdown.Pushed = pushdown.EVERYTHING
    ) -> None:
        self.options = options
        self.pushed = pushed

    def partitions(self) -> list[InputPartition]:
        """One partition per queue range, split so each holds at most
        ``maxMessagesPerPartition`` offsets."""
        o, pushed = self.options, self.pushed
        if pushdown.tag_expression(o.tag_expression, pushed) is None:
            return []
        with lookups.Planner(o) as planner:
            ranges = offsets.plan(
                [bounds for bounds in planner.bounds() if pushed.keeps(bounds.queue)],
                o.starting,
                o.ending,
                o.max_messages_per_partition,
                planner.search,
                committed=planner.committed,
                on_loss=None if o.fail_on_data_loss else log.warning,
                window=pushed.window((0, offsets.NO_END_MS)),
            )
        return [InputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of the partition's range (Spark sends ``None`` when there is none)."""
        o, pushed = self.options, self.pushed
        tags = pushdown.tag_expression(o.tag_expression, pushed)
        if partition.value is not None and tags is not None:
            window = pushed.window(offsets.time_window(o.starting, o.ending))
            o = dataclasses.replace(o, tag_expression=tags)
            yield from read_batches(o, partition.value, window)


class FilteringReader(BatchReader):
    """A :class:`BatchReader` that takes the query's filters it can apply
    (:mod:`.pushdown`); made for the ``filterPushdown`` option."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep the filters :func:`.pushdown.push` applies; hand back the others."""
        self.pushed, left = pushdown.push(filters, self.pushed)
        return left


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
    raise pulling.ReadError(f"broker {broker_name} is not in the route of {topic}")


def read_batches(
    options: opts.ReadOptions, piece: offsets.OffsetRange, window: tuple[int, int]
) -> Generator[pa.RecordBatch, None, None]:
    """Pull ``piece`` from its broker and yield its messages stored in ``window`` (``[low,
    high)`` epoch ms), in offset order, as Arrow batches of about :data:`BATCH_ROWS`: the
    loop pulls the next batch's messages while this thread builds one and Spark takes it."""
    with sync.AdminClient(settings=options.admin_settings()) as admin:
        route = admin.run(lambda a: a.topic_route(piece.topic))
        addr = read_address(route, piece.topic, piece.broker_name, options.read_from_slave)
        puller = pulling.RangePuller(options, piece, window, addr)
        ahead = admin.submit(lambda a: puller.chunk(a, BATCH_ROWS))
        try:
            while messages := ahead.result():
                ahead = admin.submit(lambda a: puller.chunk(a, BATCH_ROWS))
                yield schema.record_batch(messages, piece.broker_name)
        finally:
            ahead.cancel()
            admin.run(lambda a: _cancelled(puller))


async def _cancelled(puller: pulling.RangePuller) -> None:
    puller.cancel()
