"""VIEW_MESSAGE_BY_ID and QUERY_MESSAGE over real sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import query
from rocketkube.broker.store import AppendResult, InnerMessage
from rocketkube.common.message import ids, properties, record
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "TopicQ"
TIMEOUT = 10.0
FOREVER = 1 << 62


@dataclass
class Broker:
    ctx: BrokerContext
    client: RemotingClient
    address: str

    async def invoke(self, req: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(self.address, req, timeout=TIMEOUT)

    def put(
        self, body: bytes, *, keys: str | None = None, uniq: str | None = None, topic: str = TOPIC
    ) -> AppendResult:
        props = properties.encode_properties(
            {properties.PropertyName.KEYS: keys, properties.PropertyName.UNIQ_KEY: uniq}
        ).encode()
        result = self.ctx.store.put_message(InnerMessage(topic, 0, body, props))
        assert result.ok
        return result.appended[0]

    async def query(
        self,
        key: str,
        *,
        max_num: int = 32,
        begin: int = 0,
        end: int = FOREVER,
        topic: str = TOPIC,
        unique: str | None = None,
    ) -> RemotingCommand:
        ext = {
            "topic": topic,
            "key": key,
            "maxNum": str(max_num),
            "beginTimestamp": str(begin),
            "endTimestamp": str(end),
        }
        if unique is not None:
            ext["_UNIQUE_KEY_QUERY"] = unique
        return await self.invoke(RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext))


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    server = RemotingServer(Dispatcher(query.table(context)), "127.0.0.1", 0)
    await server.start()
    client = RemotingClient()
    yield Broker(context, client, f"127.0.0.1:{server.port}")
    await client.close()
    await server.stop()


def view_request(offset: int | str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})


async def test_view_message_by_offset(broker: Broker) -> None:
    broker.put(b"first")
    second = broker.put(b"second", keys="k2")
    resp = await broker.invoke(view_request(second.physical_offset))
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == bytes(broker.ctx.store.lookup_message(second.physical_offset) or b"")
    message = record.decode(resp.body)
    assert message.body == b"second"
    assert message.keys == ["k2"]
    assert message.commit_log_offset == second.physical_offset
    # the offset a client decodes from the msgId leads back to the same record
    host, port, offset = ids.decode_offset_msg_id(second.msg_id)
    assert (host, port, offset) == ("127.0.0.1", 10911, second.physical_offset)


@pytest.mark.parametrize("offset", [-1, 5, 1 << 40])
async def test_view_message_not_found(broker: Broker, offset: int) -> None:
    broker.put(b"only")
    resp = await broker.invoke(view_request(offset))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == f"can not find message by the offset, {offset}"
    assert resp.body == b""


async def test_view_message_bad_header(broker: Broker) -> None:
    resp = await broker.invoke(view_request("abc"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None
    assert "offset" in resp.remark
    resp = await broker.invoke(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID))
    assert resp.code == ResponseCode.SYSTEM_ERROR


async def test_query_by_key(broker: Broker) -> None:
    a = broker.put(b"a", keys="order-1 order-2")
    broker.put(b"b", keys="order-3")
    c = broker.put(b"c", keys="order-1")
    broker.put(b"other topic", keys="order-1", topic="OtherTopic")
    resp = await broker.query("order-1")
    assert resp.code == ResponseCode.SUCCESS
    found = record.decode_all(resp.body)
    assert sorted(m.commit_log_offset for m in found) == [a.physical_offset, c.physical_offset]
    assert {m.topic for m in found} == {TOPIC}
    assert set(resp.ext_fields) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}
    assert int(resp.ext_fields["indexLastUpdateTimestamp"]) > 0
    assert int(resp.ext_fields["indexLastUpdatePhyoffset"]) >= c.physical_offset
    resp = await broker.query("order-2")
    assert [m.body for m in record.decode_all(resp.body)] == [b"a"]


async def test_query_by_unique_key(broker: Broker) -> None:
    broker.put(b"x", uniq="7F0000010001000000000001")
    target = broker.put(b"y", uniq="7F0000010001000000000002")
    resp = await broker.query("7F0000010001000000000002", max_num=1, unique="true")
    assert resp.code == ResponseCode.SUCCESS
    (message,) = record.decode_all(resp.body)
    assert message.unique_key == "7F0000010001000000000002"
    assert message.commit_log_offset == target.physical_offset


async def test_unique_key_query_ignores_the_client_max_num(broker: Broker) -> None:
    for n in range(3):
        broker.put(f"m{n}".encode(), keys="shared")
    resp = await broker.query("shared", max_num=1, unique="true")
    assert len(record.decode_all(resp.body)) == 3  # maxNum became defaultQueryMaxNum (32)
    resp = await broker.query("shared", max_num=1, unique="false")
    assert len(record.decode_all(resp.body)) == 1
    resp = await broker.query("shared", max_num=2)
    assert len(record.decode_all(resp.body)) == 2


async def test_query_not_found(broker: Broker) -> None:
    stored = broker.put(b"a", keys="k")
    store_time = record.decode(broker.ctx.store.lookup_message(stored.physical_offset) or b"")
    for resp in (
        await broker.query("missing"),
        await broker.query("k", topic="OtherTopic"),
        await broker.query("k", begin=0, end=store_time.store_timestamp - 60_000),
    ):
        assert resp.code == ResponseCode.QUERY_NOT_FOUND
        assert resp.remark == "can not find message, maybe time range not correct"
        assert set(resp.ext_fields) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}
        assert resp.body == b""


async def test_query_missing_header_field(broker: Broker) -> None:
    req = RemotingCommand.request(RequestCode.QUERY_MESSAGE, {"topic": TOPIC, "key": "k"})
    resp = await broker.invoke(req)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None
    assert "maxNum" in resp.remark
