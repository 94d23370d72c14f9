"""CONSUMER_SEND_MSG_BACK (36) against a whole broker: retries parked in the schedule topic
and delivered into %RETRY%<group>, the DLQ when retries are exhausted or asked for, the
version gate on maxReconsumeTimes, and the error answers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.consumers.groups import SubscriptionGroupConfig
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.message import record
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.consumer_headers import ConsumerSendMsgBackRequestHeader
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

SCHEDULE = "SCHEDULE_TOPIC_XXXX"
GROUP = "CG"
RETRY = "%RETRY%CG"
DLQ = "%DLQ%CG"


class Broker:
    def __init__(self, app: BrokerApp) -> None:
        self.app = app
        self.client = RemotingClient(timeout=15.0)

    @property
    def ctx(self) -> BrokerContext:
        assert self.app.ctx is not None
        return self.app.ctx

    def read(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        got = self.ctx.store.get_messages(topic, queue_id, 0, 32)
        return record.decode_all(got.body()) if got.found else []

    async def send(self, topic: str, body: bytes, **props: str) -> MessageExt:
        header = SendMessageRequestHeaderV2(
            producer_group="PG",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=1,
            queue_id=0,
            sys_flag=0,
            born_timestamp=1_700_000_000_000,
            flag=3,
            properties=encode_properties(props),
        )
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.encode(), body)
        response = await self.client.invoke(self.app.address, request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return self.read(topic)[-1]

    async def send_back(
        self,
        offset: int,
        delay_level: int = 0,
        *,
        group: str = GROUP,
        max_reconsume_times: int | None = 16,
        version: int = 409,
    ) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader(
            offset=offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id="C0A8000100002A9F0000000000000000",
            origin_topic="Orders",
            max_reconsume_times=max_reconsume_times,
        )
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.encode())
        request.version = version
        return await self.client.invoke(self.app.address, request)


@pytest.fixture
def app_settings(broker_settings: BrokerSettings) -> BrokerSettings:
    return broker_settings.model_copy(update={"message_delay_level": "1s 1s 1s 1s"})


@pytest.fixture
async def broker(app_settings: BrokerSettings) -> AsyncIterator[Broker]:
    app = BrokerApp(app_settings)
    await app.start()
    broker = Broker(app)
    yield broker
    await broker.client.close()
    await app.stop()


def assert_ok(response: RemotingCommand) -> None:
    assert response.code == ResponseCode.SUCCESS, response.remark


async def test_send_back_retries_through_the_schedule_topic(broker: Broker) -> None:
    original = await broker.send("Orders", b"order-1", TAGS="TagA", UNIQ_KEY="U1", KEYS="k")
    assert_ok(await broker.send_back(original.commit_log_offset))

    retry_config = broker.ctx.topics.get(RETRY)
    assert retry_config is not None
    assert (retry_config.read_queue_nums, retry_config.write_queue_nums) == (1, 1)
    assert retry_config.perm == 6
    [parked] = broker.read(SCHEDULE, 2)  # level 3 + 0 reconsumes
    assert parked.properties["DELAY"] == "3"
    assert parked.properties["REAL_TOPIC"] == RETRY
    assert parked.properties["REAL_QID"] == "0"

    await wait_until(lambda: broker.read(RETRY), "the retry delivered")
    [retry] = broker.read(RETRY)
    assert retry.body == b"order-1"
    assert retry.flag == 3
    assert retry.born_timestamp == original.born_timestamp
    assert retry.born_host == original.born_host
    assert retry.reconsume_times == 1
    assert retry.store_timestamp >= parked.store_timestamp + 1000
    props = retry.properties
    assert props["RETRY_TOPIC"] == "Orders"
    assert props["ORIGIN_MESSAGE_ID"] == original.msg_id
    assert (props["TAGS"], props["UNIQ_KEY"], props["KEYS"]) == ("TagA", "U1", "k")
    assert "DELAY" not in props

    # The second failure goes one level further and keeps the first origin and topic.
    assert_ok(await broker.send_back(retry.commit_log_offset))
    [again] = broker.read(SCHEDULE, 3)
    assert again.properties["DELAY"] == "4"
    assert again.reconsume_times == 2
    assert again.properties["RETRY_TOPIC"] == "Orders"
    assert again.properties["ORIGIN_MESSAGE_ID"] == original.msg_id


async def test_explicit_level_above_the_highest_is_clamped(broker: Broker) -> None:
    original = await broker.send("Orders", b"x")
    assert_ok(await broker.send_back(original.commit_log_offset, delay_level=40))
    [parked] = broker.read(SCHEDULE, 3)
    assert parked.properties["DELAY"] == "4"


async def test_exhausted_retries_go_to_the_dlq(broker: Broker) -> None:
    original = await broker.send("Orders", b"tired", TAGS="T")
    assert_ok(await broker.send_back(original.commit_log_offset))
    await wait_until(lambda: broker.read(RETRY), "the retry delivered")
    [retry] = broker.read(RETRY)

    assert_ok(await broker.send_back(retry.commit_log_offset, max_reconsume_times=1))
    [dead] = broker.read(DLQ)
    assert dead.body == b"tired"
    assert dead.reconsume_times == 2
    assert dead.properties["RETRY_TOPIC"] == "Orders"
    assert dead.properties["ORIGIN_MESSAGE_ID"] == original.msg_id
    assert "DELAY" not in dead.properties
    dlq_config = broker.ctx.topics.get(DLQ)
    assert dlq_config is not None
    assert (dlq_config.write_queue_nums, dlq_config.perm) == (1, 6)


async def test_old_clients_max_reconsume_times_is_ignored(broker: Broker) -> None:
    original = await broker.send("Orders", b"old")
    response = await broker.send_back(original.commit_log_offset, max_reconsume_times=0,
                                      version=100)  # fmt: skip
    assert_ok(response)
    assert broker.read(DLQ) == []
    assert len(broker.read(SCHEDULE, 2)) == 1
    assert_ok(await broker.send_back(original.commit_log_offset, max_reconsume_times=0))
    assert len(broker.read(DLQ)) == 1


async def test_negative_delay_level_goes_straight_to_the_dlq(broker: Broker) -> None:
    original = await broker.send("Orders", b"poison")
    assert_ok(await broker.send_back(original.commit_log_offset, delay_level=-1))
    [dead] = broker.read(DLQ)
    assert (dead.body, dead.reconsume_times) == (b"poison", 1)
    assert broker.read(SCHEDULE, 2) == []


async def test_error_answers_and_a_group_without_retry_queues(broker: Broker) -> None:
    broker.ctx.groups.update(SubscriptionGroupConfig(GROUP, retry_queue_nums=0))
    original = await broker.send("Orders", b"x")
    assert_ok(await broker.send_back(original.commit_log_offset))
    assert broker.read(SCHEDULE, 2) == []
    assert broker.ctx.topics.get(RETRY) is None

    broker.ctx.groups.update(SubscriptionGroupConfig(GROUP))
    unknown = await broker.send_back(1 << 40)
    assert unknown.code == ResponseCode.SYSTEM_ERROR
    assert "look message by offset failed" in (unknown.remark or "")

    broker.ctx.permission = 4
    refused = await broker.send_back(original.commit_log_offset)
    assert refused.code == ResponseCode.NO_PERMISSION


@pytest.mark.parametrize("app_settings_update", [{"auto_create_subscription_group": False}])
async def test_unknown_group_without_auto_creation(
    app_settings: BrokerSettings, app_settings_update: dict[str, bool]
) -> None:
    app = BrokerApp(app_settings.model_copy(update=app_settings_update))
    await app.start()
    broker = Broker(app)
    try:
        original = await broker.send("Orders", b"x")
        response = await broker.send_back(original.commit_log_offset, group="NoSuchGroup")
        assert response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    finally:
        await broker.client.close()
        await app.stop()
