"""``stats``: a batch job over the messages stored in a time range: per topic and per queue,
the message count, body bytes, distinct keys and end-to-end latency percentiles (store time
minus born time, in milliseconds), written as Parquet and printed as a table.

One row per queue (``brokerName`` and ``queueId`` set) and one per topic (both null)::

    topic  brokerName  queueId  messages  bytes  distinctKeys  latencyP50Ms  P90  P99  Max
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["PERCENTILES", "StatsSettings", "stats", "summary"]

#: The latency percentiles reported, as column suffixes and fractions.
PERCENTILES = {"P50": 0.5, "P90": 0.9, "P99": 0.99}


@dataclasses.dataclass(frozen=True)
class StatsSettings:
    """What to read (the data source's options, with the time range) and where to write."""

    source: dict[str, str]
    output: str | None = None


def _latency_ms() -> Column:
    return F.unix_millis(F.col("storeTimestamp")) - F.unix_millis(F.col("bornTimestamp"))


def _per(messages: DataFrame, columns: list[str]) -> DataFrame:
    """The figures of each group of ``columns``."""
    measured = messages.select(
        *columns,
        F.length("body").alias("size"),
        _latency_ms().alias("latency"),
        F.col("keys"),
    )
    percentiles = F.percentile_approx("latency", list(PERCENTILES.values()))
    figures = measured.groupBy(*columns).agg(
        F.count(F.lit(1)).alias("messages"),
        F.sum("size").alias("bytes"),
        percentiles.alias("latencies"),
        F.max("latency").alias("latencyMaxMs"),
    )
    keys = (
        measured.select(*columns, F.explode("keys").alias("key"))
        .groupBy(*columns)
        .agg(F.count_distinct("key").alias("distinctKeys"))
    )
    joined = figures.join(keys, columns, "left").fillna(0, ["distinctKeys"])
    return joined.select(
        *columns,
        "messages",
        "bytes",
        "distinctKeys",
        *(F.col("latencies")[i].alias(f"latency{name}Ms") for i, name in enumerate(PERCENTILES)),
        "latencyMaxMs",
    )


def summary(messages: DataFrame) -> DataFrame:
    """Per-queue rows, then per-topic rows (null broker and queue), ordered."""
    queues = _per(messages, ["topic", "brokerName", "queueId"])
    topics = _per(messages, ["topic"]).select(
        "topic",
        F.lit(None).cast("string").alias("brokerName"),
        F.lit(None).cast("int").alias("queueId"),
        *queues.columns[3:],
    )
    return queues.unionByName(topics).orderBy(
        "topic", F.col("brokerName").asc_nulls_last(), F.col("queueId").asc_nulls_last()
    )


def stats(spark: SparkSession, settings: StatsSettings) -> DataFrame:
    """Compute the summary, write it as Parquet when an output is given, and return it."""
    messages = spark.read.format("rocketmq").options(**settings.source).load()
    table = summary(messages).cache()
    if settings.output is not None:
        table.write.mode("overwrite").parquet(settings.output)
    return table
