"""Message lookup (QueryMessageProcessor, ViewMessageProcessor).

- VIEW_MESSAGE_BY_ID (33): the stored record at a commit log offset (the offset a client
  decodes from an offset msgId), sent as it is stored, without a copy.
- QUERY_MESSAGE (12): records of a topic whose KEYS or UNIQ_KEY match a key within a
  store-time range, from the index, newest first; the client re-checks the matches.
"""

from __future__ import annotations

from rocketkube.broker.context import BrokerContext
from rocketkube.common.protocol import admin_headers as h
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["DEFAULT_QUERY_MAX_NUM", "QueryProcessors", "table"]

#: ``defaultQueryMaxNum``: maxNum of a UNIQ_KEY query (the client's value is ignored).
DEFAULT_QUERY_MAX_NUM = 32


class QueryProcessors:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def table(self) -> dict[int, Processor]:
        return {
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
            RequestCode.QUERY_MESSAGE: self.query_message,
        }

    def view_message_by_id(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.ViewMessageRequestHeader.decode(req.ext_fields)
        view = self.ctx.store.lookup_message(header.offset) if header.offset >= 0 else None
        if view is None:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}"
            )
        return RemotingCommand.response(body=view)

    def query_message(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.QueryMessageRequestHeader.decode(req.ext_fields)
        max_num = header.max_num
        if req.ext_fields.get(h.UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = DEFAULT_QUERY_MAX_NUM
        result = self.ctx.store.query_by_key(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        ext = h.QueryMessageResponseHeader(
            result.index_last_update_timestamp, result.index_last_update_phy_offset
        ).encode()
        if not result.buffers:
            return RemotingCommand.response(
                ResponseCode.QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
                ext,
            )
        body = result.buffers[0] if len(result.buffers) == 1 else result.body()
        return RemotingCommand.response(ResponseCode.SUCCESS, None, ext, body)


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return QueryProcessors(ctx).table()
