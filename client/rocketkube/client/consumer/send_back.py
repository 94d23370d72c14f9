"""Giving a failed message back to the broker, so the group consumes it again later.

:func:`send_back` first asks the broker holding the message to do it: CONSUMER_SEND_MSG_BACK
(36, docs/protocol.md §7.3) with the message's commit-log offset. The broker stores a copy
in ``%RETRY%<group>`` behind a delay (3 + reconsume times by default), or in
``%DLQ%<group>`` once ``max_reconsume_times`` is reached. When that fails (an old broker, a
broker going down) it falls back, as Java's consumer does, to an ordinary SEND_MESSAGE_V2
(310) of a copy into ``%RETRY%<group>`` with ``RETRY_TOPIC``, ``ORIGIN_MESSAGE_ID`` and the
``DELAY`` level set. It returns ``False`` when both fail: the caller must then keep the
message and consume it again itself. :func:`restore_topics` undoes the renaming when the
retried copies are consumed.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Final

from rocketkube.client import routing
from rocketkube.client.consumer.core import ConsumerCore, retry_topic
from rocketkube.client.routing import MessageQueue
from rocketkube.common import errors
from rocketkube.common.message import properties as props
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.protocol.consumer_headers import ConsumerSendMsgBackRequestHeader
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.remoting.codes import RequestCode

__all__ = ["INNER_PRODUCER_GROUP", "restore_topics", "send_back"]

log = logging.getLogger(__name__)

INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
"""The producer group Java's consumers use for their own sends (the fallback)."""
_FIRST_RETRY_LEVEL: Final = 3


async def send_back(
    core: ConsumerCore,
    message: MessageExt,
    queue: MessageQueue,
    *,
    delay_level: int,
    max_reconsume_times: int,
) -> bool:
    """Hand ``message`` (pulled from ``queue``) back for a later retry; ``False`` if neither
    the broker's send-back nor the fallback send worked."""
    header = ConsumerSendMsgBackRequestHeader(
        offset=message.commit_log_offset,
        group=core.group,
        delay_level=delay_level,
        origin_msg_id=message.client_msg_id,
        origin_topic=message.topic,
        max_reconsume_times=max_reconsume_times,
    )
    try:
        await core.call(queue, RequestCode.CONSUMER_SEND_MSG_BACK, header.encode())
        return True
    except errors.RocketKubeError as exc:
        log.info("send-back of %s failed (%s), re-sending it", message.client_msg_id, exc)
    try:
        await _resend(core, message, queue, max_reconsume_times)
        return True
    except errors.RocketKubeError as exc:
        log.warning("re-send of %s to the retry topic failed: %s", message.client_msg_id, exc)
        return False


async def _resend(
    core: ConsumerCore, message: MessageExt, queue: MessageQueue, max_reconsume_times: int
) -> None:
    """Java's fallback: a delayed copy of ``message`` sent to ``%RETRY%<group>``.

    Until the name servers route the retry topic (its brokers create it on the group's
    first heartbeat), the copy goes to queue 0 on the broker the message came from.
    """
    topic = retry_topic(core.group)
    route = await core.fetch_route(topic)
    queues = routing.writable_queues(topic, route) if route is not None else []
    target = random.choice(queues) if queues else MessageQueue(topic, queue.broker_name, 0)
    properties = dict(message.properties)
    properties[props.PropertyName.RETRY_TOPIC] = message.topic
    if not properties.get(props.PropertyName.ORIGIN_MESSAGE_ID):
        properties[props.PropertyName.ORIGIN_MESSAGE_ID] = message.client_msg_id
    properties.pop(props.PropertyName.TRAN_MSG, None)
    properties.pop(props.PropertyName.RECONSUME_TIME, None)
    properties.pop(props.PropertyName.MAX_RECONSUME_TIMES, None)
    properties[props.PropertyName.DELAY] = str(_FIRST_RETRY_LEVEL + message.reconsume_times)
    header = SendMessageRequestHeaderV2(
        producer_group=INNER_PRODUCER_GROUP,
        topic=topic,
        default_topic=routing.DEFAULT_TOPIC,
        default_topic_queue_nums=routing.DEFAULT_TOPIC_QUEUE_NUMS,
        queue_id=target.queue_id,
        # a body the consumer could not inflate goes back still compressed, and says so
        sys_flag=message.sys_flag & (sysflag.COMPRESSED_FLAG | sysflag.COMPRESSION_TYPE_MASK),
        born_timestamp=int(time.time() * 1000),
        flag=message.flag,
        properties=props.encode_properties(properties),
        reconsume_times=message.reconsume_times + 1,
        unit_mode=False,
        max_reconsume_times=max_reconsume_times,
    )
    await core.call(target, RequestCode.SEND_MESSAGE_V2, header.encode(), bytes(message.body))


def restore_topics(group: str, messages: list[MessageExt]) -> list[MessageExt]:
    """``messages`` pulled from ``%RETRY%<group>`` get back the topic they were first sent
    to (``RETRY_TOPIC``), so listeners see the topic they subscribed to."""
    group_retry = retry_topic(group)
    for message in messages:
        original = message.properties.get(props.PropertyName.RETRY_TOPIC)
        if original and message.topic == group_retry:
            message.topic = original
    return messages
