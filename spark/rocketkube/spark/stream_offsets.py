"""Planning a streaming read, without I/O: offsets as JSON, where a query starts, how far a
micro-batch may go, and the ranges it reads.

A stream's offset is the next offset to read of every queue it knows, as the JSON Spark keeps
in the checkpoint, shaped like the ``startingOffsets`` option (Kafka's shape)::

    {"Orders": {"broker-a": {"0": 42, "1": 17}, "broker-b": {"0": 5}}}

::

    queue bounds + startingOffsets  --initial-->  start offsets           (a new query)
    start + each queue's end (+ maxMessagesPerTrigger)  --admit-->  end offsets  (a batch)
    start, end + queue bounds  --ranges-->  [OffsetRange]                   (its partitions)

A queue in ``end`` but not in ``start`` appeared during the query (queues added to a topic, a
topic newly matching ``topicPattern``): it is read from offset 0, as Kafka reads a new
partition, and if retention already removed its first offsets that is reported as data loss.

Admission control spreads ``maxMessagesPerTrigger`` fairly over the queues with a backlog
(max-min fairness): each gets an equal share, and what a short queue leaves goes to the
longer ones, so one busy queue cannot starve the others and the whole limit is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rocketkube.spark import offsets
from rocketkube.spark import options as opts

__all__ = ["Offsets", "admit", "from_json", "initial", "ranges", "to_json"]

#: The next offset to read of each queue.
Offsets = dict[opts.QueueKey, int]


def to_json(positions: Mapping[opts.QueueKey, int]) -> dict[str, Any]:
    """``positions`` as the checkpoint's JSON tree, sorted (topic, broker, queue id)."""
    tree: dict[str, Any] = {}
    for queue in sorted(positions, key=lambda q: (q.topic, q.broker_name, q.queue_id)):
        brokers = tree.setdefault(queue.topic, {})
        brokers.setdefault(queue.broker_name, {})[str(queue.queue_id)] = positions[queue]
    return tree


def from_json(tree: Mapping[str, Any]) -> Offsets:
    """The JSON tree :func:`to_json` made, back into offsets."""
    return {
        opts.QueueKey(topic, broker, int(queue_id)): int(offset)
        for topic, brokers in tree.items()
        for broker, queues in brokers.items()
        for queue_id, offset in queues.items()
    }


def initial(
    queues: Iterable[offsets.QueueBounds],
    starting: opts.OffsetSpec,
    search: offsets.Search,
    committed: offsets.CommittedLookup,
) -> Offsets:
    """Where a new query starts each queue (``startingOffsets``, ``startingTimestamp``);
    offsets retention removed are reported when the first batch is planned (:func:`ranges`)."""
    return {
        bounds.queue: offsets.start_offset(starting, bounds, search, committed) for bounds in queues
    }


def admit(start: Mapping[opts.QueueKey, int], ends: Offsets, limit: int | None) -> Offsets:
    """The end offsets of the next batch: each queue's end (``ends``), or less, so the batch
    holds at most ``limit`` offsets, spread fairly; queues only in ``start`` keep their
    offset, and queues new to ``start`` begin at 0."""
    backlog = {q: max(end - start.get(q, 0), 0) for q, end in ends.items()}
    taken = dict(backlog) if limit is None else _fair_shares(backlog, limit)
    admitted = dict(start)
    for queue, count in taken.items():
        admitted[queue] = start.get(queue, 0) + count
    return admitted


def _fair_shares(backlog: Mapping[opts.QueueKey, int], limit: int) -> dict[opts.QueueKey, int]:
    """Max-min fair shares of ``limit`` over the queues' backlogs (smallest served first)."""
    order = sorted(backlog, key=lambda q: (backlog[q], q.topic, q.broker_name, q.queue_id))
    shares: dict[opts.QueueKey, int] = {}
    remaining = limit
    for index, queue in enumerate(order):
        share = min(backlog[queue], remaining // (len(order) - index))
        shares[queue] = share
        remaining -= share
    return shares


def ranges(
    start: Mapping[opts.QueueKey, int],
    end: Mapping[opts.QueueKey, int],
    bounds: Mapping[opts.QueueKey, offsets.QueueBounds],
    limit: int,
    on_loss: offsets.OnLoss | None,
) -> list[offsets.OffsetRange]:
    """The partitions of the batch from ``start`` to ``end``, split by ``limit``. A start
    retention removed is data loss (see :func:`rocketkube.spark.offsets.clip_start`); a
    queue the cluster no longer lists is read as planned."""
    pieces: list[offsets.OffsetRange] = []
    for queue in sorted(end, key=lambda q: (q.topic, q.broker_name, q.queue_id)):
        first = start.get(queue, 0)
        known = bounds.get(queue)
        if known is not None and first < end[queue]:
            first = offsets.clip_start(known, first, on_loss)
        whole = offsets.OffsetRange(
            queue.topic, queue.broker_name, queue.queue_id, first, max(first, end[queue])
        )
        pieces += offsets.split_range(whole, limit)
    return pieces
