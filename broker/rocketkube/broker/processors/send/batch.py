"""Batch sends: a batch body (docs/protocol.md §9.7) turned into the store messages it
holds (pure, no I/O).

Every sub-message gets the header's topic, queue, sysFlag, bornTimestamp, bornHost and
reconsumeTimes, and keeps its own flag, body (a view of the request, not a copy) and
properties, byte for byte, with the header's properties appended (docs/protocol.md §4.6)::

    sub-message properties  [\\x02]  header properties - WAIT + CLUSTER
                            ^ only when the sub-message's do not already end with one
                              (and are not empty)

Refused with :class:`BatchRefused` (the processor answers MESSAGE_ILLEGAL): a transaction
type in sysFlag, a DELAY level > 0 on the header or on any sub-message, a body that does not
decode, an empty batch. ``%RETRY%`` topics are refused by the processor before the topic
lookup.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from rocketkube.broker.store import InnerMessage
from rocketkube.common import errors
from rocketkube.common.message import batch as batch_codec
from rocketkube.common.message import sysflag
from rocketkube.common.message.properties import decode_properties, encode_properties
from rocketkube.common.protocol.send_headers import SendFields

__all__ = ["Batch", "BatchRefused", "batch_messages", "delay_level"]

_DELAY_ENTRY: Final = "DELAY\x01"


class BatchRefused(Exception):
    """The batch cannot be stored; the message is the response remark."""


class Batch(NamedTuple):
    messages: list[InnerMessage]
    body_bytes: int
    wait_store: bool
    """The header's WAIT (absent or "true"): answer only once the flush is done."""


def delay_level(text: str | None) -> int:
    """The DELAY property as Java reads it; anything not a number is no delay."""
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        return 0


def batch_messages(
    h: SendFields,
    queue_id: int,
    sys_flag: int,
    born_host: bytes,
    body: bytes | bytearray | memoryview,
    cluster: str,
) -> Batch:
    """Split a batch body into store messages for ``h.topic``/``queue_id``."""
    if sys_flag & sysflag.TRANSACTION_MASK:
        raise BatchRefused("batch message does not support transaction")
    header_props = decode_properties(h.properties) if h.properties else {}
    wait = header_props.pop("WAIT", None)
    if delay_level(header_props.get("DELAY")) > 0:
        raise BatchRefused("batch message does not support delay level")
    header_props["CLUSTER"] = cluster
    suffix = encode_properties(header_props)
    try:
        items = batch_codec.decode_batch(body)
    except errors.MessageFormatError as exc:
        raise BatchRefused(f"bad batch body: {exc}") from None
    if not items:
        raise BatchRefused("the batch holds no message")
    topic = h.topic
    born_timestamp = h.born_timestamp
    reconsume_times = h.reconsume_times or 0
    messages = []
    body_bytes = 0
    for item in items:
        props = item.properties
        if props:
            if _DELAY_ENTRY in props and delay_level(decode_properties(props).get("DELAY")):
                raise BatchRefused("batch message does not support delay level")
            props = f"{props}{suffix}" if props[-1] == "\x02" else f"{props}\x02{suffix}"
        else:
            props = suffix
        body_bytes += len(item.body)
        messages.append(
            InnerMessage(
                topic,
                queue_id,
                item.body,
                props.encode("utf-8", "replace"),
                item.flag,
                sys_flag,
                born_timestamp,
                born_host,
                reconsume_times,
            )
        )
    return Batch(messages, body_bytes, wait is None or wait.lower() == "true")
