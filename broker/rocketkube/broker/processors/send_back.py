"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume
(docs/protocol.md §7.3, Java ``SendMessageProcessor.asyncConsumerSendMsgBack``).

Steps::

    group config (auto-created if allowed, else 26)  -> broker writable (else 16)
    -> retryQueueNums <= 0: answer 0, nothing stored
    -> %RETRY%<group> (retryQueueNums queues, perm 6) created if missing
    -> the original message by commit log offset (else 1)
    -> RETRY_TOPIC = original topic (if absent), reconsume times + 1,
       ORIGIN_MESSAGE_ID = the original's, else its offset msgId
    -> exhausted (reconsume times >= max) or delayLevel < 0:
           %DLQ%<group> (1 queue, perm 6), no delay
       else %RETRY%<group> random queue, delay level (0 -> 3 + reconsume times, clamped
           to the highest level), parked in SCHEDULE_TOPIC_XXXX until due
    -> 0, or 1 with the store's status as remark

``maxReconsumeTimes`` is the header's when the request version is >= 121 (V3_4_9), else
the group's ``retryMaxTimes``; -1 means 16. The original body, flag, sysFlag, born
time and host are kept; the body is not decompressed. Differences from Java: ``DELAY`` is
removed rather than set to 0 on the way to the DLQ, ``WAIT=false`` is not stored, and a
slave refuses with 1 ``SERVICE_NOT_AVAILABLE`` before creating any topic.
"""

from __future__ import annotations

import logging
import random
from typing import Final

from rocketkube.broker import topics
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.settings import BrokerRole
from rocketkube.broker.store import InnerMessage, PutStatus
from rocketkube.common import errors
from rocketkube.common.message import ids
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import PropertyName, encode_properties
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.consumer_headers import ConsumerSendMsgBackRequestHeader
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["SendBackProcessor", "table"]

log = logging.getLogger(__name__)

#: Request version from which the header's ``maxReconsumeTimes`` is honoured (V3_4_9).
V3_4_9: Final = 121
DEFAULT_MAX_RECONSUME_TIMES: Final = 16
DLQ_QUEUE_NUMS: Final = 1
#: Delay level of the first retry, plus one per earlier retry (10 s, 30 s, 1 m, ...).
FIRST_RETRY_LEVEL: Final = 3
_RW: Final = permission.PERM_READ | permission.PERM_WRITE


def _fail(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand.response(code, remark)


class SendBackProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._max_delay_level = len(ctx.settings.message_delay_level.split())

    def table(self) -> dict[int, Processor]:
        return {RequestCode.CONSUMER_SEND_MSG_BACK: self.send_back}

    def send_back(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h = ConsumerSendMsgBackRequestHeader.decode(req.ext_fields)
        ctx = self.ctx
        group = ctx.groups.get(h.group)
        if group is None:
            return _fail(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {h.group}",
            )
        broker_ip = ctx.settings.broker_ip1
        if not ctx.permission & permission.PERM_WRITE:
            return _fail(
                ResponseCode.NO_PERMISSION, f"the broker[{broker_ip}] sending message is forbidden"
            )
        if group.retry_queue_nums <= 0:
            return RemotingCommand.response()
        if ctx.settings.broker_role is BrokerRole.SLAVE:
            return _fail(ResponseCode.SYSTEM_ERROR, str(PutStatus.SERVICE_NOT_AVAILABLE))
        topic = topics.retry_topic(h.group)
        queue_id = random.randrange(group.retry_queue_nums)
        topic_sys_flag = permission.FLAG_UNIT_SUB if h.unit_mode else 0
        config = ctx.topics.create_system_like(topic, group.retry_queue_nums, _RW, topic_sys_flag)
        if not config.perm & permission.PERM_WRITE:
            return _fail(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        original = ctx.store.lookup_message_ext(h.offset)
        if original is None:
            return _fail(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        max_times = group.retry_max_times
        if req.version >= V3_4_9 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        if max_times == -1:
            max_times = DEFAULT_MAX_RECONSUME_TIMES
        properties = dict(original.properties)
        properties.setdefault(PropertyName.RETRY_TOPIC, original.topic)
        origin = properties.get(PropertyName.ORIGIN_MESSAGE_ID) or _offset_msg_id(original)
        if origin:
            properties[PropertyName.ORIGIN_MESSAGE_ID] = origin
        properties.pop(PropertyName.DELAY, None)
        delay_level = h.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            topic = topics.dlq_topic(h.group)
            queue_id = random.randrange(DLQ_QUEUE_NUMS)
            ctx.topics.create_system_like(topic, DLQ_QUEUE_NUMS, _RW)
            store_topic, store_queue = topic, queue_id
        else:
            if delay_level == 0:
                delay_level = FIRST_RETRY_LEVEL + original.reconsume_times
            store_topic, store_queue = self._park(properties, topic, queue_id, delay_level)
        born_host = _born_host(original)
        result = ctx.store.put_messages(
            (
                InnerMessage(
                    store_topic,
                    store_queue,
                    original.body,
                    encode_properties(properties).encode("utf-8", "replace"),
                    original.flag,
                    original.sys_flag,
                    original.born_timestamp,
                    born_host,
                    original.reconsume_times + 1,
                ),
            )
        )
        if result.status is not PutStatus.PUT_OK:
            return _fail(ResponseCode.SYSTEM_ERROR, str(result.status))
        to = "dlq" if topic == topics.dlq_topic(h.group) else "retry"
        ctx.stats.sent_back.labels(h.group, properties[PropertyName.RETRY_TOPIC], to).inc()
        log.debug("sent back %s of %s to %s", h.offset, h.group, topic)
        return RemotingCommand.response()

    def _park(
        self, properties: dict[str, str], topic: str, queue_id: int, delay_level: int
    ) -> tuple[str, int]:
        """Where a retry is stored: the schedule queue of its level, with REAL_* set."""
        level = min(delay_level, self._max_delay_level)
        properties[PropertyName.DELAY] = str(level)
        properties[PropertyName.REAL_TOPIC] = topic
        properties[PropertyName.REAL_QID] = str(queue_id)
        return topics.SCHEDULE_TOPIC, level - 1


def _offset_msg_id(message: MessageExt) -> str:
    try:
        return message.msg_id
    except errors.MessageFormatError:
        return ""


def _born_host(message: MessageExt) -> bytes:
    try:
        return ids.pack_host(*ids.split_host_port(message.born_host))
    except errors.MessageFormatError:
        return bytes(8)


def table(ctx: BrokerContext) -> dict[int, Processor]:
    """CONSUMER_SEND_MSG_BACK's processor over ``ctx``."""
    return SendBackProcessor(ctx).table()
