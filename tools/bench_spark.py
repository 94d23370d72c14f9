"""Figures of the Spark data source (not a test: it prints numbers): ``make bench-spark``.

Starts a name server and a broker (child processes, data in a temporary directory), fills a
topic with ``--messages`` bodies of ``--body-size`` bytes, then on ``--master`` (``local[2]``):

1. a batch read of the topic through the data source, every row consumed (Spark's ``noop``
   sink), in rows/s and body MB/s: the session's first (``read_first``: Spark starts its
   Python workers and the JVM warms up) and the best of ``--runs`` after it (``read``);
2. the same rows read back from Parquet written beforehand: this machine's ceiling for
   Spark itself;
3. the ``archive`` job (Structured Streaming, ``Trigger.AvailableNow``) of the whole topic
   into Parquet.

``--json`` prints one JSON document instead of lines. Times are wall clock; but for the
first read, each is the best of ``--runs``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from spark_cluster import Cluster, child_cluster

from rocketkube.client import Message, Producer, sync
from rocketkube.client.routing import MessageQueue
from rocketkube.spark.jobs import archive

#: Messages per batch send while filling the topic, and batch sends in flight.
FILL_BATCH = 256
FILL_WINDOW = 8


async def _fill(cluster: Cluster, topic: str, queues: int, messages: int, size: int) -> None:
    body = b"x" * size
    async with Producer("SparkBenchFiller", cluster.namesrv, send_timeout=60.0) as producer:
        window = asyncio.Semaphore(FILL_WINDOW)

        async def send(first: int) -> None:
            count = min(FILL_BATCH, messages - first)
            queue = MessageQueue(topic, cluster.broker_name, (first // FILL_BATCH) % queues)
            async with window:
                await producer.send_batch([Message(topic, body)] * count, queue=queue)

        await asyncio.gather(*(send(first) for first in range(0, messages, FILL_BATCH)))


def _timed(action: Callable[[], object], runs: int = 1) -> float:
    """The best wall-clock time of ``runs`` calls of ``action``."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def _session(master: str) -> SparkSession:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    return (
        SparkSession.builder.master(master)
        .appName("rocketkube-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def run(args: argparse.Namespace, root: Path) -> dict[str, float]:
    """Every figure, measured against a cluster started under ``root``."""
    figures: dict[str, float] = {"messages": args.messages, "body_bytes": args.body_size}
    with child_cluster(root) as cluster:
        topic = "SparkBench"
        with sync.AdminClient(cluster.namesrv) as admin:
            admin.run(
                lambda a: a.create_topic(
                    topic,
                    cluster="DefaultCluster",
                    read_queue_nums=args.queues,
                    write_queue_nums=args.queues,
                )
            )
        figures["fill_s"] = _timed(
            lambda: asyncio.run(_fill(cluster, topic, args.queues, args.messages, args.body_size))
        )
        spark = _session(args.master)
        try:
            source = {
                "namesrvAddr": cluster.namesrv,
                "topic": topic,
                "pullBatchSize": str(args.pull_batch_size),
            }
            frame = spark.read.format("rocketmq").options(**source).load()
            read_first_s = _timed(lambda: frame.write.format("noop").mode("overwrite").save())
            read_s = _timed(lambda: frame.write.format("noop").mode("overwrite").save(), args.runs)
            parquet = str(root / "copy.parquet")
            frame.write.parquet(parquet)
            copy = spark.read.parquet(parquet)
            parquet_s = _timed(
                lambda: copy.write.format("noop").mode("overwrite").save(), args.runs
            )
            settings = archive.ArchiveSettings(
                {**source, "startingOffsets": "earliest"},
                str(root / "archive"),
                str(root / "checkpoint"),
            )
            archive_s = _timed(lambda: archive.archive(spark, settings).awaitTermination())
            archived = spark.read.parquet(str(root / "archive")).count()
        finally:
            spark.stop()
    megabytes = args.messages * args.body_size / 1e6
    for name, seconds in (
        ("read_first", read_first_s),
        ("read", read_s),
        ("parquet", parquet_s),
        ("archive", archive_s),
    ):
        figures[f"{name}_s"] = seconds
        figures[f"{name}_rows_per_s"] = args.messages / seconds
        figures[f"{name}_body_mb_per_s"] = megabytes / seconds
    figures["archived_rows"] = archived
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="(default 1000000)")
    parser.add_argument("--body-size", type=int, default=100, help="bytes (default 100)")
    parser.add_argument("--queues", type=int, default=4, help="of the topic (default 4)")
    parser.add_argument("--pull-batch-size", type=int, default=32, help="(default 32)")
    parser.add_argument("--master", default="local[2]", help="(default local[2])")
    parser.add_argument("--runs", type=int, default=2, help="reads timed, best kept (default 2)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as root:
        figures = run(args, Path(root))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"{args.messages} messages of {args.body_size} bytes, {args.queues} queues, "
        f"{args.master}, pullBatchSize {args.pull_batch_size}; filled in "
        f"{figures['fill_s']:.1f} s"
    )
    for name, label in (
        ("read_first", "first batch read (workers start)"),
        ("read", "batch read, rocketmq source"),
        ("parquet", "batch read, same rows from Parquet"),
        ("archive", "archive job (streaming to Parquet)"),
    ):
        print(
            f"{label:<38} {figures[f'{name}_s']:8.1f} s {figures[f'{name}_rows_per_s']:>12,.0f} "
            f"rows/s {figures[f'{name}_body_mb_per_s']:8.2f} MB/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
