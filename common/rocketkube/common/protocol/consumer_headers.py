"""Headers and bodies of the consumer-side codes beyond pull and offsets
(docs/protocol.md §7).

CONSUMER_SEND_MSG_BACK (36), LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42),
INVOKE_BROKER_TO_RESET_OFFSET (222, admin -> broker) and RESET_CONSUMER_CLIENT_OFFSET
(220, broker -> consumer). Field names are Java's (``ConsumerSendMsgBackRequestHeader``,
``LockBatchRequestBody``, ``ResetOffsetRequestHeader``, ``ResetOffsetBody``); shared by the
broker (decoding) and the SDK (encoding)::

    LockBatchRequestBody (41, 42)  {"clientId":"cid","consumerGroup":"g",
                                    "mqSet":[{"brokerName":"b","queueId":0,"topic":"t"}]}
    LockBatchResponseBody (41)     {"lockOKMQSet":[MessageQueue,...]}
    ResetOffsetBody (220, 222)     {"offsetTable":{{MessageQueue}:offset,...}}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketkube.common import errors, fastjson
from rocketkube.common.protocol.admin_bodies import MessageQueue, load_object
from rocketkube.common.remoting.header import CommandHeader

__all__ = [
    "ConsumerSendMsgBackRequestHeader",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "ResetOffsetBody",
    "ResetOffsetRequestHeader",
]

Body = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """``offset`` is the commit-log offset of the consumed message; ``delay_level`` 0 lets
    the broker choose (3 + reconsume times), < 0 sends straight to the DLQ."""

    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@dataclass(frozen=True, slots=True)
class ResetOffsetRequestHeader(CommandHeader):
    """``timestamp`` in ms (-1: the max offset); ``is_force`` also moves offsets forward."""

    topic: str
    group: str
    timestamp: int
    is_force: bool


def _queues(items: Any, what: str) -> frozenset[MessageQueue]:
    try:
        return frozenset(MessageQueue.from_json(item) for item in items or ())
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.ProtocolError(f"malformed {what}: {exc!r}") from None


def _queue_list(queues: Iterable[MessageQueue]) -> list[dict[str, Any]]:
    return [mq.to_json() for mq in sorted(queues)]


@dataclass(frozen=True, slots=True)
class LockBatchRequestBody:
    consumer_group: str
    client_id: str
    mq_set: frozenset[MessageQueue] = field(default_factory=frozenset)

    def encode(self) -> bytes:
        return fastjson.dumps(
            {
                "clientId": self.client_id,
                "consumerGroup": self.consumer_group,
                "mqSet": _queue_list(self.mq_set),
            }
        )

    @classmethod
    def decode(cls, body: Body) -> LockBatchRequestBody:
        data = load_object(body, "LockBatchRequestBody")
        return cls(
            str(data.get("consumerGroup") or ""),
            str(data.get("clientId") or ""),
            _queues(data.get("mqSet"), "LockBatchRequestBody"),
        )


@dataclass(frozen=True, slots=True)
class LockBatchResponseBody:
    lock_ok_mq_set: frozenset[MessageQueue] = field(default_factory=frozenset)

    def encode(self) -> bytes:
        return fastjson.dumps({"lockOKMQSet": _queue_list(self.lock_ok_mq_set)})

    @classmethod
    def decode(cls, body: Body) -> LockBatchResponseBody:
        data = load_object(body, "LockBatchResponseBody")
        return cls(_queues(data.get("lockOKMQSet"), "LockBatchResponseBody"))


@dataclass(frozen=True, slots=True)
class ResetOffsetBody:
    offset_table: Mapping[MessageQueue, int] = field(default_factory=dict)

    def encode(self) -> bytes:
        table = {mq.as_key(): offset for mq, offset in sorted(self.offset_table.items())}
        return fastjson.dumps({"offsetTable": table})

    def encode_for_c(self) -> bytes:
        """Java ``ResetOffsetBodyForC``: ``{"offsetTable":[{"brokerName","offset","queueId",
        "topic"},...]}``, the list form the C++ client parses instead of object keys."""
        rows = [
            {
                "brokerName": mq.broker_name,
                "offset": offset,
                "queueId": mq.queue_id,
                "topic": mq.topic,
            }
            for mq, offset in sorted(self.offset_table.items())
        ]
        return fastjson.dumps({"offsetTable": rows})

    @classmethod
    def decode(cls, body: Body) -> ResetOffsetBody:
        data = load_object(body, "ResetOffsetBody")
        try:
            table = {
                MessageQueue.from_key(key): int(offset)
                for key, offset in (data.get("offsetTable") or {}).items()
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.ProtocolError(f"malformed ResetOffsetBody: {exc!r}") from None
        return cls(table)
