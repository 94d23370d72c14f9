"""Consumer offsets and queue offsets (docs/protocol.md §6): QUERY_CONSUMER_OFFSET (14),
UPDATE_CONSUMER_OFFSET (15), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30),
GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32), GET_ALL_CONSUMER_OFFSET (43).

As in Java 4.9.8, none of these checks that the topic or group exists: a queue that does
not exist has min = max = 0 and no earliest store time (-1).

QUERY_CONSUMER_OFFSET with nothing stored answers 0 with offset 0 when the queue's min
offset is <= 0 (a new group on a queue that never lost messages starts at the beginning,
whatever its ConsumeFromWhere), else 22. Java also requires the message at index 0 to be
in memory ("hot"); every message counts as hot here.
"""

from __future__ import annotations

from rocketkube.broker.context import BrokerContext
from rocketkube.common import fastjson
from rocketkube.common.protocol import pull_headers as h
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["QUERY_NOT_FOUND_REMARK", "OffsetProcessor", "table"]

QUERY_NOT_FOUND_REMARK = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


def _ok(ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SUCCESS, None, ext, body)


class OffsetProcessor:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def table(self) -> dict[int, Processor]:
        c = RequestCode
        return {
            c.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            c.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            c.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            c.GET_MAX_OFFSET: self.get_max_offset,
            c.GET_MIN_OFFSET: self.get_min_offset,
            c.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            c.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
        }

    def query_consumer_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = h.QueryConsumerOffsetRequestHeader.decode(request.ext_fields)
        ctx = self.ctx
        offset = ctx.offsets.query(header.consumer_group, header.topic, header.queue_id)
        if offset >= 0:
            return _ok(h.QueryConsumerOffsetResponseHeader(offset).encode())
        if ctx.store.min_offset(header.topic, header.queue_id) <= 0:
            return _ok(h.QueryConsumerOffsetResponseHeader(0).encode())
        return RemotingCommand.response(ResponseCode.QUERY_NOT_FOUND, QUERY_NOT_FOUND_REMARK)

    def update_consumer_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """Store the offset; the reply is dropped by the connection when the request is oneway."""
        header = h.UpdateConsumerOffsetRequestHeader.decode(request.ext_fields)
        self.ctx.offsets.commit(
            header.consumer_group, header.topic, header.queue_id, header.commit_offset
        )
        return _ok()

    def search_offset_by_timestamp(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = h.SearchOffsetRequestHeader.decode(request.ext_fields)
        offset = self.ctx.store.offset_by_timestamp(header.topic, header.queue_id, header.timestamp)
        return _ok(h.SearchOffsetResponseHeader(offset).encode())

    def get_max_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = h.GetMaxOffsetRequestHeader.decode(request.ext_fields)
        offset = self.ctx.store.max_offset(header.topic, header.queue_id)
        return _ok(h.GetMaxOffsetResponseHeader(offset).encode())

    def get_min_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        header = h.GetMinOffsetRequestHeader.decode(request.ext_fields)
        offset = self.ctx.store.min_offset(header.topic, header.queue_id)
        return _ok(h.GetMinOffsetResponseHeader(offset).encode())

    def get_earliest_msg_storetime(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = h.GetEarliestMsgStoretimeRequestHeader.decode(request.ext_fields)
        timestamp = self.ctx.store.earliest_message_time(header.topic, header.queue_id)
        return _ok(h.GetEarliestMsgStoretimeResponseHeader(timestamp).encode())

    def get_all_consumer_offset(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        """``{"offsetTable":{"topic@group":{0:123}}}``, queue ids as bare ints (fastjson)."""
        body = fastjson.dumps(self.ctx.offsets.to_json(), bare_int_keys=True)
        return _ok(body=body)


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return OffsetProcessor(ctx).table()
