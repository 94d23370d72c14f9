"""Producer auto-batching against a real name server and broker in this event loop."""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator

import pytest
from waiting import WAIT_SECONDS

from rocketkube.broker.app import BrokerApp
from rocketkube.client import Message, MQBrokerError, Producer, SendResult, select_by_hash
from rocketkube.client.consumer.lite_pull import LitePullConsumer
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message import record, sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.namesrv.app import NamesrvApp

QUEUES = 4


@pytest.fixture
def topic(routed_topic: str) -> str:
    return routed_topic


@pytest.fixture
async def producer(namesrv: NamesrvApp, broker: BrokerApp) -> AsyncIterator[Producer]:
    # A long delay: every message sent in one loop step lands in one batch.
    async with Producer(
        "PG_auto_batch",
        namesrv.address,
        auto_batch=True,
        batch_max_delay_ms=200,
        send_timeout=30.0,
    ) as p:
        yield p


async def _stored(app: BrokerApp, result: SendResult) -> MessageExt:
    """The message the broker stored where ``result`` says, once dispatched."""
    ctx = app.ctx
    assert ctx is not None
    topic, queue_id, offset = result.queue.topic, result.queue.queue_id, result.queue_offset
    deadline = time.monotonic() + WAIT_SECONDS
    while ctx.store.max_offset(topic, queue_id) <= offset:
        assert time.monotonic() < deadline, f"{topic}/{queue_id}@{offset} not dispatched"
        await asyncio.sleep(0.02)
    found = ctx.store.get_messages(topic, queue_id, offset, 1)
    assert found.found, found.status
    [message] = record.iter_records(found.body())
    return message


async def test_each_message_stored_once_with_its_own_result(
    namesrv: NamesrvApp, broker: BrokerApp, producer: Producer, topic: str, names: tuple[str, str]
) -> None:
    messages = []
    for i in range(40):
        message = Message(topic, f"body-{i}".encode())
        message.tags = f"Tag{i % 3}"
        message.keys = [f"key-{i}"]
        messages.append(message)
    results = await asyncio.wait_for(
        asyncio.gather(*(producer.send_async(m) for m in messages)), WAIT_SECONDS
    )
    # One batch: one queue, consecutive offsets, each message its own id.
    assert len({r.queue for r in results}) == 1
    first = results[0].queue_offset
    assert [r.queue_offset for r in results] == list(range(first, first + 40))
    assert [r.msg_id for r in results] == [m.unique_key for m in messages]
    assert len({r.offset_msg_id for r in results}) == 40
    for message, result in zip(messages, results, strict=True):
        stored = await _stored(broker, result)
        assert stored.body == message.body
        assert (stored.tags, stored.keys) == (message.tags, message.keys)
        assert stored.unique_key == result.msg_id
        assert stored.msg_id == result.offset_msg_id

    async with LitePullConsumer(names[1], namesrv.address, consume_from_where="first") as consumer:
        await consumer.subscribe(topic)
        got: list[MessageExt] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while len(got) < 40:
            assert time.monotonic() < deadline, f"only {len(got)} of 40 delivered"
            got.extend(await consumer.poll(1.0))
    assert sorted(m.unique_key or "" for m in got) == sorted(r.msg_id for r in results)
    assert {m.body for m in got} == {m.body for m in messages}


async def test_a_single_message_is_sent_when_the_delay_runs_out(
    broker: BrokerApp, producer: Producer, topic: str
) -> None:
    message = Message(topic, b"alone")
    result = await asyncio.wait_for(producer.send(message), WAIT_SECONDS)
    assert result.msg_id == message.unique_key
    stored = await _stored(broker, result)
    assert stored.body == b"alone"


async def test_batches_are_cut_at_batch_max_bytes(
    namesrv: NamesrvApp, broker: BrokerApp, topic: str
) -> None:
    async with Producer(
        "PG_auto_batch_bytes",
        namesrv.address,
        auto_batch=True,
        batch_max_delay_ms=60_000,  # only the size cuts batches; close sends the rest
        batch_max_bytes=1024,
        send_timeout=30.0,
    ) as producer:
        futures = [producer.send_async(Message(topic, bytes(200))) for _ in range(12)]
        done = await asyncio.wait_for(asyncio.gather(*futures[:8]), WAIT_SECONDS)
    results = [*done, *[f.result() for f in futures[8:]]]
    by_queue: dict[MessageQueue, list[int]] = {}
    for result in results:
        by_queue.setdefault(result.queue, []).append(result.queue_offset)
    # 200-byte bodies take ~280 batch bytes each: 3 a batch, 4 batches.
    assert sorted(len(offsets) for offsets in by_queue.values()) == [3, 3, 3, 3]


async def test_a_broker_error_fails_every_send_of_the_batch(producer: Producer, topic: str) -> None:
    illegal = MessageQueue(topic, "broker-a", QUEUES + 3)  # the broker refuses the queue id
    sends = [producer.send(Message(topic, f"{i}".encode()), queue=illegal) for i in range(5)]
    outcomes = await asyncio.wait_for(asyncio.gather(*sends, return_exceptions=True), WAIT_SECONDS)
    assert all(isinstance(o, MQBrokerError) for o in outcomes), outcomes
    assert {o.code for o in outcomes if isinstance(o, MQBrokerError)} == {ResponseCode.SYSTEM_ERROR}


async def test_unbatchable_messages_go_alone_among_batched_ones(
    broker: BrokerApp, producer: Producer, topic: str
) -> None:
    plain = [Message(topic, f"plain-{i}".encode()) for i in range(6)]
    delayed = Message(topic, b"later")
    delayed.delay_level = 1
    large = Message(topic, b"0123456789abcdef" * 512)  # over compress_over
    order = [*plain[:3], delayed, large, *plain[3:]]
    results = await asyncio.wait_for(
        asyncio.gather(*(producer.send_async(m) for m in order)), WAIT_SECONDS
    )
    assert [r.msg_id for r in results] == [m.unique_key for m in order]
    batched = [results[i] for i in (0, 1, 2, 5, 6, 7)]
    assert len({r.queue for r in batched}) == 1
    first = batched[0].queue_offset
    assert [r.queue_offset for r in batched] == list(range(first, first + 6))
    for message, result in zip(plain, batched, strict=True):
        assert (await _stored(broker, result)).body == message.body
    stored_large = await _stored(broker, results[4])
    assert stored_large.sys_flag & sysflag.COMPRESSED_FLAG
    assert zlib.decompress(stored_large.body) == large.body
    assert results[3].queue.topic == topic  # the delayed one answered on its own


async def test_selector_sends_keep_their_order(
    broker: BrokerApp, producer: Producer, topic: str
) -> None:
    bodies = [f"step-{i}".encode() for i in range(20)]
    sends = [producer.send(Message(topic, b), selector=select_by_hash, arg=7) for b in bodies]
    results = await asyncio.wait_for(asyncio.gather(*sends), WAIT_SECONDS)
    assert len({r.queue for r in results}) == 1
    offsets = [r.queue_offset for r in results]
    assert offsets == list(range(offsets[0], offsets[0] + 20))
    assert [(await _stored(broker, r)).body for r in results] == bodies


async def test_close_sends_what_is_gathering(
    namesrv: NamesrvApp, broker: BrokerApp, topic: str
) -> None:
    producer = Producer("PG_auto_batch_close", namesrv.address, auto_batch=True,
                        batch_max_delay_ms=60_000, send_timeout=30.0)  # fmt: skip
    await producer.start()
    future = producer.send_async(Message(topic, b"flushed on close"))
    await asyncio.wait_for(producer.close(), WAIT_SECONDS)
    assert (await _stored(broker, future.result())).body == b"flushed on close"


def test_batch_max_bytes_must_fit_a_message() -> None:
    with pytest.raises(ValueError, match="batch_max_bytes"):
        Producer("PG_bad", auto_batch=True, batch_max_bytes=8 * 1024 * 1024)
