"""INVOKE_BROKER_TO_RESET_OFFSET (222): move a group's offsets on a topic to a point in time.

What ``mqadmin resetOffsetByTime`` asks every master of the topic's route (Java
``Broker2Client.resetOffset``). For each write queue of the topic the new offset is the
queue offset at ``timestamp`` (``-1``: the max offset; a negative answer becomes 0); it
replaces the committed one when ``isForce`` is set or it lies before it (a rollback only).

Unlike Java 4.9.8, which only tells the online consumers (they commit the new offsets
themselves) and answers CONSUMER_NOT_ONLINE otherwise, the broker also commits the new
offsets in its own table, so a group that is offline right now is reset as well and the
admin gets the table in both cases. Each live channel of the group then gets a oneway
RESET_CONSUMER_CLIENT_OFFSET (220) with the same header and a ResetOffsetBody (a C++
client, language ``CPP``, the ``ResetOffsetBodyForC`` list form it parses).

A group the broker knows nothing of (no subscription config, no channel, no offset on the
topic) is refused with SYSTEM_ERROR, as Java refuses a group without offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rocketkube.broker.consumers.clients import ClientChannel
from rocketkube.broker.context import BrokerContext
from rocketkube.common import errors
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.consumer_headers import ResetOffsetBody, ResetOffsetRequestHeader
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["ResetOffsetProcessor", "reset_target", "table"]

log = logging.getLogger(__name__)

#: Language the broker writes on the requests it sends to clients, as Java's broker does.
BROKER_LANGUAGE = "JAVA"
CPP_LANGUAGE = "CPP"


def reset_target(timestamp_offset: int, committed: int, *, force: bool) -> int:
    """The offset a queue is reset to: the one found by time (negative read as 0) when
    forced or when it is before the committed one (``-1``: nothing committed)."""
    target = max(0, timestamp_offset)
    if force or committed < 0 or target < committed:
        return target
    return committed


class ResetOffsetProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def table(self) -> dict[int, Processor]:
        return {RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset}

    def reset_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = ResetOffsetRequestHeader.decode(request.ext_fields)
        ctx = self.ctx
        topic, group = header.topic, header.group
        config = ctx.topics.get(topic)
        if config is None:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        online = ctx.clients.consumer_group(group)
        known = (
            group in ctx.groups.table
            or (online is not None and bool(online.channels))
            or group in ctx.offsets.groups_of_topic(topic)
        )
        if not known:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist"
            )
        broker_name = ctx.settings.broker_name
        offsets: dict[MessageQueue, int] = {}
        for queue_id in range(config.write_queue_nums):
            if header.timestamp == -1:
                by_time = ctx.store.max_offset(topic, queue_id)
            else:
                by_time = ctx.store.offset_by_timestamp(topic, queue_id, header.timestamp)
            committed = ctx.offsets.query(group, topic, queue_id)
            target = reset_target(by_time, committed, force=header.is_force)
            offsets[MessageQueue(topic, broker_name, queue_id)] = target
            ctx.offsets.commit(group, topic, queue_id, target)
        log.info("reset offsets of group %s on topic %s to timestamp %d (force %s), asked by %s",
                 group, topic, header.timestamp, header.is_force, conn.remote_address)  # fmt: skip
        body = ResetOffsetBody(offsets)
        if online is not None:
            self._tell_consumers(header, body, online.channels.items())
        return RemotingCommand.response(body=body.encode())

    @staticmethod
    def _tell_consumers(
        header: ResetOffsetRequestHeader,
        body: ResetOffsetBody,
        channels: Iterable[tuple[Connection, ClientChannel]],
    ) -> None:
        """A oneway 220 to every channel; a closed one is skipped (it left the group)."""
        ext = header.encode()
        java_body = body.encode()
        c_body: bytes | None = None
        for channel_conn, channel in list(channels):
            if channel.language == CPP_LANGUAGE:
                c_body = c_body or body.encode_for_c()
                payload = c_body
            else:
                payload = java_body
            request = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                dict(ext),
                payload,
                language=BROKER_LANGUAGE,
            )
            try:
                channel_conn.invoke_oneway(request)
            except errors.RemotingError:
                log.debug("could not tell %s to reset offsets: closed", channel.client_id)


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return ResetOffsetProcessor(ctx).table()
