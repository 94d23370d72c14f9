"""PushConsumer against a real name server and broker on 127.0.0.1.

Intervals are small (rebalance 1 s, long polls 1 s) so every scenario runs in seconds.
Delivery is at least once: tests account for every message id and allow duplicates.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.consumer import queue_locks
from rocketkube.client.consumer.core import ConsumerCore
from rocketkube.client.consumer.listener import ConsumeContext, ConsumeOrderlyStatus, ConsumeStatus
from rocketkube.client.consumer.push import MessageModel, PushConsumer
from rocketkube.client.errors import ClientStateError
from rocketkube.client.producer.producer import Producer, select_by_hash
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.protocol.heartbeat import parse_subscription
from rocketkube.namesrv.app import NamesrvApp

QUEUES = 4
CreateTopic = Callable[..., Awaitable[None]]
StartBroker = Callable[..., Awaitable[BrokerApp]]
FAST_DELAYS = " ".join(["1s"] * 18)


@pytest.fixture
async def producer(namesrv: NamesrvApp) -> AsyncIterator[Producer]:
    async with Producer("PushTestProducer", namesrv.address, send_timeout=30.0) as p:
        yield p


def _consumer(namesrv: NamesrvApp, group: str, tmp_path: Path, **overrides: Any) -> PushConsumer:
    settings: dict[str, Any] = {
        "rebalance_interval": 1.0,
        "persist_interval": 0.5,
        "heartbeat_interval": 2.0,
        "lock_interval": 1.0,
        "suspend_timeout": 1.0,
        "pull_error_delay": 0.2,
        "reconsume_delay": 0.5,
        "suspend_current_queue_time": 0.2,
        "shutdown_timeout": 3.0,
        "request_timeout": 10.0,
        "offset_store_dir": tmp_path / "offsets",
        **overrides,
    }
    return PushConsumer(group, namesrv.address, **settings)


class Received:
    """A listener recording every delivery by message id."""

    def __init__(self, delay: float = 0.0) -> None:
        self.by_id: dict[str, list[MessageExt]] = {}
        self.delay = delay

    async def __call__(self, messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        if self.delay:
            await asyncio.sleep(self.delay)
        for message in messages:
            self.by_id.setdefault(message.client_msg_id, []).append(message)
        return ConsumeStatus.CONSUME_SUCCESS

    def bodies(self) -> set[str]:
        return {m[0].body.decode() for m in self.by_id.values()}


async def _send(
    producer: Producer, topic: str, bodies: list[str], tags: str | None = None, **kw: Any
) -> list[str]:
    ids = []
    for body in bodies:
        message = Message(topic, body.encode())
        message.tags = tags
        ids.append((await producer.send(message, **kw)).msg_id)
    return ids


def _topic_queues(consumer: PushConsumer, topic: str) -> set[MessageQueue]:
    return {q for q in consumer.assignment() if q.topic == topic}


async def test_clustering_receives_every_message(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    before = await _send(producer, topic, [f"a{i}" for i in range(20)])
    received = Received()
    consumer = _consumer(namesrv, group, tmp_path)
    consumer.register_listener(received)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: set(before) <= set(received.by_id), "the first 20")
        after = await _send(producer, topic, [f"b{i}" for i in range(10)])
        await wait_until(lambda: set(after) <= set(received.by_id), "the next 10 (long poll)")
        assert _topic_queues(consumer, topic) == {
            MessageQueue(topic, "broker-a", i) for i in range(QUEUES)
        }
    assert {m[0].topic for m in received.by_id.values()} == {topic}


async def test_tags_filter(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    one = MessageQueue(topic, "broker-a", 0)
    await _send(producer, topic, ["a1", "a2"], "TagA", queue=one)
    await _send(producer, topic, ["c1", "c2"], "TagC", queue=one)
    await _send(producer, topic, ["b1"], "TagB", queue=one)
    received = Received()
    consumer = _consumer(namesrv, group, tmp_path)
    consumer.register_listener(received)
    await consumer.subscribe(topic, "TagA || TagB")
    async with consumer:
        await wait_until(lambda: received.bodies() >= {"a1", "a2", "b1"}, "TagA and TagB")
        await _send(producer, topic, ["c3"], "TagC", queue=one)
        await _send(producer, topic, ["a3"], "TagA", queue=one)
        await wait_until(lambda: "a3" in received.bodies(), "the sentinel after c3")
    assert received.bodies() == {"a1", "a2", "a3", "b1"}


async def test_two_consumers_split_then_the_survivor_takes_everything(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    everything = set(await _send(producer, topic, [f"x{i}" for i in range(10)]))
    first, second = Received(delay=0.02), Received(delay=0.02)
    c1 = _consumer(namesrv, group, tmp_path, consume_concurrency=2)
    c2 = _consumer(namesrv, group, tmp_path, consume_concurrency=2)
    c1.register_listener(first)
    c2.register_listener(second)
    await c1.subscribe(topic)
    await c2.subscribe(topic)
    all_queues = {MessageQueue(topic, "broker-a", i) for i in range(QUEUES)}
    async with c1:
        await c2.start()
        try:
            await wait_until(
                lambda: (
                    len(_topic_queues(c1, topic)) == 2
                    and _topic_queues(c1, topic) | _topic_queues(c2, topic) == all_queues
                ),
                "two queues each",
            )
            everything |= set(await _send(producer, topic, [f"y{i}" for i in range(40)]))
            await wait_until(lambda: bool(second.by_id), "the second consumer got some")
        finally:
            await c2.close()  # with messages still in flight
        await wait_until(lambda: _topic_queues(c1, topic) == all_queues, "the survivor owns all")
        everything |= set(await _send(producer, topic, [f"z{i}" for i in range(20)]))
        await wait_until(
            lambda: everything <= set(first.by_id) | set(second.by_id), "every message consumed"
        )


async def test_broadcasting_delivers_to_every_consumer(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    sent = set(await _send(producer, topic, [f"m{i}" for i in range(20)]))
    consumers, listeners = [], []
    for instance in ("one", "two"):
        received = Received()
        consumer = _consumer(
            namesrv,
            group,
            tmp_path,
            message_model=MessageModel.BROADCASTING,
            consume_from="first",
            instance_name=instance,
        )
        consumer.register_listener(received)
        await consumer.subscribe(topic)
        consumers.append(consumer)
        listeners.append(received)
    for consumer in consumers:
        await consumer.start()
    try:
        await wait_until(
            lambda: all(sent <= set(r.by_id) for r in listeners), "every message, to each"
        )
    finally:
        for consumer in consumers:
            await consumer.close()
    for consumer in consumers:
        assert consumer.offset_file.exists()
        assert consumer.offset_file.parent.name == group
        text = consumer.offset_file.read_text()
        assert topic in text
        assert "%RETRY%" not in text


async def test_consume_from_for_a_new_group(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    """Where a group without offsets starts. Like Apache RocketMQ 4.9.8, the broker answers
    a never-committed group with offset 0 while the queue still starts at 0, so on a fresh
    topic every policy reads from the start; the policies themselves are checked on
    :meth:`ConsumerCore.first_offset`, which applies them when the broker has no offset."""
    topic, group = names
    await create_topic(topic, 1)
    old = set(await _send(producer, topic, [f"old{i}" for i in range(3)]))
    await asyncio.sleep(0.2)
    new = set(await _send(producer, topic, [f"new{i}" for i in range(2)]))
    core = ConsumerCore(group, [namesrv.address], "127.0.0.1@test", request_timeout=10.0)
    try:
        queue = (await core.readable_queues(topic))[0]
        # The broker answers the offset whose store time is nearest (as Java does): search
        # for the first new message's own store time, which a stalled send cannot move.
        pulled = await core.pull(queue, 3, parse_subscription(topic, "*"), max_nums=1, suspend=0)
        stamp = pulled.messages[0].store_timestamp
        assert await core.first_offset(queue, None, "last", None) == 5
        assert await core.first_offset(queue, None, "first", None) == 0
        assert await core.first_offset(queue, None, "timestamp", stamp) == 3
        assert await core.first_offset(queue, 2, "last", None) == 2
        retry = MessageQueue("%RETRY%" + group, "broker-a", 0)
        assert await core.first_offset(retry, None, "last", None) == 0
    finally:
        await core.close()

    received = Received()
    consumer = _consumer(namesrv, group, tmp_path, consume_from="last")
    consumer.register_listener(received)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: old | new <= set(received.by_id), "every message")


async def test_reconsume_later_redelivers_through_the_retry_topic(
    namesrv: NamesrvApp,
    start_broker: StartBroker,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await start_broker(message_delay_level=FAST_DELAYS)
    sent = set(await _send(producer, topic, [f"r{i}" for i in range(3)]))
    seen: dict[str, list[MessageExt]] = {}

    def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        message = messages[0]
        seen.setdefault(message.client_msg_id, []).append(message)
        if len(seen[message.client_msg_id]) == 1:
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = _consumer(namesrv, group, tmp_path, consume_from="first")
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(
            lambda: all(len(seen.get(i, ())) >= 2 for i in sent), "a second delivery of each"
        )
    for msg_id in sent:
        again = seen[msg_id][1]
        assert again.topic == topic
        assert again.reconsume_times >= 1
        assert again.body == seen[msg_id][0].body


async def test_failed_send_back_falls_back_to_a_retry_send(
    namesrv: NamesrvApp,
    start_broker: StartBroker,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await start_broker(message_delay_level=FAST_DELAYS)
    (msg_id,) = await _send(producer, topic, ["fallback"])
    seen: list[MessageExt] = []

    def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        seen.extend(messages)
        if len(seen) == 1:
            messages[0].commit_log_offset = 1 << 40  # the broker cannot find it: 36 fails
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = _consumer(namesrv, group, tmp_path, consume_from="first")
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: len(seen) >= 2, "the message again, through %RETRY%")
    again = seen[1]
    assert (again.client_msg_id, again.topic, again.body) == (msg_id, topic, b"fallback")
    assert again.reconsume_times == 1
    assert again.properties["RETRY_TOPIC"] == topic


async def test_a_body_left_compressed_goes_back_compressed_through_the_fallback(
    namesrv: NamesrvApp,
    start_broker: StartBroker,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await start_broker(message_delay_level=FAST_DELAYS)
    huge = b"h" * 20_000  # compressed by the producer, past the consumer's cap once inflated
    await _send(producer, topic, [huge.decode()])
    seen: list[MessageExt] = []

    def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        seen.extend(messages)
        if len(seen) == 1:
            messages[0].commit_log_offset = 1 << 40  # the broker cannot find it: 36 fails
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = _consumer(
        namesrv, group, tmp_path, consume_from="first", max_inflated_body_size=10_000
    )
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: len(seen) >= 2, "the message again, through %RETRY%")
    for delivery in seen[:2]:
        assert sysflag.is_compressed(delivery.sys_flag)
        assert zlib.decompress(delivery.body) == huge
    assert seen[1].reconsume_times == 1


async def test_reset_offset_restarts_the_queues(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, 2)
    sent = set(await _send(producer, topic, [f"s{i}" for i in range(6)]))
    received = Received()
    consumer = _consumer(namesrv, group, tmp_path)
    consumer.register_listener(received)
    await consumer.subscribe(topic)
    async with consumer, AdminClient(namesrv.address, timeout=10.0) as admin:
        await wait_until(lambda: sent <= set(received.by_id), "every message once")
        table = await admin.reset_offset_by_timestamp(topic, group, 0)
        assert set(table.values()) == {0}
        await wait_until(
            lambda: all(len(received.by_id[i]) >= 2 for i in sent), "every message again"
        )


async def test_orderly_listener_sees_each_queue_in_order(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    keys = [f"order-{k}" for k in range(3)]
    for i in range(15):
        for key in keys:
            await producer.send(
                Message(topic, f"{key}:{i}".encode()), selector=select_by_hash, arg=key
            )
    seen: dict[str, list[int]] = {key: [] for key in keys}
    suspended: set[str] = set()

    async def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeOrderlyStatus:
        batch = [message.body.decode().split(":") for message in messages]
        for key, index in batch:
            if index == "5" and key not in suspended:
                suspended.add(key)  # the same batch must come back before index 6
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        for key, index in batch:
            seen[key].append(int(index))
        return ConsumeOrderlyStatus.SUCCESS

    consumer = _consumer(namesrv, group, tmp_path, consume_from="first", consume_batch_size=2)
    consumer.register_orderly_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: all(len(s) >= 15 for s in seen.values()), "every message")
    for key in keys:
        assert seen[key] == list(range(15)), key


async def test_flow_control_holds_at_most_the_threshold(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, 1)
    sent = set(await _send(producer, topic, [f"f{i}" for i in range(30)]))
    release = asyncio.Event()
    in_flight = 0
    most = 0
    done: set[str] = set()

    async def listener(messages: list[MessageExt], context: ConsumeContext) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await release.wait()
        in_flight -= 1
        done.update(m.client_msg_id for m in messages)

    consumer = _consumer(
        namesrv, group, tmp_path, pull_threshold_for_queue=5, consume_concurrency=20
    )
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: in_flight == 5, "five messages held")
        await asyncio.sleep(1.0)  # more pulls would happen now without flow control
        assert most == 5
        release.set()
        await wait_until(lambda: sent <= done, "every message after the release")
    assert most == 5


async def test_close_persists_offsets_for_the_next_consumer(
    namesrv: NamesrvApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
    producer: Producer,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    old = set(await _send(producer, topic, [f"o{i}" for i in range(12)]))
    first = Received()
    consumer = _consumer(namesrv, group, tmp_path, persist_interval=60.0)
    consumer.register_listener(first)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: old <= set(first.by_id), "the old messages")
    new = set(await _send(producer, topic, [f"n{i}" for i in range(8)]))
    second = Received()
    consumer = _consumer(namesrv, group, tmp_path)
    consumer.register_listener(second)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: new <= set(second.by_id), "the new messages")
    assert not old & set(second.by_id)


async def test_lifecycle_errors(namesrv: NamesrvApp, tmp_path: Path) -> None:
    consumer = _consumer(namesrv, "g", tmp_path)
    with pytest.raises(ClientStateError, match="listener"):
        await consumer.start()
    with pytest.raises(ValueError, match="consume_timestamp_ms"):
        PushConsumer("g", consume_from="timestamp")
    consumer.register_listener(Received())
    await consumer.close()
    with pytest.raises(ClientStateError, match="closed"):
        await consumer.start()


async def test_queue_locks_have_one_owner(
    namesrv: NamesrvApp, create_topic: CreateTopic, names: tuple[str, str]
) -> None:
    topic, group = names
    await create_topic(topic, 2)
    a = ConsumerCore(group, [namesrv.address], "127.0.0.1@a", request_timeout=10.0)
    b = ConsumerCore(group, [namesrv.address], "127.0.0.1@b", request_timeout=10.0)
    try:
        q0, q1 = await a.readable_queues(topic)
        await b.readable_queues(topic)
        assert await queue_locks.lock(a, [q0]) == {q0}
        assert await queue_locks.lock(a, [q0]) == {q0}  # the owner renews
        assert await queue_locks.lock(b, [q0, q1]) == {q1}
        await queue_locks.unlock(a, [q0])
        assert await queue_locks.lock(b, [q0]) == {q0}
    finally:
        await a.close()
        await b.close()
