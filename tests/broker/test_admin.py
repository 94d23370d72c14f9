"""Admin codes over real sockets (topics, groups, stats, connections, runtime info, broker
config), and the admin bodies in fastjson's object-keyed form."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from rocketkube.broker.consumers.groups import SubscriptionGroupConfig
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import admin, admin_config, admin_stats, client
from rocketkube.broker.settings import BrokerRole
from rocketkube.broker.store import InnerMessage
from rocketkube.common import fastjson, properties_file
from rocketkube.common.protocol import admin_bodies, route
from rocketkube.common.protocol.admin_bodies import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    TopicOffset,
    TopicStatsTable,
)
from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    parse_subscription,
)
from rocketkube.common.protocol.topic_config import TopicConfig, TopicConfigWrapper
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TIMEOUT = 10.0
C = RequestCode


class FakeClock:
    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


@dataclass
class Broker:
    ctx: BrokerContext
    client: RemotingClient
    address: str
    topic_changes: list[int] = field(default_factory=list)

    async def invoke(
        self, code: int, ext: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        req = RemotingCommand.request(code, ext, body, language="JAVA")
        return await self.client.invoke(self.address, req, timeout=TIMEOUT)

    async def client_addr(self) -> str:
        """How the broker sees this test's connection."""
        return (await self.client.connection(self.address)).local_address

    def put(self, topic: str, queue_id: int, count: int) -> None:
        messages = [InnerMessage(topic, queue_id, b"x" * 10) for _ in range(count)]
        assert self.ctx.store.put_messages(messages).ok

    async def heartbeat(self, data: HeartbeatData) -> None:
        resp = await self.invoke(C.HEART_BEAT, body=data.encode())
        assert resp.code == ResponseCode.SUCCESS


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    table = {**client.table(context), **admin.table(context)}
    server = RemotingServer(
        Dispatcher(table), "127.0.0.1", 0, on_close=context.clients.on_channel_closed
    )
    await server.start()
    remoting = RemotingClient()
    b = Broker(context, remoting, f"127.0.0.1:{server.port}")
    context.topics.on_change = lambda: b.topic_changes.append(context.topics.data_version.counter)
    yield b
    await remoting.close()
    await server.stop()


def make_slave(ctx: BrokerContext) -> None:
    ctx.settings = ctx.settings.model_copy(update={"broker_role": BrokerRole.SLAVE})


def test_admin_table_holds_every_admin_code(context: BrokerContext) -> None:
    assert set(admin.table(context)) == {
        C.UPDATE_AND_CREATE_TOPIC, C.DELETE_TOPIC_IN_BROKER, C.GET_ALL_TOPIC_CONFIG,
        C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        C.DELETE_SUBSCRIPTIONGROUP, C.GET_TOPIC_STATS_INFO, C.GET_CONSUME_STATS,
        C.GET_CONSUMER_CONNECTION_LIST, C.GET_PRODUCER_CONNECTION_LIST,
        C.GET_BROKER_RUNTIME_INFO, C.GET_BROKER_CONFIG, C.UPDATE_BROKER_CONFIG,
        C.QUERY_TOPIC_CONSUME_BY_WHO,
    }  # fmt: skip


# -- UPDATE_AND_CREATE_TOPIC (17) ------------------------------------------------------------

CREATE = {
    "topic": "NewTopic",
    "defaultTopic": "TBW102",
    "readQueueNums": "4",
    "writeQueueNums": "2",
    "perm": "6",
    "topicFilterType": "SINGLE_TAG",
    "topicSysFlag": "0",
    "order": "false",
}


async def test_create_and_update_topic(broker: Broker) -> None:
    topics = broker.ctx.topics
    counter = topics.data_version.counter
    resp = await broker.invoke(C.UPDATE_AND_CREATE_TOPIC, CREATE)
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
    assert topics.get("NewTopic") == TopicConfig("NewTopic", 4, 2, 6, "SINGLE_TAG", 0, False)
    assert broker.topic_changes == [counter + 1]  # data version bumped, registration asked
    ext = {**CREATE, "readQueueNums": "8", "writeQueueNums": "8", "perm": "4",
           "topicFilterType": "MULTI_TAG", "order": "true"}  # fmt: skip
    del ext["topicSysFlag"]  # optional
    assert (await broker.invoke(C.UPDATE_AND_CREATE_TOPIC, ext)).code == ResponseCode.SUCCESS
    assert topics.get("NewTopic") == TopicConfig("NewTopic", 8, 8, 4, "MULTI_TAG", 0, True)
    assert broker.topic_changes == [counter + 1, counter + 2]


@pytest.mark.parametrize(
    ("change", "remark"),
    [
        ({"topic": "bad topic"}, "contains illegal characters"),
        ({"topic": ""}, "The specified topic is blank."),
        ({"topic": "T" * 128}, "longer than topic max length"),
        ({"topic": "TBW102"}, "The topic[TBW102] is conflict with system topic."),
        ({"topic": "SCHEDULE_TOPIC_XXXX"}, "is conflict with system topic"),
        ({"topic": "rmq_sys_mine"}, "is conflict with system topic"),
        ({"readQueueNums": "0"}, "readQueueNums 0 is out of range"),
        ({"writeQueueNums": "2000"}, "writeQueueNums 2000 is out of range"),
        ({"perm": "16"}, "perm 16 is not a permission"),
        ({"topicFilterType": "ALL"}, "is not SINGLE_TAG or MULTI_TAG"),
        ({"order": None}, "<order> is null"),
        ({"readQueueNums": "four"}, "<readQueueNums> has an invalid value"),
    ],
)
async def test_create_topic_refusals(
    broker: Broker, change: dict[str, str | None], remark: str
) -> None:
    ext = {k: v for k, v in {**CREATE, **change}.items() if v is not None}
    before = dict(broker.ctx.topics.table)
    resp = await broker.invoke(C.UPDATE_AND_CREATE_TOPIC, ext)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None
    assert remark in resp.remark
    assert broker.ctx.topics.table == before
    assert broker.topic_changes == []


async def test_slave_refuses_topic_and_group_writes(broker: Broker) -> None:
    make_slave(broker.ctx)
    broker.ctx.topics.update(TopicConfig("Kept", 1, 1))
    broker.topic_changes.clear()
    for code, ext, body in [
        (C.UPDATE_AND_CREATE_TOPIC, CREATE, b""),
        (C.DELETE_TOPIC_IN_BROKER, {"topic": "Kept"}, b""),
        (C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, b'{"groupName":"G"}'),
        (C.DELETE_SUBSCRIPTIONGROUP, {"groupName": "TOOLS_CONSUMER"}, b""),
    ]:
        resp = await broker.invoke(code, ext, body)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert resp.remark == admin.SLAVE_REMARK
    assert broker.ctx.topics.get("NewTopic") is None
    assert broker.ctx.topics.get("Kept") is not None
    assert "G" not in broker.ctx.groups.table
    assert "TOOLS_CONSUMER" in broker.ctx.groups.table
    assert broker.topic_changes == []


# -- DELETE_TOPIC_IN_BROKER (215) ------------------------------------------------------------


async def test_delete_topic_removes_config_queues_and_offsets(broker: Broker) -> None:
    ctx = broker.ctx
    ctx.topics.update(TopicConfig("Doomed", 2, 2))
    broker.put("Doomed", 0, 2)
    broker.put("Doomed", 1, 1)
    ctx.offsets.commit("G", "Doomed", 0, 1)
    ctx.offsets.commit("G", "Survivor", 0, 1)
    broker.topic_changes.clear()
    resp = await broker.invoke(C.DELETE_TOPIC_IN_BROKER, {"topic": "Doomed"})
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
    assert ctx.topics.get("Doomed") is None
    assert ctx.store.queue_ids("Doomed") == []
    assert ctx.store.max_offset("Doomed", 0) == 0
    assert ctx.offsets.groups_of_topic("Doomed") == set()
    assert ctx.offsets.topics_of_group("G") == {"Survivor"}
    assert len(broker.topic_changes) == 1
    # deleting what is gone is fine (Java answers 0 too)
    assert (await broker.invoke(C.DELETE_TOPIC_IN_BROKER, {"topic": "Doomed"})).code == 0


async def test_delete_system_topic_is_refused(broker: Broker) -> None:
    resp = await broker.invoke(C.DELETE_TOPIC_IN_BROKER, {"topic": "SCHEDULE_TOPIC_XXXX"})
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic."
    assert broker.ctx.topics.get("SCHEDULE_TOPIC_XXXX") is not None


# -- GET_ALL_TOPIC_CONFIG (21) ---------------------------------------------------------------


async def test_get_all_topic_config(broker: Broker) -> None:
    broker.ctx.topics.update(TopicConfig("Listed", 3, 5, 6, "MULTI_TAG", 0, True))
    resp = await broker.invoke(C.GET_ALL_TOPIC_CONFIG)
    assert resp.code == ResponseCode.SUCCESS
    data = fastjson.loads(resp.body)
    assert data["topicConfigTable"]["Listed"] == {
        "order": True, "perm": 6, "readQueueNums": 3, "topicFilterType": "MULTI_TAG",
        "topicName": "Listed", "topicSysFlag": 0, "writeQueueNums": 5,
    }  # fmt: skip
    assert data["dataVersion"] == broker.ctx.topics.data_version.to_json()
    wrapper = TopicConfigWrapper.from_json(data)
    assert wrapper.topic_config_table == broker.ctx.topics.table
    assert b" " not in bytes(resp.body)


# -- subscription groups (200/201/207) -------------------------------------------------------


async def test_create_subscription_group(broker: Broker) -> None:
    body = b'{"groupName":"G1","retryQueueNums":2,"retryMaxTimes":5,"consumeBroadcastEnable":false}'
    resp = await broker.invoke(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
    assert broker.ctx.groups.table["G1"] == SubscriptionGroupConfig(
        "G1", retry_queue_nums=2, retry_max_times=5, consume_broadcast_enable=False
    )
    resp = await broker.invoke(C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    assert resp.code == ResponseCode.SUCCESS
    data = fastjson.loads(resp.body)
    assert data["subscriptionGroupTable"]["G1"] == {
        "brokerId": 0, "consumeBroadcastEnable": False, "consumeEnable": True,
        "consumeFromMinEnable": True, "groupName": "G1", "notifyConsumerIdsChangedEnable": True,
        "retryMaxTimes": 5, "retryQueueNums": 2, "whichBrokerWhenConsumeSlowly": 1,
    }  # fmt: skip
    assert "TOOLS_CONSUMER" in data["subscriptionGroupTable"]
    assert data["dataVersion"] == broker.ctx.groups.data_version.to_json()


@pytest.mark.parametrize(
    ("body", "remark"),
    [
        (b"", "malformed SubscriptionGroupConfig"),
        (b"[1]", "malformed SubscriptionGroupConfig"),
        (b'{"retryQueueNums":1}', "malformed SubscriptionGroupConfig"),
        (b'{"groupName":"G","retryQueueNums":"many"}', "malformed SubscriptionGroupConfig"),
        (b'{"groupName":"  "}', "is blank or longer than 255"),
    ],
)
async def test_create_subscription_group_refusals(broker: Broker, body: bytes, remark: str) -> None:
    before = dict(broker.ctx.groups.table)
    resp = await broker.invoke(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None
    assert remark in resp.remark
    assert broker.ctx.groups.table == before


async def test_delete_subscription_group_with_and_without_offsets(broker: Broker) -> None:
    ctx = broker.ctx
    for group in ("Keep", "Drop"):
        ctx.groups.update(SubscriptionGroupConfig(group))
        ctx.offsets.commit(group, "T", 0, 7)
    resp = await broker.invoke(C.DELETE_SUBSCRIPTIONGROUP, {"groupName": "Keep"})
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
    resp = await broker.invoke(
        C.DELETE_SUBSCRIPTIONGROUP, {"groupName": "Drop", "removeOffset": "true"}
    )
    assert resp.code == ResponseCode.SUCCESS
    assert "Keep" not in ctx.groups.table
    assert "Drop" not in ctx.groups.table
    assert ctx.offsets.query("Keep", "T", 0) == 7
    assert ctx.offsets.query("Drop", "T", 0) == -1


# -- GET_TOPIC_STATS_INFO (202) --------------------------------------------------------------


async def test_topic_stats(broker: Broker) -> None:
    ctx = broker.ctx
    ctx.topics.update(TopicConfig("StatsTopic", 4, 2))  # one entry per *write* queue
    broker.put("StatsTopic", 1, 3)
    last = ctx.store.store_timestamp("StatsTopic", 1, 2)
    assert last > 0
    resp = await broker.invoke(C.GET_TOPIC_STATS_INFO, {"topic": "StatsTopic"})
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == (
        b'{"offsetTable":{'
        b'{"brokerName":"broker-a","queueId":0,"topic":"StatsTopic"}:'
        b'{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},'
        b'{"brokerName":"broker-a","queueId":1,"topic":"StatsTopic"}:'
        b'{"lastUpdateTimestamp":' + str(last).encode() + b',"maxOffset":3,"minOffset":0}}}'
    )
    stats = TopicStatsTable.decode(resp.body)
    assert stats.offset_table == {
        MessageQueue("StatsTopic", "broker-a", 0): TopicOffset(0, 0, 0),
        MessageQueue("StatsTopic", "broker-a", 1): TopicOffset(0, 3, last),
    }


async def test_topic_stats_of_unknown_topic(broker: Broker) -> None:
    resp = await broker.invoke(C.GET_TOPIC_STATS_INFO, {"topic": "Nope"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == "topic[Nope] not exist"


# -- GET_CONSUME_STATS (208) -----------------------------------------------------------------


async def test_consume_stats_of_one_topic(broker: Broker) -> None:
    ctx = broker.ctx
    ctx.topics.update(TopicConfig("CT", 2, 2))
    broker.put("CT", 0, 3)
    ctx.offsets.commit("G", "CT", 0, 2)
    consumed = ctx.store.store_timestamp("CT", 0, 1)
    resp = await broker.invoke(C.GET_CONSUME_STATS, {"consumerGroup": "G", "topic": "CT"})
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == (
        b'{"consumeTps":0.0,"offsetTable":{'
        b'{"brokerName":"broker-a","queueId":0,"topic":"CT"}:'
        b'{"brokerOffset":3,"consumerOffset":2,"lastTimestamp":' + str(consumed).encode() + b"},"
        b'{"brokerName":"broker-a","queueId":1,"topic":"CT"}:'
        b'{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0}}}'
    )
    stats = ConsumeStats.decode(resp.body)
    assert stats.diff_total == 1
    assert stats.offset_table[MessageQueue("CT", "broker-a", 0)] == OffsetWrapper(3, 2, consumed)


async def test_consume_stats_of_every_topic_of_the_group(broker: Broker) -> None:
    ctx = broker.ctx
    ctx.topics.update(TopicConfig("CT", 1, 1))
    ctx.topics.update(TopicConfig("CT2", 1, 1))
    broker.put("CT2", 0, 4)
    ctx.offsets.commit("G", "CT", 0, 0)
    ctx.offsets.commit("G", "CT2", 0, 4)
    ctx.offsets.commit("G", "Deleted", 0, 1)  # no topic config: skipped
    for ext in ({"consumerGroup": "G"}, {"consumerGroup": "G", "topic": ""}):
        stats = ConsumeStats.decode((await broker.invoke(C.GET_CONSUME_STATS, ext)).body)
        assert sorted(stats.offset_table) == [
            MessageQueue("CT", "broker-a", 0), MessageQueue("CT2", "broker-a", 0),
        ]  # fmt: skip
        assert stats.diff_total == 0
    # Online with subscriptions, the group's stats cover only the topics it subscribes to.
    await broker.heartbeat(HeartbeatData("c1", [ConsumerData("G", subscriptions=[
        parse_subscription("CT2", "*")])]))  # fmt: skip
    resp = await broker.invoke(C.GET_CONSUME_STATS, {"consumerGroup": "G"})
    assert sorted(ConsumeStats.decode(resp.body).offset_table) == [
        MessageQueue("CT2", "broker-a", 0)
    ]
    resp = await broker.invoke(C.GET_CONSUME_STATS, {"consumerGroup": "Nobody"})
    assert (resp.code, bytes(resp.body)) == (0, b'{"consumeTps":0.0,"offsetTable":{}}')


# -- GET_CONSUMER_CONNECTION_LIST (203) / GET_PRODUCER_CONNECTION_LIST (204) -----------------


async def test_consumer_connection_list(broker: Broker) -> None:
    sub = parse_subscription("TopicA", "TagA || TagB", 1_700_000_000_000)
    await broker.heartbeat(
        HeartbeatData(
            "c1",
            [ConsumerData("G", ConsumeType.CONSUME_ACTIVELY, MessageModel.BROADCASTING,
                          ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, [sub])],
            ["PG"],
        )
    )  # fmt: skip
    addr = await broker.client_addr()
    resp = await broker.invoke(C.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "G"})
    assert resp.code == ResponseCode.SUCCESS
    assert fastjson.loads(resp.body) == {
        "connectionSet": [{"clientAddr": addr, "clientId": "c1", "language": "JAVA",
                           "version": 409}],
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
        "consumeType": "CONSUME_ACTIVELY",
        "messageModel": "BROADCASTING",
        "subscriptionTable": {"TopicA": {
            "classFilterMode": False, "codeSet": [2598919, 2598920], "expressionType": "TAG",
            "subString": "TagA || TagB", "subVersion": 1_700_000_000_000,
            "tagsSet": ["TagA", "TagB"], "topic": "TopicA"}},
    }  # fmt: skip
    decoded = ConsumerConnection.decode(resp.body)
    assert decoded.connections == [ClientConnection("c1", addr, "JAVA", 409)]
    assert decoded.subscriptions == {"TopicA": sub}
    assert decoded.message_model is MessageModel.BROADCASTING
    resp = await broker.invoke(C.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"})
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == (
        b'{"connectionSet":[{"clientAddr":"' + addr.encode()
        + b'","clientId":"c1","language":"JAVA","version":409}]}'
    )  # fmt: skip
    assert ProducerConnection.decode(resp.body).connections == [
        ClientConnection("c1", addr, "JAVA", 409)
    ]


async def test_connection_lists_of_offline_groups(broker: Broker) -> None:
    resp = await broker.invoke(C.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "Gone"})
    assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert resp.remark == "the consumer group[Gone] not online"
    resp = await broker.invoke(C.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "Gone"})
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "the producer group[Gone] not exist"


# -- QUERY_TOPIC_CONSUME_BY_WHO (300) --------------------------------------------------------


async def test_query_topic_consume_by_who(broker: Broker) -> None:
    broker.ctx.offsets.commit("OffsetGroup", "T", 0, 1)
    broker.ctx.offsets.commit("OtherTopicGroup", "U", 0, 1)
    await broker.heartbeat(
        HeartbeatData(
            "c1", [ConsumerData("OnlineGroup", subscriptions=[parse_subscription("T", "*")])]
        )
    )
    resp = await broker.invoke(C.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "T"})
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == b'{"groupList":["OffsetGroup","OnlineGroup"]}'
    assert admin_bodies.decode_group_list(resp.body) == ["OffsetGroup", "OnlineGroup"]
    resp = await broker.invoke(C.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "Nobody"})
    assert bytes(resp.body) == b'{"groupList":[]}'


# -- GET_BROKER_RUNTIME_INFO (28) ------------------------------------------------------------


async def test_broker_runtime_info(broker: Broker) -> None:
    ctx = broker.ctx
    ctx.topics.update(TopicConfig("RT", 1, 1))
    broker.put("RT", 0, 2)
    ctx.stats.stored("RT", 2, 20)
    ctx.stats.delivered("RT", "G", 1, 100)
    first = ctx.store.store_timestamp("RT", 0, 0)
    resp = await broker.invoke(C.GET_BROKER_RUNTIME_INFO)
    assert resp.code == ResponseCode.SUCCESS
    raw = fastjson.loads(resp.body)["table"]
    assert all(isinstance(v, str) for v in raw.values())
    table = route.decode_kv_table(resp.body)
    assert table["brokerVersionDesc"] == "V4_9_8"
    assert table["brokerVersion"] == "409"
    assert table["msgPutTotalTodayNow"] == "2"
    assert table["msgGetTotalTodayNow"] == "1"
    assert table["msgPutTotalTodayMorning"] == table["msgPutTotalYesterdayMorning"] == "0"
    assert table["commitLogMinOffset"] == "0"
    assert table["commitLogMaxOffset"] == str(ctx.store.commit_log_max_offset)
    assert int(table["commitLogMaxOffset"]) > 0
    assert table["dispatchBehindBytes"] == "0"
    assert table["earliestMessageTimeStamp"] == str(first)
    assert 0.0 <= float(table["commitLogDiskRatio"]) <= 1.0
    assert int(table["bootTimestamp"]) <= ctx.clock()
    for key in ("putTps", "getTransferedTps", "getTotalTps"):
        assert re.fullmatch(r"\d+\.\d\d \d+\.\d\d \d+\.\d\d", table[key]), table[key]
    # what mqadmin clusterList reads must all be there
    for key in ("sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "pageCacheLockTimeMills",
                "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
                "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"):  # fmt: skip
        assert key in table


async def test_runtime_info_of_an_empty_store(broker: Broker) -> None:
    table = route.decode_kv_table((await broker.invoke(C.GET_BROKER_RUNTIME_INFO)).body)
    assert table["earliestMessageTimeStamp"] == "-1"
    assert table["commitLogMaxOffset"] == "0"


def test_rate_windows() -> None:
    clock = FakeClock()
    counter = [0]
    rates = admin_stats.RateWindows(clock, lambda: counter[0])
    clock.now_ms += 5_000
    counter[0] = 50
    assert rates.rates() == ["10.00 10.00 10.00"]  # only the start sample is older
    clock.now_ms += 10_000
    counter[0] = 200
    assert rates.rates() == ["15.00 13.33 13.33"]  # 10 s window from the sample at 5 s
    clock.now_ms += 3_600_000
    assert rates.rates() == ["0.00 0.00 0.00"]
    assert len(rates.samples) <= 3


# -- GET_BROKER_CONFIG (26) / UPDATE_BROKER_CONFIG (25) --------------------------------------


async def test_get_broker_config(broker: Broker) -> None:
    resp = await broker.invoke(C.GET_BROKER_CONFIG)
    assert resp.code == ResponseCode.SUCCESS
    assert fastjson.loads(resp.ext_fields["version"])["counter"] == 0
    text = bytes(resp.body).decode()
    assert text == admin_config.properties_text(broker.ctx.settings)
    props = properties_file.parse_properties(text)
    assert props["brokerName"] == "broker-a"
    assert props["listenPort"] == "0"
    assert props["traceOn"] == "true"
    assert props["brokerRole"] == "ASYNC_MASTER"
    assert "namesrvAddr" not in props  # unset values are left out, never "None"
    assert "None" not in props.values()
    # The text sent back is a valid update that changes nothing.
    before = broker.ctx.settings
    assert (await broker.invoke(C.UPDATE_BROKER_CONFIG, body=bytes(resp.body))).code == 0
    assert broker.ctx.settings == before


async def test_update_broker_config(broker: Broker) -> None:
    ctx = broker.ctx
    counter = ctx.topics.data_version.counter
    body = b"traceOn=false\nbrokerPermission=4\nautoCreateSubscriptionGroup=false\n"
    resp = await broker.invoke(C.UPDATE_BROKER_CONFIG, body=body)
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
    assert ctx.settings.trace_on is False
    assert ctx.settings.broker_permission == 4
    assert ctx.permission == 4
    assert ctx.groups.auto_create is False
    assert ctx.topics.settings is ctx.settings
    assert broker.topic_changes == [counter + 1]  # re-registration with the new permission
    resp = await broker.invoke(C.GET_BROKER_CONFIG)
    assert fastjson.loads(resp.ext_fields["version"])["counter"] == 1
    assert "traceOn=false\n" in bytes(resp.body).decode()
    # field names work too; an unchanged value is no change
    resp = await broker.invoke(C.UPDATE_BROKER_CONFIG, body=b"trace_on=true\nbrokerName=broker-a")
    assert resp.code == ResponseCode.SUCCESS
    assert ctx.settings.trace_on is True
    assert ctx.permission == 4
    assert broker.topic_changes == [counter + 1]


@pytest.mark.parametrize(
    ("body", "remark"),
    [
        (b"listenPort=1234", "broker config key(s) listenPort cannot change at runtime"),
        (
            b"traceOn=false\nbrokerName=b\nstorePathRootDir=/x\nfileReservedTime=1",
            "key(s) brokerName, fileReservedTime, storePathRootDir cannot change at runtime",
        ),
        (b"brokerRole=SLAVE", "brokerRole cannot change"),
        (b"fooBar=1\ntraceOn=false", "unknown broker config key(s): fooBar"),
        (b"defaultTopicQueueNums=abc", "invalid broker config: defaultTopicQueueNums:"),
        (b"brokerPermission=9", "invalid broker config: brokerPermission:"),
        (b"\xff\xfe=1", "not UTF-8"),
    ],
)
async def test_update_broker_config_refusals(broker: Broker, body: bytes, remark: str) -> None:
    before = broker.ctx.settings
    resp = await broker.invoke(C.UPDATE_BROKER_CONFIG, body=body)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark is not None
    assert remark in resp.remark
    assert broker.ctx.settings is before  # all or nothing
    assert broker.topic_changes == []


async def test_update_broker_config_with_empty_body(broker: Broker) -> None:
    before = broker.ctx.settings
    assert (await broker.invoke(C.UPDATE_BROKER_CONFIG)).code == ResponseCode.SUCCESS
    assert broker.ctx.settings is before


async def test_update_clears_an_optional_setting(broker: Broker) -> None:
    broker.ctx.settings = broker.ctx.settings.model_copy(update={"region_id": "R1"})
    resp = await broker.invoke(C.UPDATE_BROKER_CONFIG, body=b"regionId=R2")
    assert resp.code == ResponseCode.SUCCESS
    assert broker.ctx.settings.region_id == "R2"
    # "namesrvAddr=" means unset; it is unset already, so nothing is refused
    resp = await broker.invoke(C.UPDATE_BROKER_CONFIG, body=b"namesrvAddr=")
    assert resp.code == ResponseCode.SUCCESS


# -- bodies: fastjson's object keys, both ways -----------------------------------------------
