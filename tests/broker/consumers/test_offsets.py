"""Consumer and queue offset requests over real sockets, and offset persistence."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import offsets
from rocketkube.broker.store import InnerMessage
from rocketkube.common import fastjson
from rocketkube.common.message import ids
from rocketkube.common.protocol import pull_headers as h
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.header import CommandHeader
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "TopicA"
GROUP = "GroupA"


class Broker:
    def __init__(self, ctx: BrokerContext, server: RemotingServer, client: RemotingClient):
        self.ctx = ctx
        self.client = client
        self.address = f"127.0.0.1:{server.port}"

    async def call(self, code: int, header: CommandHeader) -> RemotingCommand:
        request = RemotingCommand.request(code, header.encode())
        return await self.client.invoke(self.address, request, timeout=10)

    async def query(self, queue_id: int = 0, group: str = GROUP) -> RemotingCommand:
        return await self.call(
            RequestCode.QUERY_CONSUMER_OFFSET,
            h.QueryConsumerOffsetRequestHeader(group, TOPIC, queue_id),
        )

    def put(self, queue_id: int = 0) -> int:
        """Append one message; its store timestamp."""
        result = self.ctx.store.put_messages(
            [InnerMessage(TOPIC, queue_id, b"m", born_host=ids.pack_host("127.0.0.1", 1))]
        )
        assert result.ok
        return result.appended[0].store_timestamp


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    server = RemotingServer(Dispatcher(offsets.table(context)), "127.0.0.1", 0)
    await server.start()
    client = RemotingClient()
    yield Broker(context, server, client)
    await client.close()
    await server.stop()


def update(queue_id: int, offset: int, group: str = GROUP) -> h.UpdateConsumerOffsetRequestHeader:
    return h.UpdateConsumerOffsetRequestHeader(group, TOPIC, queue_id, offset)


# -- QUERY_CONSUMER_OFFSET / UPDATE_CONSUMER_OFFSET ----------------------------------------


async def test_new_group_on_an_intact_queue_starts_at_zero(broker: Broker) -> None:
    broker.put()
    resp = await broker.query()
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields == {"offset": "0"}
    never_written = await broker.query(queue_id=3)
    assert (never_written.code, never_written.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})


async def test_new_group_on_a_truncated_queue_is_not_found(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker.ctx.store, "min_offset", lambda topic, queue_id: 5)
    resp = await broker.query()
    assert resp.code == ResponseCode.QUERY_NOT_FOUND
    assert resp.remark == offsets.QUERY_NOT_FOUND_REMARK
    assert "offset" not in resp.ext_fields


async def test_update_then_query(broker: Broker) -> None:
    resp = await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(1, 42))
    assert resp.code == ResponseCode.SUCCESS
    assert broker.ctx.offsets.query(GROUP, TOPIC, 1) == 42
    queried = await broker.query(queue_id=1)
    assert (queried.code, queried.ext_fields["offset"]) == (ResponseCode.SUCCESS, "42")
    other_group = await broker.query(queue_id=1, group="OtherGroup")
    assert other_group.ext_fields["offset"] == "0"


async def test_last_write_wins(broker: Broker) -> None:
    await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(0, 9))
    await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(0, 4))
    assert (await broker.query()).ext_fields["offset"] == "4"


async def test_oneway_update_gets_no_reply_but_is_stored(broker: Broker) -> None:
    request = RemotingCommand.request(
        RequestCode.UPDATE_CONSUMER_OFFSET, update(2, 17).encode(), oneway=True
    )
    await broker.client.invoke_oneway(broker.address, request)
    # the query is served after the oneway update on the same connection
    resp = await broker.query(queue_id=2)
    assert resp.ext_fields["offset"] == "17"


async def test_missing_field_is_system_error(broker: Broker) -> None:
    request = RemotingCommand.request(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"},
    )
    resp = await broker.client.invoke(broker.address, request, timeout=10)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "commitOffset" in (resp.remark or "")


async def test_offsets_survive_persist_and_load(broker: Broker) -> None:
    await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(0, 100))
    await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(3, 7, group="G2"))
    await broker.ctx.offsets.saved()
    reloaded = ConsumerOffsetManager(broker.ctx.offsets.saver.path)
    reloaded.load()
    assert reloaded.query(GROUP, TOPIC, 0) == 100
    assert reloaded.query("G2", TOPIC, 3) == 7
    assert reloaded.query(GROUP, TOPIC, 3) == -1


# -- queue offsets -------------------------------------------------------------------------


async def test_max_and_min_offset(broker: Broker) -> None:
    for _ in range(3):
        broker.put(queue_id=1)
    max_resp = await broker.call(RequestCode.GET_MAX_OFFSET, h.GetMaxOffsetRequestHeader(TOPIC, 1))
    assert (max_resp.code, max_resp.ext_fields) == (ResponseCode.SUCCESS, {"offset": "3"})
    min_resp = await broker.call(RequestCode.GET_MIN_OFFSET, h.GetMinOffsetRequestHeader(TOPIC, 1))
    assert (min_resp.code, min_resp.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})
    for code, header in (
        (RequestCode.GET_MAX_OFFSET, h.GetMaxOffsetRequestHeader("Nothing", 0)),
        (RequestCode.GET_MIN_OFFSET, h.GetMinOffsetRequestHeader("Nothing", 0)),
    ):
        resp = await broker.call(code, header)
        assert (resp.code, resp.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})


async def _next_ms(after: int) -> None:
    """Let the store's wall clock move past ``after`` (store timestamps in ms)."""
    await asyncio.sleep(max(0.0, after + 3 - time.time() * 1000) / 1000)


async def test_search_offset_by_timestamp(broker: Broker) -> None:
    stamps = []
    for _ in range(3):
        stamps.append(broker.put())
        await _next_ms(stamps[-1])
    assert len(set(stamps)) == 3
    for expected, stamp in enumerate(stamps):
        resp = await broker.call(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, h.SearchOffsetRequestHeader(TOPIC, 0, stamp)
        )
        assert (resp.code, resp.ext_fields) == (ResponseCode.SUCCESS, {"offset": str(expected)})
    nothing = await broker.call(
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, h.SearchOffsetRequestHeader(TOPIC, 2, stamps[0])
    )
    assert (nothing.code, nothing.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})


async def test_earliest_message_store_time(broker: Broker) -> None:
    first = broker.put()
    await _next_ms(first)
    broker.put()
    resp = await broker.call(
        RequestCode.GET_EARLIEST_MSG_STORETIME, h.GetEarliestMsgStoretimeRequestHeader(TOPIC, 0)
    )
    assert (resp.code, resp.ext_fields) == (ResponseCode.SUCCESS, {"timestamp": str(first)})
    empty = await broker.call(
        RequestCode.GET_EARLIEST_MSG_STORETIME, h.GetEarliestMsgStoretimeRequestHeader(TOPIC, 1)
    )
    assert (empty.code, empty.ext_fields) == (ResponseCode.SUCCESS, {"timestamp": "-1"})


# -- GET_ALL_CONSUMER_OFFSET ---------------------------------------------------------------


async def test_all_consumer_offsets_with_bare_int_keys(broker: Broker) -> None:
    request = RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET)
    empty = await broker.client.invoke(broker.address, request, timeout=10)
    assert (empty.code, empty.body) == (ResponseCode.SUCCESS, b'{"offsetTable":{}}')
    await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(0, 5))
    await broker.call(RequestCode.UPDATE_CONSUMER_OFFSET, update(1, 7))
    request = RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET)
    resp = await broker.client.invoke(broker.address, request, timeout=10)
    assert resp.code == ResponseCode.SUCCESS
    assert resp.body == b'{"offsetTable":{"TopicA@GroupA":{0:5,1:7}}}'
    assert fastjson.loads(resp.body) == {"offsetTable": {"TopicA@GroupA": {0: 5, 1: 7}}}
