"""Planning a batch read without a cluster: ranges from the options, checked against what
the queues hold, split by the partition limit, and plain data that pickles."""

from __future__ import annotations

import pickle

import pytest

from rocketkube.spark import offsets
from rocketkube.spark import options as opts
from rocketkube.spark.offsets import OffsetRange, QueueBounds

Q0 = opts.QueueKey("T", "broker-a", 0)
Q1 = opts.QueueKey("T", "broker-a", 1)
QB = opts.QueueKey("T", "broker-b", 0)
#: Q0 holds [10, 20), Q1 [0, 0), QB [0, 7).
BOUNDS = [QueueBounds(QB, 0, 7), QueueBounds(Q1, 0, 0), QueueBounds(Q0, 10, 20)]


def no_search(queue: opts.QueueKey, ms: int) -> int:
    raise AssertionError("no search by time expected")


def test_earliest_to_latest_covers_what_each_queue_holds_in_order() -> None:
    planned = offsets.plan(BOUNDS, opts.Earliest(), opts.Latest(), 100, no_search)
    assert planned == [
        OffsetRange("T", "broker-a", 0, 10, 20),
        OffsetRange("T", "broker-b", 0, 0, 7),
    ]


def test_ranges_are_split_so_a_partition_holds_at_most_the_limit() -> None:
    planned = offsets.plan(BOUNDS, opts.Earliest(), opts.Latest(), 3, no_search)
    assert [(r.broker_name, r.start, r.end) for r in planned] == [
        ("broker-a", 10, 13),
        ("broker-a", 13, 16),
        ("broker-a", 16, 19),
        ("broker-a", 19, 20),
        ("broker-b", 0, 3),
        ("broker-b", 3, 6),
        ("broker-b", 6, 7),
    ]
    assert max(r.count for r in planned) == 3


def test_split_of_an_exact_multiple_and_of_nothing() -> None:
    whole = OffsetRange("T", "b", 0, 4, 8)
    assert offsets.split_range(whole, 2) == [
        OffsetRange("T", "b", 0, 4, 6),
        OffsetRange("T", "b", 0, 6, 8),
    ]
    assert offsets.split_range(OffsetRange("T", "b", 0, 5, 5), 2) == []
    with pytest.raises(ValueError, match="limit"):
        offsets.split_range(whole, 0)


def test_json_offsets_per_queue_with_defaults_for_the_rest() -> None:
    starting = opts.PerQueue({Q0: 15, QB: opts.LATEST}, opts.Earliest())
    ending = opts.PerQueue({Q0: 18, QB: opts.EARLIEST}, opts.Latest())
    # QB from its end to its start is backwards: refused
    with pytest.raises(
        offsets.PlanningError, match="broker-b queue 0 would start at offset 7, after its end 0"
    ):
        offsets.plan(BOUNDS, starting, ending, 100, no_search)
    ending = opts.PerQueue({Q0: 18}, opts.Latest())
    # QB from its end to its end: nothing to read, no partition
    assert offsets.plan(BOUNDS, starting, ending, 100, no_search) == [
        OffsetRange("T", "broker-a", 0, 15, 18)
    ]


def test_offsets_the_queue_does_not_hold_fail_planning_naming_the_queue() -> None:
    removed = opts.PerQueue({Q0: 9}, opts.Earliest())
    with pytest.raises(offsets.PlanningError, match=r"startingOffsets 9 of T broker-a queue 0 "):
        offsets.plan(BOUNDS, removed, opts.Latest(), 100, no_search)
    beyond = opts.PerQueue({Q0: 21}, opts.Latest())
    with pytest.raises(offsets.PlanningError, match=r"endingOffsets 21 of T broker-a queue 0 "):
        offsets.plan(BOUNDS, opts.Earliest(), beyond, 100, no_search)
    stranger = opts.PerQueue({opts.QueueKey("T", "broker-c", 0): 1}, opts.Earliest())
    with pytest.raises(offsets.PlanningError, match="startingOffsets names no such queue"):
        offsets.plan(BOUNDS, stranger, opts.Latest(), 100, no_search)


def test_by_time_the_broker_answer_starts_the_range_and_ends_one_past_it() -> None:
    answers = {(Q0, 1000): 12, (Q0, 2000): 15, (QB, 1000): 0, (QB, 2000): 6}

    def search(queue: opts.QueueKey, ms: int) -> int:
        return answers.get((queue, ms), 0)

    planned = offsets.plan(BOUNDS, opts.AtTimestamp(1000), opts.AtTimestamp(2000), 100, search)
    assert planned == [
        OffsetRange("T", "broker-a", 0, 12, 16),
        OffsetRange("T", "broker-b", 0, 0, 7),  # one past 6, the queue's end
    ]
    assert offsets.time_window(opts.AtTimestamp(1000), opts.AtTimestamp(2000)) == (1000, 2000)
    assert offsets.time_window(opts.Earliest(), opts.Latest()) == (0, offsets.NO_END_MS)


def test_an_answer_by_time_outside_the_queue_is_kept_inside_it() -> None:
    # an empty queue answers 0 even when its offsets start later
    bounds = [QueueBounds(Q0, 10, 10)]
    planned = offsets.plan(bounds, opts.AtTimestamp(5), opts.Latest(), 100, lambda q, ms: 0)
    assert planned == []


def test_partitions_are_plain_data_that_pickles() -> None:
    piece = OffsetRange("T", "broker-a", 0, 10, 20)
    assert pickle.loads(pickle.dumps(piece)) == piece
    spec = opts.PerQueue({Q0: 1}, opts.Earliest())
    assert pickle.loads(pickle.dumps(opts.ReadOptions("h:1", ("T",), spec))).starting == spec
