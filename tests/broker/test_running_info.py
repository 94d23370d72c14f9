"""GET_CONSUMER_RUNNING_INFO (307) at the broker: relayed to the client's channel over a
real socket, and the answers when the client is not online, silent, or gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass

import pytest

from rocketkube.broker.consumers.clients import ClientChannel
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.consumer_running_info import ConsumerRunningInfoProcessor
from rocketkube.common.protocol.heartbeat import ConsumerData
from rocketkube.common.protocol.running_info import GetConsumerRunningInfoRequestHeader
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply

GROUP, CLIENT_ID = "G", "127.0.0.1@c1"
LIMIT = 20.0


class FakeConsumer:
    """The client end of a channel: answers 307 as told (or never)."""

    def __init__(self, answer: RemotingCommand | None) -> None:
        self.answer = answer
        self.requests: list[RemotingCommand] = []

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        self.requests.append(request)
        return self.answer


@dataclass
class Channel:
    consumer: FakeConsumer
    broker_side: Connection


@pytest.fixture
async def channel(context: BrokerContext) -> AsyncIterator[Channel]:
    """A consumer listening on 127.0.0.1, the broker side connected to it and registered
    as ``CLIENT_ID`` of ``GROUP``."""
    consumer = FakeConsumer(RemotingCommand.response(body=b'{"properties":{}}'))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(consumer), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, conn = await loop.create_connection(Connection, "127.0.0.1", port)
    context.clients.register_consumer(
        ConsumerData(GROUP), ClientChannel(conn, CLIENT_ID, "PYTHON", 399, 0)
    )
    yield Channel(consumer, conn)
    conn.close()
    server.close()
    await server.wait_closed()


def request(client_id: str = CLIENT_ID, *, jstack: bool = False) -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(GROUP, client_id, jstack)
    return RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, header.encode())


async def serve(processor: ConsumerRunningInfoProcessor, cmd: RemotingCommand) -> RemotingCommand:
    reply = processor.running_info(Connection(), cmd)
    if isinstance(reply, Awaitable):
        reply = await asyncio.wait_for(reply, LIMIT)
    assert isinstance(reply, RemotingCommand)
    return reply


async def test_relays_the_request_and_the_clients_answer(
    context: BrokerContext, channel: Channel
) -> None:
    answer = await serve(ConsumerRunningInfoProcessor(context), request(jstack=True))
    assert (answer.code, answer.body_bytes()) == (ResponseCode.SUCCESS, b'{"properties":{}}')
    [forwarded] = channel.consumer.requests
    assert forwarded.code == RequestCode.GET_CONSUMER_RUNNING_INFO
    assert forwarded.ext_fields == {
        "consumerGroup": GROUP,
        "clientId": CLIENT_ID,
        "jstackEnable": "true",
    }


async def test_the_clients_error_is_relayed(context: BrokerContext, channel: Channel) -> None:
    channel.consumer.answer = RemotingCommand.response(ResponseCode.SYSTEM_ERROR, "not mine")
    answer = await serve(ConsumerRunningInfoProcessor(context), request())
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "not mine")


async def test_unknown_client_is_not_online(context: BrokerContext, channel: Channel) -> None:
    answer = await serve(ConsumerRunningInfoProcessor(context), request("127.0.0.1@other"))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "The Consumer <G> <127.0.0.1@other> not online"


async def test_a_silent_client_times_out(context: BrokerContext, channel: Channel) -> None:
    channel.consumer.answer = None
    answer = await serve(ConsumerRunningInfoProcessor(context, timeout=0.2), request())
    assert answer.code == ResponseCode.CONSUME_MSG_TIMEOUT
    assert answer.remark is not None
    assert "Timeout" in answer.remark
    assert CLIENT_ID in answer.remark


async def test_a_closed_channel_is_not_online(context: BrokerContext, channel: Channel) -> None:
    channel.broker_side.close()
    await asyncio.wait_for(channel.broker_side.closed, LIMIT)
    answer = await serve(ConsumerRunningInfoProcessor(context), request())
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark is not None
    assert "not online" in answer.remark
