"""The batch and streaming writers: each task sends its rows as messages, in batches, with the
SDK's producer.

Columns read (others are ignored, so a DataFrame read from the source writes back as it is):

==============  =================================  ==========================================
``body``        binary or string (UTF-8)           required, never null
``topic``       string                             unless the ``topic`` option names one
``tags``        string                             optional
``keys``        array<string> or string            optional (a string: space-separated keys)
``properties``  map<string,string>                 optional; RocketMQ's own names (``TAGS``,
                                                   ``KEYS``, ``UNIQ_KEY``, ``DELAY``...) are
                                                   left out: the columns and the producer
                                                   set those
==============  =================================  ==========================================

Rows of one topic go out as SEND_BATCH_MESSAGE batches of ``writeBatchSize`` messages (fewer
when their bodies pass 1 MiB, well under the 4 MiB a batch may hold). A batch the cluster
refuses, or stores with any status but SEND_OK, fails the task with the reason: rows are
never dropped silently. Delivery is at least once: rows a failed task sent before failing
stay in the topic, and Spark's retry of the task sends them again.

A streaming write marks every message so a replayed micro-batch (a task retried, a query
restarted before its batch was committed) can be recognised downstream, by three properties:

==================  ==========================================================================
``SPARK_QUERY``     the streaming query's id (stable across restarts from one checkpoint)
``SPARK_BATCH``     the micro-batch id
``SPARK_ROW``       ``<partition>-<position>``: the Spark partition and the row's place in it
==================  ==========================================================================

A replay of one batch sends the same rows with the same three values, so a consumer that
keeps the ``(SPARK_QUERY, SPARK_BATCH, SPARK_ROW)`` it has seen drops the copies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Final

from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType, StructType

from rocketkube.client import Message, SendStatus, sync
from rocketkube.common.message.properties import PropertyName
from rocketkube.spark import options as opts

__all__ = [
    "BATCH_PROPERTY",
    "QUERY_PROPERTY",
    "ROW_PROPERTY",
    "BatchWriter",
    "SchemaError",
    "SentMessages",
    "StreamWriter",
    "WriteError",
    "check_schema",
]

#: The properties a streaming write marks each message with (see the module docstring).
QUERY_PROPERTY: Final = "SPARK_QUERY"
BATCH_PROPERTY: Final = "SPARK_BATCH"
ROW_PROPERTY: Final = "SPARK_ROW"
#: Spark's local properties naming the running micro-batch and query (``StreamExecution``).
_BATCH_ID_KEY: Final = "streaming.sql.batchId"
_QUERY_ID_KEY: Final = "sql.streaming.queryId"

#: A batch is sent once its bodies pass this many bytes, whatever its count.
BATCH_BYTES: Final = 1 << 20

_STRING = StringType()
_ACCEPTED: Final = {
    "body": ("binary or string", (BinaryType(), _STRING)),
    "topic": ("string", (_STRING,)),
    "tags": ("string", (_STRING,)),
    "keys": (
        "array<string> or string",
        (ArrayType(_STRING, True), ArrayType(_STRING, False), _STRING),
    ),
    "properties": (
        "map<string,string>",
        (MapType(_STRING, _STRING, True), MapType(_STRING, _STRING, False)),
    ),
}


class SchemaError(ValueError):
    """The DataFrame's columns cannot be written as messages."""


class WriteError(RuntimeError):
    """A row cannot be sent, or the cluster did not store a batch."""


@dataclasses.dataclass(frozen=True)
class SentMessages(WriterCommitMessage):
    """What one task sent."""

    messages: int


def check_schema(schema: StructType, options: opts.WriteOptions) -> None:
    """Raise :class:`SchemaError` unless ``schema`` has what a message needs, typed right."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "body" not in fields:
        raise SchemaError("rocketmq write: the DataFrame needs a body column (binary or string)")
    if options.topic is None and "topic" not in fields:
        raise SchemaError("rocketmq write: give the topic option or a topic column")
    for name, (shown, types) in _ACCEPTED.items():
        if name in fields and fields[name] not in types:
            raise SchemaError(
                f"rocketmq write: column {name} is {fields[name].simpleString()}; expected {shown}"
            )


class BatchWriter(DataSourceWriter):
    """Sends every row as a message; see the module docstring."""

    def __init__(self, options: opts.WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> SentMessages:
        """Send this task's rows; raises :class:`WriteError` (or the SDK's error) if any
        batch was not stored."""
        return SentMessages(send_rows(self.options, iterator, {}))


class StreamWriter(DataSourceStreamWriter):
    """Sends every row of each micro-batch as a message marked with the query, batch and
    row (see the module docstring); nothing to do at commit: sends are already durable."""

    def __init__(self, options: opts.WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> SentMessages:
        """Send this task's rows of the running micro-batch, each marked."""
        context = TaskContext.get()
        if context is None:
            raise WriteError("a streaming write runs only in a Spark task")
        marks = {
            QUERY_PROPERTY: context.getLocalProperty(_QUERY_ID_KEY) or "",
            BATCH_PROPERTY: context.getLocalProperty(_BATCH_ID_KEY) or "",
            ROW_PROPERTY: f"{context.partitionId()}-",
        }
        return SentMessages(send_rows(self.options, iterator, marks))


def send_rows(options: opts.WriteOptions, rows: Iterator[Row], marks: dict[str, str]) -> int:
    """Send ``rows`` in batches per topic; with ``marks``, each message gets them as
    properties, :data:`ROW_PROPERTY`'s value followed by the row's position. Returns how
    many were sent."""
    o = options
    sent = 0
    pending: dict[str, list[Message]] = {}
    pending_bytes: dict[str, int] = {}
    with sync.Producer(settings=o.producer_settings()) as producer:
        for position, row in enumerate(rows):
            message = row_message(row.asDict(), o.topic, position)
            if marks:
                message.properties.update(marks)
                message.properties[ROW_PROPERTY] = f"{marks[ROW_PROPERTY]}{position}"
            batch = pending.setdefault(message.topic, [])
            batch.append(message)
            size = pending_bytes.get(message.topic, 0) + len(message.body)
            pending_bytes[message.topic] = size
            if len(batch) >= o.write_batch_size or size >= BATCH_BYTES:
                sent += _send(producer, pending.pop(message.topic))
                del pending_bytes[message.topic]
        for batch in pending.values():
            sent += _send(producer, batch)
    return sent


def _send(producer: sync.Producer, batch: list[Message]) -> int:
    result = producer.send_batch(batch)
    if result.status is not SendStatus.SEND_OK:
        raise WriteError(
            f"a batch of {len(batch)} messages to {batch[0].topic} was stored as "
            f"{result.status}, not SEND_OK"
        )
    return len(batch)


def row_message(row: dict[str, Any], topic: str | None, position: int) -> Message:
    """The message of one row (its ``position`` in the task names it in errors)."""
    name = topic or row.get("topic")
    if not name:
        raise WriteError(f"row {position} of the task has no topic (a null topic column)")
    body = row["body"]
    if body is None:
        raise WriteError(f"row {position} of the task has a null body")
    message = Message(name, body.encode() if isinstance(body, str) else bytes(body))
    for key, value in (row.get("properties") or {}).items():
        if value is not None and key not in PropertyName.RESERVED:
            message.properties[key] = value
    keys = row.get("keys")
    message.keys = keys.split() if isinstance(keys, str) else [k for k in keys or () if k]
    message.tags = row.get("tags")
    return message
