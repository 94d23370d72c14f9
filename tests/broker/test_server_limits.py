"""The limits a broker and a name server take from their settings, over real sockets:
``maxMessageSize`` (MESSAGE_ILLEGAL), ``com.rocketmq.remoting.frameMaxLength``,
``serverChannelMaxIdleTimeSeconds`` (idle and slowloris connections) and
``serverMaxConnections``. The mechanics are tested in tests/common/test_server_limits.py."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

from rocketkube.broker.app import BrokerApp
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

StartBroker = Callable[..., Awaitable[BrokerApp]]
CreateTopic = Callable[..., Awaitable[None]]
RUNTIME_INFO = RequestCode.GET_BROKER_RUNTIME_INFO


def send_v2(topic: str, body: bytes) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="PG", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=1_700_000_000_000, flag=0,
    )  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.encode(), body)


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except ConnectionResetError:
        return True


async def test_a_body_over_max_message_size_is_message_illegal(
    start_broker: StartBroker, create_topic: CreateTopic, names: tuple[str, str]
) -> None:
    broker = await start_broker("broker-small", max_message_size=1024)
    topic, _ = names
    await create_topic(topic)
    client = RemotingClient()
    try:
        too_big = await client.invoke(broker.address, send_v2(topic, b"x" * 1025))
        assert too_big.code == 13, too_big.remark  # MESSAGE_ILLEGAL
        assert "maxMessageSize" in (too_big.remark or "")
        fits = await client.invoke(broker.address, send_v2(topic, b"x" * 1024))
        assert fits.code == ResponseCode.SUCCESS, fits.remark
    finally:
        await client.close()


async def test_a_broker_closes_idle_and_slowloris_connections_at_its_setting(
    start_broker: StartBroker,
) -> None:
    broker = await start_broker("broker-idle", server_channel_max_idle_time_seconds=1)
    host, port = broker.address.split(":")
    idle_reader, idle_writer = await asyncio.open_connection(host, int(port))
    reader, writer = await asyncio.open_connection(host, int(port))
    data = frame.encode_bytes(RemotingCommand.request(RequestCode.HEART_BEAT, body=b"{}"))
    sent = 0
    while sent < len(data) and not broker.server.faults.refused["slow_frame"]:
        writer.write(data[sent : sent + 1])  # a byte every 0.2 s: never idle
        sent += 1
        await asyncio.sleep(0.2)
    assert sent < len(data)
    assert await closed_by_server(reader)
    assert await closed_by_server(idle_reader)
    writer.close()
    idle_writer.close()


async def test_a_broker_refuses_connections_past_server_max_connections(
    start_broker: StartBroker,
) -> None:
    broker = await start_broker("broker-capped", server_max_connections=2)
    client = RemotingClient()
    try:  # the client's connection is one; one more fits
        ok = await client.invoke(broker.address, RemotingCommand.request(RUNTIME_INFO))
        assert ok.code == ResponseCode.SUCCESS
        host, port = broker.address.split(":")
        second = await asyncio.open_connection(host, int(port))
        second[1].write(frame.encode_bytes(RemotingCommand.request(RUNTIME_INFO)))
        assert len(await second[0].read(4096)) > 8
        reader, writer = await asyncio.open_connection(host, int(port))
        assert await closed_by_server(reader)
        assert broker.server.faults.refused["connections"] == 1
        writer.close()
        second[1].close()
    finally:
        await client.close()


async def test_a_name_server_refuses_a_frame_over_its_frame_max_length(
    namesrv_settings: NamesrvSettings,
) -> None:
    settings = namesrv_settings.model_copy(update={"frame_max_length": 2048})
    app = NamesrvApp(settings)
    await app.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
        writer.write(struct.pack(">i", 2049))
        assert await closed_by_server(reader)
        writer.close()
        assert app.server.faults.counts["frame"] == 1
    finally:
        await app.stop()
