"""What a send returns: :class:`SendResult`, read from SEND_MESSAGE's response
(docs/protocol.md §4.3).

Pure functions over responses, shared by single sends and by the auto-batching producer,
which gives each message of a batch its own result.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from rocketkube.client import errors as client_errors
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.send_headers import SendMessageResponseHeader
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["SendResult", "SendStatus", "read_send_result", "split_batch_result"]


class SendStatus(enum.StrEnum):
    """How a successful send was stored (Java ``SendStatus``)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


_STATUS_BY_CODE: Final[dict[int, SendStatus]] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(frozen=True, slots=True)
class SendResult:
    """The outcome of a send.

    ``msg_id`` is the client id (``UNIQ_KEY``) and ``offset_msg_id`` the broker's offset id
    (docs/protocol.md §9.5); for a batch both are comma-joined, one per message, and
    ``queue_offset`` is the offset of the first message.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int


def read_send_result(msg_id: str, queue: MessageQueue, response: RemotingCommand) -> SendResult:
    """The result of a send of ``msg_id`` to ``queue``; the mapped :class:`MQBrokerError`
    for a response code that is not a stored status. The queue id is the broker's."""
    status = _STATUS_BY_CODE.get(response.code)
    if status is None:
        raise client_errors.for_code(response.code, response.remark, queue.broker_name)
    # The three fields read by hand: the generic header decoder costs microseconds a send.
    ext = response.ext_fields
    try:
        offset_msg_id = ext["msgId"]
        queue_id = int(ext["queueId"])
        queue_offset = int(ext["queueOffset"])
    except (KeyError, ValueError):
        SendMessageResponseHeader.decode(ext)  # raises the HeaderError naming the field
        raise
    if queue_id != queue.queue_id:
        queue = MessageQueue(queue.topic, queue.broker_name, queue_id)
    return SendResult(status, msg_id, offset_msg_id, queue, queue_offset)


def split_batch_result(result: SendResult, msg_ids: Sequence[str]) -> list[SendResult]:
    """One result per message of a batch: its own id, the broker's id for it (the answer
    lists them comma-joined) and consecutive queue offsets from the first."""
    offset_ids = result.offset_msg_id.split(",")
    if len(offset_ids) != len(msg_ids):  # not a broker's answer to a batch: pass it on whole
        offset_ids = [result.offset_msg_id] * len(msg_ids)
    return [
        SendResult(
            result.status, msg_id, offset_ids[index], result.queue, result.queue_offset + index
        )
        for index, msg_id in enumerate(msg_ids)
    ]
