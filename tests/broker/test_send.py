"""The send processors (10, 310, 320) over real sockets: round trips read back from the
store, batches, topic rules, retry/DLQ, delay and half messages, error responses."""

from __future__ import annotations

import asyncio
import dataclasses
import zlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.send import processor as send
from rocketkube.broker.settings import BrokerRole, BrokerSettings
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.common.message import ids, record
from rocketkube.common.message.batch import BatchItem, encode_batch
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.send_headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

MAX_BODY = 64 * 1024
BORN = 1_700_000_000_000
CLUSTER = "DefaultCluster"


@pytest.fixture
def broker_settings(broker_settings: BrokerSettings) -> BrokerSettings:
    return broker_settings.model_copy(update={"max_message_size": MAX_BODY})


class Broker:
    """The send processors of one context served on 127.0.0.1, and a client."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.server = RemotingServer(Dispatcher(send.table(ctx)), "127.0.0.1", 0)
        self.client = RemotingClient(timeout=15.0)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def __aenter__(self) -> Broker:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()
        await self.server.stop()

    async def local_address(self) -> str:
        return (await self.client.connection(self.address)).local_address

    async def call(
        self, code: int, ext: Mapping[str, str], body: bytes = b"", version: int = 409
    ) -> RemotingCommand:
        request = RemotingCommand.request(code, dict(ext), body)
        request.version = version
        return await self.client.invoke(self.address, request)

    async def send(
        self, ext: Mapping[str, str], body: bytes = b"hello", **kw: Any
    ) -> RemotingCommand:
        return await self.call(RequestCode.SEND_MESSAGE_V2, ext, body, **kw)

    def read(self, topic: str, queue_id: int, offset: int = 0) -> list[MessageExt]:
        result = self.ctx.store.get_messages(topic, queue_id, offset, 64)
        return record.decode_all(result.body()) if result.found else []


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    async with Broker(context) as b:
        yield b


def v2(
    topic: str,
    props: Mapping[str, str] | str | None = None,
    *,
    queue_id: int = -1,
    sys_flag: int = 0,
    batch: bool | None = None,
    reconsume: int | None = None,
    max_reconsume: int | None = None,
    queue_nums: int = 4,
    flag: int = 0,
) -> dict[str, str]:
    properties = props if isinstance(props, str) or props is None else encode_properties(props)
    return SendMessageRequestHeaderV2(
        producer_group="PG",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=queue_nums,
        queue_id=queue_id,
        sys_flag=sys_flag,
        born_timestamp=BORN,
        flag=flag,
        properties=properties,
        reconsume_times=reconsume,
        max_reconsume_times=max_reconsume,
        batch=batch,
    ).encode()


def assert_marked(
    resp: RemotingCommand, region: str = "DefaultRegion", trace: str = "true"
) -> None:
    assert resp.ext_fields["MSG_REGION"] == region
    assert resp.ext_fields["TRACE_ON"] == trace


def assert_fails(resp: RemotingCommand, code: int, remark_part: str = "") -> None:
    assert resp.code == code, resp.remark
    assert remark_part in (resp.remark or "")
    assert_marked(resp)


def response_header(resp: RemotingCommand) -> SendMessageResponseHeader:
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert_marked(resp)
    return SendMessageResponseHeader.decode(resp.ext_fields)


def make_topic(ctx: BrokerContext, name: str, queues: int = 4, **kw: Any) -> None:
    ctx.topics.update(TopicConfig(name, queues, queues, **kw))


# -- single messages ------------------------------------------------------------------


@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE])
async def test_single_send_round_trip(broker: Broker, code: int) -> None:
    make_topic(broker.ctx, "T1")
    props = {"UNIQ_KEY": "U1", "WAIT": "true", "TAGS": "TagA", "KEYS": "k1 k2", "user": "v"}
    ext = v2("T1", props, queue_id=2, flag=7)
    if code == RequestCode.SEND_MESSAGE:
        ext = _v1(ext)
    first = response_header(await broker.call(code, ext, b"body-1"))
    second = response_header(await broker.call(code, ext, b"body-2"))
    assert (first.queue_id, first.queue_offset, second.queue_offset) == (2, 0, 1)
    assert len(first.msg_id) == 32
    assert first.msg_id == first.msg_id.upper()

    stored = broker.read("T1", 2)
    assert [m.body for m in stored] == [b"body-1", b"body-2"]
    msg = stored[0]
    assert msg.msg_id == first.msg_id
    assert msg.properties == {
        "UNIQ_KEY": "U1", "TAGS": "TagA", "KEYS": "k1 k2", "user": "v", "CLUSTER": CLUSTER,
    }  # fmt: skip
    assert msg.tags == "TagA"
    assert msg.keys == ["k1", "k2"]
    assert msg.born_host == await broker.local_address()
    assert msg.store_host == "127.0.0.1:10911"
    assert (msg.born_timestamp, msg.flag, msg.queue_id, msg.sys_flag) == (BORN, 7, 2, 0)
    raw = broker.ctx.store.lookup_message(msg.commit_log_offset)
    assert raw is not None
    assert record.read_meta(raw, 0).properties == (
        b"UNIQ_KEY\x01U1\x02TAGS\x01TagA\x02KEYS\x01k1 k2\x02user\x01v\x02CLUSTER\x01"
        + CLUSTER.encode()
    )
    assert broker.ctx.stats.put_total == 2


def _v1(ext: Mapping[str, str]) -> dict[str, str]:
    header = SendMessageRequestHeaderV2.decode(ext)
    v1 = SendMessageRequestHeader(
        **{name: getattr(header, name) for name in SendMessageRequestHeader.__dataclass_fields__}
    ).encode()
    assert "topic" in v1
    assert "b" not in v1
    return v1


async def test_json_numbers_and_go_empty_strings_are_accepted(broker: Broker) -> None:
    """C++ sends ints as JSON numbers, Go sends "" for unset optional fields."""
    make_topic(broker.ctx, "T2")
    ext = v2("T2", {"TAGS": "x"}, queue_id=1) | {"j": "", "l": "", "k": ""}
    resp = await broker.send(ext)
    assert response_header(resp).queue_id == 1
    header = {
        "code": 310, "flag": 0, "language": "CPP", "opaque": 1, "version": 409,
        "extFields": {"a": "PG", "b": "T2", "c": "TBW102", "d": 4, "e": 3, "f": 0,
                      "g": "1700000000000", "h": 0, "l": 16, "Signature": "", "AccessKey": ""},
    }  # fmt: skip
    reply = await raw_exchange(broker, orjson.dumps(header), b"cpp")
    assert reply.ext_fields["queueId"] == "3"
    assert reply.code == 0
    assert [m.body for m in broker.read("T2", 3)] == [b"cpp"]


async def raw_exchange(broker: Broker, header: bytes, body: bytes) -> RemotingCommand:
    """One JSON frame written by hand (as a C++ client would), the response decoded."""
    host, port = broker.address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        payload = len(header).to_bytes(4, "big") + header + body
        writer.write((len(payload)).to_bytes(4, "big") + payload)
        decoder = frame.FrameDecoder()
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), 15)
            assert chunk, "connection closed"
            replies = decoder.feed(chunk)
            if replies:
                return replies[0]
    finally:
        writer.close()
        await writer.wait_closed()


async def test_compressed_body_and_sys_flag_are_stored_as_sent(broker: Broker) -> None:
    make_topic(broker.ctx, "T3")
    body = zlib.compress(b"a" * 10_000)
    resp = await broker.send(v2("T3", {"TAGS": "z"}, queue_id=0, sys_flag=0x301), body)
    response_header(resp)
    (msg,) = broker.read("T3", 0)
    assert msg.body == body
    assert msg.sys_flag & 0x701 == 0x301


async def test_wait_false_is_stripped_and_answered(broker: Broker) -> None:
    make_topic(broker.ctx, "T4")
    response_header(await broker.send(v2("T4", {"WAIT": "false", "TAGS": "t"}, queue_id=0)))
    (msg,) = broker.read("T4", 0)
    assert "WAIT" not in msg.properties
    assert msg.properties["CLUSTER"] == CLUSTER


async def test_body_over_max_message_size_is_illegal(broker: Broker) -> None:
    make_topic(broker.ctx, "T5")
    assert_fails(await broker.send(v2("T5"), b"x" * (MAX_BODY + 1)), ResponseCode.MESSAGE_ILLEGAL)
    response_header(await broker.send(v2("T5"), b"x" * MAX_BODY))


async def test_multi_tag_topic_sets_the_sys_flag(broker: Broker) -> None:
    make_topic(broker.ctx, "T6", topic_filter_type="MULTI_TAG")
    response_header(await broker.send(v2("T6", queue_id=1)))
    assert broker.read("T6", 1)[0].sys_flag & 0x2


async def test_stats_count_stored_messages(broker: Broker) -> None:
    make_topic(broker.ctx, "T7")
    for _ in range(3):
        response_header(await broker.send(v2("T7"), b"12345"))
    registry = broker.ctx.stats.registry
    labels = {"topic": "T7"}
    assert registry.get_sample_value("rocketkube_broker_messages_in_total", labels) == 3
    assert registry.get_sample_value("rocketkube_broker_bytes_in_total", labels) == 15
    assert registry.get_sample_value("rocketkube_broker_send_latency_seconds_count") == 3


# -- queues ---------------------------------------------------------------------------


async def test_queue_id_out_of_range_is_a_system_error(broker: Broker) -> None:
    make_topic(broker.ctx, "Q1", queues=4)
    assert_fails(await broker.send(v2("Q1", queue_id=4)), ResponseCode.SYSTEM_ERROR, "queueId[4]")
    assert response_header(await broker.send(v2("Q1", queue_id=3))).queue_id == 3


async def test_negative_queue_id_spreads_over_write_queues(broker: Broker) -> None:
    broker.ctx.topics.update(TopicConfig("Q2", read_queue_nums=8, write_queue_nums=4))
    picked = [response_header(await broker.send(v2("Q2"))).queue_id for _ in range(8)]
    assert sorted(set(picked)) == [0, 1, 2, 3]
    assert sum(len(broker.read("Q2", q)) for q in range(4)) == 8


# -- topics ---------------------------------------------------------------------------


@pytest.mark.parametrize(("queue_nums", "expected"), [(3, 3), (20, 8)])
async def test_unknown_topic_is_created_from_tbw102(
    broker: Broker, queue_nums: int, expected: int
) -> None:
    resp = await broker.send(v2("Auto1", queue_nums=queue_nums))
    assert response_header(resp).queue_id < expected
    config = broker.ctx.topics.get("Auto1")
    assert config is not None
    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (expected, expected, 6)


async def test_unknown_topic_without_auto_create_is_17(
    context: BrokerContext, tmp_path: Path
) -> None:
    settings = context.settings.model_copy(update={"auto_create_topic_enable": False})
    topics = TopicConfigManager(settings, tmp_path / "topics.json", context.clock)
    ctx = dataclasses.replace(context, settings=settings, topics=topics)
    async with Broker(ctx) as b:
        resp = await b.send(v2("Nope"))
        assert_fails(
            resp, ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist, apply first please!"
        )
        assert topics.get("Nope") is None
        # retry topics fall back to one queue, perm 6
        response_header(await b.send(v2("%RETRY%G1", reconsume=0)))
        config = topics.get("%RETRY%G1")
        assert config is not None
        assert (config.write_queue_nums, config.perm) == (1, 6)


@pytest.mark.parametrize(
    ("topic", "remark"),
    [("bad topic", "illegal characters"), ("x" * 128, "longer than"), ("", "")],
)
async def test_invalid_topic_is_a_system_error(broker: Broker, topic: str, remark: str) -> None:
    assert_fails(await broker.send(v2(topic)), ResponseCode.SYSTEM_ERROR, remark)


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"])
async def test_not_allowed_topics_are_refused(broker: Broker, topic: str) -> None:
    assert_fails(await broker.send(v2(topic)), ResponseCode.NO_PERMISSION, "forbidden")


async def test_read_only_topic_is_refused(broker: Broker) -> None:
    make_topic(broker.ctx, "RO", perm=4)
    assert_fails(await broker.send(v2("RO")), ResponseCode.NO_PERMISSION, "topic[RO]")


async def test_topic_change_is_seen_by_the_cache(broker: Broker) -> None:
    make_topic(broker.ctx, "C1", queues=2)
    response_header(await broker.send(v2("C1", queue_id=1)))
    make_topic(broker.ctx, "C1", queues=2, perm=4)
    assert_fails(await broker.send(v2("C1", queue_id=1)), ResponseCode.NO_PERMISSION)


# -- broker state ---------------------------------------------------------------------


async def test_slave_answers_service_not_available(context: BrokerContext) -> None:
    settings = context.settings.model_copy(update={"broker_role": BrokerRole.SLAVE})
    async with Broker(dataclasses.replace(context, settings=settings)) as b:
        assert_fails(await b.send(v2("TBW102")), ResponseCode.SERVICE_NOT_AVAILABLE)


async def test_broker_without_write_permission_refuses(context: BrokerContext) -> None:
    async with Broker(dataclasses.replace(context, permission=4)) as b:
        assert_fails(await b.send(v2("TBW102")), ResponseCode.NO_PERMISSION, "forbidden")


async def test_region_and_trace_follow_settings(context: BrokerContext) -> None:
    settings = context.settings.model_copy(update={"region_id": "R1", "trace_on": False})
    async with Broker(dataclasses.replace(context, settings=settings)) as b:
        ok = await b.send(v2("TBW102"))
        assert ok.code == 0
        assert_marked(ok, "R1", "false")
        bad = await b.send(v2("bad topic"))
        assert bad.code == ResponseCode.SYSTEM_ERROR
        assert_marked(bad, "R1", "false")


async def test_header_errors_are_answered_with_region(broker: Broker) -> None:
    ext = v2("T8")
    del ext["b"]
    assert_fails(await broker.send(ext), ResponseCode.SYSTEM_ERROR, "<b> is null")
    assert_fails(await broker.send(v2("T8") | {"e": "x"}), ResponseCode.SYSTEM_ERROR, "<e>")
    v1 = _v1(v2("T8"))
    del v1["topic"]
    resp = await broker.call(RequestCode.SEND_MESSAGE, v1)
    assert_fails(resp, ResponseCode.SYSTEM_ERROR, "<topic> is null")


async def test_born_host_of_an_ipv4_mapped_peer_is_ipv4(context: BrokerContext) -> None:
    make_topic(context, "H1")

    class Peer:
        remote_address = "[::ffff:10.1.2.3]:5000"

    processor = send.SendProcessor(context)
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2("H1", queue_id=0), b"b")
    reply = processor.send_message_v2(cast(Connection, Peer()), request)
    assert isinstance(reply, RemotingCommand)
    assert reply.code == 0
    result = context.store.get_messages("H1", 0, 0, 1)
    (msg,) = record.decode_all(result.body())
    assert msg.born_host == "10.1.2.3:5000"
    assert not msg.sys_flag & 0x10
    assert ids.pack_host("10.1.2.3", 5000) == processor._hosts["[::ffff:10.1.2.3]:5000"]


# -- batches --------------------------------------------------------------------------

ITEMS = [
    BatchItem(1, b"one", "UNIQ_KEY\x01U1\x02TAGS\x01A"),
    BatchItem(2, b"two", "UNIQ_KEY\x01U2\x02"),  # Go style trailing separator
    BatchItem(3, b"three", ""),
]


@pytest.mark.parametrize(
    ("code", "flag"),
    [(RequestCode.SEND_BATCH_MESSAGE, "true"), (RequestCode.SEND_MESSAGE_V2, "true"),
     (RequestCode.SEND_MESSAGE_V2, "1")],
)  # fmt: skip
async def test_batch_is_split_and_header_properties_appended(
    broker: Broker, code: int, flag: str
) -> None:
    make_topic(broker.ctx, "B1")
    ext = v2("B1", "WAIT\x01true\x02H\x01v", queue_id=1) | {"m": flag}
    resp = await broker.call(code, ext, encode_batch(ITEMS))
    header = response_header(resp)
    stored = broker.read("B1", 1)
    assert [m.body for m in stored] == [b"one", b"two", b"three"]
    assert header.msg_id == ",".join(m.msg_id for m in stored)
    assert (header.queue_id, header.queue_offset) == (1, 0)
    assert [m.flag for m in stored] == [1, 2, 3]
    assert all(m.born_timestamp == BORN for m in stored)
    tail = b"H\x01v\x02CLUSTER\x01" + CLUSTER.encode()
    raw = [broker.ctx.store.lookup_message(m.commit_log_offset) for m in stored]
    assert [record.read_meta(r, 0).properties for r in raw if r is not None] == [
        b"UNIQ_KEY\x01U1\x02TAGS\x01A\x02" + tail,
        b"UNIQ_KEY\x01U2\x02" + tail,
        tail,
    ]
    assert stored[0].tags == "A"
    assert broker.ctx.stats.put_total == 3
    again = response_header(await broker.call(code, ext, encode_batch(ITEMS[:1])))
    assert again.queue_offset == 3


async def test_without_batch_flag_a_batch_body_is_one_message(broker: Broker) -> None:
    make_topic(broker.ctx, "B2")
    body = encode_batch(ITEMS)
    response_header(await broker.call(RequestCode.SEND_BATCH_MESSAGE, v2("B2", queue_id=0), body))
    assert [m.body for m in broker.read("B2", 0)] == [body]


@pytest.mark.parametrize(
    ("topic", "props", "items", "sys_flag", "remark"),
    [
        ("%RETRY%G", None, ITEMS, 0, "retry"),
        ("B3", "DELAY\x013", ITEMS, 0, "delay"),
        ("B3", None, [BatchItem(0, b"d", "DELAY\x012")], 0, "delay"),
        ("B3", None, ITEMS, 4, "transaction"),
        ("B3", None, [], 0, "no message"),
    ],
)
async def test_batch_refusals(
    broker: Broker,
    topic: str,
    props: str | None,
    items: list[BatchItem],
    sys_flag: int,
    remark: str,
) -> None:
    make_topic(broker.ctx, "B3")
    ext = v2(topic, props, queue_id=0, sys_flag=sys_flag, batch=True)
    resp = await broker.call(RequestCode.SEND_BATCH_MESSAGE, ext, encode_batch(items))
    assert_fails(resp, ResponseCode.MESSAGE_ILLEGAL, remark)
    assert broker.read("B3", 0) == []


async def test_truncated_batch_body_is_illegal(broker: Broker) -> None:
    make_topic(broker.ctx, "B4")
    body = encode_batch(ITEMS)[:-2]
    resp = await broker.call(RequestCode.SEND_BATCH_MESSAGE, v2("B4", batch=True), body)
    assert_fails(resp, ResponseCode.MESSAGE_ILLEGAL, "batch")


async def test_batch_sub_message_over_max_size_is_illegal(broker: Broker) -> None:
    make_topic(broker.ctx, "B5")
    body = encode_batch([BatchItem(0, b"x" * (MAX_BODY + 1), "")])
    resp = await broker.call(RequestCode.SEND_BATCH_MESSAGE, v2("B5", batch=True), body)
    assert_fails(resp, ResponseCode.MESSAGE_ILLEGAL)


# -- retry, DLQ -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reconsume", "max_reconsume", "version", "dead"),
    [
        (3, None, 409, False),
        (16, None, 409, True),  # the group's retryMaxTimes
        (2, 2, 409, True),  # the header's, from V3_4_9 on
        (2, 2, 100, False),  # ... and not before
        (15, -1, 409, False),  # -1 means 16
        (16, -1, 409, True),
    ],
)
async def test_retry_topic_goes_to_dlq_when_exhausted(
    broker: Broker, reconsume: int, max_reconsume: int | None, version: int, dead: bool
) -> None:
    ext = v2("%RETRY%G2", {"DELAY": "3", "TAGS": "r"}, queue_id=0, reconsume=reconsume,
             max_reconsume=max_reconsume)  # fmt: skip
    header = response_header(await broker.send(ext, b"retry", version=version))
    if dead:
        (msg,) = broker.read("%DLQ%G2", 0)
        assert "DELAY" not in msg.properties
        assert msg.reconsume_times == reconsume
        config = broker.ctx.topics.get("%DLQ%G2")
        assert config is not None
        assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (1, 1, 6)
    else:
        (msg,) = broker.read("SCHEDULE_TOPIC_XXXX", 2)
        assert msg.properties["REAL_TOPIC"] == "%RETRY%G2"
        assert broker.ctx.topics.get("%DLQ%G2") is None
    assert msg.body == b"retry"
    assert header.queue_id == 0


async def test_retry_topic_of_unknown_group_is_26(broker: Broker) -> None:
    broker.ctx.groups.auto_create = False
    resp = await broker.send(v2("%RETRY%Ghost", reconsume=1))
    assert_fails(resp, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Ghost")


# -- delay and half messages ----------------------------------------------------------


@pytest.mark.parametrize(("level", "stored_level"), [(3, 3), (40, 18)])
async def test_delay_is_rewritten_to_the_schedule_topic(
    broker: Broker, level: int, stored_level: int
) -> None:
    make_topic(broker.ctx, "D1")
    ext = v2("D1", {"TAGS": "t", "DELAY": str(level)}, queue_id=3)
    header = response_header(await broker.send(ext))
    assert header.queue_id == 3
    (msg,) = broker.read("SCHEDULE_TOPIC_XXXX", stored_level - 1)
    assert msg.topic == "SCHEDULE_TOPIC_XXXX"
    assert msg.queue_id == stored_level - 1
    assert msg.properties["DELAY"] == str(stored_level)
    assert (msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]) == ("D1", "3")
    assert broker.read("D1", 3) == []


async def test_transaction_half_message(broker: Broker) -> None:
    make_topic(broker.ctx, "X1")
    ext = v2("X1", {"TRAN_MSG": "true", "PGROUP": "PG"}, queue_id=1, sys_flag=4)
    header = response_header(await broker.send(ext, b"half"))
    (msg,) = broker.read("RMQ_SYS_TRANS_HALF_TOPIC", 0)
    assert msg.body == b"half"
    assert msg.sys_flag & 0xC == 0
    assert (msg.properties["REAL_TOPIC"], msg.properties["REAL_QID"]) == ("X1", "1")
    assert msg.msg_id == header.msg_id
    assert broker.read("X1", 1) == []


async def test_transactions_can_be_rejected(context: BrokerContext) -> None:
    settings = context.settings.model_copy(update={"reject_transaction_message": True})
    async with Broker(dataclasses.replace(context, settings=settings)) as b:
        make_topic(context, "X2")
        resp = await b.send(v2("X2", {"TRAN_MSG": "true"}, sys_flag=4))
        assert_fails(resp, ResponseCode.NO_PERMISSION, "transaction")
