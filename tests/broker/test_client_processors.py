"""Client management over real sockets: HEART_BEAT from every client family,
NOTIFY_CONSUMER_IDS_CHANGED to group members, UNREGISTER_CLIENT, expiry,
GET_CONSUMER_LIST_BY_GROUP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from rocketkube.broker.consumers.groups import SubscriptionGroupConfig
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import client
from rocketkube.common import fastjson
from rocketkube.common.message.hashing import tags_code
from rocketkube.common.protocol import admin_bodies
from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    parse_subscription,
)
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import FLAG_ONEWAY, RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

GROUP = "GroupA"
TOPIC = "TopicA"
TIMEOUT = 10.0
V4_1_0_SNAPSHOT = 232


class FakeClock:
    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


class Member:
    """A client with its own connection that records the broker's requests to it."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.received: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.client = RemotingClient(
            Dispatcher({RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._record})
        )

    def _record(self, conn: Connection, req: RemotingCommand) -> None:
        self.received.put_nowait(req)

    async def invoke(self, req: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(self.address, req, timeout=TIMEOUT)

    async def heartbeat(
        self, body: bytes, language: str = "JAVA", version: int = 409
    ) -> RemotingCommand:
        req = RemotingCommand.request(RequestCode.HEART_BEAT, body=body, language=language)
        req.version = version
        return await self.invoke(req)

    async def notification(self) -> RemotingCommand:
        return await asyncio.wait_for(self.received.get(), TIMEOUT)

    async def assert_no_notification(self) -> None:
        """The broker writes in order: a reply to a later request proves nothing came."""
        await self.invoke(consumer_list_request("any-group"))
        assert self.received.empty()

    async def close(self) -> None:
        await self.client.close()


@dataclass
class Broker:
    ctx: BrokerContext
    server: RemotingServer
    address: str

    def member(self) -> Member:
        return Member(self.address)

    async def server_conn_count(self, count: int) -> None:
        for _ in range(1000):
            if len(self.server.connections) == count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"expected {count} server connections")


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    client.install(context)
    server = RemotingServer(
        Dispatcher(client.table(context)),
        "127.0.0.1",
        0,
        on_close=context.clients.on_channel_closed,
    )
    await server.start()
    yield Broker(context, server, f"127.0.0.1:{server.port}")
    await server.stop()


@pytest.fixture
async def members(broker: Broker) -> AsyncIterator[list[Member]]:
    made = [broker.member() for _ in range(3)]
    yield made
    for m in made:
        await m.close()


def java_heartbeat(client_id: str, group: str = GROUP, topic: str = TOPIC) -> bytes:
    return HeartbeatData(
        client_id,
        [ConsumerData(group, subscriptions=[parse_subscription(topic, "TagA", 1)])],
        ["CLIENT_INNER_PRODUCER"],
    ).encode()


def consumer_list_request(group: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})


# -- heartbeat bodies of every client family -------------------------------------------------

JAVA_BODY = (
    b'{"clientID":"10.0.0.9@12345#123456789",'
    b'"consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
    b'"consumeType":"CONSUME_PASSIVELY","groupName":"GroupA","messageModel":"CLUSTERING",'
    b'"subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],'
    b'"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,'
    b'"tagsSet":["TagA"],"topic":"TopicA"},{"classFilterMode":false,"codeSet":[],'
    b'"expressionType":"TAG","subString":"*","subVersion":1700000000001,"tagsSet":[],'
    b'"topic":"%RETRY%GroupA"}],"unitMode":false}],'
    b'"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"},{"groupName":"pg1"}]}'
)
CPP_BODY = (
    b'{"clientID":"127.0.0.1@4242#cpp","consumerDataSet":[{"consumeFromWhere":4,'
    b'"consumeType":1,"groupName":"GroupA","messageModel":0,"subscriptionDataSet":['
    b'{"codeSet":[2598919,2598920],"subString":"TagA || TagB","subVersion":"1700000000000",'
    b'"tagsSet":["TagA","TagB"],"topic":"TopicA"},'
    b'{"subString":"*","subVersion":"1700000000001","topic":"%RETRY%GroupA"}]}]}\n'
)
GO_BODY = (
    b'{"clientID":"10.0.0.7@9@go","producerDataSet":[{"groupName":"pg1"}],'
    b'"consumerDataSet":[{"groupName":"GroupA","consumeType":"CONSUME_ACTIVELY",'
    b'"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",'
    b'"subscriptionDataSet":[{"classFilterMode":false,"topic":"TopicA","subString":"TagA",'
    b'"tagsSet":["TagA"],"codeSet":["2598919"],"subVersion":1700000000000000000,'
    b'"expressionType":"TAG"}],"unitMode":false}]}'
)
ALI_ONS_BODY = (
    b'{"clientID":"127.0.0.1@77","producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}],'
    b'"consumerDataSet":[{"groupName":"GroupA","consumeType":"CONSUME_PASSIVELY",'
    b'"messageModel":"BROADCASTING","consumeFromWhere":"CONSUME_FROM_TIMESTAMP",'
    b'"subscriptionDataSet":[{"topic":"TopicA","subString":"TagB","classFilterMode":false,'
    b'"tagsSet":["TagB"],"codeSet":[2598920],"subVersion":1700000000002}],"unitMode":true}]}'
)


@pytest.mark.parametrize(
    (
        "body", "language", "version", "client_id", "consume_type", "model", "from_where",
        "tags", "sub_version", "producers",
    ),
    [
        pytest.param(
            JAVA_BODY, "JAVA", 409, "10.0.0.9@12345#123456789",
            ConsumeType.CONSUME_PASSIVELY, MessageModel.CLUSTERING,
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ["TagA"], 1700000000000,
            ["CLIENT_INNER_PRODUCER", "pg1"], id="java",
        ),
        pytest.param(
            CPP_BODY, "CPP", 333, "127.0.0.1@4242#cpp",
            ConsumeType.CONSUME_PASSIVELY, MessageModel.BROADCASTING,
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, ["TagA", "TagB"], 1700000000000,
            [], id="cpp",
        ),
        pytest.param(
            GO_BODY, "GO", 317, "10.0.0.7@9@go",
            ConsumeType.CONSUME_ACTIVELY, MessageModel.CLUSTERING,
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, ["TagA"], 1700000000000000000,
            ["pg1"], id="go",
        ),
        pytest.param(
            ALI_ONS_BODY, "JAVA", 121, "127.0.0.1@77",
            ConsumeType.CONSUME_PASSIVELY, MessageModel.BROADCASTING,
            ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, ["TagB"], 1700000000002,
            ["CLIENT_INNER_PRODUCER"], id="ali-ons",
        ),
    ],
)  # fmt: skip
async def test_heartbeat_from_every_client_family(
    broker: Broker,
    members: list[Member],
    body: bytes,
    language: str,
    version: int,
    client_id: str,
    consume_type: ConsumeType,
    model: MessageModel,
    from_where: ConsumeFromWhere,
    tags: list[str],
    sub_version: int,
    producers: list[str],
) -> None:
    ctx = broker.ctx
    resp = await members[0].heartbeat(body, language, version)
    assert resp.code == ResponseCode.SUCCESS
    assert resp.version >= V4_1_0_SNAPSHOT  # Java clients refuse SQL92 subscriptions below
    info = ctx.clients.consumer_group(GROUP)
    assert info is not None
    assert (info.consume_type, info.message_model, info.consume_from_where) == (
        consume_type, model, from_where,
    )  # fmt: skip
    sub = info.subscriptions[TOPIC]
    assert sub.tags_set == tags
    assert sub.code_set == [tags_code(t) for t in tags]
    assert sub.sub_version == sub_version
    assert sub.expression_type == "TAG"
    (channel,) = info.channels.values()
    assert (channel.client_id, channel.language, channel.version) == (client_id, language, version)
    assert info.client_ids() == [client_id]
    retry = ctx.topics.get("%RETRY%" + GROUP)
    assert retry is not None
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (1, 1, 6)
    # a unitMode consumer (ali-ons here) gets the unit-sub flag on its retry topic
    assert retry.topic_sys_flag == (2 if b'"unitMode":true' in body else 0)
    for group in producers:
        assert [c.client_id for c in ctx.clients.producer_channels(group)] == [client_id]


async def test_heartbeat_retry_topic_follows_the_group_config(
    broker: Broker, members: list[Member]
) -> None:
    broker.ctx.groups.update(SubscriptionGroupConfig("G3", retry_queue_nums=3))
    resp = await members[0].heartbeat(java_heartbeat("c1", group="G3"))
    assert resp.code == ResponseCode.SUCCESS
    retry = broker.ctx.topics.get("%RETRY%G3")
    assert retry is not None
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (3, 3, 6)


async def test_heartbeat_without_group_config_registers_but_creates_no_retry_topic(
    broker: Broker, members: list[Member]
) -> None:
    broker.ctx.groups.auto_create = False
    resp = await members[0].heartbeat(java_heartbeat("c1", group="Unknown"))
    assert resp.code == ResponseCode.SUCCESS
    assert broker.ctx.topics.get("%RETRY%Unknown") is None
    assert broker.ctx.clients.consumer_group("Unknown") is not None


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[1,2]",
        b'{"clientID":"c","consumerDataSet":[{"consumeType":1}]}',
        b'{"clientID":"c","consumerDataSet":["x"]}',
        b'{"consumerDataSet":[]}',
    ],
)
async def test_bad_heartbeat_body_is_a_system_error(
    broker: Broker, members: list[Member], body: bytes
) -> None:
    resp = await members[0].heartbeat(body)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark
    assert broker.ctx.clients.consumers == {}


# -- group membership and notifications ---------------------------------------------------


async def test_second_consumer_joining_notifies_the_first(
    broker: Broker, members: list[Member]
) -> None:
    first, second, _ = members
    assert (await first.heartbeat(java_heartbeat("c1"))).code == ResponseCode.SUCCESS
    own = await first.notification()  # a new channel changes the group: it is told too
    assert own.ext_fields == {"consumerGroup": GROUP}
    assert (await second.heartbeat(java_heartbeat("c2"))).code == ResponseCode.SUCCESS
    notice = await first.notification()
    assert notice.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
    assert notice.flag & FLAG_ONEWAY
    assert notice.ext_fields == {"consumerGroup": GROUP}
    assert notice.body == b""
    assert (await second.notification()).ext_fields == {"consumerGroup": GROUP}
    # A repeated heartbeat with the same subscriptions changes nothing.
    assert (await second.heartbeat(java_heartbeat("c2"))).code == ResponseCode.SUCCESS
    await first.assert_no_notification()
    await second.assert_no_notification()
    resp = await first.invoke(consumer_list_request(GROUP))
    assert resp.code == ResponseCode.SUCCESS
    assert fastjson.loads(resp.body) == {"consumerIdList": ["c1", "c2"]}


async def test_subscription_change_notifies_the_group(
    broker: Broker, members: list[Member]
) -> None:
    first, second, _ = members
    await first.heartbeat(java_heartbeat("c1"))
    await second.heartbeat(java_heartbeat("c2"))
    await first.notification()
    await first.notification()
    await second.notification()
    await second.heartbeat(java_heartbeat("c2", topic="TopicB"))
    assert (await first.notification()).ext_fields == {"consumerGroup": GROUP}


async def test_closing_a_consumer_connection_notifies_the_other(
    broker: Broker, members: list[Member]
) -> None:
    first, second, _ = members
    await first.heartbeat(java_heartbeat("c1"))
    await second.heartbeat(java_heartbeat("c2"))
    await first.notification()
    await first.notification()
    await second.close()
    notice = await first.notification()
    assert notice.ext_fields == {"consumerGroup": GROUP}
    info = broker.ctx.clients.consumer_group(GROUP)
    assert info is not None
    assert info.client_ids() == ["c1"]


async def test_notifications_respect_the_group_and_broker_switches(
    broker: Broker, members: list[Member]
) -> None:
    first, second, third = members
    broker.ctx.groups.update(
        SubscriptionGroupConfig(GROUP, notify_consumer_ids_changed_enable=False)
    )
    await first.heartbeat(java_heartbeat("c1"))
    await second.heartbeat(java_heartbeat("c2"))
    await first.assert_no_notification()
    broker.ctx.groups.update(SubscriptionGroupConfig(GROUP))
    broker.ctx.settings = broker.ctx.settings.model_copy(
        update={"notify_consumer_ids_changed_enable": False}
    )
    await third.heartbeat(java_heartbeat("c3"))
    await first.assert_no_notification()
    await third.assert_no_notification()


async def test_expired_channel_is_dropped_and_the_group_notified(
    broker: Broker, members: list[Member]
) -> None:
    ctx = broker.ctx
    clock = FakeClock()
    ctx.clock = clock
    first, second, _ = members
    await first.heartbeat(java_heartbeat("c1"))
    await first.heartbeat(java_heartbeat("c1", group="OtherGroup"))
    clock.now_ms += 100_000
    await second.heartbeat(java_heartbeat("c2"))
    for member in (first, second):
        while not member.received.empty():
            member.received.get_nowait()
    await broker.server_conn_count(2)
    # 120 s after c1's last heartbeat nothing expires; a moment later c1 does.
    assert ctx.clients.expire(clock.now_ms + 20_000, 120_000) == []
    stale = ctx.clients.expire(clock.now_ms + 20_001, 120_000)
    assert len(stale) == 1
    assert stale[0].remote_address != "?"
    info = ctx.clients.consumer_group(GROUP)
    assert info is not None
    assert info.client_ids() == ["c2"]
    assert ctx.clients.consumer_group("OtherGroup") is None
    assert ctx.clients.producer_channels("CLIENT_INNER_PRODUCER")[0].client_id == "c2"
    assert (await second.notification()).ext_fields == {"consumerGroup": GROUP}


# -- UNREGISTER_CLIENT ---------------------------------------------------------------------


async def test_unregister_consumer_notifies_the_rest(broker: Broker, members: list[Member]) -> None:
    first, second, _ = members
    await first.heartbeat(java_heartbeat("c1"))
    await second.heartbeat(java_heartbeat("c2"))
    await first.notification()
    await first.notification()
    req = RemotingCommand.request(
        RequestCode.UNREGISTER_CLIENT, {"clientID": "c2", "consumerGroup": GROUP}
    )
    assert (await second.invoke(req)).code == ResponseCode.SUCCESS
    assert (await first.notification()).ext_fields == {"consumerGroup": GROUP}
    info = broker.ctx.clients.consumer_group(GROUP)
    assert info is not None
    assert info.client_ids() == ["c1"]
    # the producer registration of c2 stays
    assert len(broker.ctx.clients.producer_channels("CLIENT_INNER_PRODUCER")) == 2


async def test_unregister_producer_with_cpp_empty_strings(
    broker: Broker, members: list[Member]
) -> None:
    first = members[0]
    await first.heartbeat(
        HeartbeatData("cpp-1", [ConsumerData(GROUP)], ["ProducerG"]).encode(), "CPP", 333
    )
    req = RemotingCommand.request(
        RequestCode.UNREGISTER_CLIENT,
        {"clientID": "cpp-1", "producerGroup": "ProducerG", "consumerGroup": "",
         "Signature": "", "AccessKey": "", "OnsChannel": "ALIYUN"},
        language="CPP",
    )  # fmt: skip
    assert (await first.invoke(req)).code == ResponseCode.SUCCESS
    assert broker.ctx.clients.producer_channels("ProducerG") == []
    assert broker.ctx.clients.consumer_group(GROUP) is not None
    req = RemotingCommand.request(
        RequestCode.UNREGISTER_CLIENT,
        {"clientID": "cpp-1", "producerGroup": "", "consumerGroup": GROUP},
    )
    assert (await first.invoke(req)).code == ResponseCode.SUCCESS
    assert broker.ctx.clients.consumer_group(GROUP) is None


async def test_unregister_without_client_id_is_refused(
    broker: Broker, members: list[Member]
) -> None:
    req = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"consumerGroup": GROUP})
    resp = await members[0].invoke(req)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None
    assert "clientID" in resp.remark


# -- GET_CONSUMER_LIST_BY_GROUP -------------------------------------------------------------


async def test_consumer_list_of_unknown_group_is_an_error(
    broker: Broker, members: list[Member]
) -> None:
    resp = await members[0].invoke(consumer_list_request("NoSuchGroup"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "no consumer for this group, NoSuchGroup"
    assert resp.body == b""


async def test_consumer_list_body_decodes(broker: Broker, members: list[Member]) -> None:
    for index, member in enumerate(members):
        await member.heartbeat(java_heartbeat(f"c{3 - index}"))
    resp = await members[0].invoke(consumer_list_request(GROUP))
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == b'{"consumerIdList":["c1","c2","c3"]}'
    assert admin_bodies.decode_consumer_id_list(resp.body) == ["c1", "c2", "c3"]
