"""The admin client's messages and queues: viewing and querying messages, queue offsets,
group offsets and plain pulls (what ``mqadmin`` does with ``queryMsgByKey``,
``consumeMessage`` and the offset commands). :class:`~rocketkube.client.admin.client.AdminClient`
is built on it; see there for addresses, errors and timeouts.
"""

from __future__ import annotations

import time

from rocketkube.client.admin.base import AdminBase
from rocketkube.client.consumer.pull import PULL_ANSWERS, PullResult, pull_header, pull_result
from rocketkube.client.errors import MQClientError
from rocketkube.common.message import ids, record
from rocketkube.common.message.model import MessageExt
from rocketkube.common.names import BrokerName
from rocketkube.common.protocol import admin_headers as ah
from rocketkube.common.protocol import pull_headers as ph
from rocketkube.common.protocol.admin_bodies import (
    MessageQueue,
)
from rocketkube.common.protocol.heartbeat import parse_subscription
from rocketkube.common.remoting.codes import RequestCode, ResponseCode

__all__ = ["AdminQueues"]

#: The group admin pulls use unless told otherwise (Java ``MixAll.TOOLS_CONSUMER_GROUP``).
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class AdminQueues(AdminBase):
    """Messages and queues; :class:`~rocketkube.client.admin.client.AdminClient` adds the rest."""

    # -- messages -----------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID (33): the stored message of an offset message id, asked of
        the broker the id names. Raises MessageFormatError for a malformed id."""
        host, port, offset = ids.decode_offset_msg_id(offset_msg_id)
        addr = ids.join_host_port(host, port)
        ext = ah.ViewMessageRequestHeader(offset=offset).encode()
        response = await self._invoke(addr, RequestCode.VIEW_MESSAGE_BY_ID, ext)
        return record.decode(response.body)

    async def query_messages_by_key(
        self,
        topic: str,
        key: str,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int | None = None,
        *,
        unique_key: bool = False,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE (12) on every broker of the topic's route, merged.

        Matches the ``KEYS`` property (or, with ``unique_key``, the ``UNIQ_KEY`` client
        id) stored between ``begin_ms`` and ``end_ms`` (default now). The index is hashed,
        so results are re-checked as clients do; sorted by store time, at most ``max_num``
        per broker.
        """
        header = ah.QueryMessageRequestHeader(
            topic=topic,
            key=key,
            max_num=max_num,
            begin_timestamp=begin_ms,
            end_timestamp=_now_ms() if end_ms is None else end_ms,
        )
        ext = header.encode()
        if unique_key:
            ext[ah.UNIQUE_MSG_QUERY_FLAG] = "true"
        not_found = frozenset({ResponseCode.QUERY_NOT_FOUND})
        answers = await self._each(
            await self._route_brokers(topic, masters_only=False),
            lambda addr: self._invoke(addr, RequestCode.QUERY_MESSAGE, ext, allow=not_found),
        )
        found: dict[tuple[str, int], MessageExt] = {}
        for response in answers.values():
            if response.code != ResponseCode.SUCCESS:
                continue
            for message in record.iter_records(response.body):
                if message.topic != topic:
                    continue
                if unique_key:
                    if message.unique_key != key:
                        continue
                elif key not in message.keys:
                    continue
                found[(message.store_host, message.commit_log_offset)] = message
        return sorted(found.values(), key=lambda m: (m.store_timestamp, m.commit_log_offset))

    # -- queues: offsets and plain pulls (mqadmin consumeMessage) ---------------------------

    async def broker_addrs(self, topic: str) -> dict[BrokerName, str]:
        """Broker name -> address (the master, else any) of every broker of ``topic``'s
        route: where its queues are read."""
        route = await self.topic_route(topic)
        out: dict[BrokerName, str] = {}
        for data in route.broker_datas:
            addr = data.master_addr
            if addr is None and data.broker_addrs:
                addr = data.broker_addrs[min(data.broker_addrs)]
            if addr is not None:
                out[data.broker_name] = addr
        return out

    async def _queue_addr(self, queue: MessageQueue, broker_addr: str | None) -> str:
        if broker_addr is not None:
            return broker_addr
        addr = (await self.broker_addrs(queue.topic)).get(BrokerName(queue.broker_name))
        if addr is None:
            raise MQClientError(f"broker {queue.broker_name!r} is not in {queue.topic}'s route")
        return addr

    async def min_offset(self, queue: MessageQueue, *, broker_addr: str | None = None) -> int:
        """GET_MIN_OFFSET (31): the queue's first offset still stored."""
        ext = ph.GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).encode()
        addr = await self._queue_addr(queue, broker_addr)
        response = await self._invoke(addr, RequestCode.GET_MIN_OFFSET, ext)
        return ph.GetMinOffsetResponseHeader.decode(response.ext_fields).offset

    async def max_offset(self, queue: MessageQueue, *, broker_addr: str | None = None) -> int:
        """GET_MAX_OFFSET (30): the offset the queue's next message will get."""
        ext = ph.GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).encode()
        addr = await self._queue_addr(queue, broker_addr)
        response = await self._invoke(addr, RequestCode.GET_MAX_OFFSET, ext)
        return ph.GetMaxOffsetResponseHeader.decode(response.ext_fields).offset

    async def search_offset(
        self, queue: MessageQueue, timestamp_ms: int, *, broker_addr: str | None = None
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the queue offset of the message stored at
        ``timestamp_ms`` (or the nearest one)."""
        ext = ph.SearchOffsetRequestHeader(
            topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
        ).encode()
        addr = await self._queue_addr(queue, broker_addr)
        response = await self._invoke(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext)
        return ph.SearchOffsetResponseHeader.decode(response.ext_fields).offset

    async def consumer_offset(
        self, group: str, queue: MessageQueue, *, broker_addr: str | None = None
    ) -> int | None:
        """QUERY_CONSUMER_OFFSET (14): ``group``'s committed offset of ``queue`` on its
        broker (the next offset to consume), ``None`` when the group never committed one."""
        ext = ph.QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=queue.topic, queue_id=queue.queue_id
        ).encode()
        addr = await self._queue_addr(queue, broker_addr)
        allow = frozenset({ResponseCode.QUERY_NOT_FOUND})
        response = await self._invoke(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext, allow=allow)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return ph.QueryConsumerOffsetResponseHeader.decode(response.ext_fields).offset

    async def update_consumer_offset(
        self, group: str, queue: MessageQueue, offset: int, *, broker_addr: str | None = None
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15): commit ``offset`` (the next to consume) as ``group``'s
        offset of ``queue``, as a consumer does; lag and ``consumerProgress`` then count
        from it."""
        ext = ph.UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=queue.topic, queue_id=queue.queue_id, commit_offset=offset
        ).encode()
        addr = await self._queue_addr(queue, broker_addr)
        await self._invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)

    async def pull(
        self,
        queue: MessageQueue,
        offset: int,
        max_nums: int = 32,
        *,
        group: str = TOOLS_CONSUMER_GROUP,
        expression: str = "*",
        broker_addr: str | None = None,
    ) -> PullResult:
        """PULL_MESSAGE (11) once, without suspending or committing: what mqadmin's pull
        consumer does. Messages are re-filtered by tag as clients do."""
        subscription = parse_subscription(queue.topic, expression, _now_ms())
        header = pull_header(group, queue, offset, subscription, max_nums=max_nums)
        addr = await self._queue_addr(queue, broker_addr)
        response = await self._invoke(addr, RequestCode.PULL_MESSAGE, header, allow=PULL_ANSWERS)
        return pull_result(response, subscription)
