"""Long polling over real sockets: held pulls wake on arrival, time out, or are dropped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from waiting import wait_until

from rocketkube.broker.consumers.long_polling import PullRequestHoldService
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import pull
from rocketkube.broker.store import InnerMessage
from rocketkube.common import errors
from rocketkube.common.message import ids, properties, record, sysflag
from rocketkube.common.protocol import pull_headers as h
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "TopicA"
GROUP = "GroupA"
SUSPEND = sysflag.FLAG_SUBSCRIPTION | sysflag.FLAG_SUSPEND
LONG_MS = 20_000


class Broker:
    def __init__(
        self,
        ctx: BrokerContext,
        holds: PullRequestHoldService,
        server: RemotingServer,
        client: RemotingClient,
    ) -> None:
        self.ctx = ctx
        self.holds = holds
        self.server = server
        self.client = client
        self.address = f"127.0.0.1:{server.port}"
        self.tasks: list[asyncio.Task[RemotingCommand]] = []

    def pull(self, **fields: Any) -> asyncio.Task[RemotingCommand]:
        request = pull_request(**fields)
        task = asyncio.ensure_future(self.client.invoke(self.address, request, timeout=30))
        self.tasks.append(task)
        return task

    def put(self, *messages: InnerMessage) -> None:
        assert self.ctx.store.put_messages(messages).ok


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    context.topics.update(TopicConfig(TOPIC, 4, 4))
    holds = PullRequestHoldService(context.store)
    server = RemotingServer(Dispatcher(pull.table(context, holds)), "127.0.0.1", 0)
    await server.start()
    client = RemotingClient()
    broker = Broker(context, holds, server, client)
    yield broker
    for task in broker.tasks:
        task.cancel()
    await asyncio.gather(*broker.tasks, return_exceptions=True)
    await client.close()
    holds.close()
    await server.stop()


def pull_request(
    *,
    queue_id: int = 0,
    offset: int = 0,
    sys_flag: int = SUSPEND,
    suspend_ms: int = LONG_MS,
    subscription: str = "*",
    commit_offset: int = 0,
) -> RemotingCommand:
    header = h.PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_ms,
        sub_version=0,
        subscription=subscription,
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.encode())


def message(body: bytes, tags: str | None = None, queue_id: int = 0) -> InnerMessage:
    props = properties.encode_properties({"TAGS": tags})
    return InnerMessage(
        topic=TOPIC,
        queue_id=queue_id,
        body=body,
        properties=props.encode(),
        born_host=ids.pack_host("127.0.0.1", 40000),
    )


def bodies(resp: RemotingCommand) -> list[bytes]:
    return [m.body for m in record.decode_all(resp.body)]


async def test_arrival_wakes_a_held_pull_with_the_message(broker: Broker) -> None:
    task = broker.pull()
    await wait_until(lambda: broker.holds.held_count() == 1, "a pull held")
    assert not task.done()
    started = time.monotonic()
    broker.put(message(b"hello", "TagA"))
    resp = await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < 5
    assert resp.code == ResponseCode.SUCCESS
    assert bodies(resp) == [b"hello"]
    assert resp.ext_fields["nextBeginOffset"] == "1"
    assert broker.holds.held_count() == 0
    (histogram,) = broker.ctx.stats.pull_latency.collect()
    count = [s.value for s in histogram.samples if s.name.endswith("_count")]
    assert count == [1.0]


async def test_pull_at_the_end_of_a_nonempty_queue_is_held_too(broker: Broker) -> None:
    broker.put(message(b"old"))
    task = broker.pull(offset=1)
    await wait_until(lambda: broker.holds.held_count(TOPIC, 0) == 1, "a pull held on queue 0")
    broker.put(message(b"new"))
    resp = await asyncio.wait_for(task, 5)
    assert (resp.code, bodies(resp)) == (ResponseCode.SUCCESS, [b"new"])


async def test_non_matching_tag_does_not_wake(broker: Broker) -> None:
    task = broker.pull(subscription="TagA")
    await wait_until(lambda: broker.holds.held_count() == 1, "a pull held")
    broker.put(message(b"b", "TagB"), message(b"none"))
    await asyncio.sleep(0.05)  # a wake-up would be scheduled right away
    assert broker.holds.held_count() == 1
    assert not task.done()
    broker.put(message(b"a", "TagA"))
    resp = await asyncio.wait_for(task, 5)
    assert resp.code == ResponseCode.SUCCESS
    assert bodies(resp) == [b"a"]
    assert resp.ext_fields["nextBeginOffset"] == "3"


async def test_arrival_on_another_queue_does_not_wake(broker: Broker) -> None:
    task = broker.pull(queue_id=0)
    await wait_until(lambda: broker.holds.held_count() == 1, "a pull held")
    broker.put(message(b"q1", queue_id=1))
    await asyncio.sleep(0.05)
    assert not task.done()
    assert broker.holds.held_count(TOPIC, 0) == 1


async def test_timeout_answers_pull_not_found_with_the_original_opaque(broker: Broker) -> None:
    conn = await broker.client.connection(broker.address)
    request = pull_request(suspend_ms=300)
    started = time.monotonic()
    resp = await conn.invoke(request, 30)
    assert time.monotonic() - started >= 0.25
    assert resp.opaque == request.opaque
    assert resp.code == ResponseCode.PULL_NOT_FOUND
    assert resp.remark == "NO_MATCHED_LOGIC_QUEUE"
    assert broker.holds.held_count() == 0


async def test_short_polling_when_long_polling_is_off(broker: Broker) -> None:
    ctx = broker.ctx
    ctx.settings = ctx.settings.model_copy(
        update={"long_polling_enable": False, "short_polling_time_mills": 200}
    )
    resp = await asyncio.wait_for(broker.pull(suspend_ms=LONG_MS), 10)
    assert resp.code == ResponseCode.PULL_NOT_FOUND


async def test_without_suspend_flag_the_answer_is_immediate(broker: Broker) -> None:
    resp = await asyncio.wait_for(broker.pull(sys_flag=sysflag.FLAG_SUBSCRIPTION), 10)
    assert resp.code == ResponseCode.PULL_NOT_FOUND
    assert broker.holds.held_count() == 0


async def test_many_held_pulls_on_one_connection_are_answered_independently(
    broker: Broker,
) -> None:
    tasks = {q: broker.pull(queue_id=q) for q in range(3)}
    short = broker.pull(queue_id=3, suspend_ms=2000)
    # A stall of the machine may outlast the short hold: it must then have ended on its own.
    await wait_until(
        lambda: broker.holds.held_count() == 4 or short.done(),
        "four pulls held, or the short one done",
    )
    assert len(broker.server.connections) == 1
    # an unrelated pull on the same connection is answered at once
    quick = await asyncio.wait_for(broker.pull(queue_id=2, sys_flag=sysflag.FLAG_SUBSCRIPTION), 5)
    assert quick.code == ResponseCode.PULL_NOT_FOUND
    broker.put(message(b"one", queue_id=1))
    resp1 = await asyncio.wait_for(tasks[1], 5)
    assert bodies(resp1) == [b"one"]
    assert [m.queue_id for m in record.decode_all(resp1.body)] == [1]
    timed_out = await asyncio.wait_for(short, 10)
    assert timed_out.code == ResponseCode.PULL_NOT_FOUND
    assert not tasks[0].done()
    assert not tasks[2].done()
    broker.put(message(b"two", queue_id=2), message(b"zero", queue_id=0))
    resp0, resp2 = await asyncio.wait_for(asyncio.gather(tasks[0], tasks[2]), 5)
    assert (bodies(resp0), bodies(resp2)) == ([b"zero"], [b"two"])
    assert broker.holds.held_count() == 0


async def test_several_pulls_on_one_queue_all_wake(broker: Broker) -> None:
    tasks = [broker.pull() for _ in range(3)]
    await wait_until(lambda: broker.holds.held_count(TOPIC, 0) == 3, "three pulls held on queue 0")
    broker.put(message(b"m"))
    for resp in await asyncio.wait_for(asyncio.gather(*tasks), 5):
        assert bodies(resp) == [b"m"]


async def test_closed_connection_drops_its_holds(broker: Broker) -> None:
    task = broker.pull()
    await wait_until(lambda: broker.holds.held_count() == 1, "a pull held")
    broker.client.close_connection(broker.address)
    await wait_until(lambda: broker.holds.held_count() == 0, "no pull held")
    with pytest.raises(errors.ConnectionClosedError):
        await asyncio.wait_for(task, 5)
    broker.put(message(b"after"))  # nothing left to wake, nothing breaks
    assert broker.holds.held_count() == 0


async def test_woken_pull_does_not_commit_again(broker: Broker) -> None:
    offsets = broker.ctx.offsets
    flag = SUSPEND | sysflag.FLAG_COMMIT_OFFSET
    task = broker.pull(sys_flag=flag, commit_offset=0)
    await wait_until(lambda: broker.holds.held_count() == 1, "a pull held")
    assert offsets.query(GROUP, TOPIC, 0) == 0
    offsets.commit(GROUP, TOPIC, 0, 7)
    broker.put(message(b"m"))
    resp = await asyncio.wait_for(task, 5)
    assert resp.code == ResponseCode.SUCCESS
    assert offsets.query(GROUP, TOPIC, 0) == 7


# -- the service on its own ----------------------------------------------------------------


async def test_service_wakes_all_when_tags_are_unknown_and_close_drops(
    context: BrokerContext,
) -> None:
    holds = PullRequestHoldService(context.store)
    conn = Connection()
    conn.connection_made(_FakeTransport())
    answers: list[str] = []

    def rerun(name: str) -> Callable[[], RemotingCommand]:
        def again() -> RemotingCommand:
            answers.append(name)
            return RemotingCommand.response(ResponseCode.SUCCESS)

        return again

    filtered = holds.hold(conn, TOPIC, 0, 0, frozenset({1}).__contains__, LONG_MS, rerun("f"))
    behind = holds.hold(conn, TOPIC, 0, 5, None, LONG_MS, rerun("b"))
    holds.on_arrival(TOPIC, 0, 1, [])
    assert (await asyncio.wait_for(filtered, 5)) is not None
    assert answers == ["f"]
    assert holds.held_count() == 1  # offset 5 is not below the new max 1
    holds.close()
    assert behind.cancelled()
    assert holds.held_count() == 0
    late = holds.hold(conn, TOPIC, 0, 0, None, LONG_MS, rerun("late"))
    assert late.cancelled()


async def test_rerun_failure_fails_the_future(context: BrokerContext) -> None:
    holds = PullRequestHoldService(context.store)
    conn = Connection()
    conn.connection_made(_FakeTransport())

    def broken() -> RemotingCommand:
        raise RuntimeError("boom")

    future = holds.hold(conn, TOPIC, 0, 0, None, 10, broken)
    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.wait_for(future, 5)
    assert holds.held_count() == 0


class _FakeTransport(asyncio.Transport):
    """An open transport that writes nothing, for driving the service without sockets."""

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default
