"""GET_CONSUMER_RUNNING_INFO end to end: a real PushConsumer answers, through a real broker,
``AdminClient.consumer_running_info`` and the ``consumerStatus`` / ``consumerProgress -s``
subcommands (name server, broker and consumer on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from waiting import WAIT_SECONDS, wait_until

from rocketkube.client.admin import cli as admin_cli
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.consumer.listener import ConsumeContext
from rocketkube.client.consumer.lite_pull import LitePullConsumer
from rocketkube.client.consumer.push import PushConsumer
from rocketkube.client.errors import MQBrokerError
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.running_info import (
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    ConsumerRunningInfo,
)
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.namesrv.app import NamesrvApp

QUEUES = 4
CreateTopic = Callable[..., Awaitable[None]]


class Live:
    """A started push consumer of (topic, group) holding every queue of the topic."""

    def __init__(self, consumer: PushConsumer, topic: str, received: list[MessageExt]) -> None:
        self.consumer, self.topic, self.received = consumer, topic, received

    @property
    def group(self) -> str:
        return self.consumer.group

    @property
    def client_id(self) -> str:
        return self.consumer.client_id


@pytest.fixture
async def live(
    namesrv: NamesrvApp, create_topic: CreateTopic, names: tuple[str, str], tmp_path: Path
) -> AsyncIterator[Live]:
    topic, group = names
    await create_topic(topic, QUEUES)
    received: list[MessageExt] = []

    def listener(messages: list[MessageExt], context: ConsumeContext) -> None:
        received.extend(messages)

    consumer = PushConsumer(
        group,
        namesrv.address,
        rebalance_interval=1.0,
        persist_interval=0.3,
        heartbeat_interval=2.0,
        suspend_timeout=1.0,
        pull_error_delay=0.2,
        shutdown_timeout=3.0,
        offset_store_dir=tmp_path,
    )
    consumer.register_listener(listener)
    await consumer.subscribe(topic, "TagA || TagB")
    await consumer.start()
    try:
        mine = {q for q in consumer.assignment() if q.topic == topic}
        await wait_until(
            lambda: len({q for q in consumer.assignment() if q.topic == topic}) == QUEUES,
            f"consumer owns {QUEUES} queues ({mine})",
        )
        yield Live(consumer, topic, received)
    finally:
        await consumer.close()


@pytest.fixture
async def admin(namesrv: NamesrvApp) -> AsyncIterator[AdminClient]:
    async with AdminClient(namesrv.address, timeout=10.0) as client:
        yield client


async def cli(namesrv: NamesrvApp, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await admin_cli.execute([*argv, "-n", namesrv.address], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


async def send(live: Live, namesrv: NamesrvApp, count: int) -> None:
    """Send ``count`` messages, one per queue in turn, and wait until all are consumed (so
    the group has committed offsets and figures)."""
    async with Producer("RunningInfoProducer", namesrv.address, send_timeout=30.0) as producer:
        for i in range(count):
            message = Message(live.topic, f"m{i}".encode())
            message.tags = "TagA"
            await producer.send(message)
    await wait_until(lambda: len(live.received) >= count, f"{count} messages consumed")


def topic_queues(live: Live) -> set[MessageQueue]:
    return {MessageQueue(live.topic, "broker-a", i) for i in range(QUEUES)}


async def test_running_info_of_a_live_consumer(
    live: Live, admin: AdminClient, namesrv: NamesrvApp
) -> None:
    await send(live, namesrv, 8)
    info = await admin.consumer_running_info(live.group, live.client_id)
    assert isinstance(info, ConsumerRunningInfo)
    assert topic_queues(live) <= set(info.mq_table)
    assert sum(pq.commit_offset for mq, pq in info.mq_table.items() if mq.topic == live.topic) in (
        range(0, 9)
    )
    assert all(not pq.dropped for pq in info.mq_table.values())
    [sub] = [s for s in info.subscriptions if s.topic == live.topic]
    assert (sub.sub_string, sorted(sub.tags_set)) == ("TagA || TagB", ["TagA", "TagB"])
    assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert info.properties[PROP_CONSUME_ORDERLY] == "false"
    assert info.properties["consumerGroup"] == live.group
    assert info.properties["messageModel"] == "CLUSTERING"
    status = info.status_table[live.topic]
    assert status.pull_tps > 0
    assert status.consume_ok_tps > 0
    assert status.consume_failed_msgs == 0
    assert info.jstack is None
    with_stacks = await admin.consumer_running_info(live.group, live.client_id, jstack=True)
    assert with_stacks.jstack is not None
    assert "asyncio task" in with_stacks.jstack


async def test_unknown_client_is_a_clear_error(
    live: Live, admin: AdminClient, namesrv: NamesrvApp
) -> None:
    with pytest.raises(MQBrokerError) as caught:
        await admin.consumer_running_info(live.group, "10.9.9.9@nobody")
    assert caught.value.code == ResponseCode.SYSTEM_ERROR
    assert caught.value.remark == f"The Consumer <{live.group}> <10.9.9.9@nobody> not online"
    code, out, err = await cli(namesrv, "consumerStatus", "-g", live.group, "-i", "10.9.9.9@x")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith("error: SYSTEM_ERROR (1): The Consumer <")
    assert "not online" in err


async def test_consumer_progress_shows_who_holds_each_queue(
    live: Live, namesrv: NamesrvApp
) -> None:
    def all_held(result: tuple[int, str, str]) -> bool:
        if result[0] != 0:
            return False
        offsets = json.loads(result[1])["offsets"]
        mine = [o for o in offsets if o["topic"] == live.topic]
        return len(mine) == QUEUES and all(o["clientIp"] == "127.0.0.1" for o in mine)

    await send(live, namesrv, 2 * QUEUES)
    argv = ("consumerProgress", "-g", live.group, "-s", "true", "--json")
    deadline = time.monotonic() + WAIT_SECONDS
    while not all_held(result := await cli(namesrv, *argv)):
        assert time.monotonic() < deadline, result
        await asyncio.sleep(0.2)
    code, out, _ = await cli(namesrv, "consumerProgress", "-g", live.group, "-s", "true")
    assert code == 0
    header, *rows = out.splitlines()
    assert "#Client IP" in header
    assert sum(1 for r in rows if r.startswith(live.topic) and "127.0.0.1" in r) == QUEUES
    code, plain, _ = await cli(namesrv, "consumerProgress", "-g", live.group)
    assert code == 0
    assert "#Client IP" not in plain


async def test_consumer_status_both_forms(live: Live, namesrv: NamesrvApp) -> None:
    code, out, err = await cli(namesrv, "consumerStatus", "-g", live.group)
    assert code == 0, err
    assert live.client_id in out
    assert "Same subscription in the same group of consumer" in out
    code, out, err = await cli(namesrv, "consumerStatus", "-g", live.group, "--json")
    listing: dict[str, Any] = json.loads(out)
    assert listing["sameSubscription"] is True
    [client] = listing["clients"]
    assert client["clientId"] == live.client_id
    assert len(client["runningInfo"]["mqTable"]) >= QUEUES
    code, out, err = await cli(namesrv, "consumerStatus", "-g", live.group, "-i", live.client_id)
    assert code == 0, err
    assert "#Consumer MQ Detail#" in out
    assert live.group in out
    code, out, err = await cli(
        namesrv, "consumerStatus", "-g", live.group, "-i", live.client_id, "-s", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert {(q["topic"], q["queueId"]) for q in data["mqTable"]} >= {
        (live.topic, i) for i in range(QUEUES)
    }
    assert data["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert "asyncio task" in data["jstack"]


async def test_lite_pull_consumer_answers_too(
    namesrv: NamesrvApp, create_topic: CreateTopic, names: tuple[str, str], admin: AdminClient
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    async with LitePullConsumer(group, namesrv.address, auto_commit=False) as consumer:
        await consumer.subscribe(topic)
        await wait_until(lambda: len(consumer.assignment()) == QUEUES, "lite pull assigned")
        assert await consumer.poll(0.2) == []
        info = await admin.consumer_running_info(group, consumer.client_id)
    assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_ACTIVELY"
    assert set(info.mq_table) == {MessageQueue(topic, "broker-a", i) for i in range(QUEUES)}
    assert [s.topic for s in info.subscriptions] == [topic]
    assert info.status_table[topic].consume_ok_tps == 0.0


class _AllAtOnce(AdminClient):
    """Answers a client only once every client of the call was asked: one asked after
    another answered would wait in vain (a silent client would cost its 10 s each)."""

    def __init__(self, expected: int) -> None:
        super().__init__("127.0.0.1:1")
        self.expected = expected
        self.asked: list[str] = []
        self.everyone_asked = asyncio.Event()

    async def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False
    ) -> ConsumerRunningInfo:
        self.asked.append(client_id)
        if len(self.asked) == self.expected:
            self.everyone_asked.set()
        await asyncio.wait_for(self.everyone_asked.wait(), WAIT_SECONDS)
        if client_id.startswith("silent"):
            raise MQBrokerError(ResponseCode.CONSUME_MSG_TIMEOUT, f"{client_id} did not answer")
        return ConsumerRunningInfo(properties={"clientId": client_id})


async def test_clients_are_asked_at_once() -> None:
    admin = _AllAtOnce(expected=3)
    answers = await admin.consumers_running_info("g", ["a@1", "silent@2", "b@3", "a@1"])
    assert sorted(admin.asked) == ["a@1", "b@3", "silent@2"]  # each once
    assert list(answers) == ["a@1", "silent@2", "b@3"]
    info_a, silent, info_b = answers.values()
    assert isinstance(info_a, ConsumerRunningInfo)
    assert info_a.properties["clientId"] == "a@1"
    assert isinstance(info_b, ConsumerRunningInfo)
    assert info_b.properties["clientId"] == "b@3"
    assert isinstance(silent, MQBrokerError)
    assert silent.code == ResponseCode.CONSUME_MSG_TIMEOUT
