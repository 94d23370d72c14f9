"""A message made ready to send (§3.3): validated, compressed, properties encoded.

Pure: the producer adds the queue id and the header's per-send fields.
"""

from __future__ import annotations

import re
import zlib
from typing import Final, NamedTuple

from rocketkube.client import errors as client_errors
from rocketkube.common.message import properties as props
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import Message
from rocketkube.common.remoting.codes import RequestCode

__all__ = ["Outgoing", "prepare", "validate"]

_TOPIC_RE: Final = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_MAX_TOPIC_LENGTH: Final = 127
_ZLIB_LEVEL: Final = 5


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
