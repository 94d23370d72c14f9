"""The streaming reader: micro-batches of queue offset ranges, with admission control,
``Trigger.AvailableNow``, data loss reporting and commits to a consumer group.

Spark keeps one instance on the driver for the life of a query and calls, per micro-batch:

- ``initialOffset()`` once for a new query (a restarted one resumes from its checkpoint):
  ``startingOffsets`` / ``startingTimestamp`` resolved per queue.
- ``latestOffset(start, limit)``: each queue's end now (the topics looked up again, so queues
  added to a topic and topics newly matching ``topicPattern`` join), capped by
  ``maxMessagesPerTrigger`` spread fairly over the queues (:func:`.stream_offsets.admit`) and,
  under ``Trigger.AvailableNow``, by the ends seen when the query started.
- ``partitions(start, end)``: the ranges between, split by ``maxMessagesPerPartition``; a start
  retention removed fails the query naming queue and offsets, or with
  ``failOnDataLoss=false`` is skipped with a warning.
- ``read(partition)`` on the executors, as the batch reader does.
- ``commit(end)`` once the batch is written: with ``consumerGroup``, ``end`` is committed as
  the group's offsets (UPDATE_CONSUMER_OFFSET), so lag dashboards and ``consumerProgress``
  show the pipeline. The checkpoint, not the group, is what a restart resumes from.

Spark calls ``commit`` for a batch only as it plans the next one, which a
``Trigger.AvailableNow`` query never does for its last: so ``latestOffset(start)``, which
Spark calls only once the batch ending at ``start`` is written (and once more before an
``AvailableNow`` query ends), commits ``start`` too; each position is committed once.

Offsets are JSON (:mod:`.stream_offsets`), so a restart from the checkpoint reads exactly the
batches that were not committed, with the same ends: nothing lost, nothing read twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from rocketkube.spark import lookups, offsets, reader, stream_offsets
from rocketkube.spark import options as opts

__all__ = ["StreamReader"]

log = logging.getLogger(__name__)

#: Every store time: a stream keeps each message it reads.
_ALL_TIMES = (0, offsets.NO_END_MS)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Reads micro-batches of the queues :class:`~rocketkube.spark.options.ReadOptions`
    cover; see the module docstring."""

    def __init__(self, options: opts.ReadOptions) -> None:
        self.options = options
        #: The queue ends a ``Trigger.AvailableNow`` query stops at.
        self._target: stream_offsets.Offsets | None = None
        #: What was last committed to the consumer group.
        self._committed: dict[str, Any] | None = None

    def initialOffset(self) -> dict[str, Any]:
        o = self.options
        with lookups.Planner(o) as planner:
            start = stream_offsets.initial(
                planner.bounds(), o.starting, planner.search, planner.committed
            )
        return stream_offsets.to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_messages_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._ends()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self.commit(start)
        ends = self._ends() if self._target is None else self._target
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        admitted = stream_offsets.admit(stream_offsets.from_json(start), ends, cap)
        return stream_offsets.to_json(admitted)

    def _ends(self) -> stream_offsets.Offsets:
        with lookups.Planner(self.options) as planner:
            return {bounds.queue: bounds.max_offset for bounds in planner.bounds()}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        o = self.options
        first, last = stream_offsets.from_json(start), stream_offsets.from_json(end)
        if first == last:
            return []
        with lookups.Planner(o) as planner:
            bounds = {b.queue: b for b in planner.bounds()}
        pieces = stream_offsets.ranges(
            first,
            last,
            bounds,
            o.max_messages_per_partition,
            None if o.fail_on_data_loss else log.warning,
        )
        return [InputPartition(piece) for piece in pieces]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is not None:
            yield from reader.read_batches(self.options, partition.value, _ALL_TIMES)

    def commit(self, end: dict[str, Any]) -> None:
        group = self.options.consumer_group
        if group is not None and end != self._committed:
            with lookups.Planner(self.options) as planner:
                planner.commit(group, stream_offsets.from_json(end))
            self._committed = end
