"""INVOKE_BROKER_TO_RESET_OFFSET (222) over real sockets: offsets committed in the broker,
RESET_CONSUMER_CLIENT_OFFSET (220) sent to the group's live consumers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import client, reset_offset
from rocketkube.broker.store import InnerMessage
from rocketkube.common import fastjson
from rocketkube.common.message import ids
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.consumer_headers import ResetOffsetBody, ResetOffsetRequestHeader
from rocketkube.common.protocol.heartbeat import ConsumerData, HeartbeatData
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "ResetTopic"
GROUP = "ResetGroup"
QUEUES = 2


class Broker:
    def __init__(self, ctx: BrokerContext, server: RemotingServer) -> None:
        self.ctx = ctx
        self.address = f"127.0.0.1:{server.port}"
        self.admin = RemotingClient()

    def put(self, queue_id: int) -> int:
        """Append one message; its store timestamp."""
        result = self.ctx.store.put_messages(
            [InnerMessage(TOPIC, queue_id, b"m", born_host=ids.pack_host("127.0.0.1", 1))]
        )
        assert result.ok
        return result.appended[0].store_timestamp

    async def reset(
        self, timestamp: int, *, force: bool = True, group: str = GROUP, topic: str = TOPIC
    ) -> RemotingCommand:
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp,
                                          is_force=force)  # fmt: skip
        request = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                                          header.encode())  # fmt: skip
        return await self.admin.invoke(self.address, request, timeout=10)


class Consumer:
    """A consumer connection that records the requests the broker sends it."""

    def __init__(self) -> None:
        self.received: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.client = RemotingClient(self)

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        self.received.put_nowait(request)
        return None

    async def join(self, address: str, client_id: str, language: str = "JAVA") -> None:
        heartbeat = HeartbeatData(client_id, [ConsumerData(GROUP)])
        request = RemotingCommand.request(RequestCode.HEART_BEAT, None, heartbeat.encode(),
                                          language=language)  # fmt: skip
        response = await self.client.invoke(address, request, timeout=10)
        assert response.code == ResponseCode.SUCCESS

    async def next_reset(self) -> RemotingCommand:
        while True:
            request = await asyncio.wait_for(self.received.get(), 10)
            if request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
                return request


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    context.topics.update(TopicConfig(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES))
    table = {**client.table(context), **reset_offset.table(context)}
    client.install(context)
    closed = context.clients.on_channel_closed
    server = RemotingServer(Dispatcher(table), "127.0.0.1", 0, on_close=closed)
    await server.start()
    b = Broker(context, server)
    yield b
    await b.admin.close()
    await server.stop()


def mq(queue_id: int) -> MessageQueue:
    return MessageQueue(TOPIC, "broker-a", queue_id)


def test_reset_target_moves_back_unless_forced() -> None:
    assert reset_offset.reset_target(3, 5, force=False) == 3
    assert reset_offset.reset_target(7, 5, force=False) == 5
    assert reset_offset.reset_target(7, 5, force=True) == 7
    assert reset_offset.reset_target(-1, 5, force=False) == 0
    assert reset_offset.reset_target(4, -1, force=False) == 4


def test_body_for_c_is_a_list() -> None:
    body = ResetOffsetBody({mq(1): 7, mq(0): 3}).encode_for_c()
    assert fastjson.loads(body) == {
        "offsetTable": [
            {"brokerName": "broker-a", "offset": 3, "queueId": 0, "topic": TOPIC},
            {"brokerName": "broker-a", "offset": 7, "queueId": 1, "topic": TOPIC},
        ]
    }


async def test_offline_group_is_reset_in_the_broker(broker: Broker) -> None:
    stamps = [broker.put(0) for _ in range(3)]
    broker.put(1)
    broker.ctx.offsets.commit(GROUP, TOPIC, 0, 3)
    broker.ctx.offsets.commit(GROUP, TOPIC, 1, 1)

    response = await broker.reset(stamps[1])
    assert response.code == ResponseCode.SUCCESS, response.remark
    table = ResetOffsetBody.decode(response.body).offset_table
    # the message stored at that time (or its neighbour); on a fast host several share
    # that millisecond, and the first of them is the answer
    same_ms = {i for i, stamp in enumerate(stamps) if stamp == stamps[1]}
    assert table[mq(0)] in {1, 2} | same_ms
    assert broker.ctx.offsets.query(GROUP, TOPIC, 0) == table[mq(0)]
    assert broker.ctx.offsets.query(GROUP, TOPIC, 1) == table[mq(1)]

    to_end = ResetOffsetBody.decode((await broker.reset(-1)).body).offset_table
    assert to_end == {mq(0): 3, mq(1): 1}
    assert broker.ctx.offsets.query(GROUP, TOPIC, 0) == 3


async def test_without_force_offsets_only_move_back(broker: Broker) -> None:
    for _ in range(2):
        broker.put(0)
    broker.ctx.offsets.commit(GROUP, TOPIC, 0, 0)
    broker.ctx.offsets.commit(GROUP, TOPIC, 1, 0)
    response = await broker.reset(-1, force=False)
    assert ResetOffsetBody.decode(response.body).offset_table == {mq(0): 0, mq(1): 0}
    assert broker.ctx.offsets.query(GROUP, TOPIC, 0) == 0


async def test_live_consumers_are_told(broker: Broker) -> None:
    for _ in range(4):
        broker.put(1)
    java, cpp = Consumer(), Consumer()
    try:
        await java.join(broker.address, "java-client")
        await cpp.join(broker.address, "cpp-client", language="CPP")
        response = await broker.reset(-1)
        assert response.code == ResponseCode.SUCCESS, response.remark

        told = await java.next_reset()
        assert told.is_oneway
        header = ResetOffsetRequestHeader.decode(told.ext_fields)
        assert (header.topic, header.group, header.timestamp) == (TOPIC, GROUP, -1)
        assert ResetOffsetBody.decode(told.body).offset_table == {mq(0): 0, mq(1): 4}

        told_c = await cpp.next_reset()
        assert fastjson.loads(told_c.body)["offsetTable"][1] == {
            "brokerName": "broker-a", "offset": 4, "queueId": 1, "topic": TOPIC,
        }  # fmt: skip
    finally:
        await java.client.close()
        await cpp.client.close()


async def test_unknown_topic_or_group_is_refused(broker: Broker) -> None:
    no_topic = await broker.reset(-1, topic="NoSuchTopic")
    assert no_topic.code == ResponseCode.SYSTEM_ERROR
    assert "no topic in this broker" in (no_topic.remark or "")
    no_group = await broker.reset(-1, group="NoSuchGroup")
    assert no_group.code == ResponseCode.SYSTEM_ERROR
    assert "not exist" in (no_group.remark or "")
    assert broker.ctx.offsets.query("NoSuchGroup", TOPIC, 0) == -1
