"""GET_CONSUMER_RUNNING_INFO (307): ask one online consumer how it is doing, for an admin.

Java ``AdminBrokerProcessor.callConsumer`` -> ``Broker2Client.callClient``: the broker finds
the channel of ``clientId`` among ``consumerGroup``'s consumers and sends it the same
request (header and body) as a sync server-initiated request; the client's answer (code,
remark, body: a ConsumerRunningInfo) goes back to the admin unchanged. A client that is
not online gives SYSTEM_ERROR ``The Consumer <group> <clientId> not online``; one that
does not answer within ``timeout`` seconds gives CONSUME_MSG_TIMEOUT, as Java's; a
connection lost meanwhile gives SYSTEM_ERROR naming the error.
"""

from __future__ import annotations

import logging

from rocketkube.broker.context import BrokerContext
from rocketkube.common import errors
from rocketkube.common.protocol.running_info import (
    CALL_CLIENT_TIMEOUT,
    GetConsumerRunningInfoRequestHeader,
)
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["CALL_CLIENT_TIMEOUT", "ConsumerRunningInfoProcessor", "table"]

log = logging.getLogger(__name__)

#: Language the broker writes on the requests it sends to clients, as Java's broker does.
BROKER_LANGUAGE = "JAVA"


class ConsumerRunningInfoProcessor:
    def __init__(self, ctx: BrokerContext, *, timeout: float = CALL_CLIENT_TIMEOUT) -> None:
        self.ctx = ctx
        self.timeout = timeout

    def table(self) -> dict[int, Processor]:
        return {RequestCode.GET_CONSUMER_RUNNING_INFO: self.running_info}

    def running_info(self, conn: Connection, request: RemotingCommand) -> Reply:
        header = GetConsumerRunningInfoRequestHeader.decode(request.ext_fields)
        group, client_id = header.consumer_group, header.client_id
        channel = self.ctx.clients.find_channel(group, client_id)
        if channel is None:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online"
            )
        forward = RemotingCommand.request(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            dict(request.ext_fields),
            request.body_bytes(),
            language=BROKER_LANGUAGE,
        )
        return self._call_client(channel.conn, forward, group, client_id)

    async def _call_client(
        self, client: Connection, request: RemotingCommand, group: str, client_id: str
    ) -> RemotingCommand:
        try:
            answer = await client.invoke(request, self.timeout)
        except errors.RemotingTimeoutError:
            return RemotingCommand.response(
                ResponseCode.CONSUME_MSG_TIMEOUT,
                f"consumer <{group}> <{client_id}> Timeout: no answer within {self.timeout:g}s",
            )
        except errors.RemotingError as exc:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {type(exc).__name__}: {exc}",
            )
        log.debug("running info of %s (%s): code %d", client_id, group, answer.code)
        return RemotingCommand.response(answer.code, answer.remark, body=answer.body_bytes())


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return ConsumerRunningInfoProcessor(ctx).table()
