"""``archive``: a streaming query from topics to Parquet, partitioned by ``topic`` and
``date`` (the UTC day each message was stored), exactly once.

Exactly once comes from Spark's file sink and the checkpoint together: each micro-batch's
source offsets are logged before it runs and its files are listed in the sink's
``_spark_metadata`` log only once written, so a job killed mid-batch and started again with
the same checkpoint rewrites that batch from the same offsets, and readers of the archive
(``spark.read.parquet``, which honours the log) see each message once: no gap, no duplicate.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["ArchiveSettings", "archive", "archived"]


@dataclasses.dataclass(frozen=True)
class ArchiveSettings:
    """Where to read, where to write, and how each trigger runs."""

    source: dict[str, str]
    output: str
    checkpoint: str
    #: ``None``: read what is there now (``Trigger.AvailableNow``) and stop; else a
    #: micro-batch every so many seconds, until stopped.
    interval_seconds: float | None = None


def archived(messages: DataFrame) -> DataFrame:
    """The rows the archive holds: every column of the source plus ``date``, the UTC day of
    ``storeTimestamp`` whatever the session's time zone."""
    days = F.floor(F.unix_seconds(F.col("storeTimestamp")) / 86_400).cast("int")
    return messages.withColumn("date", F.date_from_unix_date(days))


def archive(spark: SparkSession, settings: ArchiveSettings) -> StreamingQuery:
    """Start the archiving query; with no interval it ends once it has archived what the
    topics held when it started (await it with ``awaitTermination``)."""
    stream = spark.readStream.format("rocketmq").options(**settings.source).load()
    writer = (
        archived(stream)
        .writeStream.format("parquet")
        .partitionBy("topic", "date")
        .option("path", settings.output)
        .option("checkpointLocation", settings.checkpoint)
        .queryName("rocketmq-archive")
    )
    if settings.interval_seconds is None:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.interval_seconds} seconds")
    return writer.start()
