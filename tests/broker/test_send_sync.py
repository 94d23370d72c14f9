"""Sends on a SYNC_FLUSH broker: answered after the group-commit flush, FLUSH_DISK_TIMEOUT
when it is late, at once for ``WAIT=false``, and never blocking requests behind them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import prometheus_client

from rocketkube.broker.consumers.clients import ClientManager
from rocketkube.broker.consumers.groups import SubscriptionGroupManager
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.send import processor as send
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.stats import BrokerStats
from rocketkube.broker.store import FlushDiskType, MessageStore
from rocketkube.broker.store.mapped_file import MappedFile
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.common.message import ids
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer


class Gate:
    """A commit-log sync that waits while the gate is closed (a slow disk, under test
    control)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.opened.set()
        self.calls = 0

    def sync_range(self, mapped: MappedFile, start: int, end: int) -> None:
        self.calls += 1
        self.opened.wait(30)
        mapped.sync_range(start, end)


def clock() -> int:
    return int(time.time() * 1000)


@contextlib.asynccontextmanager
async def sync_broker(
    settings: BrokerSettings, gate: Gate, timeout_ms: int = 5_000
) -> AsyncIterator[tuple[BrokerContext, RemotingClient, str]]:
    settings = settings.model_copy(
        update={"flush_disk_type": FlushDiskType.SYNC_FLUSH, "sync_flush_timeout": timeout_ms}
    )
    config_dir = Path(settings.store_path_root_dir) / "config"
    store = MessageStore(settings.store_config(listen_port=10911), log_sync=gate.sync_range)
    await store.start()
    ctx = BrokerContext(
        settings=settings,
        store=store,
        topics=TopicConfigManager(settings, config_dir / "topics.json", clock),
        groups=SubscriptionGroupManager(config_dir / "subscriptionGroup.json", clock),
        offsets=ConsumerOffsetManager(config_dir / "consumerOffset.json"),
        clients=ClientManager(),
        stats=BrokerStats(prometheus_client.CollectorRegistry()),
        clock=clock,
        broker_addr="127.0.0.1:10911",
        permission=6,
    )
    ctx.topics.update(TopicConfig("S", 4, 4))
    server = RemotingServer(Dispatcher(send.table(ctx)), "127.0.0.1", 0)
    await server.start()
    client = RemotingClient(timeout=20.0)
    try:
        yield ctx, client, f"127.0.0.1:{server.port}"
    finally:
        gate.opened.set()
        await client.close()
        await server.stop()
        await store.shutdown()


def request(wait: bool = True, queue_id: int = 0) -> RemotingCommand:
    ext = SendMessageRequestHeaderV2(
        producer_group="PG", topic="S", default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=queue_id, sys_flag=0, born_timestamp=1, flag=0,
        properties=encode_properties({"WAIT": "true" if wait else "false", "TAGS": "t"}),
    ).encode()  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"x" * 100)


async def test_sync_sends_are_answered_after_their_flush(broker_settings: BrokerSettings) -> None:
    gate = Gate()
    async with sync_broker(broker_settings, gate) as (ctx, client, addr):
        replies = await asyncio.gather(*(client.invoke(addr, request()) for _ in range(40)))
        assert {r.code for r in replies} == {ResponseCode.SUCCESS}
        for reply in replies:
            _, _, phys = ids.decode_offset_msg_id(reply.ext_fields["msgId"])
            assert ctx.store.flushed_offset > phys
            assert reply.ext_fields["MSG_REGION"] == "DefaultRegion"
        assert 1 <= ctx.store.flush_count <= 40
        assert sorted(int(r.ext_fields["queueOffset"]) for r in replies) == list(range(40))


async def test_wait_false_is_answered_before_the_flush(broker_settings: BrokerSettings) -> None:
    gate = Gate()
    async with sync_broker(broker_settings, gate) as (ctx, client, addr):
        await client.connection(addr)
        gate.opened.clear()
        waiting = asyncio.ensure_future(client.invoke(addr, request(wait=True)))
        quick = await client.invoke(addr, request(wait=False, queue_id=1))
        assert quick.code == ResponseCode.SUCCESS
        assert quick.ext_fields["queueId"] == "1"
        assert not waiting.done()  # the pipelined WAIT=false send was not held behind it
        gate.opened.set()
        slow = await waiting
        assert slow.code == ResponseCode.SUCCESS
        assert "WAIT" not in ctx.store.lookup_message_ext(0).properties  # type: ignore[union-attr]


async def test_late_flush_answers_flush_disk_timeout(broker_settings: BrokerSettings) -> None:
    gate = Gate()
    async with sync_broker(broker_settings, gate, timeout_ms=300) as (ctx, client, addr):
        await client.connection(addr)
        gate.opened.clear()
        reply = await client.invoke(addr, request(queue_id=2))
        assert reply.code == ResponseCode.FLUSH_DISK_TIMEOUT
        assert reply.ext_fields["queueId"] == "2"
        assert reply.ext_fields["queueOffset"] == "0"
        assert len(reply.ext_fields["msgId"]) == 32
        assert reply.ext_fields["TRACE_ON"] == "true"
        gate.opened.set()
        assert ctx.store.get_messages("S", 2, 0, 1).message_count == 1
