"""PULL_MESSAGE over real sockets: every check, every status code, filters, offset commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from rocketkube.broker.consumers.clients import ClientChannel
from rocketkube.broker.consumers.long_polling import PullRequestHoldService
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import pull
from rocketkube.broker.settings import BrokerRole
from rocketkube.broker.store import GetStatus, InnerMessage
from rocketkube.common.message import ids, properties, record, sysflag
from rocketkube.common.protocol import permission
from rocketkube.common.protocol import pull_headers as h
from rocketkube.common.protocol.heartbeat import (
    ConsumerData,
    MessageModel,
    SubscriptionData,
    parse_subscription,
)
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "TopicA"
GROUP = "GroupA"
SUB = sysflag.FLAG_SUBSCRIPTION


class Broker:
    """The pull processor served on 127.0.0.1, and a client talking to it."""

    def __init__(self, ctx: BrokerContext, server: RemotingServer, client: RemotingClient):
        self.ctx = ctx
        self.server = server
        self.client = client
        self.address = f"127.0.0.1:{server.port}"

    async def pull(self, **fields: Any) -> RemotingCommand:
        return await self.client.invoke(self.address, pull_request(**fields), timeout=10)

    async def server_conn(self) -> Connection:
        """The server side of the client's connection (for heartbeat registration)."""
        await self.client.connection(self.address)
        for _ in range(500):
            if self.server.connections:
                return next(iter(self.server.connections))
            await asyncio.sleep(0.01)
        raise AssertionError("no server connection")

    async def register(
        self,
        sub: SubscriptionData,
        model: MessageModel = MessageModel.CLUSTERING,
        group: str = GROUP,
    ) -> None:
        conn = await self.server_conn()
        data = ConsumerData(group, message_model=model, subscriptions=[sub])
        channel = ClientChannel(conn, "client-1", "JAVA", 409, self.ctx.clock())
        self.ctx.clients.register_consumer(data, channel)


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    context.topics.update(TopicConfig(TOPIC, 4, 4))
    holds = PullRequestHoldService(context.store)
    server = RemotingServer(Dispatcher(pull.table(context, holds)), "127.0.0.1", 0)
    await server.start()
    client = RemotingClient()
    yield Broker(context, server, client)
    await client.close()
    holds.close()
    await server.stop()


def pull_request(
    *,
    topic: str = TOPIC,
    group: str = GROUP,
    queue_id: int = 0,
    offset: int = 0,
    max_nums: int = 32,
    sys_flag: int = SUB,
    commit_offset: int = 0,
    suspend_ms: int = 15000,
    subscription: str | None = "*",
    sub_version: int = 0,
    expression_type: str | None = None,
) -> RemotingCommand:
    header = h.PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_ms,
        sub_version=sub_version,
        subscription=subscription,
        expression_type=expression_type,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.encode())


def message(body: bytes, tags: str | None = None, queue_id: int = 0) -> InnerMessage:
    props = properties.encode_properties({"TAGS": tags, "UNIQ_KEY": body.hex().upper()})
    return InnerMessage(
        topic=TOPIC,
        queue_id=queue_id,
        body=body,
        properties=props.encode(),
        born_timestamp=1_700_000_000_000,
        born_host=ids.pack_host("127.0.0.1", 40000),
    )


def put(ctx: BrokerContext, *messages: InnerMessage) -> None:
    assert ctx.store.put_messages(messages).ok


def offsets_of(resp: RemotingCommand) -> tuple[int, int, int, int]:
    ext = resp.ext_fields
    return (
        int(ext["suggestWhichBrokerId"]),
        int(ext["nextBeginOffset"]),
        int(ext["minOffset"]),
        int(ext["maxOffset"]),
    )


# -- statuses ------------------------------------------------------------------------------


async def test_found_returns_the_stored_records(broker: Broker) -> None:
    put(broker.ctx, *(message(b"m%d" % i, "TagA") for i in range(3)))
    resp = await broker.pull(offset=0)
    assert resp.code == ResponseCode.SUCCESS
    assert resp.remark == "FOUND"
    assert offsets_of(resp) == (0, 3, 0, 3)
    records = record.decode_all(resp.body)
    assert [m.body for m in records] == [b"m0", b"m1", b"m2"]
    assert [m.queue_offset for m in records] == [0, 1, 2]
    assert all(m.topic == TOPIC and m.tags == "TagA" for m in records)
    assert broker.ctx.stats.get_total == 3


async def test_found_respects_max_msg_nums_and_offset(broker: Broker) -> None:
    put(broker.ctx, *(message(b"m%d" % i) for i in range(5)))
    resp = await broker.pull(offset=1, max_nums=2)
    assert resp.code == ResponseCode.SUCCESS
    assert offsets_of(resp) == (0, 3, 0, 5)
    assert [m.body for m in record.decode_all(resp.body)] == [b"m1", b"m2"]


async def test_offset_overflow_one_is_pull_not_found(broker: Broker) -> None:
    put(broker.ctx, message(b"a"), message(b"b"))
    resp = await broker.pull(offset=2)
    assert (resp.code, resp.remark) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE")
    assert offsets_of(resp) == (0, 2, 0, 2)
    assert resp.body == b""


async def test_offset_overflow_badly_moves_to_max(broker: Broker) -> None:
    put(broker.ctx, message(b"a"), message(b"b"))
    resp = await broker.pull(offset=10)
    assert (resp.code, resp.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY")
    assert offsets_of(resp) == (0, 2, 0, 2)


async def test_offset_too_small_moves_to_min(broker: Broker) -> None:
    put(broker.ctx, message(b"a"))
    resp = await broker.pull(offset=-5)
    assert (resp.code, resp.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL")
    assert offsets_of(resp) == (0, 0, 0, 1)


async def test_queue_never_written(broker: Broker) -> None:
    at_zero = await broker.pull(queue_id=1, offset=0)
    assert (at_zero.code, at_zero.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_MATCHED_LOGIC_QUEUE")
    assert offsets_of(at_zero) == (0, 0, 0, 0)
    further = await broker.pull(queue_id=1, offset=7)
    assert further.code == ResponseCode.PULL_OFFSET_MOVED
    assert offsets_of(further) == (0, 0, 0, 0)


async def test_no_matched_message_retries_from_past_the_scan(broker: Broker) -> None:
    put(broker.ctx, message(b"a", "TagC"), message(b"b", "TagC"), message(b"c"))
    resp = await broker.pull(subscription="TagA || TagB")
    assert (resp.code, resp.remark) == (ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE")
    assert offsets_of(resp) == (0, 3, 0, 3)
    assert resp.body == b""


def test_status_code_table() -> None:
    """Statuses a socket test cannot easily produce, straight from the mapping."""
    code = pull.pull_code
    assert code(GetStatus.NO_MESSAGE_IN_QUEUE, 0) == ResponseCode.PULL_NOT_FOUND
    assert code(GetStatus.NO_MESSAGE_IN_QUEUE, 3) == ResponseCode.PULL_OFFSET_MOVED
    assert code(GetStatus.OFFSET_FOUND_NULL, 3) == ResponseCode.PULL_NOT_FOUND
    assert code(GetStatus.MESSAGE_WAS_REMOVING, 3) == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert {code(s, 1) for s in GetStatus} <= {0, 19, 20, 21}


# -- tag filtering -------------------------------------------------------------------------


def tagged_batch() -> list[InnerMessage]:
    return [
        message(b"0", "TagA"),
        message(b"1", "TagC"),
        message(b"2", "TagB"),
        message(b"3"),
        message(b"4", "TagA"),
    ]


async def test_tag_filter_from_request_subscription(broker: Broker) -> None:
    put(broker.ctx, *tagged_batch())
    resp = await broker.pull(subscription="TagA || TagB")
    assert resp.code == ResponseCode.SUCCESS
    records = record.decode_all(resp.body)
    assert [(m.body, m.tags) for m in records] == [(b"0", "TagA"), (b"2", "TagB"), (b"4", "TagA")]
    assert [m.queue_offset for m in records] == [0, 2, 4]
    assert offsets_of(resp) == (0, 5, 0, 5)


async def test_tag_filter_from_heartbeat_subscription(broker: Broker) -> None:
    put(broker.ctx, *tagged_batch())
    await broker.register(parse_subscription(TOPIC, "TagA || TagB", 1000))
    resp = await broker.pull(sys_flag=0, subscription=None, sub_version=1000)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in record.decode_all(resp.body)] == [b"0", b"2", b"4"]


async def test_class_filter_flag_matches_everything(broker: Broker) -> None:
    put(broker.ctx, *tagged_batch())
    resp = await broker.pull(sys_flag=SUB | sysflag.FLAG_CLASS_FILTER, subscription="TagZ")
    assert resp.code == ResponseCode.SUCCESS
    assert len(record.decode_all(resp.body)) == 5


# -- subscription checks -------------------------------------------------------------------


async def test_no_heartbeat_is_subscription_not_exist(broker: Broker) -> None:
    put(broker.ctx, message(b"a"))
    resp = await broker.pull(sys_flag=0, subscription=None)
    assert resp.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert resp.remark == "the consumer's group info not exist"


async def test_heartbeat_without_this_topic_is_subscription_not_exist(broker: Broker) -> None:
    await broker.register(parse_subscription("OtherTopic", "*"))
    resp = await broker.pull(sys_flag=0, subscription=None)
    assert resp.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert resp.remark == "the consumer's subscription not exist"


async def test_older_registered_subscription_is_not_latest(broker: Broker) -> None:
    put(broker.ctx, message(b"a"))
    await broker.register(parse_subscription(TOPIC, "*", 100))
    newer = await broker.pull(sys_flag=0, subscription=None, sub_version=200)
    assert newer.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
    same = await broker.pull(sys_flag=0, subscription=None, sub_version=100)
    assert same.code == ResponseCode.SUCCESS
    go_style = await broker.pull(sys_flag=0, subscription=None, sub_version=0)
    assert go_style.code == ResponseCode.SUCCESS


async def test_broadcasting_refused_when_the_group_forbids_it(broker: Broker) -> None:
    put(broker.ctx, message(b"a"))
    await broker.register(parse_subscription(TOPIC, "*"), MessageModel.BROADCASTING)
    allowed = await broker.pull(sys_flag=0, subscription=None)
    assert allowed.code == ResponseCode.SUCCESS
    group = broker.ctx.groups.get(GROUP)
    assert group is not None
    broker.ctx.groups.update(replace(group, consume_broadcast_enable=False))
    refused = await broker.pull(sys_flag=0, subscription=None)
    assert refused.code == ResponseCode.NO_PERMISSION
    assert "broadcast" in (refused.remark or "")


async def test_registered_sql92_subscription_needs_property_filter(broker: Broker) -> None:
    sub = SubscriptionData(TOPIC, "a > 1", expression_type="SQL92")
    await broker.register(sub)
    resp = await broker.pull(sys_flag=0, subscription=None)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "SQL92" in (resp.remark or "")


async def test_request_subscription_parsing(broker: Broker) -> None:
    cases: list[tuple[str | None, str | None, int]] = [
        ("||", None, ResponseCode.SUBSCRIPTION_PARSE_FAILED),
        ("TagA", "XPATH", ResponseCode.SUBSCRIPTION_PARSE_FAILED),
        ("", "SQL92", ResponseCode.SUBSCRIPTION_PARSE_FAILED),
        ("a > 1", "SQL92", ResponseCode.SYSTEM_ERROR),
        ("TagA", "", ResponseCode.PULL_NOT_FOUND),
        ("TagA", "TAG", ResponseCode.PULL_NOT_FOUND),
        (None, None, ResponseCode.PULL_NOT_FOUND),
        ("", None, ResponseCode.PULL_NOT_FOUND),
    ]
    for subscription, expression_type, code in cases:
        resp = await broker.pull(subscription=subscription, expression_type=expression_type)
        assert resp.code == code, (subscription, expression_type)


# -- group, topic, queue and permission checks ---------------------------------------------


async def test_unknown_group_without_auto_create(broker: Broker) -> None:
    broker.ctx.groups.auto_create = False
    resp = await broker.pull(group="NewGroup")
    assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert "NewGroup" in (resp.remark or "")
    broker.ctx.groups.auto_create = True
    assert (await broker.pull(group="NewGroup")).code == ResponseCode.PULL_NOT_FOUND


async def test_group_with_consume_disabled(broker: Broker) -> None:
    group = broker.ctx.groups.get(GROUP)
    assert group is not None
    broker.ctx.groups.update(replace(group, consume_enable=False))
    resp = await broker.pull()
    assert resp.code == ResponseCode.NO_PERMISSION


async def test_broker_not_readable(broker: Broker) -> None:
    broker.ctx.permission = permission.PERM_WRITE
    resp = await broker.pull()
    assert resp.code == ResponseCode.NO_PERMISSION
    assert "pulling message is forbidden" in (resp.remark or "")


async def test_unknown_topic(broker: Broker) -> None:
    resp = await broker.pull(topic="NoSuchTopic")
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST


async def test_topic_not_readable(broker: Broker) -> None:
    broker.ctx.topics.update(TopicConfig("WriteOnly", 4, 4, permission.PERM_WRITE))
    resp = await broker.pull(topic="WriteOnly")
    assert resp.code == ResponseCode.NO_PERMISSION


async def test_queue_id_out_of_range(broker: Broker) -> None:
    for queue_id in (-1, 4, 100):
        resp = await broker.pull(queue_id=queue_id)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert f"queueId[{queue_id}] is illegal" in (resp.remark or "")


async def test_missing_header_field_is_system_error(broker: Broker) -> None:
    ext = pull_request().ext_fields
    del ext["queueOffset"]
    resp = await broker.client.invoke(
        broker.address, RemotingCommand.request(RequestCode.PULL_MESSAGE, ext), timeout=10
    )
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "queueOffset" in (resp.remark or "")


# -- offset commit -------------------------------------------------------------------------


async def test_commit_flag_stores_the_offset_whatever_the_result(broker: Broker) -> None:
    offsets = broker.ctx.offsets
    flag = SUB | sysflag.FLAG_COMMIT_OFFSET
    found_none = await broker.pull(sys_flag=flag, commit_offset=5, offset=0)
    assert found_none.code == ResponseCode.PULL_NOT_FOUND
    assert offsets.query(GROUP, TOPIC, 0) == 5
    moved = await broker.pull(sys_flag=flag, commit_offset=3, offset=9)
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED
    assert offsets.query(GROUP, TOPIC, 0) == 3
    await broker.pull(sys_flag=SUB, commit_offset=8)
    assert offsets.query(GROUP, TOPIC, 0) == 3


async def test_no_commit_when_a_check_fails(broker: Broker) -> None:
    flag = SUB | sysflag.FLAG_COMMIT_OFFSET
    resp = await broker.pull(sys_flag=flag, commit_offset=5, queue_id=9)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert broker.ctx.offsets.query(GROUP, TOPIC, 9) == -1


async def test_slave_neither_commits_nor_corrects_offsets(broker: Broker) -> None:
    ctx = broker.ctx
    put(ctx, message(b"a"))
    ctx.settings = ctx.settings.model_copy(update={"broker_role": BrokerRole.SLAVE})
    flag = SUB | sysflag.FLAG_COMMIT_OFFSET
    resp = await broker.pull(sys_flag=flag, commit_offset=1, offset=9)
    assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert offsets_of(resp) == (0, 9, 0, 1)
    assert ctx.offsets.query(GROUP, TOPIC, 0) == -1
    assert (await broker.pull(offset=0)).code == ResponseCode.SUCCESS


# -- which broker next ---------------------------------------------------------------------


async def test_the_master_is_suggested_unless_slave_read_is_enabled(broker: Broker) -> None:
    put(broker.ctx, message(b"a"), message(b"b"))
    assert not broker.ctx.settings.slave_read_enable
    assert offsets_of(await broker.pull(offset=0))[0] == 0


#: Every pull reads "behind the memory": the suggestion follows the group's settings.
SLOW = {"slave_read_enable": True, "access_message_in_memory_max_ratio": 0}


@pytest.mark.parametrize("broker_settings", [SLOW], indirect=True)
async def test_a_consumer_behind_the_memory_is_sent_to_a_slave(broker: Broker) -> None:
    ctx = broker.ctx
    put(ctx, message(b"a"), message(b"b"))
    assert offsets_of(await broker.pull(offset=0))[0] == 1  # whichBrokerWhenConsumeSlowly
    group = ctx.groups.get(GROUP)
    assert group is not None
    ctx.groups.update(replace(group, which_broker_when_consume_slowly=2))
    assert offsets_of(await broker.pull(offset=0))[0] == 2
    ctx.settings = ctx.settings.model_copy(update={"slave_read_enable": False})
    assert offsets_of(await broker.pull(offset=0))[0] == 0


@pytest.mark.parametrize("broker_settings", [{"slave_read_enable": True}], indirect=True)
async def test_a_consumer_within_the_memory_is_sent_to_the_groups_broker(broker: Broker) -> None:
    ctx = broker.ctx
    put(ctx, message(b"a"), message(b"b"))
    assert offsets_of(await broker.pull(offset=0))[0] == 0  # the group's brokerId
    group = ctx.groups.get(GROUP)
    assert group is not None
    ctx.groups.update(replace(group, broker_id=1))
    assert offsets_of(await broker.pull(offset=0))[0] == 1


# -- zero copy -----------------------------------------------------------------------------


async def test_single_span_body_is_the_store_view(context: BrokerContext) -> None:
    context.topics.update(TopicConfig(TOPIC, 4, 4))
    put(context, message(b"x"), message(b"y"))
    holds = PullRequestHoldService(context.store)
    processor = pull.PullProcessor(context, holds)
    reply = processor.pull_message(Connection(), pull_request())
    assert isinstance(reply, RemotingCommand)
    assert reply.code == ResponseCode.SUCCESS
    assert isinstance(reply.body, memoryview)
    assert [m.body for m in record.decode_all(reply.body)] == [b"x", b"y"]
    reply.body.release()
