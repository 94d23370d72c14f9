"""The rows the source reads: one per stored message, in this schema (column order fixed).

==================  ======================  ==================================================
``topic``           string                  the message's topic
``brokerName``      string                  the broker holding its queue
``queueId``         int                     the queue
``queueOffset``     bigint                  its offset in the queue
``msgId``           string                  the id consumers see (``UNIQ_KEY``, else offset id)
``keys``            array<string>           the ``KEYS`` property, split
``tags``            string                  the ``TAGS`` property (null when none)
``body``            binary                  the body, inflated when the producer compressed it
``properties``      map<string,string>      every property, as stored
``bornTimestamp``   timestamp               when the producer made it
``storeTimestamp``  timestamp               when the broker stored it
``bornHost``        string                  the producer's ``ip:port``
``reconsumeTimes``  int                     how often it was consumed again (retry topics)
==================  ======================  ==================================================
"""

from __future__ import annotations

import datetime
from typing import Final

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketkube.common.message.model import MessageExt

__all__ = ["SCHEMA", "Row", "message_row", "timestamp"]

SCHEMA: Final = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("brokerName", StringType(), nullable=False),
        StructField("queueId", IntegerType(), nullable=False),
        StructField("queueOffset", LongType(), nullable=False),
        StructField("msgId", StringType(), nullable=False),
        StructField("keys", ArrayType(StringType(), containsNull=False), nullable=False),
        StructField("tags", StringType(), nullable=True),
        StructField("body", BinaryType(), nullable=False),
        StructField("properties", MapType(StringType(), StringType(), False), nullable=False),
        StructField("bornTimestamp", TimestampType(), nullable=False),
        StructField("storeTimestamp", TimestampType(), nullable=False),
        StructField("bornHost", StringType(), nullable=False),
        StructField("reconsumeTimes", IntegerType(), nullable=False),
    ]
)

Row = tuple[
    str,
    str,
    int,
    int,
    str,
    list[str],
    str | None,
    bytes,
    dict[str, str],
    datetime.datetime,
    datetime.datetime,
    str,
    int,
]

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def timestamp(ms: int) -> datetime.datetime:
    """Epoch milliseconds as an aware UTC datetime, exactly (no float rounding)."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


def message_row(message: MessageExt, broker_name: str) -> Row:
    """The row of ``message``, read from ``broker_name``, in :data:`SCHEMA`'s order."""
    return (
        message.topic,
        broker_name,
        message.queue_id,
        message.queue_offset,
        message.client_msg_id,
        message.keys,
        message.tags,
        message.body,
        dict(message.properties),
        timestamp(message.born_timestamp),
        timestamp(message.store_timestamp),
        message.born_host,
        message.reconsume_times,
    )
