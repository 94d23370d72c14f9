"""ProcessQueue: what a push consumer may commit while messages finish out of order."""

from __future__ import annotations

from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.common.message.model import MessageExt


def _msgs(*offsets: int) -> list[MessageExt]:
    return [MessageExt("T", b"x" * 10, queue_offset=o) for o in offsets]


def test_commit_offset_is_the_smallest_still_held() -> None:
    pq = ProcessQueue()
    m = _msgs(10, 11, 12, 13)
    assert pq.add(m) == m
    assert (pq.count, pq.size_bytes, pq.max_offset) == (4, 40, 13)
    assert pq.remove([m[1], m[3]]) == 10  # 10 is still being consumed
    assert pq.remove([m[0]]) == 12
    assert pq.remove([m[2]]) == 14  # everything consumed: one past the last
    assert pq.remove([m[2]]) is None  # nothing held
    assert (pq.count, pq.size_bytes) == (0, 0)


def test_repeated_offsets_are_held_once() -> None:
    pq = ProcessQueue()
    pq.add(_msgs(1, 2))
    assert [m.queue_offset for m in pq.add(_msgs(2, 3))] == [3]
    assert pq.count == 3


def test_orderly_take_commit_and_rollback() -> None:
    pq = ProcessQueue()
    pq.add(_msgs(5, 6, 7))
    batch = pq.take(2)
    assert [m.queue_offset for m in batch] == [5, 6]
    assert pq.committable() == 5
    pq.rollback()
    assert [m.queue_offset for m in pq.take(1)] == [5]
    assert pq.commit() == 6
    assert [m.queue_offset for m in pq.take(5)] == [6, 7]
    assert pq.commit() == 8
    assert pq.count == 0


def test_an_earlier_offset_added_later_keeps_the_order() -> None:
    pq = ProcessQueue()
    pq.add(_msgs(8, 9))
    pq.add(_msgs(3))
    assert [m.queue_offset for m in pq.take(3)] == [3, 8, 9]
