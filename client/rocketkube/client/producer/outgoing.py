"""A message made ready to send (docs/protocol.md §4): validated, compressed, properties encoded.

The producer adds the queue id and the header's per-send fields (:func:`send_request`).
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from rocketkube.client import errors as client_errors
from rocketkube.common import errors
from rocketkube.common.message import batch as batch_codec
from rocketkube.common.message import properties as props
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import Message
from rocketkube.common.protocol.send_headers import SendHeaderTemplate
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["Outgoing", "batch_request", "prepare", "prepare_batch", "send_request", "validate"]

_TOPIC_RE: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_MAX_TOPIC_LENGTH: Final = 127
_ZLIB_LEVEL: Final = 5
RETRY_TOPIC_PREFIX: Final = "%RETRY%"


class Outgoing(NamedTuple):
    """A request ready to be addressed to a queue: everything but the queue id."""

    topic: str
    code: int
    body: bytes
    sys_flag: int
    flag: int
    properties: str | None
    batch: bool
    msg_id: str


def validate(message: Message, max_message_size: int) -> None:
    """Raise :class:`MessageValidationError` for a bad topic, an empty or too big body."""
    topic = message.topic
    if not topic or len(topic) > _MAX_TOPIC_LENGTH or not _TOPIC_RE.match(topic):
        raise client_errors.MessageValidationError(f"invalid topic {topic!r}")
    if not message.body:
        raise client_errors.MessageValidationError("the message body is empty")
    if len(message.body) > max_message_size:
        raise client_errors.MessageValidationError(
            f"body of {len(message.body)} bytes exceeds {max_message_size}"
        )


def prepare(message: Message, msg_id: str, compress_over: int) -> Outgoing:
    """A :func:`validate`-d ``message`` (its ``UNIQ_KEY`` is ``msg_id``) as a SEND_MESSAGE_V2
    request minus its queue. Bodies of ``compress_over`` bytes or more are zlib-compressed;
    ``TRAN_MSG=true`` gets the PREPARED sysFlag, as Java's."""
    body = bytes(message.body)
    sys_flag = 0
    if len(body) >= compress_over:
        body = zlib.compress(body, _ZLIB_LEVEL)
        sys_flag |= sysflag.COMPRESSED_FLAG
    if message.properties.get(props.PropertyName.TRAN_MSG, "").lower() == "true":
        sys_flag |= sysflag.TRANSACTION_PREPARED_TYPE
    return Outgoing(
        message.topic,
        RequestCode.SEND_MESSAGE_V2,
        body,
        sys_flag,
        message.flag,
        props.encode_properties(message.properties),
        False,
        msg_id,
    )


def prepare_batch(
    messages: Sequence[Message], max_message_size: int, unique_key: Callable[[Message], str]
) -> Outgoing:
    """Messages of one topic as one SEND_BATCH_MESSAGE body (docs/protocol.md §9.7), each
    message given its ``UNIQ_KEY`` by ``unique_key``. Batches are never compressed; an empty
    batch, mixed topics, DELAY, ``%RETRY%`` topics and a body over ``max_message_size`` are
    refused (:class:`MessageValidationError`), as in Java."""
    if not messages:
        raise client_errors.MessageValidationError("an empty batch")
    topic = messages[0].topic
    items: list[batch_codec.BatchItem] = []
    msg_ids: list[str] = []
    for message in messages:
        if message.topic != topic:
            raise client_errors.MessageValidationError("a batch must have one topic")
        if topic.startswith(RETRY_TOPIC_PREFIX):
            raise client_errors.MessageValidationError("retry topics cannot be batched")
        if message.properties.get(props.PropertyName.DELAY):
            raise client_errors.MessageValidationError("delayed messages cannot be batched")
        validate(message, max_message_size)
        msg_ids.append(unique_key(message))
        items.append(
            batch_codec.BatchItem(
                message.flag, message.body, props.encode_properties(message.properties)
            )
        )
    try:
        outgoing = batch_request(topic, items, msg_ids)
    except errors.MessageFormatError as exc:
        raise client_errors.MessageValidationError(str(exc)) from None
    if len(outgoing.body) > max_message_size:
        raise client_errors.MessageValidationError(
            f"batch of {len(outgoing.body)} bytes exceeds {max_message_size}"
        )
    return outgoing


def batch_request(
    topic: str, items: Sequence[batch_codec.BatchItem], msg_ids: Sequence[str]
) -> Outgoing:
    """The SEND_BATCH_MESSAGE of encoded ``items`` (MessageFormatError for a bad one)."""
    body = batch_codec.encode_batch(items)
    return Outgoing(
        topic, RequestCode.SEND_BATCH_MESSAGE, body, 0, 0, None, True, ",".join(msg_ids)
    )


def send_request(
    outgoing: Outgoing, headers: SendHeaderTemplate, queue_id: int, *, oneway: bool
) -> RemotingCommand:
    """The send request of ``outgoing`` to queue ``queue_id``, born now."""
    ext = headers.ext(
        outgoing.topic,
        queue_id,
        outgoing.sys_flag,
        time.time_ns() // 1_000_000,
        outgoing.flag,
        outgoing.properties,
        batch=outgoing.batch,
    )
    return RemotingCommand.request(outgoing.code, ext, outgoing.body, oneway=oneway)
