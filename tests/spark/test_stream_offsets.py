"""Planning a streaming read without a cluster: offsets JSON both ways, where a query starts,
fair admission control, new queues, and data loss reported or skipped."""

from __future__ import annotations

import pytest

from rocketkube.spark import offsets, stream_offsets
from rocketkube.spark import options as opts
from rocketkube.spark.offsets import OffsetRange, QueueBounds

Q0 = opts.QueueKey("T", "broker-a", 0)
Q1 = opts.QueueKey("T", "broker-a", 1)
QB = opts.QueueKey("T", "broker-b", 0)
QU = opts.QueueKey("U", "broker-a", 0)


def no_search(queue: opts.QueueKey, ms: int) -> int:
    raise AssertionError("no search by time expected")


def no_committed(queue: opts.QueueKey) -> int | None:
    raise AssertionError("no committed offsets expected")


def test_offsets_as_json_and_back() -> None:
    positions = {Q1: 7, QU: 1, Q0: 42, QB: 0}
    tree = stream_offsets.to_json(positions)
    assert tree == {
        "T": {"broker-a": {"0": 42, "1": 7}, "broker-b": {"0": 0}},
        "U": {"broker-a": {"0": 1}},
    }
    assert list(tree) == ["T", "U"]
    assert stream_offsets.from_json(tree) == positions


def test_a_query_starts_where_the_option_says() -> None:
    bounds = [QueueBounds(Q0, 10, 20), QueueBounds(Q1, 0, 5)]

    def start(
        spec: opts.OffsetSpec,
        search: offsets.Search = no_search,
        committed: offsets.CommittedLookup = no_committed,
    ) -> stream_offsets.Offsets:
        return stream_offsets.initial(bounds, spec, search, committed)

    assert start(opts.Earliest()) == {Q0: 10, Q1: 0}
    assert start(opts.Latest()) == {Q0: 20, Q1: 5}
    assert start(opts.AtTimestamp(5), search=lambda q, ms: 12 if q == Q0 else 3) == {Q0: 12, Q1: 3}
    assert start(opts.Committed(), committed=lambda q: 15 if q == Q0 else None) == {Q0: 15, Q1: 0}
    # a named offset below the first stored one is kept: the first batch reports it
    assert start(opts.PerQueue({Q0: 4}, opts.Latest())) == {Q0: 4, Q1: 5}


def test_admission_spreads_the_limit_fairly_over_the_queues_with_a_backlog() -> None:
    start = {Q0: 0, Q1: 100, QB: 50}
    ends = {Q0: 1000, Q1: 102, QB: 1000}
    # Q1 has 2 waiting and takes them; the other two share the rest of the 30 equally
    assert stream_offsets.admit(start, ends, 30) == {Q0: 14, Q1: 102, QB: 64}
    assert stream_offsets.admit(start, ends, None) == ends
    # every offset of the limit is used, none twice
    admitted = stream_offsets.admit(start, ends, 31)
    assert sum(admitted[q] - start[q] for q in start) == 31
    # nothing waiting: the start comes back as it was, so Spark plans no batch
    assert stream_offsets.admit(ends, ends, 30) == ends


def test_a_queue_new_to_the_query_starts_at_zero_and_a_vanished_one_keeps_its_offset() -> None:
    assert stream_offsets.admit({Q0: 5, QU: 9}, {Q0: 5, Q1: 3}, None) == {Q0: 5, QU: 9, Q1: 3}


def test_ranges_split_by_the_limit_and_skip_empty_queues() -> None:
    bounds = {q: QueueBounds(q, 0, 100) for q in (Q0, Q1, QB)}
    planned = stream_offsets.ranges({Q0: 3, Q1: 9}, {Q0: 8, Q1: 9, QB: 2}, bounds, 4, None)
    assert planned == [
        OffsetRange("T", "broker-a", 0, 3, 7),
        OffsetRange("T", "broker-a", 0, 7, 8),
        OffsetRange("T", "broker-b", 0, 0, 2),
    ]


def test_a_start_retention_removed_fails_or_is_skipped_with_a_warning() -> None:
    bounds = {Q0: QueueBounds(Q0, 10, 20), Q1: QueueBounds(Q1, 40, 50)}
    start, end = {Q0: 4, Q1: 30}, {Q0: 15, Q1: 35}
    with pytest.raises(offsets.PlanningError) as caught:
        stream_offsets.ranges(start, end, bounds, 100, None)
    assert str(caught.value) == (
        "startingOffsets 4 of T broker-a queue 0 was removed: its first stored offset is 10, "
        "so offsets [4, 10) are lost (failOnDataLoss=false skips them)"
    )
    warnings: list[str] = []
    planned = stream_offsets.ranges(start, end, bounds, 100, warnings.append)
    # Q1's whole batch was removed: nothing to read there
    assert planned == [OffsetRange("T", "broker-a", 0, 10, 15)]
    assert [w.split(" was removed")[0] for w in warnings] == [
        "startingOffsets 4 of T broker-a queue 0",
        "startingOffsets 30 of T broker-a queue 1",
    ]


def test_a_batch_read_skips_what_retention_removed_when_told_to() -> None:
    bounds = [QueueBounds(Q0, 10, 20)]
    removed = opts.PerQueue({Q0: 4}, opts.Earliest())
    warnings: list[str] = []
    planned = offsets.plan(bounds, removed, opts.Latest(), 100, no_search, on_loss=warnings.append)
    assert planned == [OffsetRange("T", "broker-a", 0, 10, 20)]
    assert len(warnings) == 1
