"""PULL_MESSAGE (11, docs/protocol.md §5) without I/O: the request header and the answer's
decoding.

Consumers (:class:`~rocketkube.client.consumer.core.ConsumerCore`) and the admin client's
one-shot pull (mqadmin ``consumeMessage``) build the same header and read the same answer,
so both come from here: bodies compressed by the producer are inflated, and tags are
re-filtered client-side because the broker filters by tag hash code only.

A body is inflated up to ``max_inflated_body_size`` bytes (the consumer's setting,
:data:`DEFAULT_MAX_INFLATED_BODY_SIZE` by default), never further. An inflated message's
sysFlag loses its compression bits (Java's keeps them), so ``sysflag.is_compressed`` tells
whether the body in hand is still compressed. One that cannot be inflated (past the cap, a
corrupt stream, LZ4 or ZSTD, which this SDK does not read) is handed over as stored,
compression bits and all, with a warning: refusing it would stop its queue for good.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import zlib
from typing import Final

from rocketkube.common import errors, inflate
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.record import iter_records
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.heartbeat import SubscriptionData
from rocketkube.common.protocol.pull_headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "DEFAULT_MAX_INFLATED_BODY_SIZE",
    "PULL_ANSWERS",
    "PullResult",
    "PullStatus",
    "decode_messages",
    "pull_header",
    "pull_result",
]

log = logging.getLogger(__name__)

#: What a consumed body may inflate to by default. A stored message is at most 4 MiB
#: (RocketMQ's ``maxMessageSize``), compressed: text and JSON inflate 10 to 30 times, so
#: 128 MiB keeps every such body and refuses what only a zlib bomb reaches (1032:1).
DEFAULT_MAX_INFLATED_BODY_SIZE: Final = 128 * 1024 * 1024
_COMPRESSION_BITS: Final = sysflag.COMPRESSED_FLAG | sysflag.COMPRESSION_TYPE_MASK


class PullStatus(enum.StrEnum):
    """How a pull ended (Java ``PullStatus``)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS: Final[dict[int, PullStatus]] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}

#: The non-SUCCESS codes that answer a pull normally (every other one is an error).
PULL_ANSWERS: Final = frozenset(_STATUS) - {ResponseCode.SUCCESS}


@dataclasses.dataclass(frozen=True, slots=True)
class PullResult:
    """One pull's answer: the matching messages (empty unless FOUND) and where the next
    pull starts. ``code`` is the broker's response code, ``status`` its meaning."""

    code: int
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]

    @property
    def status(self) -> PullStatus:
        """FOUND, NO_NEW_MSG, NO_MATCHED_MSG or OFFSET_ILLEGAL."""
        return _STATUS[self.code]


def pull_header(
    group: str,
    queue: MessageQueue,
    offset: int,
    subscription: SubscriptionData,
    *,
    max_nums: int,
    suspend: float = 0.0,
    commit_offset: int | None = None,
    lite: bool = False,
) -> dict[str, str]:
    """The extFields of a pull from ``offset``, long-polling ``suspend`` seconds (0: none).

    The subscription always travels with the pull (FLAG_SUBSCRIPTION), so the broker
    filters right even before it has the client's heartbeat; ``commit_offset`` piggy-backs
    the group's offset (FLAG_COMMIT_OFFSET).
    """
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=queue.topic,
        queue_id=queue.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sysflag.build_pull_sys_flag(
            commit_offset=commit_offset is not None,
            suspend=suspend > 0,
            subscription=True,
            lite_pull=lite,
        ),
        commit_offset=commit_offset or 0,
        suspend_timeout_millis=int(suspend * 1000),
        sub_version=subscription.sub_version,
        subscription=subscription.sub_string,
        expression_type=subscription.expression_type,
    ).encode()


def decode_messages(
    body: bytes,
    subscription: SubscriptionData,
    max_inflated: int = DEFAULT_MAX_INFLATED_BODY_SIZE,
) -> list[MessageExt]:
    """A pull body's records, bodies inflated up to ``max_inflated`` bytes (see the module
    docstring), filtered by the subscription's tags."""
    messages = list(iter_records(body))
    for message in messages:
        if sysflag.is_compressed(message.sys_flag):
            _inflate_body(message, max_inflated)
    if subscription.tags_set:
        tags = set(subscription.tags_set)
        messages = [m for m in messages if m.tags in tags]
    return messages


def _inflate_body(message: MessageExt, limit: int) -> None:
    """Inflate ``message``'s compressed body in place and clear its compression bits; one
    that cannot be inflated stays as stored, and a warning says why."""
    kind = sysflag.compression_type(message.sys_flag)
    if kind != sysflag.COMPRESSION_ZLIB:
        problem = f"compression type {kind:#x} is not zlib"
    else:
        try:
            message.body = inflate.inflate(message.body, limit)
        except errors.InflateLimitError as exc:
            problem = f"it {exc} (max_inflated_body_size)"
        except zlib.error as exc:
            problem = f"it is no zlib stream: {exc}"
        else:
            message.sys_flag &= ~_COMPRESSION_BITS
            return
    log.warning("message at offset %d of %s queue %d handed over still compressed: %s",
                message.queue_offset, message.topic, message.queue_id, problem)  # fmt: skip


def pull_result(
    response: RemotingCommand,
    subscription: SubscriptionData,
    max_inflated: int = DEFAULT_MAX_INFLATED_BODY_SIZE,
) -> PullResult:
    """Decode a pull's response (SUCCESS or one of :data:`PULL_ANSWERS`), bodies inflated
    up to ``max_inflated`` bytes."""
    header = PullMessageResponseHeader.decode(response.ext_fields)
    found = response.code == ResponseCode.SUCCESS
    return PullResult(
        response.code,
        header.next_begin_offset,
        header.min_offset,
        header.max_offset,
        decode_messages(response.body_bytes(), subscription, max_inflated) if found else [],
    )
