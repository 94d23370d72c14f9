"""PULL_MESSAGE (11, §3.4) without I/O: the request header and the answer's decoding.

Consumers (:class:`~rocketkube.client.consumer_core.ConsumerCore`) and the admin client's
one-shot pull (mqadmin ``consumeMessage``) build the same header and read the same answer,
so both come from here: bodies compressed by the producer are inflated, and tags are
re-filtered client-side because the broker filters by tag hash code only.
"""

from __future__ import annotations

import dataclasses
import enum
import zlib
from typing import Final

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
    "PULL_ANSWERS",
    "PullResult",
    "PullStatus",
    "decode_messages",
    "pull_header",
    "pull_result",
]


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


def decode_messages(body: bytes, subscription: SubscriptionData) -> list[MessageExt]:
    """A pull body's records, bodies decompressed, filtered by the subscription's tags."""
    messages = list(iter_records(body))
    for message in messages:
        if sysflag.is_compressed(message.sys_flag):
            message.body = zlib.decompress(message.body)
    if subscription.tags_set:
        tags = set(subscription.tags_set)
        messages = [m for m in messages if m.tags in tags]
    return messages


def pull_result(response: RemotingCommand, subscription: SubscriptionData) -> PullResult:
    """Decode a pull's response (SUCCESS or one of :data:`PULL_ANSWERS`)."""
    header = PullMessageResponseHeader.decode(response.ext_fields)
    found = response.code == ResponseCode.SUCCESS
    return PullResult(
        response.code,
        header.next_begin_offset,
        header.min_offset,
        header.max_offset,
        decode_messages(response.body_bytes(), subscription) if found else [],
    )
