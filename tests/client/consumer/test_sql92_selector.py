"""``MessageSelector.by_sql`` end to end: a producer sends messages with properties, and a
push consumer and a lite pull consumer receive exactly the matching ones from a broker with
``enablePropertyFilter``; a syntax error never leaves the SDK."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from waiting import WAIT_SECONDS, wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client import (
    ConsumeContext,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageQueue,
    MessageSelector,
    Producer,
    PushConsumer,
    Sql92SyntaxError,
)
from rocketkube.common.message.model import MessageExt
from rocketkube.common.protocol.heartbeat import SubscriptionData
from rocketkube.namesrv.app import NamesrvApp

SQL = "a BETWEEN 3 AND 5 AND b = 'x'"
QUEUES = 4
StartBroker = Callable[..., Awaitable[BrokerApp]]


@pytest.fixture
async def broker(start_broker: StartBroker) -> BrokerApp:
    """The one broker, serving SQL92 subscriptions."""
    return await start_broker(enable_property_filter=True)


@pytest.fixture
async def sent(namesrv: NamesrvApp, routed_topic: str) -> set[str]:
    """Twenty messages with properties ``a`` (0-9) and ``b`` (x or y) under several tags;
    returns the bodies :data:`SQL` selects."""
    async with Producer("SqlSelectorProducer", namesrv.address, send_timeout=30.0) as producer:
        for i in range(20):
            message = Message(routed_topic, f"m{i:02d}".encode())
            message.tags = f"Tag{i % 3}"
            message.properties.update({"a": str(i % 10), "b": "x" if i % 4 else "y"})
            await producer.send(message)
        untyped = Message(routed_topic, b"a-is-no-number")
        untyped.properties.update({"a": "four", "b": "x"})
        await producer.send(untyped)
    return {f"m{i:02d}" for i in range(20) if 3 <= i % 10 <= 5 and i % 4}


def test_by_sql_checks_the_syntax_before_anything_is_sent() -> None:
    with pytest.raises(Sql92SyntaxError, match="at line 1, column 6"):
        MessageSelector.by_sql("a IS 'x'")
    with pytest.raises(Sql92SyntaxError):
        MessageSelector.by_sql("")
    assert MessageSelector.by_sql(SQL) == MessageSelector("SQL92", SQL)
    assert MessageSelector.by_tag() == MessageSelector("TAG", "*")


async def test_a_push_consumer_receives_exactly_the_matching_messages(
    namesrv: NamesrvApp,
    broker: BrokerApp,
    routed_topic: str,
    names: tuple[str, str],
    sent: set[str],
    tmp_path: Path,
) -> None:
    received: list[MessageExt] = []

    async def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        received.extend(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        names[1], namesrv.address, rebalance_interval=1.0, offset_store_dir=tmp_path / "o"
    )
    consumer.register_listener(listener)
    await consumer.subscribe(routed_topic, MessageSelector.by_sql(SQL))
    async with consumer:
        await wait_until(lambda: len(received) >= len(sent), "the matching messages")
        # A matching sentinel last in every queue: once all are in, so is all before them.
        sentinels = {f"end{queue_id}" for queue_id in range(QUEUES)}
        await _send_sentinels(namesrv, routed_topic)
        await wait_until(lambda: sentinels <= {m.body.decode() for m in received}, "sentinels")
        registered = _registered(broker, names[1], routed_topic)
    assert sorted(m.body.decode() for m in received) == sorted(sent | sentinels)
    assert (registered.expression_type, registered.sub_string) == ("SQL92", SQL)


async def _send_sentinels(namesrv: NamesrvApp, topic: str) -> None:
    async with Producer("SqlSelectorProducer", namesrv.address, send_timeout=30.0) as producer:
        for queue_id in range(QUEUES):
            message = Message(topic, f"end{queue_id}".encode())
            message.properties.update({"a": "4", "b": "x"})
            await producer.send(message, queue=MessageQueue(topic, "broker-a", queue_id))


async def test_a_lite_pull_consumer_receives_exactly_the_matching_messages(
    namesrv: NamesrvApp, routed_topic: str, names: tuple[str, str], sent: set[str]
) -> None:
    async with LitePullConsumer(names[1], namesrv.address) as consumer:
        await consumer.subscribe(routed_topic, MessageSelector.by_sql(SQL))
        got: list[MessageExt] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while len(got) < len(sent):
            assert time.monotonic() < deadline, f"only {len(got)} of {len(sent)} messages"
            got.extend(await consumer.poll(1.0))
        got.extend(await consumer.poll(0.3))
    assert sorted(m.body.decode() for m in got) == sorted(sent)


def _registered(broker: BrokerApp, group: str, topic: str) -> SubscriptionData:
    assert broker.ctx is not None
    info = broker.ctx.clients.consumer_group(group)
    assert info is not None
    return info.subscriptions[topic]
