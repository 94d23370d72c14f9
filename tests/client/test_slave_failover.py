"""A consumer of a broker group whose master is down reads from the slave, with the SDK
and a real master/slave pair on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.listener import ConsumeContext, ConsumeStatus
from rocketkube.client.producer import Producer
from rocketkube.client.push_consumer import PushConsumer
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.protocol import route
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp

StartBroker = Callable[..., Awaitable[BrokerApp]]


async def route_ids(namesrv: NamesrvApp, topic: str) -> set[int]:
    """Broker ids the name server routes ``topic`` to."""
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        answer = await client.invoke(namesrv.address, request)
    finally:
        await client.close()
    if answer.code != ResponseCode.SUCCESS:
        return set()
    return {i for b in route.TopicRouteData.decode(answer.body).broker_datas
            for i in b.broker_addrs}  # fmt: skip


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
    await wait_until_routed(namesrv, topic, {0, 1})
    await master.stop()
    assert await route_ids(namesrv, topic) == {1}

    received: dict[str, MessageExt] = {}

    async def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        received.update((m.client_msg_id, m) for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv.address, consume_from="first", rebalance_interval=1.0,
                            suspend_timeout=1.0, pull_error_delay=0.2,
                            offset_store_dir=tmp_path / "offsets")  # fmt: skip
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: set(sent) <= set(received), "all 30 from the slave")
    assert sorted(m.body for m in received.values()) == [b"f%02d" % i for i in range(30)]


async def wait_until_routed(namesrv: NamesrvApp, topic: str, ids: set[int]) -> None:
    for _ in range(300):
        if await route_ids(namesrv, topic) == ids:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{topic} not routed to brokers {ids}")
