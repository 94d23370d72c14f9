"""The lite pull consumer against a real name server and broker in this event loop."""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from waiting import WAIT_SECONDS

from rocketkube.broker.app import BrokerApp
from rocketkube.client import ClientStateError, Message, Producer
from rocketkube.client.consumer.lite_pull import LitePullConsumer
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.namesrv.app import NamesrvApp

QUEUES = 4

CreateTopic = Callable[..., Awaitable[None]]


@pytest.fixture
def topic(routed_topic: str) -> str:
    return routed_topic


@pytest.fixture
def group(names: tuple[str, str]) -> str:
    return names[1]


@pytest.fixture
async def producer(namesrv: NamesrvApp, broker: BrokerApp) -> AsyncIterator[Producer]:
    async with Producer("LitePullTestProducer", namesrv.address, send_timeout=30.0) as p:
        yield p


async def _send(
    producer: Producer,
    topic: str,
    bodies: list[str],
    tags: str | None = None,
    queue: MessageQueue | None = None,
) -> None:
    for body in bodies:
        message = Message(topic, body.encode())
        message.tags = tags
        await producer.send(message, queue=queue)


async def _poll_until(consumer: LitePullConsumer, count: int) -> list[MessageExt]:
    """Poll until ``count`` messages arrived, then once more to prove nothing else comes."""
    got: list[MessageExt] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} messages"
        got.extend(await consumer.poll(1.0))
    got.extend(await consumer.poll(0.3))
    return got


def _bodies(messages: list[MessageExt]) -> list[str]:
    return sorted(m.body.decode() for m in messages)


async def test_subscribe_poll_receives_every_message(
    namesrv: NamesrvApp, broker: BrokerApp, topic: str, group: str, producer: Producer
) -> None:
    sent = [f"m{i:02d}" for i in range(20)]
    await _send(producer, topic, sent)
    async with LitePullConsumer(group, namesrv.address, auto_commit=False) as consumer:
        await consumer.subscribe(topic)
        assert consumer.assignment() == {MessageQueue(topic, "broker-a", i) for i in range(QUEUES)}
        got = await _poll_until(consumer, len(sent))
        assert _bodies(got) == sent
        assert {m.topic for m in got} == {topic}
        # Messages sent while polling arrive through the long poll.
        task = asyncio.create_task(_poll_until(consumer, 1))
        await asyncio.sleep(0.2)
        await _send(producer, topic, ["late"])
        assert _bodies(await task) == ["late"]
        # The consumer is visible to the broker (CONSUME_ACTIVELY heartbeat).
        assert broker.ctx is not None
        info = broker.ctx.clients.consumer_group(group)
        assert info is not None
        assert consumer.client_id in info.client_ids()


async def test_subscribe_before_start(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    await _send(producer, topic, ["a", "b"])
    consumer = LitePullConsumer(group, namesrv.address)
    await consumer.subscribe(topic)
    assert consumer.assignment() == set()
    async with consumer:
        assert len(consumer.assignment()) == QUEUES
        assert _bodies(await _poll_until(consumer, 2)) == ["a", "b"]


async def test_tag_filtering(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    await _send(producer, topic, ["a1", "a2", "a3"], tags="TagA")
    await _send(producer, topic, ["b1", "b2"], tags="TagB")
    await _send(producer, topic, ["c1"], tags="TagC")
    await _send(producer, topic, ["none"])
    async with LitePullConsumer(group, namesrv.address) as consumer:
        await consumer.subscribe(topic, "TagA || TagC")
        got = await _poll_until(consumer, 4)
        assert _bodies(got) == ["a1", "a2", "a3", "c1"]
        assert {m.tags for m in got} == {"TagA", "TagC"}


async def test_a_body_inflating_past_the_cap_comes_as_stored_and_the_queue_goes_on(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    huge, fits = b"h" * 20_000, b"f" * 8_000  # both compressed by the producer
    await _send(producer, topic, [huge.decode(), fits.decode(), "plain"])
    cap = 10_000
    async with LitePullConsumer(group, namesrv.address, max_inflated_body_size=cap) as consumer:
        await consumer.subscribe(topic)
        got = {m.body[:1]: m for m in await _poll_until(consumer, 3)}
    assert len(got) == 3
    stored = got[b"x"]  # a zlib stream starts with 0x78
    assert sysflag.is_compressed(stored.sys_flag)
    assert zlib.decompress(stored.body) == huge
    assert (got[b"f"].body, sysflag.is_compressed(got[b"f"].sys_flag)) == (fits, False)
    assert got[b"p"].body == b"plain"


async def test_commit_then_new_consumer_resumes(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    first = [f"first{i}" for i in range(10)]
    await _send(producer, topic, first)
    async with LitePullConsumer(group, namesrv.address, auto_commit=False) as consumer:
        await consumer.subscribe(topic)
        assert _bodies(await _poll_until(consumer, 10)) == sorted(first)
        await consumer.commit()
        committed = [await consumer.committed(q) for q in sorted(consumer.assignment())]
        assert sum(c or 0 for c in committed) == 10
    second = [f"second{i}" for i in range(5)]
    await _send(producer, topic, second)
    async with LitePullConsumer(group, namesrv.address, auto_commit=False) as consumer:
        await consumer.subscribe(topic)
        assert _bodies(await _poll_until(consumer, 5)) == sorted(second)


async def test_auto_commit_on_close(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    await _send(producer, topic, ["x", "y", "z"])
    async with LitePullConsumer(group, namesrv.address, auto_commit_interval=60) as consumer:
        await consumer.subscribe(topic)
        assert _bodies(await _poll_until(consumer, 3)) == ["x", "y", "z"]
    async with LitePullConsumer(group, namesrv.address) as consumer:
        await consumer.subscribe(topic)
        assert await consumer.poll(0.5) == []


async def test_periodic_auto_commit(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    await _send(producer, topic, ["x", "y"])
    async with LitePullConsumer(group, namesrv.address, auto_commit_interval=0.1) as consumer:
        await consumer.subscribe(topic)
        await _poll_until(consumer, 2)
        queues = sorted(consumer.assignment())

        async def total() -> int:
            return sum([(await consumer.committed(q)) or 0 for q in queues])

        deadline = time.monotonic() + WAIT_SECONDS
        while await total() != 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)


async def test_seek_back_redelivers_and_seek_to_end(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    queue = MessageQueue(topic, "broker-a", 2)
    await _send(producer, topic, ["s0", "s1", "s2", "s3"], queue=queue)
    async with LitePullConsumer(group, namesrv.address, auto_commit=False) as consumer:
        await consumer.assign([queue])
        got = await _poll_until(consumer, 4)
        assert [m.queue_offset for m in got] == [0, 1, 2, 3]
        consumer.seek(queue, 2)
        assert [m.body for m in await _poll_until(consumer, 2)] == [b"s2", b"s3"]
        await consumer.seek_to_begin(queue)
        assert len(await _poll_until(consumer, 4)) == 4
        await consumer.seek_to_end(queue)
        assert await consumer.poll(0.3) == []
        await _send(producer, topic, ["s4"], queue=queue)
        assert [m.body for m in await _poll_until(consumer, 1)] == [b"s4"]


async def test_offset_moved_jumps_to_next_begin_offset(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer
) -> None:
    queue = MessageQueue(topic, "broker-a", 1)
    await _send(producer, topic, ["o0", "o1"], queue=queue)
    async with LitePullConsumer(group, namesrv.address, auto_commit=False) as consumer:
        await consumer.assign([queue])
        consumer.seek(queue, 1000)  # beyond max: PULL_OFFSET_MOVED to max (2)
        assert await consumer.poll(0.3) == []
        await _send(producer, topic, ["o2"], queue=queue)
        got = await _poll_until(consumer, 1)
        assert [(m.body, m.queue_offset) for m in got] == [(b"o2", 2)]


async def test_assign_single_queue(
    namesrv: NamesrvApp, broker: BrokerApp, topic: str, group: str, producer: Producer
) -> None:
    await _send(producer, topic, [f"q{i}" for i in range(12)])
    queue = MessageQueue(topic, "broker-a", 3)
    assert broker.ctx is not None
    expected = broker.ctx.store.max_offset(topic, 3)
    assert expected > 0
    async with LitePullConsumer(group, namesrv.address) as consumer:
        await consumer.assign([queue])
        assert consumer.assignment() == {queue}
        got = await _poll_until(consumer, expected)
        assert len(got) == expected
        assert {m.queue_id for m in got} == {3}
        assert [m.queue_offset for m in got] == list(range(expected))
        with pytest.raises(ClientStateError):
            await consumer.subscribe(topic)
        with pytest.raises(ValueError, match="not assigned"):
            consumer.seek(MessageQueue(topic, "broker-a", 0), 0)


@pytest.mark.parametrize("where", ["first", "last", "timestamp"])
async def test_new_group_starts_at_zero_whatever_consume_from_where(
    namesrv: NamesrvApp, topic: str, group: str, producer: Producer, where: str
) -> None:
    """The broker answers QUERY_CONSUMER_OFFSET with 0 for a never-committed group while the
    queue's min offset is 0 (as Apache 4.9.8), so even "last" reads existing messages."""
    await _send(producer, topic, ["old1", "old2", "old3"])
    async with LitePullConsumer(
        group,
        namesrv.address,
        consume_from_where=where,  # type: ignore[arg-type]
        consume_timestamp_ms=int(time.time() * 1000) + 3_600_000,
    ) as consumer:
        await consumer.subscribe(topic)
        assert _bodies(await _poll_until(consumer, 3)) == ["old1", "old2", "old3"]


@pytest.mark.parametrize(
    ("where", "expected"),
    [("first", ["new", "old1", "old2"]), ("last", ["new"]), ("timestamp", ["new", "old1", "old2"])],
)
async def test_consume_from_where_on_query_not_found(
    namesrv: NamesrvApp,
    topic: str,
    group: str,
    producer: Producer,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    expected: list[str],
) -> None:
    """When the broker has no offset (22), the first-offset logic (docs/protocol.md §6.2)
    picks the start by consume_from_where: "first" 0, "last" the max offset, "timestamp"
    the search (here a time before every message).
    """
    before = int(time.time() * 1000) - 1000
    await _send(producer, topic, ["old1", "old2"])
    async with LitePullConsumer(
        group,
        namesrv.address,
        consume_from_where=where,  # type: ignore[arg-type]
        consume_timestamp_ms=before,
    ) as consumer:

        async def not_found(queue: MessageQueue) -> int | None:
            return None

        monkeypatch.setattr(consumer, "committed", not_found)
        await consumer.subscribe(topic)
        got = await consumer.poll(0.3)  # fixes every queue's first offset
        await _send(producer, topic, ["new"])
        got.extend(await _poll_until(consumer, len(expected) - len(got)))
        assert _bodies(got) == expected


async def test_poll_timeout_and_state_errors(namesrv: NamesrvApp, topic: str, group: str) -> None:
    consumer = LitePullConsumer(group, namesrv.address)
    with pytest.raises(ClientStateError):
        await consumer.poll(0.1)
    async with consumer:
        assert await consumer.poll(0.1) == []  # nothing assigned
        await consumer.subscribe(topic)
        started = time.monotonic()
        assert await consumer.poll(0.5) == []
        assert 0.3 < time.monotonic() - started < 5.0
        with pytest.raises(ClientStateError):
            await consumer.assign([MessageQueue(topic, "broker-a", 0)])
    with pytest.raises(ClientStateError):
        await consumer.poll(0.1)
    with pytest.raises(ClientStateError):
        await consumer.start()
    with pytest.raises(ValueError, match="consume_timestamp_ms"):
        LitePullConsumer(group, consume_from_where="timestamp")
    with pytest.raises(ValueError, match="one of"):
        LitePullConsumer(group, consume_from_where="middle")  # type: ignore[arg-type]


async def test_subscribe_to_a_topic_routed_later(
    namesrv: NamesrvApp, create_topic: CreateTopic, names: tuple[str, str], producer: Producer
) -> None:
    topic, group = names
    async with LitePullConsumer(group, namesrv.address, consume_from_where="first") as consumer:
        await consumer.subscribe(topic)  # no route yet: not an error
        assert consumer.assignment() == set()
        assert await consumer.poll(0.2) == []
        await create_topic(topic, QUEUES)
        await _send(producer, topic, ["late"])
        assert _bodies(await _poll_until(consumer, 1)) == ["late"]
        assert len(consumer.assignment()) == QUEUES
