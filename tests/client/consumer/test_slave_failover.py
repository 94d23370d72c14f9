"""A consumer of a broker group whose master is down reads from the slave, with the SDK
and a real master/slave pair on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from consuming import consume_until_all
from routes import route_ids, wait_until_routed
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.consumer.listener import ConsumeStatus
from rocketkube.client.consumer.push import PushConsumer
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.namesrv.app import NamesrvApp

StartBroker = Callable[..., Awaitable[BrokerApp]]


async def test_consumers_read_from_the_slave_while_the_master_is_down(
    start_broker: StartBroker, namesrv: NamesrvApp, names: tuple[str, str], tmp_path: Path
) -> None:
    topic, group = names
    master = await start_broker()
    slave = await start_broker(broker_id=1, broker_role="SLAVE")
    async with Producer("FailoverProducer", namesrv.address, send_timeout=30.0) as producer:
        sent = [(await producer.send(Message(topic, b"f%02d" % i))).msg_id for i in range(30)]
    assert master.ctx is not None
    assert slave.ctx is not None
    master_store, slave_store = master.ctx.store, slave.ctx.store
    await wait_until(
        lambda: slave_store.commit_log_max_offset == master_store.commit_log_max_offset,
        "the slave caught up",
    )
    assert slave.slave_sync is not None
    await slave.slave_sync.sync_once(master.address)  # the topic, without waiting 10 s
    await wait_until_routed(namesrv.address, topic, {0, 1})
    await master.stop()
    assert await route_ids(namesrv.address, topic) == {1}

    bodies = await consume_until_all(namesrv.address, group, topic, sent, tmp_path / "offsets")
    assert bodies == [b"f%02d" % i for i in range(30)]


async def test_consumers_heartbeat_slaves_so_a_slave_knows_its_group_when_the_master_stops(
    start_broker: StartBroker, namesrv: NamesrvApp, names: tuple[str, str]
) -> None:
    """As Java's client: heartbeats and the unregistration go to every broker of the route,
    so the slave a group falls back to already lists its consumers."""
    topic, group = names
    master = await start_broker()
    slave = await start_broker(broker_id=1, broker_role="SLAVE")
    async with Producer("HeartbeatProducer", namesrv.address, send_timeout=30.0) as producer:
        await producer.send(Message(topic, b"h"))
    assert master.ctx is not None
    assert slave.ctx is not None
    slave_clients = slave.ctx.clients
    assert slave.slave_sync is not None
    await slave.slave_sync.sync_once(master.address)
    await wait_until_routed(namesrv.address, topic, {0, 1})

    def listed_by_slave() -> list[str]:
        info = slave_clients.consumer_group(group)
        return info.client_ids() if info is not None else []

    consumer = PushConsumer(group, namesrv.address, rebalance_interval=1.0, suspend_timeout=1.0)
    consumer.register_listener(lambda messages, context: ConsumeStatus.CONSUME_SUCCESS)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: listed_by_slave() == [consumer.client_id], "the slave knows it")
        await master.stop()
        assert listed_by_slave() == [consumer.client_id]
    await wait_until(lambda: listed_by_slave() == [], "unregistered from the slave")
