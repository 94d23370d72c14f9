"""Delayed delivery: delay-level parsing and timing arithmetic (pure), the schedule service
over a real store, and whole brokers: DELAY sends arriving in their real queues, several
levels at once, offsets kept across a restart, GET_ALL_DELAY_OFFSET."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import prometheus_client
import pytest
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.schedule import (
    SCHEDULE_TOPIC,
    DelayCollector,
    ScheduleService,
    decode_offsets,
    deliver_time,
    encode_offsets,
)
from rocketkube.broker.settings import BrokerSettings, parse_delay_levels
from rocketkube.broker.store import InnerMessage, MessageStore
from rocketkube.common.message import hashing, record
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

BORN = 1_700_000_000_000

# -- pure ----------------------------------------------------------------------------------


def test_default_levels() -> None:
    levels = parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
    assert len(levels) == 18
    assert levels[:5] == (1000, 5000, 10_000, 30_000, 60_000)
    assert levels[-1] == 7_200_000


def test_every_unit_and_loose_spacing() -> None:
    assert parse_delay_levels(" 2s  3m\t4h 1d ") == (2000, 180_000, 14_400_000, 86_400_000)


@pytest.mark.parametrize("text", ["", "   ", "5x", "s", "1.5s", "-1s", "5", "1s 2q"])
def test_bad_levels_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="messageDelayLevel"):
        parse_delay_levels(text)


def test_settings_refuse_bad_levels() -> None:
    with pytest.raises(ValueError, match="bad level '5x'"):
        BrokerSettings.model_validate({"messageDelayLevel": "1s 5x"})


def test_deliver_time_is_the_tags_code_unless_beyond_one_delay() -> None:
    now = 1_000_000
    assert deliver_time(now + 4_000, now, 5_000) == now + 4_000
    assert deliver_time(now + 5_000, now, 5_000) == now + 5_000
    assert deliver_time(now - 1, now, 5_000) == now - 1
    assert deliver_time(now + 5_001, now, 5_000) == now  # the clock went back: due now


def test_offsets_file_format() -> None:
    assert encode_offsets({2: 5, 1: 0}) == b'{"offsetTable":{1:0,2:5}}'
    assert encode_offsets({}) == b'{"offsetTable":{}}'
    assert decode_offsets('{"offsetTable":{1:0,2:5}}') == {1: 0, 2: 5}
    assert decode_offsets('{\n\t"offsetTable":{"3":7}\n}') == {3: 7}
    with pytest.raises(ValueError, match="not a JSON object"):
        decode_offsets("[1]")


# -- the service over a real store -------------------------------------------------------------


@pytest.fixture
def broker_settings(broker_settings: BrokerSettings) -> BrokerSettings:
    return broker_settings.model_copy(update={"message_delay_level": "1s 1s 2s"})


def parked(properties: Mapping[str, str], level: int = 1, body: bytes = b"x") -> InnerMessage:
    props = {"DELAY": str(level), **properties}
    return InnerMessage(
        SCHEDULE_TOPIC,
        level - 1,
        body,
        encode_properties(props).encode(),
        born_timestamp=BORN,
    )


def read(store: MessageStore, topic: str, queue_id: int) -> list[MessageExt]:
    got = store.get_messages(topic, queue_id, 0, 32)
    return record.decode_all(got.body()) if got.found else []


async def test_service_skips_unroutable_messages_and_counts_pending(
    context: BrokerContext, tmp_path: Path
) -> None:
    store = context.store
    assert store.put_messages((parked({}, body=b"lost"),)).ok
    good = {"REAL_TOPIC": "Real", "REAL_QID": "2", "TAGS": "A"}
    assert store.put_messages((parked(good, body=b"good"),)).ok
    service = ScheduleService(store, tmp_path / "delayOffset.json", "1s 1s 2s", context.clock)
    registry = prometheus_client.CollectorRegistry()
    registry.register(DelayCollector(service))
    assert service.pending() == {1: 2, 2: 0, 3: 0}
    assert registry.get_sample_value("rocketkube_broker_delay_pending", {"level": "1"}) == 2
    service.start()
    try:
        await wait_until(lambda: read(store, "Real", 2), "the good message delivered")
        assert [m.body for m in read(store, "Real", 2)] == [b"good"]
        assert service.offsets == {1: 2}
        assert service.pending() == {1: 0, 2: 0, 3: 0}
    finally:
        await service.stop()
    assert decode_offsets((tmp_path / "delayOffset.json").read_text()) == {1: 2}


async def test_arrival_after_idle_wakes_the_level(context: BrokerContext, tmp_path: Path) -> None:
    store = context.store
    service = ScheduleService(store, tmp_path / "delayOffset.json", "1s 1s 2s", context.clock)
    service.load()
    service.start()
    try:
        await asyncio.sleep(0.1)  # every level has looked and gone idle
        props = {"REAL_TOPIC": "Woken", "REAL_QID": "0"}
        result = store.put_messages((parked(props, level=3, body=b"late"),))
        await wait_until(lambda: read(store, "Woken", 0), "delivered after an idle period")
        delivered = read(store, "Woken", 0)[0]
        assert delivered.store_timestamp >= result.appended[0].store_timestamp + 2000
        assert service.offsets == {3: 1}
    finally:
        await service.stop()


# -- whole brokers over the wire ------------------------------------------------------------


def send_request(
    topic: str, body: bytes, properties: Mapping[str, str], queue_id: int, flag: int = 0
) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="PG",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=BORN,
        flag=flag,
        properties=encode_properties(properties),
    )
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.encode(), body)


class Sender:
    def __init__(self, app: BrokerApp) -> None:
        self.app = app
        self.client = RemotingClient(timeout=15.0)

    async def send(
        self, topic: str, body: bytes, level: int, queue_id: int = 0, **props: str
    ) -> None:
        properties = {"DELAY": str(level), **props}
        request = send_request(topic, body, properties, queue_id)
        response = await self.client.invoke(self.app.address, request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert response.ext_fields["queueId"] == str(queue_id)

    def store(self) -> MessageStore:
        assert self.app.ctx is not None
        return self.app.ctx.store


@pytest.fixture
def app_settings(broker_settings: BrokerSettings) -> BrokerSettings:
    return broker_settings.model_copy(update={"message_delay_level": "1s 2s 1s"})


@pytest.fixture
async def sender(app_settings: BrokerSettings) -> AsyncIterator[Sender]:
    app = BrokerApp(app_settings)
    await app.start()
    sender = Sender(app)
    yield sender
    await sender.client.close()
    await app.stop()


async def test_delayed_message_arrives_intact_after_its_delay(sender: Sender) -> None:
    props = {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "UNIQ1", "color": "blue"}
    request = send_request("Delayed", b"payload", {"DELAY": "1", **props}, 1, flag=7)
    response = await sender.client.invoke(sender.app.address, request)
    assert response.code == ResponseCode.SUCCESS, response.remark
    store = sender.store()
    [waiting] = read(store, SCHEDULE_TOPIC, 0)
    await wait_until(lambda: read(store, "Delayed", 1), "the delayed message delivered")
    [message] = read(store, "Delayed", 1)
    assert message.body == b"payload"
    assert message.flag == 7
    assert message.born_timestamp == BORN
    assert message.reconsume_times == 0
    assert message.store_timestamp >= waiting.store_timestamp + 1000
    assert "DELAY" not in message.properties
    assert message.properties["REAL_TOPIC"] == "Delayed"
    assert message.properties["REAL_QID"] == "1"
    for name, value in props.items():
        assert message.properties[name] == value
    tag = hashing.tags_code("TagA")
    assert store.get_messages("Delayed", 1, 0, 1, lambda code: code == tag).found


async def test_levels_interleave_and_each_keeps_its_order(sender: Sender) -> None:
    await sender.send("Levels", b"slow", 2)
    await sender.send("Levels", b"first", 1)
    await sender.send("Levels", b"third-level", 3)
    await sender.send("Levels", b"second", 1)
    store = sender.store()
    await wait_until(lambda: len(read(store, "Levels", 0)) == 4, "all four delivered")
    delivered = read(store, "Levels", 0)
    bodies = [m.body for m in delivered]
    assert sorted(bodies) == sorted([b"slow", b"first", b"third-level", b"second"])
    assert bodies.index(b"first") < bodies.index(b"second")
    parked_at = {m.body: m for m in read(store, SCHEDULE_TOPIC, 1)}
    slow = next(m for m in delivered if m.body == b"slow")
    assert slow.store_timestamp >= parked_at[b"slow"].store_timestamp + 2000
    await asyncio.sleep(0.3)
    assert len(read(store, "Levels", 0)) == 4


async def test_offsets_survive_a_restart(app_settings: BrokerSettings) -> None:
    first = Sender(BrokerApp(app_settings))
    await first.app.start()
    await first.send("Restart", b"m0", 1)
    await first.send("Restart", b"m1", 1)
    await wait_until(lambda: len(read(first.store(), "Restart", 0)) == 2, "two delivered")
    await first.send("Restart", b"late", 2, queue_id=1)
    await first.client.close()
    await first.app.stop()
    offsets_file = Path(app_settings.store_path_root_dir) / "config" / "delayOffset.json"
    assert decode_offsets(offsets_file.read_text())[1] == 2

    again = Sender(BrokerApp(app_settings))
    await again.app.start()
    try:
        await again.send("Restart", b"m2", 1)
        await wait_until(lambda: len(read(again.store(), "Restart", 0)) >= 3, "m2 delivered")
        await wait_until(lambda: read(again.store(), "Restart", 1), "late delivered")
        assert [m.body for m in read(again.store(), "Restart", 0)] == [b"m0", b"m1", b"m2"]
        assert [m.body for m in read(again.store(), "Restart", 1)] == [b"late"]
        request = RemotingCommand.request(RequestCode.GET_ALL_DELAY_OFFSET)
        response = await again.client.invoke(again.app.address, request)
        assert response.code == ResponseCode.SUCCESS
        assert decode_offsets(bytes(response.body)) == {1: 3, 2: 1}
    finally:
        await again.client.close()
        await again.app.stop()
