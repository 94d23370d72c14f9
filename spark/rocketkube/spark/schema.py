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

from collections.abc import Sequence
from typing import Final

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
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
from rocketkube.common.message.properties import KEY_SEPARATOR, PropertyName

__all__ = ["ARROW_SCHEMA", "SCHEMA", "record_batch"]

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

_UNIQ_KEY: Final = str(PropertyName.UNIQ_KEY)
_KEYS: Final = str(PropertyName.KEYS)
_TAGS: Final = str(PropertyName.TAGS)

#: :data:`SCHEMA` as Arrow has it, which is how rows travel from Python to Spark.
ARROW_SCHEMA: Final = to_arrow_schema(SCHEMA, timezone="UTC")


def record_batch(messages: Sequence[MessageExt], broker_name: str) -> pa.RecordBatch:
    """The rows of ``messages``, read from ``broker_name``, as one Arrow batch in
    :data:`SCHEMA`, built a column at a time (times as integer microseconds, no datetime
    objects) instead of handing Spark a tuple per row to check and convert value by value.

    Properties are looked up by plain strings, not through the message's accessors: those
    key by :class:`~rocketkube.common.message.properties.PropertyName` members, whose hash
    is a Python call, which cost a third of the time here. The values are the accessors'
    (a test compares them)."""
    properties = [m.properties for m in messages]
    columns = (
        [m.topic for m in messages],
        [broker_name] * len(messages),
        [m.queue_id for m in messages],
        [m.queue_offset for m in messages],
        [p.get(_UNIQ_KEY) or m.msg_id for m, p in zip(messages, properties, strict=True)],
        [_keys(p.get(_KEYS)) for p in properties],
        [p.get(_TAGS) for p in properties],
        [m.body for m in messages],
        [list(p.items()) for p in properties],
        [m.born_timestamp * 1000 for m in messages],
        [m.store_timestamp * 1000 for m in messages],
        [m.born_host for m in messages],
        [m.reconsume_times for m in messages],
    )
    arrays = [
        pa.array(values, type=field.type)
        for values, field in zip(columns, ARROW_SCHEMA, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _keys(text: str | None) -> list[str]:
    """``MessageExt.keys`` of a ``KEYS`` property."""
    return [key for key in text.split(KEY_SEPARATOR) if key] if text else []
