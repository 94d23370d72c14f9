"""Ranges pulled with pulls in flight ahead (no Spark: the reader's own loop against the
session's broker): answers shorter than asked (the broker's byte limit) restart the pulls
ahead from where they ended, so every message comes once and in order, and a reader that
stops early cancels what is in flight."""

from __future__ import annotations

import os

import pyarrow as pa
from spark_cluster import Cluster, CreateTopic, fill

from rocketkube.client import Message, sync
from rocketkube.client.routing import MessageQueue
from rocketkube.spark import offsets, reader
from rocketkube.spark import options as opts

#: Every store time.
ALL = (0, offsets.NO_END_MS)


def _read(cluster: Cluster, topic: str, end: int) -> list[pa.RecordBatch]:
    options = opts.parse_read_options({"namesrvAddr": cluster.namesrv, "topic": topic})
    piece = offsets.OffsetRange(topic, cluster.broker_name, 0, 0, end)
    return list(reader.read_batches(options, piece, ALL))


def test_short_answers_restart_the_pulls_ahead(cluster: Cluster, create_topic: CreateTopic) -> None:
    topic = create_topic(queues=1)
    # 64 KiB bodies: the broker answers a pull with 256 KiB at most, 4 or 5 of the 32 asked.
    bodies = [os.urandom(64 * 1024) for _ in range(40)]
    with sync.Producer("SparkPullingTest", cluster.namesrv) as producer:
        for body in bodies:
            producer.send(Message(topic, body), queue=MessageQueue(topic, cluster.broker_name, 0))
    rows = pa.Table.from_batches(_read(cluster, topic, len(bodies)))
    assert rows.column("queueOffset").to_pylist() == list(range(len(bodies)))
    assert rows.column("body").to_pylist() == bodies


def test_a_reader_stopped_early_cancels_its_pulls(
    cluster: Cluster, create_topic: CreateTopic
) -> None:
    topic = create_topic(queues=1)
    count = reader.BATCH_ROWS + 1000
    fill(cluster, topic, range(1), count, "early")
    options = opts.parse_read_options({"namesrvAddr": cluster.namesrv, "topic": topic})
    piece = offsets.OffsetRange(topic, cluster.broker_name, 0, 0, count)
    batches = reader.read_batches(options, piece, ALL)
    assert next(batches).num_rows >= reader.BATCH_ROWS
    batches.close()
    assert sum(batch.num_rows for batch in _read(cluster, topic, count)) == count
