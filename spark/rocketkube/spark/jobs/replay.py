"""``replay``: an archive's messages (or those stored in a time range) sent again into a
topic, keeping bodies, keys, tags and user properties, for backfills and recovery.

Rows are sent by the data source's batch writer (at least once: a retried task sends its
rows again). RocketMQ's own properties (``UNIQ_KEY``, ``CLUSTER``...) are not copied: the
replayed messages get new message ids. Each source queue's rows are sent in offset order.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = ["ReplaySettings", "replay", "selected"]


@dataclasses.dataclass(frozen=True)
class ReplaySettings:
    """What to replay, into where."""

    archive: str
    topic: str
    namesrv_addr: str
    #: Only messages stored in ``[start, end)`` (aware datetimes; ``None``: unbounded).
    start: datetime.datetime | None = None
    end: datetime.datetime | None = None
    #: Only the archive's messages of these topics (empty: all).
    topics: tuple[str, ...] = ()
    #: More options of the data source's writer: the ACL and TLS ones.
    options: Mapping[str, str] = dataclasses.field(default_factory=dict)


def selected(archive: DataFrame, settings: ReplaySettings) -> DataFrame:
    """The archived rows the settings choose, each source queue's in offset order."""
    rows = archive
    if settings.start is not None:
        rows = rows.where(F.col("storeTimestamp") >= F.lit(settings.start))
    if settings.end is not None:
        rows = rows.where(F.col("storeTimestamp") < F.lit(settings.end))
    if settings.topics:
        rows = rows.where(F.col("topic").isin(list(settings.topics)))
    queue = ("topic", "brokerName", "queueId")
    return rows.repartition(*queue).sortWithinPartitions(*queue, "queueOffset")


def replay(spark: SparkSession, settings: ReplaySettings) -> None:
    """Send the chosen rows into ``settings.topic``."""
    rows = selected(spark.read.parquet(settings.archive), settings)
    (
        rows.select("body", "keys", "tags", "properties")
        .write.format("rocketmq")
        .option("namesrvAddr", settings.namesrv_addr)
        .option("topic", settings.topic)
        .options(**settings.options)
        .mode("append")
        .save()
    )
