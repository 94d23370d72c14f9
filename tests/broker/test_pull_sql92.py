"""SQL92 property filters over real sockets: PULL_MESSAGE with the pull's own subscription
and with the heartbeat's, CHECK_CLIENT_CONFIG, long polling, and ``enablePropertyFilter``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import pytest
from waiting import wait_until

from rocketkube.broker.consumers.long_polling import PullRequestHoldService
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import client, pull
from rocketkube.broker.store import InnerMessage
from rocketkube.common import fastjson
from rocketkube.common.message import ids, properties, record, sysflag
from rocketkube.common.protocol import pull_headers as h
from rocketkube.common.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "TopicSql"
GROUP = "GroupSql"
SQL = "a BETWEEN 3 AND 5 AND b = 'x'"
TIMEOUT = 10.0
ENABLED = pytest.mark.parametrize(
    "broker_settings", [{"enable_property_filter": True}], indirect=True
)
NOT_SUPPORTED = "The broker does not support consumer to filter message by SQL92"


@dataclass
class Broker:
    ctx: BrokerContext
    holds: PullRequestHoldService
    client: RemotingClient
    address: str

    async def invoke(self, request: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(self.address, request, timeout=TIMEOUT)

    async def pull(
        self,
        expression: str | None = SQL,
        *,
        offset: int = 0,
        flag: int = sysflag.FLAG_SUBSCRIPTION,
        suspend_ms: int = 0,
    ) -> RemotingCommand:
        header = h.PullMessageRequestHeader(
            consumer_group=GROUP,
            topic=TOPIC,
            queue_id=0,
            queue_offset=offset,
            max_msg_nums=32,
            sys_flag=flag,
            commit_offset=0,
            suspend_timeout_millis=suspend_ms,
            subscription=expression,
            expression_type="SQL92",
        )
        return await self.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE, header.encode()))

    async def heartbeat(self, expression: str) -> RemotingCommand:
        sub = SubscriptionData(TOPIC, expression, expression_type="SQL92")
        body = HeartbeatData("client-1", [ConsumerData(GROUP, subscriptions=[sub])]).encode()
        return await self.invoke(RemotingCommand.request(RequestCode.HEART_BEAT, body=body))

    async def check_client_config(self, expression: str, expression_type: str) -> RemotingCommand:
        sub = SubscriptionData(TOPIC, expression, expression_type=expression_type)
        body = fastjson.dumps(
            {"clientId": "client-1", "group": GROUP, "subscriptionData": sub.to_json()}
        )
        return await self.invoke(
            RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body)
        )

    def put(self, body: bytes, props: Mapping[str, str], tags: str | None = None) -> None:
        encoded = properties.encode_properties({**props, "TAGS": tags})
        message = InnerMessage(
            topic=TOPIC,
            queue_id=0,
            body=body,
            properties=encoded.encode(),
            born_timestamp=1_700_000_000_000,
            born_host=ids.pack_host("127.0.0.1", 40000),
        )
        assert self.ctx.store.put_messages([message]).ok


@pytest.fixture
async def broker(context: BrokerContext) -> AsyncIterator[Broker]:
    context.topics.update(TopicConfig(TOPIC, 1, 1))
    holds = PullRequestHoldService(context.store)
    handlers = {**pull.table(context, holds), **client.table(context)}
    server = RemotingServer(Dispatcher(handlers), "127.0.0.1", 0)
    await server.start()
    remoting = RemotingClient()
    yield Broker(context, holds, remoting, f"127.0.0.1:{server.port}")
    await remoting.close()
    holds.close()
    await server.stop()


def put_examples(broker: Broker) -> None:
    """Ten messages, of which m3, m4 and m5 match :data:`SQL`, under several tags."""
    for i in range(10):
        props = {"a": str(i), "b": "x" if i != 4 else "y"}
        broker.put(b"m%d" % i, props, tags=f"Tag{i % 3}")
    broker.put(b"no-a", {"b": "x"}, tags="Tag0")
    broker.put(b"a-not-a-number", {"a": "four", "b": "x"}, tags="Tag0")


def bodies(response: RemotingCommand) -> list[bytes]:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return [m.body for m in record.decode_all(response.body)]


@ENABLED
async def test_the_pulls_subscription_filters_by_properties_whatever_the_tags(
    broker: Broker,
) -> None:
    put_examples(broker)
    response = await broker.pull(SQL)
    assert bodies(response) == [b"m3", b"m5"]
    assert response.ext_fields["nextBeginOffset"] == "12"  # every entry was scanned


@ENABLED
async def test_the_heartbeats_subscription_filters_too(broker: Broker) -> None:
    put_examples(broker)
    assert (await broker.heartbeat("a > 7 OR b = 'y'")).code == ResponseCode.SUCCESS
    response = await broker.pull(None, flag=0)
    assert bodies(response) == [b"m4", b"m8", b"m9"]


@ENABLED
async def test_rocketmqs_own_properties_are_visible(broker: Broker) -> None:
    put_examples(broker)
    response = await broker.pull("TAGS = 'Tag2' AND a IS NOT NULL")
    assert bodies(response) == [b"m2", b"m5", b"m8"]


@ENABLED
async def test_nothing_matching_is_pull_retry_immediately_past_the_scan(broker: Broker) -> None:
    put_examples(broker)
    response = await broker.pull("c IS NOT NULL")
    assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert response.ext_fields["nextBeginOffset"] == "12"


@ENABLED
async def test_a_held_pull_wakes_for_a_matching_arrival(broker: Broker) -> None:
    broker.put(b"m0", {"a": "0"})
    flag = sysflag.FLAG_SUBSCRIPTION | sysflag.FLAG_SUSPEND
    held = asyncio.ensure_future(broker.pull("a = 4", offset=1, flag=flag, suspend_ms=30_000))
    await wait_until(lambda: broker.holds.held_count() == 1, "a pull held")
    broker.put(b"m4", {"a": "4"}, tags="TagA")
    assert bodies(await held) == [b"m4"]


@ENABLED
async def test_a_syntax_error_is_refused_at_pull_with_the_parsers_message(
    broker: Broker,
) -> None:
    response = await broker.pull("a IS 'x'")
    assert response.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert response.remark == (
        "parse the consumer's subscription failed: "
        "expected NULL, TRUE or FALSE after IS, found \"'x'\" at line 1, column 6"
    )
    assert (await broker.pull("")).code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


@ENABLED
async def test_a_heartbeat_with_a_bad_expression_is_taken_and_its_pulls_refused(
    broker: Broker,
) -> None:
    assert (await broker.heartbeat("a = = 1")).code == ResponseCode.SUCCESS
    response = await broker.pull(None, flag=0)
    assert response.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "column 5" in (response.remark or "")


@ENABLED
async def test_check_client_config_parses_the_expression(broker: Broker) -> None:
    assert (await broker.check_client_config(SQL, "SQL92")).code == ResponseCode.SUCCESS
    assert (await broker.check_client_config("TagA", "TAG")).code == ResponseCode.SUCCESS
    refused = await broker.check_client_config("a > 'x'", "SQL92")
    assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert refused.remark == "only numbers compare with > at line 1, column 5"
    other = await broker.check_client_config("x", "XPATH")
    assert other.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_without_enable_property_filter_sql92_is_refused(broker: Broker) -> None:
    put_examples(broker)
    assert not broker.ctx.settings.enable_property_filter  # RocketMQ's default
    for response in (
        await broker.pull(SQL),
        await broker.check_client_config(SQL, "SQL92"),
    ):
        assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, NOT_SUPPORTED)
    assert (await broker.heartbeat(SQL)).code == ResponseCode.SUCCESS
    registered = await broker.pull(None, flag=0)
    assert (registered.code, registered.remark) == (ResponseCode.SYSTEM_ERROR, NOT_SUPPORTED)
    tags = await broker.check_client_config("TagA", "TAG")
    assert tags.code == ResponseCode.SUCCESS
