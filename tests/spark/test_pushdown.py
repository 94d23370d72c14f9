"""Filter push-down: which filters are taken and what they become (no Spark), the ranges a
pushed read plans (the reader against the session's broker), and through Spark the same
rows with push-down as without it, from fewer partitions."""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)
from spark_cluster import Cluster, CreateTopic

from rocketkube.client import Message, sync
from rocketkube.client.routing import MessageQueue
from rocketkube.spark import RocketMQDataSource, offsets, pushdown, reader
from rocketkube.spark import options as opts

pytestmark = pytest.mark.xdist_group("spark")

UTC = datetime.UTC
#: 2023-11-14T22:13:20.123456Z: 1,700,000,000,123 ms and 456 us.
T = datetime.datetime(2023, 11, 14, 22, 13, 20, 123456, UTC)
#: T's whole milliseconds, and T at exactly that millisecond.
T_MS = 1_700_000_000_123
T_EXACT = T.replace(microsecond=123000)
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def test_topic_queue_and_tag_filters_become_sets_and_the_rest_is_left_to_spark() -> None:
    unsupported: list[Filter] = [
        StringStartsWith(("topic",), "Ord"),
        EqualTo(("body",), b"x"),
        EqualTo(("tags",), "A || B"),
        In(("tags",), ("A", " B")),
        EqualTo(("tags",), "*"),
        In(("queueId",), (1, "2")),
    ]
    pushed, left = pushdown.push(
        [
            EqualTo(("topic",), "Orders"),
            In(("queueId",), (1, 2, 3)),
            *unsupported,
            In(("queueId",), (2, 3, 4)),
            In(("tags",), ("A", "B")),
        ]
    )
    assert left == unsupported
    assert all(a is b for a, b in zip(left, unsupported, strict=True))  # by reference
    assert pushed == pushdown.Pushed(
        topics=frozenset({"Orders"}), queue_ids=frozenset({2, 3}), tags=frozenset({"A", "B"})
    )
    assert pushed.keeps(opts.QueueKey("Orders", "b", 2))
    assert not pushed.keeps(opts.QueueKey("Orders", "b", 1))
    assert not pushed.keeps(opts.QueueKey("Other", "b", 2))


@pytest.mark.parametrize(
    ("condition", "window"),
    [
        (GreaterThan(("storeTimestamp",), T), (1_700_000_000_124, offsets.NO_END_MS)),
        (GreaterThanOrEqual(("storeTimestamp",), T), (1_700_000_000_124, offsets.NO_END_MS)),
        (LessThan(("storeTimestamp",), T), (0, 1_700_000_000_124)),
        (LessThanOrEqual(("storeTimestamp",), T), (0, 1_700_000_000_124)),
        (GreaterThanOrEqual(("storeTimestamp",), T_EXACT), (T_MS, offsets.NO_END_MS)),
        (GreaterThan(("storeTimestamp",), T_EXACT), (T_MS + 1, offsets.NO_END_MS)),
        (LessThan(("storeTimestamp",), T_EXACT), (0, T_MS)),
        (LessThanOrEqual(("storeTimestamp",), T_EXACT), (0, T_MS + 1)),
    ],
)
def test_store_time_bounds_become_whole_milliseconds(condition: Filter, window: Any) -> None:
    pushed, left = pushdown.push([condition])
    assert left == []
    assert (pushed.low_ms, pushed.high_ms) == window


def test_time_bounds_meet_and_a_naive_time_is_left_to_spark() -> None:
    naive = GreaterThan(("storeTimestamp",), T.replace(tzinfo=None))
    later = T + datetime.timedelta(seconds=1)
    pushed, left = pushdown.push(
        [GreaterThan(("storeTimestamp",), T), naive, LessThan(("storeTimestamp",), later)]
    )
    assert left == [naive]
    assert pushed.window((0, offsets.NO_END_MS)) == (1_700_000_000_124, 1_700_000_001_124)
    assert pushed.window((1_700_000_000_500, 1_700_000_000_900)) == (
        1_700_000_000_500,
        1_700_000_000_900,
    )


def test_pushed_tags_meet_the_tag_expression_option() -> None:
    pushed = pushdown.Pushed(tags=frozenset({"B", "A"}))
    assert pushdown.tag_expression("*", pushdown.EVERYTHING) == "*"
    assert pushdown.tag_expression("*", pushed) == "A || B"
    assert pushdown.tag_expression("B || C", pushed) == "B"
    assert pushdown.tag_expression("C", pushed) is None


def test_a_range_is_narrowed_to_the_offsets_stored_in_a_time_window() -> None:
    bounds = offsets.QueueBounds(opts.QueueKey("T", "b", 0), 10, 100)
    whole = offsets.OffsetRange("T", "b", 0, 20, 90)
    stored_at = {1000: 40, 2000: 60, 50: 3, 9000: 100}  # search answers, by time

    def search(queue: opts.QueueKey, ms: int) -> int:
        return stored_at[ms]

    assert offsets.within(whole, bounds, (1000, 2000), search) == dataclasses.replace(
        whole, start=40, end=61
    )
    assert offsets.within(whole, bounds, (50, 9000), search) == whole
    assert offsets.within(whole, bounds, (2000, 1000), search).count == 0
    assert offsets.within(whole, bounds, (0, offsets.NO_END_MS), search) == whole


@dataclasses.dataclass(frozen=True)
class Spread:
    """A topic of 4 queues: 2 messages each, then (store times later) 1 more each; tags
    cycle A, B, C."""

    topic: str
    later_from: datetime.datetime
    """The store time of the first message of the second round."""


@pytest.fixture(scope="module")
def spread(cluster: Cluster, create_topic: CreateTopic) -> Spread:
    topic = create_topic(4)
    sent = 0
    with sync.Producer("SparkPushdownTest", cluster.namesrv) as producer:
        for round_count in (2, 1):
            if sent:
                stored_by = time.time_ns() // 1_000_000
                while time.time_ns() // 1_000_000 <= stored_by:  # the next round stores later
                    time.sleep(0.001)
            for queue_id in range(4):
                for _ in range(round_count):
                    message = Message(topic, b"%d" % sent)
                    message.tags = "ABC"[sent % 3]
                    producer.send(message, queue=MessageQueue(topic, cluster.broker_name, queue_id))
                    sent += 1
    options = opts.parse_read_options({"namesrvAddr": cluster.namesrv, "topic": topic})
    first_later = offsets.OffsetRange(topic, cluster.broker_name, 0, 2, 3)
    (batch,) = reader.read_batches(options, first_later, (0, offsets.NO_END_MS))
    return Spread(topic, batch.column("storeTimestamp")[0].as_py())


def _planned(cluster: Cluster, spread: Spread, *filters: Filter) -> list[offsets.OffsetRange]:
    parsed = opts.parse_read_options(
        {"namesrvAddr": cluster.namesrv, "topic": spread.topic, "filterPushdown": "true"}
    )
    filtering = reader.FilteringReader(parsed)
    assert list(filtering.pushFilters(list(filters))) == []
    return [partition.value for partition in filtering.partitions()]


def test_a_pushed_read_plans_only_the_queues_and_offsets_kept(
    cluster: Cluster, spread: Spread
) -> None:
    everything = _planned(cluster, spread)
    assert [(r.queue_id, r.count) for r in everything] == [(q, 3) for q in range(4)]
    queues = _planned(cluster, spread, In(("queueId",), (1, 3)), EqualTo(("topic",), spread.topic))
    assert [(r.queue_id, r.start, r.end) for r in queues] == [(1, 0, 3), (3, 0, 3)]
    assert _planned(cluster, spread, EqualTo(("topic",), "SomeOtherTopic")) == []
    assert _planned(cluster, spread, In(("queueId",), (1,)), In(("queueId",), (2,))) == []
    later = _planned(cluster, spread, GreaterThanOrEqual(("storeTimestamp",), spread.later_from))
    assert sum(r.count for r in later) < sum(r.count for r in everything)
    assert [(r.queue_id, r.end) for r in later] == [(q, 3) for q in range(4)]


@pytest.fixture
def pushing(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with Spark's push-down to Python data sources on (off again after)."""
    spark.dataSource.register(RocketMQDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        yield spark
    finally:
        spark.conf.unset(PUSHDOWN_CONF)


def _rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted(
        (r.queueId, r.queueOffset, r.tags, bytes(r.body), r.storeTimestamp) for r in frame.collect()
    )


def test_spark_reads_the_same_rows_with_push_down_from_fewer_partitions(
    pushing: SparkSession, cluster: Cluster, spread: Spread
) -> None:
    def frame(push: bool, condition: Column, **more: str) -> DataFrame:
        source = {"namesrvAddr": cluster.namesrv, "topic": spread.topic, **more}
        options = {**source, "filterPushdown": "true"} if push else source
        return pushing.read.format("rocketmq").options(**options).load().where(condition)

    stored = F.col("storeTimestamp")
    conditions = [
        F.col("queueId").isin(1, 2) & (F.col("topic") == spread.topic),
        F.col("tags").isin("A", "C") & (F.length("body") < 2),
        (stored >= F.lit(spread.later_from)) & (F.col("tags") == "B"),
        stored < F.lit(spread.later_from),
        stored > F.lit(spread.later_from),
        stored <= F.lit(spread.later_from),
    ]
    for condition in conditions:
        assert _rows(frame(True, condition)) == _rows(frame(False, condition))
    assert _rows(frame(True, conditions[0])) != []
    queue_filter = F.col("queueId") == 3
    assert frame(True, queue_filter).rdd.getNumPartitions() == 1
    assert frame(False, queue_filter).rdd.getNumPartitions() == 4
    later, one_each = stored >= F.lit(spread.later_from), {"maxMessagesPerPartition": "1"}
    assert frame(True, later, **one_each).rdd.getNumPartitions() < 12
    assert frame(False, later, **one_each).rdd.getNumPartitions() == 12
