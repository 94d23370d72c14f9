"""What a broker's ``/metrics`` says of its queues and consumers, read over HTTP from a
whole broker on a clock the test moves: queue offsets, consumer lag in messages and in
seconds, who the broker is, mapped store files, commit log flushes, and the messages
consumers sent back for retry or to the dead letter queue."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from waiting import wait_for_value

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.message import ids
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.consumer_headers import ConsumerSendMsgBackRequestHeader
from rocketkube.common.protocol.pull_headers import UpdateConsumerOffsetRequestHeader
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

TOPIC, GROUP = "Metered", "MeteredGroup"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Clock:
    """Milliseconds that move only when the test says so (the store stamps messages by it)."""

    def __init__(self) -> None:
        self.now_ms = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now_ms


class Broker:
    def __init__(self, app: BrokerApp) -> None:
        self.app = app
        self.client = RemotingClient()

    async def call(self, request: RemotingCommand) -> RemotingCommand:
        response = await self.client.invoke(self.app.address, request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return response

    async def send(self, body: bytes) -> int:
        """Send ``body`` to queue 0 of :data:`TOPIC`; its commit log offset."""
        ext = {
            "a": "PG", "b": TOPIC, "c": "TBW102", "d": "1", "e": "0", "f": "0",
            "g": "1700000000000", "h": "0", "i": encode_properties({}), "j": "0", "k": "false",
        }  # fmt: skip
        response = await self.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body))
        return ids.decode_offset_msg_id(response.ext_fields["msgId"])[2]

    async def commit(self, offset: int) -> None:
        header = UpdateConsumerOffsetRequestHeader(GROUP, TOPIC, 0, offset)
        await self.call(
            RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header.encode())
        )

    async def send_back(self, commit_log_offset: int, delay_level: int) -> None:
        header = ConsumerSendMsgBackRequestHeader(
            offset=commit_log_offset, group=GROUP, delay_level=delay_level,
            origin_msg_id="", origin_topic=TOPIC, max_reconsume_times=16,
        )  # fmt: skip
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.encode())
        request.version = 409
        await self.call(request)

    async def samples(self) -> Samples:
        url = f"http://127.0.0.1:{self.app.http.port}/metrics"
        async with aiohttp.ClientSession() as http, http.get(url) as answer:
            text = await answer.text()
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def broker(broker_settings: BrokerSettings, clock: Clock) -> AsyncIterator[Broker]:
    app = BrokerApp(broker_settings, clock)
    await app.start()
    broker = Broker(app)
    yield broker
    await broker.client.close()
    await app.stop()


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, frozenset(labels.items())]


async def test_queue_offsets_and_consumer_lag_in_messages_and_seconds(
    broker: Broker, clock: Clock
) -> None:
    for body in (b"a", b"b", b"c"):
        await broker.send(body)
    await broker.commit(1)
    clock.now_ms += 5_000
    samples = await broker.samples()
    queue = {"topic": TOPIC, "queue": "0"}
    assert value(samples, "rocketkube_broker_queue_max_offset", **queue) == 3
    assert value(samples, "rocketkube_broker_queue_min_offset", **queue) == 0
    lagging = {"group": GROUP, **queue}
    assert value(samples, "rocketkube_broker_consumer_lag", **lagging) == 2
    assert value(samples, "rocketkube_broker_consumer_lag_seconds", **lagging) == 5.0

    await broker.commit(3)
    caught_up = await broker.samples()
    assert value(caught_up, "rocketkube_broker_consumer_lag", **lagging) == 0
    assert value(caught_up, "rocketkube_broker_consumer_lag_seconds", **lagging) == 0


async def test_identity_mapped_files_flushes_and_process(broker: Broker) -> None:
    await broker.send(b"x")
    info = {"broker_cluster": "DefaultCluster", "broker_name": "broker-a", "broker_id": "0",
            "role": "master"}  # fmt: skip
    samples = await broker.samples()
    assert value(samples, "rocketkube_broker_info", **info) == 1
    assert value(samples, "rocketkube_broker_mapped_files") >= 2  # commit log and a queue
    assert value(samples, "rocketkube_broker_mapped_bytes") >= 1 << 20  # one log segment
    assert value(samples, "rocketkube_broker_process_resident_memory_bytes") > 0

    async def flushes() -> float | None:
        found = await broker.samples()
        return value(found, "rocketkube_broker_flush_latency_seconds_count") or None

    assert await wait_for_value(flushes, "a commit log flush counted") >= 1


async def test_messages_sent_back_are_counted_by_destination(broker: Broker) -> None:
    retried, dead = [await broker.send(body) for body in (b"retry", b"dead")]
    await broker.send_back(retried, delay_level=0)
    await broker.send_back(dead, delay_level=-1)
    await broker.send_back(dead, delay_level=-1)
    samples = await broker.samples()
    sent_back = "rocketkube_broker_sent_back_total"
    assert value(samples, sent_back, group=GROUP, topic=TOPIC, to="retry") == 1
    assert value(samples, sent_back, group=GROUP, topic=TOPIC, to="dlq") == 2
