"""Batch reads and writes through Spark (``local[2]``) against a real name server and broker:
exact rows, offsets by JSON and by time, tag filtering, partitions split by the limit,
write-then-read round trips, and clear errors for bad options and rows that cannot be sent."""

from __future__ import annotations

import dataclasses
import datetime
import time
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    MapType,
    StringType,
    StructField,
    StructType,
)
from spark_cluster import Cluster, CreateTopic

from rocketkube.client import Message, sync
from rocketkube.client.routing import MessageQueue
from rocketkube.spark import RocketMQDataSource

pytestmark = pytest.mark.xdist_group("spark")


@dataclasses.dataclass(frozen=True)
class Sent:
    """A message as sent, and what the broker said of it."""

    queue_id: int
    offset: int
    msg_id: str
    body: bytes
    tags: str | None
    keys: tuple[str, ...]
    user_properties: dict[str, str]
    sent_from_ms: int
    sent_by_ms: int


@dataclasses.dataclass(frozen=True)
class Known:
    topic: str
    messages: list[Sent]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def send(
    producer: sync.Producer,
    topic: str,
    broker: str,
    queue_id: int,
    body: bytes,
    tags: str | None = None,
    keys: tuple[str, ...] = (),
    properties: dict[str, str] | None = None,
) -> Sent:
    properties = properties or {}
    message = Message(topic, body)
    message.properties.update(properties)
    message.tags = tags
    message.keys = list(keys)
    before = now_ms()
    result = producer.send(message, queue=MessageQueue(topic, broker, queue_id))
    return Sent(
        queue_id, result.queue_offset, result.msg_id, body, tags, keys, properties, before, now_ms()
    )


#: What each message of the known topic is: queue, body, tags, keys, user properties.
KNOWN: list[tuple[int, bytes, str | None, tuple[str, ...], dict[str, str]]] = [
    (0, b"\x00\xff binary \x01\x02", "A", ("k1", "k2"), {"color": "red"}),
    (1, b"one", "A", (), {}),
    (0, bytes(range(256)) * 40, "B", ("big",), {}),  # 10 KiB: the producer compresses it
    (1, "unicode ✓".encode(), "C", ("k3",), {"a": "1", "b": "=2"}),
    (0, b"untagged", None, (), {"only": "props"}),
]


@pytest.fixture(scope="module")
def registered(spark: SparkSession) -> SparkSession:
    spark.dataSource.register(RocketMQDataSource)
    return spark


@pytest.fixture(scope="module")
def known(cluster: Cluster, create_topic: CreateTopic) -> Known:
    """A topic of two queues holding the five :data:`KNOWN` messages."""
    topic = create_topic(2)
    with sync.Producer("SparkTestProducer", cluster.namesrv) as producer:
        sent = [send(producer, topic, cluster.broker_name, *message) for message in KNOWN]
    return Known(topic, sent)


def read(spark: SparkSession, cluster: Cluster, topic: str, **options: str) -> DataFrame:
    return (
        spark.read.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topic", topic)
        .options(**options)
        .load()
    )


def ordered(frame: DataFrame) -> list[Any]:
    return frame.orderBy("queueId", "queueOffset").collect()


def as_ms(value: datetime.datetime) -> int:
    return round(value.timestamp() * 1000)


def expected_row(topic: str, broker: str, sent: Sent) -> dict[str, Any]:
    properties = {**sent.user_properties, "UNIQ_KEY": sent.msg_id, "CLUSTER": "DefaultCluster"}
    if sent.tags is not None:
        properties["TAGS"] = sent.tags
    if sent.keys:
        properties["KEYS"] = " ".join(sent.keys)
    return {
        "topic": topic,
        "brokerName": broker,
        "queueId": sent.queue_id,
        "queueOffset": sent.offset,
        "msgId": sent.msg_id,
        "keys": list(sent.keys),
        "tags": sent.tags,
        "body": sent.body,
        "properties": properties,
        "reconsumeTimes": 0,
    }


def by_queue(messages: list[Sent]) -> list[Sent]:
    return sorted(messages, key=lambda s: (s.queue_id, s.offset))


def test_a_batch_read_matches_what_was_sent_exactly(
    registered: SparkSession, cluster: Cluster, known: Known
) -> None:
    rows = ordered(read(registered, cluster, known.topic))
    sent = by_queue(known.messages)
    assert [r.asDict() | {"body": bytes(r.body)} for r in rows] == [
        expected_row(known.topic, cluster.broker_name, s)
        | {
            "bornTimestamp": r.bornTimestamp,
            "storeTimestamp": r.storeTimestamp,
            "bornHost": r.bornHost,
        }
        for r, s in zip(rows, sent, strict=True)
    ]
    for row, message in zip(rows, sent, strict=True):
        assert message.sent_from_ms <= as_ms(row.bornTimestamp) <= message.sent_by_ms
        assert as_ms(row.bornTimestamp) <= as_ms(row.storeTimestamp) <= message.sent_by_ms
        assert row.bornHost.startswith("127.0.0.1:")


def test_spark_finds_the_source_without_a_register_call(
    spark: SparkSession, cluster: Cluster, known: Known
) -> None:
    """PySpark looks up top-level ``pyspark_*`` modules for a ``DefaultSource``; a new
    session has no registered sources of its own, so only that lookup can find it."""
    fresh = spark.newSession()
    assert read(fresh, cluster, known.topic).count() == len(KNOWN)


def test_json_offsets_select_a_slice_of_each_queue(
    registered: SparkSession, cluster: Cluster, known: Known
) -> None:
    broker = cluster.broker_name
    rows = ordered(
        read(
            registered,
            cluster,
            known.topic,
            startingOffsets=f'{{"{known.topic}": {{"{broker}": {{"0": 1}}}}}}',
            endingOffsets=f'{{"{known.topic}": {{"{broker}": {{"0": 2, "1": 1}}}}}}',
        )
    )
    assert [(r.queueId, r.queueOffset, bytes(r.body)) for r in rows] == [
        (0, 1, KNOWN[2][1]),
        (1, 0, b"one"),
    ]


def test_a_tag_expression_keeps_only_its_tags(
    registered: SparkSession, cluster: Cluster, known: Known
) -> None:
    rows = ordered(read(registered, cluster, known.topic, tagExpression="A || C"))
    assert [(r.tags, bytes(r.body)) for r in rows] == [
        ("A", KNOWN[0][1]),
        ("A", b"one"),
        ("C", KNOWN[3][1]),
    ]


def test_partitions_hold_at_most_the_limit(
    registered: SparkSession, cluster: Cluster, known: Known
) -> None:
    frame = read(registered, cluster, known.topic, maxMessagesPerPartition="2", pullBatchSize="1")
    # queue 0 holds 3 messages ([0, 2), [2, 3)), queue 1 holds 2 ([0, 2))
    assert frame.rdd.getNumPartitions() == 3
    sizes = frame.groupBy(F.spark_partition_id().alias("p")).count().collect()
    assert sorted(r["count"] for r in sizes) == [1, 2, 2]
    assert [(r.queueId, r.queueOffset) for r in ordered(frame)] == [
        (0, 0),
        (0, 1),
        (0, 2),
        (1, 0),
        (1, 1),
    ]


def wait_past(ms: int) -> None:
    """Return once the clock reads later than ``ms``."""
    while now_ms() <= ms:
        time.sleep(0.001)


def test_timestamps_select_the_messages_stored_between_them(
    registered: SparkSession, cluster: Cluster, create_topic: CreateTopic
) -> None:
    topic = create_topic(2)
    groups: list[list[Sent]] = []
    bounds: list[int] = []
    with sync.Producer("SparkTestProducer", cluster.namesrv) as producer:
        for group in range(3):
            if groups:
                wait_past(max(s.sent_by_ms for s in groups[-1]))
                bounds.append(now_ms())
                wait_past(bounds[-1])
            groups.append(
                [
                    send(producer, topic, cluster.broker_name, i % 2, b"g%d-%d" % (group, i))
                    for i in range(3)
                ]
            )
    rows = ordered(
        read(
            registered,
            cluster,
            topic,
            startingTimestamp=str(bounds[0]),
            endingTimestamp=str(bounds[1]),
        )
    )
    assert [bytes(r.body) for r in rows] == [s.body for s in by_queue(groups[1])]
    after = read(registered, cluster, topic, startingTimestamp=str(bounds[1]))
    assert sorted(bytes(r.body) for r in after.collect()) == sorted(s.body for s in groups[2])


def test_an_empty_topic_reads_as_no_rows(
    registered: SparkSession, cluster: Cluster, create_topic: CreateTopic
) -> None:
    assert read(registered, cluster, create_topic(2)).collect() == []


WRITE_SCHEMA = StructType(
    [
        StructField("body", BinaryType()),
        StructField("tags", StringType()),
        StructField("keys", ArrayType(StringType())),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("ignored", StringType()),
    ]
)


def test_write_then_read_round_trips(
    registered: SparkSession, cluster: Cluster, create_topic: CreateTopic
) -> None:
    topic = create_topic(4)
    rows: list[tuple[bytes, str | None, list[str] | None, dict[str, str] | None, str | None]]
    rows = [
        (b"row-%03d" % i, f"T{i % 3}", [f"key-{i}", "shared"], {"n": str(i)}, "x")
        for i in range(50)
    ]
    rows.append((b"\x00\xff", None, None, None, None))
    written = registered.createDataFrame(rows, WRITE_SCHEMA).repartition(3)
    (
        written.write.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topic", topic)
        .option("writeBatchSize", "7")
        .mode("append")
        .save()
    )
    back = read(registered, cluster, topic).collect()

    def user_properties(properties: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in properties.items() if k not in ("UNIQ_KEY", "CLUSTER")}

    assert sorted(
        (bytes(r.body), r.tags, r.keys, user_properties(r.properties)) for r in back
    ) == sorted(
        (
            body,
            tags,
            keys or [],
            {**(props or {}), **({"TAGS": tags} if tags else {})}
            | ({"KEYS": " ".join(keys)} if keys else {}),
        )
        for body, tags, keys, props, _ in rows
    )
    assert len({r.msgId for r in back}) == len(rows)


def test_rows_go_to_their_topic_column_and_string_bodies_as_utf8(
    registered: SparkSession, cluster: Cluster, create_topic: CreateTopic
) -> None:
    first, second = create_topic(2), create_topic(2)
    frame = registered.createDataFrame(
        [(first, "é1", "a b"), (second, "é2", ""), (first, "é3", None)],
        "topic string, body string, keys string",
    )
    frame.write.format("rocketmq").option("namesrvAddr", cluster.namesrv).mode("append").save()
    assert sorted((bytes(r.body), r.keys) for r in read(registered, cluster, first).collect()) == [
        ("é1".encode(), ["a", "b"]),
        ("é3".encode(), []),
    ]
    assert [bytes(r.body) for r in read(registered, cluster, second).collect()] == ["é2".encode()]


def test_a_read_of_what_was_read_writes_it_again_with_its_keys_and_tags(
    registered: SparkSession, cluster: Cluster, known: Known, create_topic: CreateTopic
) -> None:
    copy = create_topic(2)
    (
        read(registered, cluster, known.topic)
        .write.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topic", copy)
        .mode("append")
        .save()
    )

    def content(topic: str) -> list[tuple[bytes, str | None, list[str], dict[str, str]]]:
        rows = read(registered, cluster, topic).collect()
        return sorted(
            (
                bytes(r.body),
                r.tags,
                r.keys,
                {k: v for k, v in r.properties.items() if k != "UNIQ_KEY"},
            )
            for r in rows
        )

    assert content(copy) == content(known.topic)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"startingOffsets": "latest"}, "rocketmq option startingOffsets: 'latest' is not valid"),
        ({"pullBatchSize": "0"}, "rocketmq option pullBatchSize: '0' is not valid"),
        ({"startOffsets": "earliest"}, "rocketmq option startoffsets: 'earliest'"),
    ],
)
def test_a_bad_option_fails_the_query_with_a_clear_error(
    registered: SparkSession,
    cluster: Cluster,
    known: Known,
    options: dict[str, str],
    message: str,
) -> None:
    with pytest.raises(PySparkException, match=message):
        read(registered, cluster, known.topic, **options).collect()


def test_offsets_the_queue_does_not_hold_fail_planning(
    registered: SparkSession, cluster: Cluster, known: Known
) -> None:
    beyond = f'{{"{known.topic}": {{"{cluster.broker_name}": {{"0": 99}}}}}}'
    with pytest.raises(PySparkException, match=r"endingOffsets 99 of .* queue 0 is past its end"):
        read(registered, cluster, known.topic, endingOffsets=beyond).collect()


def test_a_task_that_cannot_send_fails_the_write_with_the_reason(
    registered: SparkSession, cluster: Cluster, create_topic: CreateTopic
) -> None:
    topic = create_topic(2)
    frame = registered.createDataFrame([(b"fine",), (None,)], "body binary").coalesce(1)
    writer = frame.write.format("rocketmq").option("namesrvAddr", cluster.namesrv)
    with pytest.raises(PySparkException, match="row 1 of the task has a null body"):
        writer.option("topic", topic).mode("append").save()
    with pytest.raises(PySparkException, match="a topic cannot be overwritten"):
        writer.option("topic", topic).mode("overwrite").save()
    no_body = registered.createDataFrame([("x",)], "text string")
    with pytest.raises(PySparkException, match="the DataFrame needs a body column"):
        no_body.write.format("rocketmq").option("topic", topic).mode("append").save()


def test_a_topic_pattern_reads_every_matching_topic(
    registered: SparkSession, cluster: Cluster, create_topic: CreateTopic
) -> None:
    first, second, other = create_topic(1), create_topic(1), create_topic(1)
    frame = registered.createDataFrame(
        [(first, b"1"), (second, b"2"), (other, b"3")], "topic string, body binary"
    )
    frame.write.format("rocketmq").option("namesrvAddr", cluster.namesrv).mode("append").save()
    rows = (
        registered.read.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topicPattern", f"{first}|{second}")
        .load()
        .collect()
    )
    assert sorted((r.topic, bytes(r.body)) for r in rows) == sorted([(first, b"1"), (second, b"2")])
