"""The message properties string and the well-known property names.

Layout (Java ``messageProperties2String`` / ``string2messageProperties``)::

    name \\x01 value \\x02 name \\x01 value \\x02 ... name \\x01 value
         NAME_VALUE    PROPERTY                     (no trailing \\x02 when written;
         separator     separator                     Go writes one: tolerated on read)

Entries are written in insertion order, which is Java's order when the broker rebuilds
the map. On read, an entry is dropped when it is shorter than 3 characters or has no
``\\x01`` with a non-empty name before it and a non-empty value after it; the value runs
to the next ``\\x02`` and may hold further ``\\x01``; a repeated name keeps its last value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "KEY_SEPARATOR",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "PropertyName",
    "decode_properties",
    "encode_properties",
]

NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"
KEY_SEPARATOR: Final = " "
"""Separates the index keys inside the ``KEYS`` property."""


class PropertyName:
    """Names of the properties RocketMQ itself reads or writes (Java ``MessageConst``)."""

    KEYS: Final = "KEYS"
    TAGS: Final = "TAGS"
    WAIT: Final = "WAIT"
    DELAY: Final = "DELAY"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_QID: Final = "REAL_QID"
    TRAN_MSG: Final = "TRAN_MSG"
    PGROUP: Final = "PGROUP"
    MIN_OFFSET: Final = "MIN_OFFSET"
    MAX_OFFSET: Final = "MAX_OFFSET"
    BUYER_ID: Final = "BUYER_ID"
    ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    MQ2_FLAG: Final = "MQ2_FLAG"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    MSG_REGION: Final = "MSG_REGION"
    TRACE_ON: Final = "TRACE_ON"
    UNIQ_KEY: Final = "UNIQ_KEY"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIME: Final = "CONSUME_START_TIME"
    TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID: Final = "INSTANCE_ID"
    CORRELATION_ID: Final = "CORRELATION_ID"
    REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    TTL: Final = "TTL"
    ARRIVE_TIME: Final = "ARRIVE_TIME"
    PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    CLUSTER: Final = "CLUSTER"
    MSG_TYPE: Final = "MSG_TYPE"
    INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"

    RESERVED: Final = frozenset(
        {
            KEYS, TAGS, WAIT, DELAY, RETRY_TOPIC, REAL_TOPIC, REAL_QID, TRAN_MSG, PGROUP,
            MIN_OFFSET, MAX_OFFSET, BUYER_ID, ORIGIN_MESSAGE_ID, TRANSFER_FLAG,
            CORRECTION_FLAG, MQ2_FLAG, RECONSUME_TIME, MSG_REGION, TRACE_ON, UNIQ_KEY,
            MAX_RECONSUME_TIMES, CONSUME_START_TIME, TRAN_PREPARED_QUEUE_OFFSET,
            TRANSACTION_CHECK_TIMES, CHECK_IMMUNITY_TIME_IN_SECONDS, INSTANCE_ID,
            CORRELATION_ID, REPLY_TO_CLIENT, TTL, ARRIVE_TIME, PUSH_REPLY_TIME, CLUSTER,
            MSG_TYPE, INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET,
        }
    )  # fmt: skip
    """Names a user may not set as user properties (Java ``STRING_HASH_SET``)."""


def encode_properties(properties: Mapping[str, str | None]) -> str:
    """Join ``name\\x01value`` entries with ``\\x02`` in insertion order, skipping ``None``."""
    return PROPERTY_SEPARATOR.join(
        [f"{name}\x01{value}" for name, value in properties.items() if value is not None]
    )


def decode_properties(data: str | bytes | bytearray | memoryview) -> dict[str, str]:
    """Parse a properties string leniently (see the module docstring for the rules).

    Bytes are decoded as UTF-8 with replacement characters, as Java's ``new String`` does.
    """
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    result: dict[str, str] = {}
    if not text:
        return result
    for entry in text.split(PROPERTY_SEPARATOR):
        if len(entry) < 3:
            continue
        name, sep, value = entry.partition(NAME_VALUE_SEPARATOR)
        if sep and name and value:
            result[name] = value
    return result
