"""The producer against a real name server and broker(s) in this event loop on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from waiting import WAIT_SECONDS, wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client import (
    AdminClient,
    ClientStateError,
    Message,
    MessageValidationError,
    Producer,
    RemotingConnectError,
    RemotingTimeoutError,
    RoundRobinSelector,
    SendResult,
    SendStatus,
    select_by_hash,
)
from rocketkube.common.message import record, sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.namesrv.app import NamesrvApp

StartBroker = Callable[..., Awaitable[BrokerApp]]


@pytest.fixture
async def producer(namesrv: NamesrvApp) -> AsyncIterator[Producer]:
    async with Producer("PG_test", namesrv.address, send_timeout=30.0) as p:
        yield p


@pytest.fixture
def topic() -> str:
    return f"ClientTopic_{uuid.uuid4().hex[:10]}"


async def _read(app: BrokerApp, topic: str, queue_id: int, offset: int, n: int) -> list[MessageExt]:
    """``n`` stored messages of a queue from ``offset``, waiting for the dispatcher."""
    ctx = app.ctx
    assert ctx is not None
    await wait_until(lambda: ctx.store.max_offset(topic, queue_id) >= offset + n, "dispatched")
    result = ctx.store.get_messages(topic, queue_id, offset, n)
    assert result.found, result.status
    return list(record.iter_records(result.body()))


def _total(app: BrokerApp, topic: str) -> int:
    ctx = app.ctx
    assert ctx is not None
    config = ctx.topics.get(topic)
    if config is None:
        return 0
    queues = max(config.read_queue_nums, config.write_queue_nums)
    return sum(ctx.store.max_offset(topic, q) for q in range(queues))


async def test_send_round_trip_via_auto_created_topic(
    broker: BrokerApp, producer: Producer, topic: str
) -> None:
    queues = await producer.fetch_publish_queues(topic)  # TBW102's route, clamped to 4
    assert [(q.broker_name, q.queue_id) for q in queues] == [("broker-a", i) for i in range(4)]

    message = Message(topic, b"hello rocketkube")
    message.tags = "TagA"
    message.keys = ["k1", "k2"]
    result = await producer.send(message)

    assert result.status is SendStatus.SEND_OK
    assert result.msg_id == message.unique_key
    assert len(result.msg_id) == 32
    assert result.queue.topic == topic
    assert result.queue.broker_name == "broker-a"
    [stored] = await _read(broker, topic, result.queue.queue_id, result.queue_offset, 1)
    assert stored.body == b"hello rocketkube"
    assert stored.tags == "TagA"
    assert stored.keys == ["k1", "k2"]
    assert stored.unique_key == result.msg_id
    assert stored.msg_id == result.offset_msg_id
    assert stored.sys_flag & sysflag.COMPRESSED_FLAG == 0

    assert broker.ctx is not None
    config = broker.ctx.topics.get(topic)
    assert config is not None
    assert config.write_queue_nums == 4


async def test_large_body_is_compressed(broker: BrokerApp, producer: Producer, topic: str) -> None:
    body = b"0123456789abcdef" * 512  # 8 KiB, over compress_over
    result = await producer.send(Message(topic, body))
    [stored] = await _read(broker, topic, result.queue.queue_id, result.queue_offset, 1)
    assert stored.sys_flag & sysflag.COMPRESSED_FLAG
    assert len(stored.body) < len(body)
    assert zlib.decompress(stored.body) == body


async def test_send_batch(broker: BrokerApp, producer: Producer, topic: str) -> None:
    messages = [Message(topic, f"m{i}".encode()) for i in range(3)]
    messages[1].tags = "T1"
    result = await producer.send_batch(messages)
    assert result.status is SendStatus.SEND_OK
    assert result.msg_id.split(",") == [m.unique_key for m in messages]
    assert len(result.offset_msg_id.split(",")) == 3
    stored = await _read(broker, topic, result.queue.queue_id, result.queue_offset, 3)
    assert [m.body for m in stored] == [b"m0", b"m1", b"m2"]
    assert [m.unique_key for m in stored] == [m.unique_key for m in messages]
    assert stored[1].tags == "T1"


async def test_send_batch_rejects_mixed_topics(producer: Producer, topic: str) -> None:
    with pytest.raises(MessageValidationError):
        await producer.send_batch([Message(topic, b"a"), Message(topic + "x", b"b")])
    with pytest.raises(MessageValidationError):
        await producer.send_batch([])


async def test_send_oneway(broker: BrokerApp, producer: Producer, topic: str) -> None:
    message = Message(topic, b"fire and forget")
    await producer.send_oneway(message)
    await wait_until(lambda: _total(broker, topic) == 1, "the oneway message stored")


async def test_send_async_with_callback(broker: BrokerApp, producer: Producer, topic: str) -> None:
    seen: list[SendResult] = []
    done = asyncio.Event()

    def callback(future: asyncio.Future[SendResult]) -> None:
        seen.append(future.result())
        done.set()

    future = producer.send_async(Message(topic, b"async"), callback)
    result = await future
    await asyncio.wait_for(done.wait(), WAIT_SECONDS)
    assert seen == [result]
    assert result.status is SendStatus.SEND_OK
    [stored] = await _read(broker, topic, result.queue.queue_id, result.queue_offset, 1)
    assert stored.body == b"async"


async def test_selector_keeps_order_on_one_queue(
    broker: BrokerApp, producer: Producer, topic: str
) -> None:
    results = [
        await producer.send(Message(topic, f"step-{i}".encode()), selector=select_by_hash, arg=42)
        for i in range(10)
    ]
    assert len({r.queue for r in results}) == 1
    offsets = [r.queue_offset for r in results]
    assert offsets == list(range(offsets[0], offsets[0] + 10))
    stored = await _read(broker, topic, results[0].queue.queue_id, offsets[0], 10)
    assert [m.body for m in stored] == [f"step-{i}".encode() for i in range(10)]

    robin = RoundRobinSelector()
    spread = [await producer.send(Message(topic, b"x"), selector=robin) for _ in range(4)]
    assert sorted(r.queue.queue_id for r in spread) == [0, 1, 2, 3]


async def test_failed_broker_is_avoided(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rocketkube.client.producer.producer")
    alive = await start_broker("broker-a")
    dead = await start_broker("broker-b")
    async with Producer("PG_failover", namesrv.address, send_timeout=5.0) as producer:
        queues = await producer.fetch_publish_queues(topic)
        assert {q.broker_name for q in queues} == {"broker-a", "broker-b"}
        await dead.stop()
        results = [await producer.send(Message(topic, f"{i}".encode())) for i in range(8)]
    assert {r.queue.broker_name for r in results} == {"broker-a"}
    assert any("send to broker-b failed" in r.getMessage() for r in caplog.records)
    assert all(r.status is SendStatus.SEND_OK for r in results)
    await wait_until(lambda: _total(alive, topic) == 8, "all eight stored on broker-a")


async def test_dead_broker_without_retries_raises_connect_error(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str
) -> None:
    dead = await start_broker("broker-a")
    async with Producer("PG_dead", namesrv.address, retry_times_when_send_failed=0) as producer:
        await producer.fetch_publish_queues(topic)
        await dead.stop()
        with pytest.raises(RemotingConnectError):
            await producer.send(Message(topic, b"lost"))


async def test_timeout_raises_remoting_timeout_error(topic: str) -> None:
    """A peer that accepts and never answers: the send ends at ``send_timeout``."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Producer("PG_timeout", f"127.0.0.1:{port}", send_timeout=0.3) as producer:
            with pytest.raises(RemotingTimeoutError) as caught:
                async with asyncio.timeout(60):  # a hang fails instead of blocking the suite
                    await producer.send(Message(topic, b"never"))
            # the send's own bound applied (not a 3 s default), whatever the wall clock
            # of a starved CI host says
            assert "within 0.300s" in str(caught.value)
            assert caught.value.retriable
    finally:
        server.close()
        await server.wait_closed()


async def test_lifecycle_and_validation(namesrv: NamesrvApp, topic: str) -> None:
    producer = Producer("PG_life", namesrv.address, max_message_size=10)
    with pytest.raises(ClientStateError):
        await producer.send(Message(topic, b"x"))
    await producer.start()
    with pytest.raises(MessageValidationError):
        await producer.send(Message(topic, b""))
    with pytest.raises(MessageValidationError):
        await producer.send(Message(topic, b"x" * 11))
    with pytest.raises(MessageValidationError):
        await producer.send(Message("bad topic!", b"x"))
    await producer.close()
    with pytest.raises(ClientStateError):
        await producer.send(Message(topic, b"x"))
    with pytest.raises(ClientStateError):
        await producer.start()


async def test_heartbeat_lists_the_producer_until_close(
    broker: BrokerApp, namesrv: NamesrvApp, topic: str
) -> None:
    assert broker.ctx is not None
    clients = broker.ctx.clients
    async with Producer(
        "PG_beat", namesrv.address, heartbeat_interval=0.05, send_timeout=30.0
    ) as producer:
        assert clients.producer_channels("PG_beat") == []
        await producer.send(Message(topic, b"x"))  # the first send to a broker registers
        await wait_until(lambda: topic in namesrv.routes.topic_queue_table, "topic routed")
        async with AdminClient(namesrv.address) as admin:
            listed = await admin.producer_connections("PG_beat", topic)
        assert [c.client_id for c in listed.connections] == [producer.client_id]
        [channel] = clients.producer_channels("PG_beat")
        first_beat = channel.last_update_ms
        await wait_until(
            lambda: clients.producer_channels("PG_beat")[0].last_update_ms > first_beat,
            "a periodic heartbeat",
        )
    await wait_until(lambda: clients.producer_channels("PG_beat") == [], "unregistered on close")


async def test_latency_fault_tolerance_isolates_a_failed_broker(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rocketkube.client.producer.producer")
    alive = await start_broker("broker-a")
    dead = await start_broker("broker-b")
    async with Producer(
        "PG_fault", namesrv.address, send_timeout=5.0, send_latency_fault_enable=True
    ) as producer:
        queues = await producer.fetch_publish_queues(topic)
        assert {q.broker_name for q in queues} == {"broker-a", "broker-b"}
        await dead.stop()
        results = [await producer.send(Message(topic, f"{i}".encode())) for i in range(8)]
    assert {r.queue.broker_name for r in results} == {"broker-a"}
    failures = [r for r in caplog.records if "send to broker-b failed" in r.getMessage()]
    assert len(failures) == 1  # tried once, then avoided (round robin alone retries it)
    await wait_until(lambda: _total(alive, topic) == 8, "all eight stored on broker-a")
