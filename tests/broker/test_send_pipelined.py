"""Pipelined sends served as one run (``SendProcessor.send_many``, the connection's
``handle_many``): every request answered exactly once, as it would be alone, and stored
as it would be alone; a refused combined append falls back to one append per send."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import cast

import pytest

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.send import processor as send
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.store import FlushDiskType, MessageStore
from rocketkube.broker.store.mapped_file import MappedFile
from rocketkube.common.message import record
from rocketkube.common.message.batch import BatchItem, encode_batch
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.send_headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import FLAG_ONEWAY, RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

MAX_BODY = 1024
BORN = 1_700_000_000_000


@pytest.fixture
def broker_settings(broker_settings: BrokerSettings) -> BrokerSettings:
    return broker_settings.model_copy(update={"max_message_size": MAX_BODY})


class Peer:
    """The connection as the send processor sees it: only its peer address."""

    remote_address = "127.0.0.1:40000"


PEER = cast(Connection, Peer())


def header(
    topic: str,
    props: Mapping[str, str] | None = None,
    *,
    queue_id: int = 0,
    reconsume: int | None = None,
    batch: bool | None = None,
    v1: bool = False,
) -> dict[str, str]:
    cls = SendMessageRequestHeader if v1 else SendMessageRequestHeaderV2
    return cls(
        producer_group="PG",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=BORN,
        flag=0,
        properties=encode_properties(props) if props else None,
        reconsume_times=reconsume,
        batch=batch,
    ).encode()


def send_request(
    ext: dict[str, str], body: bytes, code: int = RequestCode.SEND_MESSAGE_V2
) -> RemotingCommand:
    return RemotingCommand.request(code, ext, body, language="JAVA")


def read(ctx: BrokerContext, topic: str, queue_id: int) -> list[MessageExt]:
    result = ctx.store.get_messages(topic, queue_id, 0, 64)
    return record.decode_all(result.body()) if result.found else []


def mixed_run() -> list[RemotingCommand]:
    """Good sends of both header spellings, refusals, retry, DLQ, delay and a batch."""
    return [
        send_request(header("P", {"TAGS": "a"}), b"m0"),
        send_request(
            header("P", {"TAGS": "b"}, queue_id=1, v1=True), b"m1", RequestCode.SEND_MESSAGE
        ),
        send_request(header("bad topic!"), b"refused"),
        send_request(header("%RETRY%G", reconsume=1), b"retry"),
        send_request(header("%RETRY%G", reconsume=16), b"dead"),
        send_request(header("P", {"DELAY": "2"}, queue_id=3), b"later"),
        send_request(
            header("P", queue_id=2, batch=True),
            encode_batch([BatchItem(0, b"b0", "KEYS\x01k0"), BatchItem(0, b"b1", "")]),
            RequestCode.SEND_BATCH_MESSAGE,
        ),
        send_request(header("P", queue_id=0), b"m8"),
    ]


def check_mixed(ctx: BrokerContext, replies: list[RemotingCommand]) -> None:
    codes = [r.code for r in replies]
    ok = ResponseCode.SUCCESS
    assert codes == [ok, ok, ResponseCode.SYSTEM_ERROR, ok, ok, ok, ok, ok]
    assert "illegal characters" in (replies[2].remark or "")
    for reply in replies:
        assert reply.ext_fields["MSG_REGION"] == "DefaultRegion"
    ids = [r.ext_fields["msgId"] for r in replies if r.code == ok]
    assert len(set(ids)) == len(ids)
    assert [m.body for m in read(ctx, "P", 0)] == [b"m0", b"m8"]
    assert [(r.ext_fields["queueId"], r.ext_fields["queueOffset"]) for r in replies[:2]] == [
        ("0", "0"),
        ("1", "0"),
    ]
    assert replies[7].ext_fields["queueOffset"] == "1"
    (m1,) = read(ctx, "P", 1)
    assert m1.body == b"m1"
    assert m1.properties["TAGS"] == "b"
    assert m1.properties["CLUSTER"] == "DefaultCluster"
    assert [m.body for m in read(ctx, "%RETRY%G", 0)] == [b"retry"]
    assert [m.body for m in read(ctx, "%DLQ%G", 0)] == [b"dead"]
    (delayed,) = read(ctx, "SCHEDULE_TOPIC_XXXX", 1)
    assert delayed.body == b"later"
    assert delayed.properties["REAL_TOPIC"] == "P"
    assert delayed.properties["REAL_QID"] == "3"
    batch = read(ctx, "P", 2)
    assert [m.body for m in batch] == [b"b0", b"b1"]
    assert batch[0].properties["KEYS"] == "k0"
    assert replies[6].ext_fields["msgId"] == ",".join(m.msg_id for m in batch)


async def test_mixed_run_is_stored_and_answered_as_one_by_one(context: BrokerContext) -> None:
    context.topics.update(TopicConfig("P", 4, 4))
    replies = send.SendProcessor(context).send_many(PEER, mixed_run())
    assert all(isinstance(r, RemotingCommand) for r in replies)
    check_mixed(context, cast(list[RemotingCommand], replies))


async def test_an_illegal_message_fails_alone(context: BrokerContext) -> None:
    """The combined append is refused for one oversized body: each send is then stored on
    its own, and only that one fails."""
    context.topics.update(TopicConfig("P", 4, 4))
    run = mixed_run()
    run.insert(5, send_request(header("P", queue_id=0), b"x" * (MAX_BODY + 1)))
    replies = cast(list[RemotingCommand], send.SendProcessor(context).send_many(PEER, run))
    assert replies[5].code == ResponseCode.MESSAGE_ILLEGAL
    check_mixed(context, replies[:5] + replies[6:])


# -- over a socket: one chunk, every request answered exactly once ---------------------------


class RawPeer(asyncio.Protocol):
    """Writes frames in one write; collects replies by opaque."""

    def __init__(self) -> None:
        self.decoder = frame.FrameDecoder()
        self.replies: dict[int, list[RemotingCommand]] = {}
        self.changed = asyncio.Event()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        for reply in self.decoder.feed(data):
            self.replies.setdefault(reply.opaque, []).append(reply)
        self.changed.set()

    def write_chunk(self, requests: list[RemotingCommand]) -> None:
        assert self.transport is not None
        for opaque, req in enumerate(requests, 1):
            req.opaque = opaque
        self.transport.write(b"".join(frame.encode_bytes(r) for r in requests))

    async def wait_for(self, count: int, timeout: float = 20.0) -> None:
        async with asyncio.timeout(timeout):
            while sum(len(v) for v in self.replies.values()) < count:
                self.changed.clear()
                await self.changed.wait()


async def connect(server: RemotingServer) -> RawPeer:
    loop = asyncio.get_running_loop()
    _, peer = await loop.create_connection(RawPeer, "127.0.0.1", server.port)
    return peer


async def test_chunk_answers_each_request_once(context: BrokerContext) -> None:
    context.topics.update(TopicConfig("P", 4, 4))
    server = RemotingServer(Dispatcher(send.table(context)), "127.0.0.1", 0)
    await server.start()
    try:
        peer = await connect(server)
        requests = mixed_run()
        requests.insert(3, RemotingCommand.request(9999))  # not a send: splits the run
        oneway = send_request(header("P", queue_id=3), b"oneway")
        oneway.flag |= FLAG_ONEWAY
        requests.insert(5, oneway)
        peer.write_chunk(requests)
        await peer.wait_for(len(requests) - 1)
        await asyncio.sleep(0.2)  # nothing more may come
        answered = sorted(peer.replies)
        assert answered == [i for i in range(1, len(requests) + 1) if i != 6]
        assert all(len(v) == 1 for v in peer.replies.values())
        assert peer.replies[4][0].code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        replies = [peer.replies[i][0] for i in answered if i != 4]
        check_mixed(context, replies)
        assert [m.body for m in read(context, "P", 3)] == [b"oneway"]
    finally:
        await server.stop()


# -- SYNC_FLUSH: a run waits for one group commit ---------------------------------------------


class SlowDisk:
    """A commit-log sync that waits while the gate is closed."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def sync_range(self, mapped: MappedFile, start: int, end: int) -> None:
        self.opened.wait(30)
        mapped.sync_range(start, end)


@pytest.fixture
async def sync_context(
    context: BrokerContext, tmp_path: Path
) -> AsyncIterator[tuple[BrokerContext, SlowDisk]]:
    """``context`` with a SYNC_FLUSH store of its own, on a disk under test control."""
    disk = SlowDisk()
    settings = context.settings.model_copy(
        update={
            "flush_disk_type": FlushDiskType.SYNC_FLUSH,
            "sync_flush_timeout": 20_000,
            "store_path_root_dir": str(tmp_path / "sync-store"),
        }
    )
    store = MessageStore(settings.store_config(listen_port=10911), log_sync=disk.sync_range)
    await store.start()
    ctx = BrokerContext(
        settings=settings,
        store=store,
        topics=context.topics,
        groups=context.groups,
        offsets=context.offsets,
        clients=context.clients,
        stats=context.stats,
        clock=context.clock,
        broker_addr=context.broker_addr,
        permission=context.permission,
    )
    try:
        yield ctx, disk
    finally:
        disk.opened.set()
        await store.shutdown()


async def test_sync_flush_run_is_answered_after_the_flush(
    sync_context: tuple[BrokerContext, SlowDisk],
) -> None:
    ctx, disk = sync_context
    ctx.topics.update(TopicConfig("S", 4, 4))
    server = RemotingServer(Dispatcher(send.table(ctx)), "127.0.0.1", 0)
    await server.start()
    try:
        peer = await connect(server)
        requests = [send_request(header("S", queue_id=i % 4), b"s%d" % i) for i in range(8)]
        requests.append(send_request(header("S", {"WAIT": "false"}), b"nowait"))
        requests.append(send_request(header("bad topic!"), b"refused"))
        peer.write_chunk(requests)
        await peer.wait_for(2)  # WAIT=false and the refusal: at once
        await asyncio.sleep(0.3)
        assert sorted(peer.replies) == [9, 10]
        assert peer.replies[9][0].code == ResponseCode.SUCCESS
        assert peer.replies[10][0].code == ResponseCode.SYSTEM_ERROR
        disk.opened.set()
        await peer.wait_for(len(requests))
        assert sorted(peer.replies) == list(range(1, 11))
        assert all(len(v) == 1 for v in peer.replies.values())
        assert all(peer.replies[i][0].code == ResponseCode.SUCCESS for i in range(1, 10))
        stored = sorted(m.body for q in range(4) for m in read(ctx, "S", q))
        assert stored == sorted([b"s%d" % i for i in range(8)] + [b"nowait"])
    finally:
        await server.stop()
