"""AdminClient against a real name server and broker, in-process on 127.0.0.1."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from waiting import wait_for_value

from rocketkube.broker.app import BrokerApp
from rocketkube.client import Message, Producer
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.consumer.pull import PullStatus
from rocketkube.client.errors import ClientStateError, MQBrokerError, TopicNotExistError
from rocketkube.common.errors import MessageFormatError
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.namesrv.app import NamesrvApp

CLUSTER = "DefaultCluster"


@pytest.fixture
async def admin(namesrv: NamesrvApp, broker: BrokerApp) -> AsyncIterator[AdminClient]:
    # Config changes answer once fsynced; a starved CI disk can take seconds for that.
    async with AdminClient(namesrv.address, timeout=30.0) as client:
        yield client


@pytest.fixture
def topic() -> str:
    return f"AdminTopic_{uuid.uuid4().hex[:10]}"


async def _create_routed(admin: AdminClient, topic: str, queues: int = 4) -> None:
    await admin.create_topic(
        topic, cluster=CLUSTER, read_queue_nums=queues, write_queue_nums=queues
    )

    async def routed() -> bool | None:
        try:
            await admin.topic_route(topic)
        except TopicNotExistError:
            return None
        return True

    await wait_for_value(routed, f"{topic} routed")


async def test_not_started_client_refuses(namesrv: NamesrvApp) -> None:
    client = AdminClient(namesrv.address)
    with pytest.raises(ClientStateError):
        await client.topic_list()
    await client.close()
    with pytest.raises(ClientStateError):
        await client.start()


async def test_cluster_info_lists_the_broker(admin: AdminClient, broker: BrokerApp) -> None:
    info = await admin.cluster_info()
    assert info.cluster_addr_table[CLUSTER] == {"broker-a"}
    assert info.broker_addr_table["broker-a"].master_addr == broker.address


async def test_unknown_topic_maps_to_topic_not_exist(admin: AdminClient) -> None:
    with pytest.raises(TopicNotExistError) as caught:
        await admin.topic_route("NoSuchTopic_x")
    assert caught.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert "NoSuchTopic_x" in (caught.value.remark or "")
    with pytest.raises(TopicNotExistError):
        await admin.topic_stats("NoSuchTopic_x")


async def test_create_route_list_stats_delete_topic(admin: AdminClient, topic: str) -> None:
    await _create_routed(admin, topic, queues=4)
    route = await admin.topic_route(topic)
    assert [(q.broker_name, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 4, 6)
    ]
    assert topic in await admin.topic_list()

    async with Producer("AdminPG", admin.namesrv_addrs[0], send_timeout=30.0) as producer:
        for i in range(5):
            await producer.send(Message(topic, f"m{i}".encode()))
    stats = await admin.topic_stats(topic)
    assert len(stats.offset_table) == 4
    assert sum(o.max_offset for o in stats.offset_table.values()) == 5
    assert {mq.topic for mq in stats.offset_table} == {topic}

    await admin.delete_topic(topic, CLUSTER)
    assert topic not in await admin.topic_list()
    with pytest.raises(TopicNotExistError):
        await admin.topic_route(topic)


async def test_create_topic_needs_one_target(admin: AdminClient, broker: BrokerApp) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        await admin.create_topic("T1", cluster=CLUSTER, broker_addr=broker.address)
    with pytest.raises(ValueError, match="exactly one"):
        await admin.create_topic("T1")


async def test_create_topic_on_one_broker_and_bad_request(
    admin: AdminClient, broker: BrokerApp, topic: str
) -> None:
    config = await admin.create_topic(topic, broker_addr=broker.address, write_queue_nums=2)
    assert (config.topic_name, config.write_queue_nums) == (topic, 2)
    assert broker.ctx is not None
    assert broker.ctx.topics.get(topic) is not None
    with pytest.raises(MQBrokerError) as caught:
        await admin.create_topic("TBW102", broker_addr=broker.address)
    assert caught.value.code != ResponseCode.SUCCESS
    assert caught.value.broker == broker.address


async def test_subscription_groups_and_consume_stats(
    admin: AdminClient, broker: BrokerApp, topic: str
) -> None:
    group = f"AdminCG_{uuid.uuid4().hex[:8]}"
    await admin.create_subscription_group(group, cluster=CLUSTER, retry_max_times=3)
    assert broker.ctx is not None
    config = broker.ctx.groups.table[group]
    assert config.retry_max_times == 3
    assert config.consume_broadcast_enable

    await _create_routed(admin, topic, queues=2)
    async with Producer("AdminPG", admin.namesrv_addrs[0], send_timeout=30.0) as producer:
        results = [await producer.send(Message(topic, b"x")) for _ in range(4)]
    stats = await admin.consume_stats(group, topic)
    assert len(stats.offset_table) == 2
    assert stats.diff_total == 4

    first = results[0]
    # as Java's broker does, a group that never committed reads 0 while the queue starts at 0
    assert await admin.consumer_offset(group, first.queue) == 0
    await admin.update_consumer_offset(group, first.queue, first.queue_offset + 1)
    assert await admin.consumer_offset(group, first.queue) == first.queue_offset + 1
    stats = await admin.consume_stats(group, topic)
    assert stats.diff_total == 3
    assert (await admin.consume_stats(group)).diff_total == 3

    with pytest.raises(MQBrokerError) as caught:
        await admin.consumer_connections(group)
    assert caught.value.code == ResponseCode.CONSUMER_NOT_ONLINE
    with pytest.raises(MQBrokerError, match="not exist"):  # this producer sends no heartbeat
        await admin.producer_connections("AdminPG", topic)

    await admin.delete_subscription_group(group, CLUSTER, remove_offset=True)
    assert group not in broker.ctx.groups.table


async def test_broker_runtime_info_and_config(admin: AdminClient, broker: BrokerApp) -> None:
    info = await admin.broker_runtime_info(broker.address)
    assert info
    assert all(isinstance(v, str) for v in info.values())
    config = await admin.broker_config(broker.address)
    assert config["brokerName"] == "broker-a"
    old = config["defaultTopicQueueNums"]
    await admin.update_broker_config(broker.address, {"defaultTopicQueueNums": 3})
    assert (await admin.broker_config(broker.address))["defaultTopicQueueNums"] == "3"
    assert old != "3"
    with pytest.raises(MQBrokerError):
        await admin.update_broker_config(broker.address, {"listenPort": 1})


async def test_wipe_and_add_write_perm(admin: AdminClient, namesrv: NamesrvApp, topic: str) -> None:
    await _create_routed(admin, topic)
    wiped = await admin.wipe_write_perm("broker-a")
    assert wiped[namesrv.address] >= 1
    route = await admin.topic_route(topic)
    assert not route.queue_datas[0].perm & permission.PERM_WRITE
    added = await admin.add_write_perm("broker-a")
    assert added[namesrv.address] >= 1
    route = await admin.topic_route(topic)
    assert route.queue_datas[0].perm & permission.PERM_WRITE


async def test_kv_config(admin: AdminClient) -> None:
    assert await admin.get_kv_config("NS", "k") is None
    await admin.put_kv_config("NS", "k", "v1")
    assert await admin.get_kv_config("NS", "k") == "v1"
    await admin.delete_kv_config("NS", "k")
    assert await admin.get_kv_config("NS", "k") is None


async def test_view_message_and_query_by_key(admin: AdminClient, topic: str) -> None:
    await _create_routed(admin, topic)
    async with Producer("AdminPG", admin.namesrv_addrs[0], send_timeout=30.0) as producer:
        message = Message(topic, b"payload")
        message.keys = ["order-1", "other"]
        sent = await producer.send(message)
        noise = Message(topic, b"noise")
        noise.keys = ["order-2"]
        await producer.send(noise)

    viewed = await admin.view_message(sent.offset_msg_id)
    assert (viewed.body, viewed.topic) == (b"payload", topic)
    assert viewed.unique_key == sent.msg_id
    assert viewed.msg_id == sent.offset_msg_id
    with pytest.raises(MessageFormatError):
        await admin.view_message("not-an-id")

    async def by_key() -> list[str] | None:
        found = await admin.query_messages_by_key(topic, "order-1")
        return [m.unique_key or "" for m in found] or None

    assert await wait_for_value(by_key, "order-1 indexed") == [sent.msg_id]
    by_uniq = await admin.query_messages_by_key(topic, sent.msg_id, unique_key=True)
    assert [m.body for m in by_uniq] == [b"payload"]
    assert await admin.query_messages_by_key(topic, "absent-key") == []
    assert await admin.query_messages_by_key(topic, "order-1", end_ms=1) == []


async def test_queue_offsets_pull_and_reset_by_timestamp(
    admin: AdminClient, broker: BrokerApp, topic: str
) -> None:
    await _create_routed(admin, topic, queues=1)
    queue = MessageQueue(topic, "broker-a", 0)
    async with Producer("AdminPG", admin.namesrv_addrs[0], send_timeout=30.0) as producer:
        sent = [await producer.send(Message(topic, f"m{i}".encode())) for i in range(3)]
    assert await admin.broker_addrs(topic) == {"broker-a": broker.address}
    assert await admin.min_offset(queue) == 0
    assert await admin.max_offset(queue) == 3
    viewed = await admin.view_message(sent[1].offset_msg_id)
    assert await admin.search_offset(queue, viewed.store_timestamp) in (1, 2)

    pulled = await admin.pull(queue, 1, 32)
    assert pulled.status == PullStatus.FOUND
    assert [m.body for m in pulled.messages] == [b"m1", b"m2"]
    assert pulled.next_begin_offset == 3
    assert (await admin.pull(queue, 3)).status == PullStatus.NO_NEW_MSG

    group = f"AdminCG_{uuid.uuid4().hex[:8]}"
    await admin.create_subscription_group(group, broker_addr=broker.address)
    assert await admin.reset_offset_by_timestamp(topic, group, -1) == {queue: 3}
    assert group in await admin.topic_consumed_by(topic)
    stats = await admin.consume_stats(group, topic)
    assert stats.diff_total == 0
    rewound = await admin.reset_offset_by_timestamp(topic, group, 0, force=False)
    assert rewound == {queue: 0}
    assert (await admin.consume_stats(group, topic)).diff_total == 3
    with pytest.raises(MQBrokerError, match="not exist"):
        await admin.reset_offset_by_timestamp(topic, "NoSuchGroup", -1)

    assert await admin.cluster_brokers(CLUSTER) == [broker.address]
    assert await admin.cluster_brokers(CLUSTER, masters_only=False) == [broker.address]
    await admin.delete_subscription_group(group, broker_addr=broker.address)
    assert broker.ctx is not None
    assert group not in broker.ctx.groups.table


async def test_topic_configs_and_subscription_groups_of_a_broker(
    admin: AdminClient, broker: BrokerApp, topic: str
) -> None:
    """What the operator compares with its Topic and ConsumerGroup resources."""
    await admin.create_topic(
        topic, broker_addr=broker.address, read_queue_nums=3, write_queue_nums=5, order=True
    )
    group = f"AdminGroup_{uuid.uuid4().hex[:10]}"
    await admin.create_subscription_group(
        group, broker_addr=broker.address, retry_max_times=7, consume_broadcast_enable=False
    )
    topics = await admin.topic_configs(broker.address)
    assert (topics[topic].read_queue_nums, topics[topic].write_queue_nums) == (3, 5)
    assert topics[topic].order
    assert "TBW102" in topics  # system topics too
    assert await admin.topic_config(broker.address, topic) == topics[topic]
    assert await admin.topic_config(broker.address, f"{topic}_absent") is None
    groups = await admin.subscription_groups(broker.address)
    assert groups[group].retry_max_times == 7
    assert not groups[group].consume_broadcast_enable
    assert groups[group].group_name == group
    assert await admin.subscription_group(broker.address, group) == groups[group]
    assert await admin.subscription_group(broker.address, f"{group}_absent") is None
