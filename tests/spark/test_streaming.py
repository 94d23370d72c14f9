"""Streaming reads through Spark (``local[2]``) against a real name server and broker:
``Trigger.AvailableNow`` with admission control, restarts from the checkpoint with no loss and
no duplicate, queues and topics that appear during a query, and progress committed to a
consumer group. Queries run ``AvailableNow`` so each ends once it has read what was there."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from spark_cluster import Cluster, CreateTopic, fill

from rocketkube.client import sync
from rocketkube.client.routing import MessageQueue

pytestmark = pytest.mark.xdist_group("spark")


def run_available_now(
    spark: SparkSession, cluster: Cluster, sink: Path, checkpoint: Path, **options: str
) -> StreamingQuery:
    """One ``AvailableNow`` run of a stream into Parquet at ``sink``, awaited."""
    query = (
        spark.readStream.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .options(**options)
        .load()
        .writeStream.format("parquet")
        .option("path", str(sink))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    return query


def rows_in(spark: SparkSession, sink: Path) -> list[Any]:
    return spark.read.parquet(str(sink)).collect()


def input_rows(query: StreamingQuery) -> list[int]:
    """Rows each batch of the run read, batches without any left out."""
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_available_now_with_a_limit_reads_in_fair_batches(
    spark: SparkSession, cluster: Cluster, create_topic: CreateTopic, tmp_path: Path
) -> None:
    topic = create_topic(4)
    sent = fill(cluster, topic, range(4), 10, "a")
    query = run_available_now(
        spark,
        cluster,
        tmp_path / "out",
        tmp_path / "cp",
        topic=topic,
        startingOffsets="earliest",
        maxMessagesPerTrigger="15",
    )
    assert input_rows(query) == [15, 15, 10]
    rows = rows_in(spark, tmp_path / "out")
    assert sorted(bytes(r.body) for r in rows) == sorted(sent)
    # fair: the first batch took 3 or 4 from each queue, not 15 from one
    end = json.loads(query.recentProgress[0]["sources"][0]["endOffset"])
    first = end[topic][cluster.broker_name]
    assert sorted(first.values()) == [3, 4, 4, 4]


def test_a_restarted_stream_neither_loses_nor_repeats_a_message(
    spark: SparkSession, cluster: Cluster, create_topic: CreateTopic, tmp_path: Path
) -> None:
    topic = create_topic(2)
    sink, checkpoint = tmp_path / "out", tmp_path / "cp"
    options = {"topic": topic, "startingOffsets": "earliest", "maxMessagesPerTrigger": "7"}
    before = fill(cluster, topic, range(2), 6, "before")
    run_available_now(spark, cluster, sink, checkpoint, **options)
    between = fill(cluster, topic, range(2), 5, "between")
    run_available_now(spark, cluster, sink, checkpoint, **options)
    rows = rows_in(spark, sink)
    assert sorted(bytes(r.body) for r in rows) == sorted(before + between)
    assert len({(r.queueId, r.queueOffset) for r in rows}) == len(rows)


def test_a_stream_starting_at_the_latest_reads_only_what_comes_after(
    spark: SparkSession, cluster: Cluster, create_topic: CreateTopic, tmp_path: Path
) -> None:
    topic = create_topic(2)
    sink, checkpoint = tmp_path / "out", tmp_path / "cp"
    fill(cluster, topic, range(2), 3, "old")
    run_available_now(spark, cluster, sink, checkpoint, topic=topic)
    new = fill(cluster, topic, range(2), 2, "new")
    run_available_now(spark, cluster, sink, checkpoint, topic=topic)
    assert sorted(bytes(r.body) for r in rows_in(spark, sink)) == sorted(new)


def test_queues_added_and_topics_newly_matching_the_pattern_are_picked_up(
    spark: SparkSession,
    cluster: Cluster,
    create_topic: CreateTopic,
    admin: sync.AdminClient,
    tmp_path: Path,
) -> None:
    first = create_topic(2)
    pattern = f"{first}|Later_{uuid.uuid4().hex[:8]}_.*"
    sink, checkpoint = tmp_path / "out", tmp_path / "cp"
    options = {"topicPattern": pattern, "startingOffsets": "earliest"}
    sent = fill(cluster, first, range(2), 3, "first")
    run_available_now(spark, cluster, sink, checkpoint, **options)

    admin.run(
        lambda a: a.create_topic(
            first, cluster="DefaultCluster", read_queue_nums=4, write_queue_nums=4
        )
    )
    later = pattern.split("|")[1].replace(".*", "x")
    admin.run(
        lambda a: a.create_topic(
            later, cluster="DefaultCluster", read_queue_nums=1, write_queue_nums=1
        )
    )
    sent += fill(cluster, first, range(4), 2, "grown")
    sent += fill(cluster, later, range(1), 3, "later")
    run_available_now(spark, cluster, sink, checkpoint, **options)
    rows = rows_in(spark, sink)
    assert sorted(bytes(r.body) for r in rows) == sorted(sent)
    assert {(r.topic, r.queueId) for r in rows} == {(first, q) for q in range(4)} | {(later, 0)}


def test_progress_is_committed_to_the_consumer_group(
    spark: SparkSession,
    cluster: Cluster,
    create_topic: CreateTopic,
    admin: sync.AdminClient,
    tmp_path: Path,
) -> None:
    topic = create_topic(2)
    group = f"SparkGroup_{uuid.uuid4().hex[:8]}"
    options = {"topic": topic, "startingOffsets": "earliest", "consumerGroup": group}
    fill(cluster, topic, range(2), 4, "x")
    run_available_now(spark, cluster, tmp_path / "out", tmp_path / "cp", **options)
    stats = admin.run(lambda a: a.consume_stats(group, topic))
    assert stats.diff_total == 0
    assert {mq.queue_id: w.consumer_offset for mq, w in stats.offset_table.items()} == {0: 4, 1: 4}

    # a new query (a new checkpoint) can start where the group is
    later = fill(cluster, topic, range(2), 1, "later")
    committed = {**options, "startingOffsets": "committed"}
    run_available_now(spark, cluster, tmp_path / "again", tmp_path / "cp2", **committed)
    assert sorted(bytes(r.body) for r in rows_in(spark, tmp_path / "again")) == sorted(later)
    queue = MessageQueue(topic, cluster.broker_name, 0)
    assert admin.run(lambda a: a.consumer_offset(group, queue)) == 5


def test_a_stream_into_another_topic_reads_back_equal_and_marked(
    spark: SparkSession, cluster: Cluster, create_topic: CreateTopic, tmp_path: Path
) -> None:
    source, copy = create_topic(2), create_topic(2)
    sent = fill(cluster, source, range(2), 5, "s")
    query = (
        spark.readStream.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .option("maxMessagesPerTrigger", "6")
        .load()
        .writeStream.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topic", copy)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None

    def content(topic: str) -> list[Any]:
        return (
            spark.read.format("rocketmq")
            .option("namesrvAddr", cluster.namesrv)
            .option("topic", topic)
            .load()
            .collect()
        )

    copied = content(copy)
    assert sorted((bytes(r.body), r.tags) for r in copied) == sorted((b, "s") for b in sent)
    marks = [
        (r.properties["SPARK_QUERY"], r.properties["SPARK_BATCH"], r.properties["SPARK_ROW"])
        for r in copied
    ]
    assert {query_id for query_id, _, _ in marks} == {query.id}
    assert sorted({batch for _, batch, _ in marks}) == ["0", "1"]
    assert len(set(marks)) == len(sent)
