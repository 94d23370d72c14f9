"""Planning a batch read, without I/O: queue offset ranges, checked, split into partitions.

The reader asks the cluster for each queue's bounds (its first stored offset and its end)
and, for timestamps, for offsets by time; everything else is here, as pure functions over
plain frozen dataclasses that pickle to executors on any host (no sockets, loops or locks).

::

    queue bounds + startingOffsets/endingOffsets  --resolve_range-->  OffsetRange [start, end)
    OffsetRange  --split_range(max N)-->  [start, start+N), [start+N, start+2N), ...

A start below the queue's first stored offset (removed by retention) or an end past its
end fails the read at planning, naming the queue: Kafka's ``failOnDataLoss`` default.

By time, the broker answers with the message stored nearest the time (RocketMQ's
SEARCH_OFFSET_BY_TIMESTAMP), which is the first one stored at or after it or the one just
before. So a range by time starts at that answer and ends one past it, and the reader drops
the messages stored outside the time window (:func:`time_window`): the rows are exactly those
stored in ``[startingTimestamp, endingTimestamp)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Final

from rocketkube.spark import options as opts

__all__ = [
    "NO_END_MS",
    "OffsetRange",
    "PlanningError",
    "QueueBounds",
    "plan",
    "resolve_range",
    "split_range",
    "time_window",
]


class PlanningError(ValueError):
    """The options ask for offsets the cluster does not hold."""


@dataclasses.dataclass(frozen=True, slots=True)
class QueueBounds:
    """A queue and what it stores now: offsets ``[min_offset, max_offset)``."""

    queue: opts.QueueKey
    min_offset: int
    max_offset: int


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one queue: what one Spark partition reads."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.start


#: ``search(queue, timestamp_ms) -> offset`` (SEARCH_OFFSET_BY_TIMESTAMP).
Search = Callable[[opts.QueueKey, int], int]


def _offset(spec: opts.OffsetSpec, bounds: QueueBounds, search: Search, *, end: bool) -> int:
    match spec:
        case opts.Earliest():
            return bounds.min_offset
        case opts.Latest():
            return bounds.max_offset
        case opts.AtTimestamp(ms):
            found = search(bounds.queue, ms) + (1 if end else 0)
            return min(max(found, bounds.min_offset), bounds.max_offset)
        case opts.PerQueue(offsets, default):
            named = offsets.get(bounds.queue)
            if named is None:
                return _offset(default, bounds, search, end=end)
            if named == opts.EARLIEST:
                return bounds.min_offset
            if named == opts.LATEST:
                return bounds.max_offset
            return named


def _where(queue: opts.QueueKey) -> str:
    return f"{queue.topic} {queue.broker_name} queue {queue.queue_id}"


def resolve_range(
    bounds: QueueBounds, starting: opts.OffsetSpec, ending: opts.OffsetSpec, search: Search
) -> OffsetRange:
    """The queue's range from the start and end options; raises :class:`PlanningError`
    when they ask for offsets the queue does not hold, or end before they start."""
    start = _offset(starting, bounds, search, end=False)
    end = _offset(ending, bounds, search, end=True)
    where = _where(bounds.queue)
    if start < bounds.min_offset:
        raise PlanningError(
            f"startingOffsets {start} of {where} was removed: its first stored offset is "
            f"{bounds.min_offset}"
        )
    if end > bounds.max_offset:
        raise PlanningError(
            f"endingOffsets {end} of {where} is past its end, offset {bounds.max_offset}"
        )
    if start > end:
        raise PlanningError(f"{where} would start at offset {start}, after its end {end}")
    queue = bounds.queue
    return OffsetRange(queue.topic, queue.broker_name, queue.queue_id, start, end)


#: A store time later than any (the upper bound of a read not ended by time).
NO_END_MS: Final = 1 << 63


def time_window(starting: opts.OffsetSpec, ending: opts.OffsetSpec) -> tuple[int, int]:
    """Store times ``[low, high)`` a read keeps: every one unless bounded by time."""
    low = starting.ms if isinstance(starting, opts.AtTimestamp) else 0
    high = ending.ms if isinstance(ending, opts.AtTimestamp) else NO_END_MS
    return low, high


def split_range(whole: OffsetRange, limit: int) -> list[OffsetRange]:
    """``whole`` in consecutive pieces of at most ``limit`` offsets; none when empty."""
    if limit < 1:
        raise ValueError(f"limit must be 1 or more, not {limit}")
    return [
        dataclasses.replace(whole, start=start, end=min(start + limit, whole.end))
        for start in range(whole.start, whole.end, limit)
    ]


def plan(
    queues: Iterable[QueueBounds],
    starting: opts.OffsetSpec,
    ending: opts.OffsetSpec,
    limit: int,
    search: Search,
) -> list[OffsetRange]:
    """The partitions of a batch read: every queue's range split by ``limit``, ordered by
    topic, broker, queue and offset."""
    ordered = sorted(queues, key=lambda b: (b.queue.topic, b.queue.broker_name, b.queue.queue_id))
    known = {bounds.queue for bounds in ordered}
    for name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if isinstance(spec, opts.PerQueue):
            strangers = sorted(set(spec.offsets) - known, key=_where)
            if strangers:
                raise PlanningError(f"{name} names no such queue: {_where(strangers[0])}")
    return [
        piece
        for bounds in ordered
        for piece in split_range(resolve_range(bounds, starting, ending, search), limit)
    ]
