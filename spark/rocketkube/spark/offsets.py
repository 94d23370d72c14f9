"""Planning a batch read, without I/O: queue offset ranges, checked, split into partitions.

The reader asks the cluster for each queue's bounds (its first stored offset and its end)
and, for timestamps, for offsets by time; everything else is here, as pure functions over
plain frozen dataclasses that pickle to executors on any host (no sockets, loops or locks).

::

    queue bounds + startingOffsets/endingOffsets  --resolve_range-->  OffsetRange [start, end)
    OffsetRange  --split_range(max N)-->  [start, start+N), [start+N, start+2N), ...

A start below the queue's first stored offset (removed by retention) is data loss: it fails
the read at planning, naming the queue and the offsets (Kafka's ``failOnDataLoss`` default),
or, given an ``on_loss`` callback (``failOnDataLoss=false``), is reported to it and the range
starts at the first stored offset instead. An end past the queue's end always fails.

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
    "CommittedLookup",
    "OffsetRange",
    "OnLoss",
    "PlanningError",
    "QueueBounds",
    "clip_start",
    "lost_message",
    "plan",
    "resolve_range",
    "split_range",
    "start_offset",
    "time_window",
    "where",
    "within",
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
#: ``committed(queue) -> offset`` of the ``consumerGroup`` (QUERY_CONSUMER_OFFSET), ``None``
#: when it has none.
CommittedLookup = Callable[[opts.QueueKey], int | None]
#: Told of each data loss (``failOnDataLoss=false``): a message naming queue and offsets.
OnLoss = Callable[[str], None]


def _no_committed(queue: opts.QueueKey) -> int | None:
    raise AssertionError("startingOffsets=committed needs a lookup of committed offsets")


def _offset(
    spec: opts.OffsetSpec,
    bounds: QueueBounds,
    search: Search,
    committed: CommittedLookup,
    *,
    end: bool,
) -> int:
    match spec:
        case opts.Earliest():
            return bounds.min_offset
        case opts.Latest():
            return bounds.max_offset
        case opts.Committed():
            found = committed(bounds.queue)
            return bounds.min_offset if found is None else found
        case opts.AtTimestamp(ms):
            return _by_time(bounds, search, ms, end=end)
        case opts.PerQueue(offsets, default):
            named = offsets.get(bounds.queue)
            if named is None:
                return _offset(default, bounds, search, committed, end=end)
            if named == opts.EARLIEST:
                return bounds.min_offset
            if named == opts.LATEST:
                return bounds.max_offset
            return named


def start_offset(
    spec: opts.OffsetSpec, bounds: QueueBounds, search: Search, committed: CommittedLookup
) -> int:
    """Where ``spec`` starts the queue, unchecked (it may be below the first stored offset)."""
    return _offset(spec, bounds, search, committed, end=False)


def where(queue: opts.QueueKey) -> str:
    """A queue as messages name it: ``T broker-a queue 0``."""
    return f"{queue.topic} {queue.broker_name} queue {queue.queue_id}"


def lost_message(queue: opts.QueueKey, start: int, min_offset: int) -> str:
    """What a read says of offsets ``[start, min_offset)`` that retention removed."""
    return (
        f"startingOffsets {start} of {where(queue)} was removed: its first stored offset is "
        f"{min_offset}, so offsets [{start}, {min_offset}) are lost (failOnDataLoss=false "
        "skips them)"
    )


def clip_start(bounds: QueueBounds, start: int, on_loss: OnLoss | None) -> int:
    """``start``, or the queue's first stored offset when retention removed ``start``
    (then ``on_loss`` is told; without one, :class:`PlanningError` is raised)."""
    if start >= bounds.min_offset:
        return start
    message = lost_message(bounds.queue, start, bounds.min_offset)
    if on_loss is None:
        raise PlanningError(message)
    on_loss(message)
    return bounds.min_offset


def resolve_range(
    bounds: QueueBounds,
    starting: opts.OffsetSpec,
    ending: opts.OffsetSpec,
    search: Search,
    *,
    committed: CommittedLookup = _no_committed,
    on_loss: OnLoss | None = None,
) -> OffsetRange:
    """The queue's range from the start and end options; raises :class:`PlanningError`
    when they ask for offsets the queue does not hold (but see ``on_loss``), or end before
    they start."""
    start = _offset(starting, bounds, search, committed, end=False)
    end = _offset(ending, bounds, search, committed, end=True)
    queue = bounds.queue
    start = clip_start(bounds, start, on_loss)
    if end > bounds.max_offset:
        raise PlanningError(
            f"endingOffsets {end} of {where(queue)} is past its end, offset {bounds.max_offset}"
        )
    if start > end:
        raise PlanningError(f"{where(queue)} would start at offset {start}, after its end {end}")
    return OffsetRange(queue.topic, queue.broker_name, queue.queue_id, start, end)


#: A store time later than any (the upper bound of a read not ended by time).
NO_END_MS: Final = 1 << 63


def time_window(starting: opts.OffsetSpec, ending: opts.OffsetSpec) -> tuple[int, int]:
    """Store times ``[low, high)`` a read keeps: every one unless bounded by time."""
    low = starting.ms if isinstance(starting, opts.AtTimestamp) else 0
    high = ending.ms if isinstance(ending, opts.AtTimestamp) else NO_END_MS
    return low, high


def within(
    whole: OffsetRange, bounds: QueueBounds, window: tuple[int, int], search: Search
) -> OffsetRange:
    """``whole`` narrowed to the offsets stored in ``window`` (``[low, high)`` epoch ms,
    a bound of 0 or :data:`NO_END_MS` is none), by time as a range by time is (see the
    module docstring): the reader drops the rows outside it. Empty when they miss."""
    low, high = window
    start, end = whole.start, whole.end
    if start < end and low > 0:
        start = max(start, _by_time(bounds, search, low, end=False))
    if start < end and high < NO_END_MS:
        end = min(end, _by_time(bounds, search, high, end=True))
    return dataclasses.replace(whole, start=start, end=end) if start < end else _empty(whole)


def _by_time(bounds: QueueBounds, search: Search, ms: int, *, end: bool) -> int:
    found = search(bounds.queue, ms) + (1 if end else 0)
    return min(max(found, bounds.min_offset), bounds.max_offset)


def _empty(whole: OffsetRange) -> OffsetRange:
    return dataclasses.replace(whole, end=whole.start)


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
    *,
    committed: CommittedLookup = _no_committed,
    on_loss: OnLoss | None = None,
    window: tuple[int, int] = (0, NO_END_MS),
) -> list[OffsetRange]:
    """The partitions of a batch read: every queue's range narrowed to the store times of
    ``window`` (:func:`within`) and split by ``limit``, ordered by topic, broker, queue and
    offset."""
    ordered = sorted(queues, key=lambda b: (b.queue.topic, b.queue.broker_name, b.queue.queue_id))
    known = {bounds.queue for bounds in ordered}
    for name, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        if isinstance(spec, opts.PerQueue):
            strangers = sorted(set(spec.offsets) - known, key=where)
            if strangers:
                raise PlanningError(f"{name} names no such queue: {where(strangers[0])}")
    return [
        piece
        for bounds in ordered
        for piece in split_range(
            within(
                resolve_range(
                    bounds, starting, ending, search, committed=committed, on_loss=on_loss
                ),
                bounds,
                window,
                search,
            ),
            limit,
        )
    ]
