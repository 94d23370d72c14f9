"""Filter push-down: the query's filters a batch read can apply itself, turned into what
it plans and pulls, without I/O.

Spark hands a Python data source the filters of a query's ``WHERE`` (those ANDed at the
top) when ``spark.sql.python.filterPushdown.enabled`` is true, and refuses to read from a
source that offers push-down while it is false. So push-down is offered only when the
``filterPushdown`` option asks for it (:class:`~rocketkube.spark.reader.FilteringReader`).

=====================================  ================================================
``topic = 'T'``, ``topic IN (...)``    only those topics' queues are planned
``queueId = 1``, ``queueId IN (...)``  only those queues are planned
``tags = 'A'``, ``tags IN (...)``      the tag expression ``A || B`` (with the
                                       ``tagExpression`` option's tags: those in both),
                                       which the broker filters by
``storeTimestamp`` ``>``, ``>=``,      each queue's range narrowed to the offsets
``<``, ``<=``                          stored in that time (SEARCH_OFFSET_BY_TIMESTAMP),
                                       the rows outside it dropped as they are read
=====================================  ================================================

Each of these is applied exactly, so Spark does not evaluate them again; every other filter
(and a tag a tag expression cannot hold: empty, ``*``, with ``||`` or spaces around it) is
left to Spark. Store times are whole milliseconds; a filter's time has microseconds, so
``storeTimestamp > t`` keeps the milliseconds after ``t`` and ``<= t`` those up to it.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from typing import Any, Final, TypeVar

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from rocketkube.spark import offsets
from rocketkube.spark import options as opts

__all__ = ["EVERYTHING", "Pushed", "push", "tag_expression"]

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MICROSECOND: Final = datetime.timedelta(microseconds=1)
_RANGES: Final = (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Pushed:
    """What the filters pushed so far keep: a set of each (None: any) and the store times
    ``[low_ms, high_ms)``."""

    topics: frozenset[str] | None = None
    queue_ids: frozenset[int] | None = None
    tags: frozenset[str] | None = None
    low_ms: int = 0
    high_ms: int = offsets.NO_END_MS

    def keeps(self, queue: opts.QueueKey) -> bool:
        """Whether the queue may hold rows the filters keep."""
        topic_kept = self.topics is None or queue.topic in self.topics
        return topic_kept and (self.queue_ids is None or queue.queue_id in self.queue_ids)

    def window(self, read: tuple[int, int]) -> tuple[int, int]:
        """The store times both ``read`` (``[low, high)`` ms) and the filters keep."""
        return max(read[0], self.low_ms), min(read[1], self.high_ms)


#: No filter pushed: everything is kept.
EVERYTHING: Final = Pushed()


def push(filters: Iterable[Filter], pushed: Pushed = EVERYTHING) -> tuple[Pushed, list[Filter]]:
    """``pushed`` narrowed by each filter it can apply, and the filters left to Spark."""
    left: list[Filter] = []
    for one in filters:
        narrowed = _narrow(one, pushed)
        if narrowed is None:
            left.append(one)
        else:
            pushed = narrowed
    return pushed, left


def tag_expression(option: str, pushed: Pushed) -> str | None:
    """The tag expression of the ``tagExpression`` option and the pushed tags; None when
    no tag can match both."""
    if pushed.tags is None:
        return option
    wanted = pushed.tags
    if option.strip() != "*":
        wanted = wanted & {tag.strip() for tag in option.split("||")}
    return " || ".join(sorted(wanted)) if wanted else None


def _narrow(one: Filter, pushed: Pushed) -> Pushed | None:
    """``pushed`` with ``one`` applied, or None when it cannot be."""
    if isinstance(one, EqualTo | In) and len(one.attribute) == 1:
        values = one.value if isinstance(one, In) else (one.value,)
        return _narrow_set(one.attribute[0], tuple(values), pushed)
    if isinstance(one, _RANGES) and one.attribute == ("storeTimestamp",):
        return _narrow_time(one, pushed)
    return None


def _narrow_set(column: str, values: tuple[Any, ...], pushed: Pushed) -> Pushed | None:
    if column == "topic" and all(type(v) is str for v in values):
        return dataclasses.replace(pushed, topics=_both(pushed.topics, values))
    if column == "queueId" and all(type(v) is int for v in values):
        return dataclasses.replace(pushed, queue_ids=_both(pushed.queue_ids, values))
    if column == "tags" and all(type(v) is str and _is_tag(v) for v in values):
        return dataclasses.replace(pushed, tags=_both(pushed.tags, values))
    return None


def _both(kept: frozenset[T] | None, values: tuple[T, ...]) -> frozenset[T]:
    return frozenset(values) if kept is None else kept & frozenset(values)


def _is_tag(value: str) -> bool:
    """Whether a tag expression can name ``value`` alone (``A || B`` splits and strips)."""
    return bool(value) and value == value.strip() and value != "*" and "||" not in value


def _narrow_time(one: Filter, pushed: Pushed) -> Pushed | None:
    value = getattr(one, "value", None)
    if not isinstance(value, datetime.datetime) or value.tzinfo is None:
        return None
    micros = (value - _EPOCH) // _MICROSECOND
    floor_ms, ceil_ms = micros // 1000, -(-micros // 1000)
    match one:
        case GreaterThan():
            return dataclasses.replace(pushed, low_ms=max(pushed.low_ms, floor_ms + 1))
        case GreaterThanOrEqual():
            return dataclasses.replace(pushed, low_ms=max(pushed.low_ms, ceil_ms))
        case LessThan():
            return dataclasses.replace(pushed, high_ms=min(pushed.high_ms, ceil_ms))
        case _:
            return dataclasses.replace(pushed, high_ms=min(pushed.high_ms, floor_ms + 1))
