"""The jobs (``rocketkube spark archive|replay|stats``) in the tests' SparkSession against a
real name server and broker: an archive run twice equals its topic, a replay of it equals
the original, stats count what was sent; and the command parses without importing pyspark."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from spark_cluster import Cluster, CreateTopic

from rocketkube.client import Message, sync
from rocketkube.client.routing import MessageQueue
from rocketkube.spark.jobs import archive, cli, replay, stats

pytestmark = pytest.mark.xdist_group("spark")


@dataclasses.dataclass(frozen=True)
class Archived:
    topic: str
    path: Path


def send_keyed(cluster: Cluster, topic: str, count: int, first: int = 0) -> None:
    """``count`` messages over two queues, with keys, tags and a user property."""
    with sync.Producer("SparkJobsProducer", cluster.namesrv) as producer:
        for n in range(first, first + count):
            message = Message(topic, b"m%03d" % n + b"." * n)
            message.keys = [f"key-{n % 3}"]
            message.tags = f"T{n % 2}"
            message.properties["n"] = str(n)
            producer.send(message, queue=MessageQueue(topic, cluster.broker_name, n % 2))


def read_topic(spark: SparkSession, cluster: Cluster, topic: str) -> DataFrame:
    return (
        spark.read.format("rocketmq")
        .option("namesrvAddr", cluster.namesrv)
        .option("topic", topic)
        .load()
    )


def archive_once(spark: SparkSession, cluster: Cluster, topic: str, root: Path) -> None:
    settings = archive.ArchiveSettings(
        source={
            "namesrvAddr": cluster.namesrv,
            "topic": topic,
            "startingOffsets": "earliest",
            "maxMessagesPerTrigger": "5",
        },
        output=str(root / "archive"),
        checkpoint=str(root / "checkpoint"),
    )
    query = archive.archive(spark, settings)
    query.awaitTermination()
    assert query.exception() is None


@pytest.fixture(scope="module")
def archived(
    spark: SparkSession,
    cluster: Cluster,
    create_topic: CreateTopic,
    tmp_path_factory: pytest.TempPathFactory,
) -> Archived:
    """A topic archived twice with one checkpoint, messages sent before each run."""
    topic = create_topic(2)
    root = tmp_path_factory.mktemp("archive")
    send_keyed(cluster, topic, 8)
    archive_once(spark, cluster, topic, root)
    send_keyed(cluster, topic, 5, first=8)
    archive_once(spark, cluster, topic, root)
    return Archived(topic, root / "archive")


def identity(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((r.topic, r.queueId, r.queueOffset, r.msgId, bytes(r.body)) for r in rows)


def test_an_archive_run_twice_equals_its_topic_with_no_gap_or_duplicate(
    spark: SparkSession, cluster: Cluster, archived: Archived
) -> None:
    rows = spark.read.parquet(str(archived.path)).collect()
    assert len(rows) == 13
    assert identity(rows) == identity(read_topic(spark, cluster, archived.topic).collect())
    day = rows[0].storeTimestamp.astimezone(datetime.UTC).date()
    assert (archived.path / f"topic={archived.topic}" / f"date={day}").is_dir()


def content(rows: list[Any]) -> list[tuple[Any, ...]]:
    def user(properties: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in properties.items() if k not in ("UNIQ_KEY", "CLUSTER")}

    return sorted((bytes(r.body), r.tags, r.keys, user(r.properties)) for r in rows)


def test_a_replay_into_a_new_topic_equals_the_original(
    spark: SparkSession, cluster: Cluster, create_topic: CreateTopic, archived: Archived
) -> None:
    target = create_topic(2)
    replay.replay(spark, replay.ReplaySettings(str(archived.path), target, cluster.namesrv))
    original = read_topic(spark, cluster, archived.topic).collect()
    assert content(read_topic(spark, cluster, target).collect()) == content(original)


def test_a_replay_by_time_takes_only_what_was_stored_in_the_range(
    spark: SparkSession, cluster: Cluster, archived: Archived
) -> None:
    frame = spark.read.parquet(str(archived.path))
    latest = frame.agg(F.max("storeTimestamp")).collect()[0][0]
    settings = replay.ReplaySettings(str(archived.path), "unused", cluster.namesrv, start=latest)
    expected = frame.where(F.col("storeTimestamp") >= latest).count()
    assert replay.selected(frame, settings).count() == expected
    before = dataclasses.replace(settings, start=None, end=latest)
    assert replay.selected(frame, before).count() == 13 - expected


def test_stats_count_what_was_sent_per_queue_and_per_topic(
    spark: SparkSession, cluster: Cluster, archived: Archived, tmp_path: Path
) -> None:
    settings = stats.StatsSettings(
        {"namesrvAddr": cluster.namesrv, "topic": archived.topic}, str(tmp_path / "stats")
    )
    table = {(r.brokerName, r.queueId): r for r in stats.stats(spark, settings).collect()}
    sizes = [len(b"m%03d" % n) + n for n in range(13)]
    queue0 = [n for n in range(13) if n % 2 == 0]
    queue1 = [n for n in range(13) if n % 2 == 1]
    expected = {
        (cluster.broker_name, 0): (len(queue0), sum(sizes[n] for n in queue0)),
        (cluster.broker_name, 1): (len(queue1), sum(sizes[n] for n in queue1)),
        (None, None): (13, sum(sizes)),
    }
    assert {k: (r.messages, r.bytes) for k, r in table.items()} == expected
    assert {r.distinctKeys for r in table.values()} == {3}
    for row in table.values():
        assert 0 <= row.latencyP50Ms <= row.latencyP90Ms <= row.latencyP99Ms <= row.latencyMaxMs
    written = spark.read.parquet(str(tmp_path / "stats"))
    assert written.count() == 3


def test_the_command_parses_without_importing_pyspark() -> None:
    probe = (
        "import sys\n"
        "from rocketkube.launcher import cli\n"
        "parser = cli.build_parser(cli.discover())\n"
        "parser.parse_args(['spark', 'stats', '--topic', 'T', '--from', '1700000000000'])\n"
        "assert 'pyspark' not in sys.modules, 'pyspark imported'\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_job_arguments_become_data_source_options() -> None:
    parser = argparse.ArgumentParser()
    cli.configure(parser)
    args = parser.parse_args(
        [
            "stats",
            "--topic-pattern",
            "Orders.*",
            "--from",
            "2026-01-01T00:00:00Z",
            "--to",
            "1767225660000",
            "--option",
            "tagExpression=A || B",
        ]
    )
    assert args.master == "local[*]"
    assert cli.source_options(args) == {
        "namesrvAddr": args.namesrv_addr,
        "topicPattern": "Orders.*",
        "startingTimestamp": "1767225600000",
        "endingTimestamp": "1767225660000",
        "tagExpression": "A || B",
    }
    secured = parser.parse_args(["stats", "--topic", "T", "--access-key", "app", "--tls-ca", "c"])
    assert cli.source_options(secured, {"ROCKETKUBE_SECRET_KEY": "s3cr3t"}) == {
        "namesrvAddr": args.namesrv_addr,
        "topic": "T",
        "accessKey": "app",
        "secretKey": "s3cr3t",
        "tls": "true",
        "tlsCaFile": "c",
        "tlsCheckHostname": "true",
    }
    with pytest.raises(argparse.ArgumentTypeError, match="not ISO 8601"):
        cli.parse_time("yesterday")
    assert cli.parse_time("2026-01-01T01:00:00+01:00") == datetime.datetime(
        2026, 1, 1, tzinfo=datetime.UTC
    )
