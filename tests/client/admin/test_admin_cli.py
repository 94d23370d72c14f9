"""``rocketkube admin``: every subcommand round-trips against a real name server and broker
on 127.0.0.1 (run in-process on the test's loop through ``execute``), its error paths, and
the pure pieces (rendering, value parsing, planning) on their own."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from waiting import WAIT_SECONDS

from rocketkube.broker.app import BrokerApp
from rocketkube.client.admin import cli as admin_cli
from rocketkube.client.admin.cli import base, brokers, messages, render
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.consumer.lite_pull import LitePullConsumer
from rocketkube.client.errors import MQBrokerError, TopicNotExistError
from rocketkube.common.message.model import MessageExt
from rocketkube.common.names import BrokerName, ClusterName
from rocketkube.common.protocol.admin_bodies import (
    ConsumeStats,
    MessageQueue,
    OffsetWrapper,
    TopicOffset,
    TopicStatsTable,
)
from rocketkube.common.protocol.heartbeat import HeartbeatData
from rocketkube.common.protocol.route import BrokerData, ClusterInfo
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp

CLUSTER = "DefaultCluster"
CreateTopic = Callable[..., Awaitable[None]]


class Run:
    """One ``rocketkube admin`` invocation: exit code, stdout, stderr."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"Run({self.code}, out={self.out!r}, err={self.err!r})"


class Cli:
    def __init__(self, namesrv: NamesrvApp) -> None:
        self.namesrv_addr = namesrv.address

    async def __call__(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = await admin_cli.execute([*argv, "-n", self.namesrv_addr], out=out, err=err)
        return Run(code, out.getvalue(), err.getvalue())

    async def ok(self, *argv: str) -> str:
        run = await self(*argv)
        assert run.code == 0, run
        return run.out

    async def until_ok(self, *argv: str, check: Callable[[Run], bool] | None = None) -> Run:
        """Repeat (bounded) until the command succeeds (and passes ``check``): routes and
        indexes settle."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            run = await self(*argv)
            if run.code == 0 and (check is None or check(run)):
                return run
            if time.monotonic() > deadline:
                raise AssertionError(f"{argv} kept failing: {run}")
            await asyncio.sleep(0.05)


@pytest.fixture
def cli(namesrv: NamesrvApp, broker: BrokerApp) -> Cli:
    return Cli(namesrv)


def _one_error_line(run: Run, prefix: str) -> None:
    assert run.code == 1, run
    assert run.err.startswith(prefix), run
    assert run.err.count("\n") == 1, run
    assert "Traceback" not in run.err


# -- topics ------------------------------------------------------------------------------------


async def test_topic_lifecycle(cli: Cli, broker: BrokerApp, names: tuple[str, str]) -> None:
    topic, _ = names
    created = await cli.ok("updateTopic", "-c", CLUSTER, "-t", topic, "-r", "4", "-w", "4")
    assert f"create topic to {broker.address} success." in created
    assert f"TopicConfig [topicName={topic}, readQueueNums=4, writeQueueNums=4, perm=RW-" in created

    route = (await cli.until_ok("topicRoute", "-t", topic, "--json")).json()
    assert route["queueDatas"][0]["writeQueueNums"] == 4
    assert json.loads(await cli.ok("topicRoute", "-t", topic)) == route  # mqadmin: pretty JSON
    table = await cli.ok("topicRoute", "-t", topic, "-l")
    assert table.splitlines()[0].split() == [
        "#ClusterName",
        "#BrokerName",
        "#BrokerAddrs",
        "#ReadQueue",
        "#WriteQueue",
        "#Perm",
    ]
    assert f"{{0={broker.address}}}" in table

    assert topic in (await cli.ok("topicList")).split()
    assert topic in (await cli("topicList", "--json")).json()
    clustered = (await cli("topicList", "-c", "--json")).json()
    assert {"cluster": CLUSTER, "topic": topic, "groups": []} in clustered

    await cli.ok("sendMessage", "-t", topic, "-p", "hello", "-b", "broker-a", "-i", "2")
    status = await cli.ok("topicStatus", "-t", topic)
    header, *rows = status.splitlines()
    assert header.split("  ")[0] == "#Broker Name"
    assert "#Last Updated" in header
    assert len(rows) == 4
    stats = (await cli("topicStatus", "-t", topic, "--json")).json()
    assert [(s["queueId"], s["minOffset"], s["maxOffset"]) for s in stats] == [
        (0, 0, 0),
        (1, 0, 0),
        (2, 0, 1),
        (3, 0, 0),
    ]
    assert stats[2]["lastUpdateTimestamp"] > 0

    deleted = await cli.ok("deleteTopic", "-t", topic, "-c", CLUSTER)
    assert f"delete topic [{topic}] from NameServer success." in deleted
    _one_error_line(await cli("topicRoute", "-t", topic), "error: TOPIC_NOT_EXIST (17): ")


async def test_ordered_topic_writes_its_order_conf(cli: Cli, broker: BrokerApp) -> None:
    data = (
        await cli(
            "updateTopic",
            "-b",
            broker.address,
            "-t",
            "OrderedCliTopic",
            "-w",
            "2",
            "-r",
            "2",
            "-o",
            "true",
            "--json",
        )
    ).json()
    assert data["orderConf"] == "broker-a:2"
    assert data["topicConfig"]["order"] is True
    async with AdminClient(cli.namesrv_addr) as admin:  # routes carry it with orderMessageEnable
        assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "OrderedCliTopic") == "broker-a:2"


# -- messages ----------------------------------------------------------------------------------


async def test_send_query_and_consume_messages(
    cli: Cli, create_topic: CreateTopic, names: tuple[str, str]
) -> None:
    topic, _ = names
    await create_topic(topic, queues=2)
    sent = (
        await cli(
            "sendMessage", "-t", topic, "-p", "héllo", "-k", "order-7 other", "-c", "TagA", "--json"
        )
    ).json()
    assert sent["sendStatus"] == "SEND_OK"
    table = await cli.ok("sendMessage", "-t", topic, "-p", "second", "-b", "broker-a", "-i", "1")
    assert table.splitlines()[0].split()[:4] == ["#Broker", "Name", "#QID", "#Send"]
    assert "SEND_OK" in table

    detail = await cli.ok("queryMsgById", "-i", sent["offsetMsgId"])
    assert f"Topic           : {topic}" in detail
    assert "Tags            : [TagA]" in detail
    assert "Message Body    : héllo" in detail
    by_offset_id = (await cli("queryMsgById", "-i", sent["offsetMsgId"], "--json")).json()
    assert by_offset_id[0]["msgId"] == sent["msgId"]
    by_client_id = await cli.until_ok("queryMsgById", "-i", sent["msgId"], "-t", topic, "--json")
    assert by_client_id.json()[0]["offsetMsgId"] == sent["offsetMsgId"]

    keyed = await cli.until_ok("queryMsgByKey", "-t", topic, "-k", "order-7")
    header, row = keyed.out.splitlines()
    assert header.split() == ["#Message", "ID", "#QID", "#Offset"]
    assert row.split() == [sent["msgId"], str(sent["queueId"]), str(sent["queueOffset"])]
    _one_error_line(await cli("queryMsgByKey", "-t", topic, "-k", "absent"), "error: NoMessage")

    consumed = await cli.ok("consumeMessage", "-t", topic)
    assert "héllo" in consumed
    assert "second" in consumed
    assert consumed.rstrip().endswith("2 messages")
    one = (
        await cli("consumeMessage", "-t", topic, "-b", "broker-a", "-i", "1", "-o", "0", "--json")
    ).json()
    assert [(m["brokerName"], m["queueId"], m["body"]) for m in one] == [("broker-a", 1, "second")]
    capped = (await cli("consumeMessage", "-t", topic, "-c", "1", "--json")).json()
    assert len(capped) == 1
    later = (
        await cli("consumeMessage", "-t", topic, "-s", str(int(time.time() * 1000) - 1), "--json")
    ).json()
    assert later == []

    usage = await cli("consumeMessage", "-t", topic, "-i", "1")
    assert usage.code == 2
    assert "brokerName before queueId" in usage.err
    assert (await cli("sendMessage", "-t", topic, "-p", "x", "-i", "1")).code == 2


# -- groups ------------------------------------------------------------------------------------


async def test_groups_progress_connections_and_reset(
    cli: Cli,
    namesrv: NamesrvApp,
    broker: BrokerApp,
    create_topic: CreateTopic,
    names: tuple[str, str],
) -> None:
    topic, group = names
    await create_topic(topic, queues=2)
    created = await cli.ok("updateSubGroup", "-c", CLUSTER, "-g", group, "-r", "3")
    assert f"create subscription group to {broker.address} success." in created
    assert "retryMaxTimes=3" in created
    assert broker.ctx is not None
    assert broker.ctx.groups.table[group].retry_max_times == 3

    for i in range(3):
        await cli.ok("sendMessage", "-t", topic, "-p", f"m{i}")
    consumer = LitePullConsumer(
        group, namesrv.address, auto_commit=False, consume_from_where="first"
    )
    await consumer.subscribe(topic)
    async with consumer:
        got: list[MessageExt] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while len(got) < 3 and time.monotonic() < deadline:
            got += await consumer.poll(timeout=1.0)
        assert len(got) == 3
        await consumer.commit()

        progress = await cli.ok("consumerProgress", "-g", group)
        assert "#Consumer Offset" in progress
        assert "Diff Total: 0" in progress
        stats = (await cli("consumerProgress", "-g", group, "--json")).json()
        assert stats["diffTotal"] == 0
        assert sum(o["consumerOffset"] for o in stats["offsets"]) == 3

        connection = await cli.ok("consumerConnection", "-g", group)
        assert consumer.client_id in connection
        assert "ConsumeType     : CONSUME_ACTIVELY" in connection
        conn_json = (await cli("consumerConnection", "-g", group, "--json")).json()
        assert conn_json["subscriptions"] == {topic: "*"}

        def listed(run: Run) -> bool:  # once %RETRY%<group> reached the name server
            return any(g["group"] == group and g["count"] == 1 for g in run.json())

        await cli.until_ok("consumerProgress", "--json", check=listed)
        assert group in await cli.ok("consumerProgress")

        rewound = await cli.ok("resetOffsetByTime", "-g", group, "-t", topic, "-s", "0")
        assert f"group[{group}], topic[{topic}], force[true]" in rewound
        assert "Diff Total: 3" in await cli.ok("consumerProgress", "-g", group)
        to_end = (
            await cli("resetOffsetByTime", "-g", group, "-t", topic, "-s", "now", "--json")
        ).json()
        assert sum(o["offset"] for o in to_end["offsets"]) == 3
        assert to_end["timestamp"] == -1

    gone = await cli.ok("deleteSubGroup", "-c", CLUSTER, "-g", group, "-r", "true")
    assert f"delete subscription group [{group}] from cluster [{CLUSTER}] success." in gone
    assert group not in broker.ctx.groups.table
    _one_error_line(
        await cli("consumerConnection", "-g", group), "error: CONSUMER_NOT_ONLINE (206): "
    )
    bad_time = await cli("resetOffsetByTime", "-g", group, "-t", topic, "-s", "yesterday")
    assert bad_time.code == 2


async def test_producer_connection(
    cli: Cli, broker: BrokerApp, create_topic: CreateTopic, names: tuple[str, str]
) -> None:
    topic, group = names
    await create_topic(topic)
    client = RemotingClient()
    try:
        beat = HeartbeatData("127.0.0.1@cli-test", producer_groups=[group]).encode()
        request = RemotingCommand.request(RequestCode.HEART_BEAT, None, beat)
        assert (await client.invoke(broker.address, request)).code == ResponseCode.SUCCESS
        table = await cli.ok("producerConnection", "-g", group, "-t", topic)
        assert "127.0.0.1@cli-test" in table
        data = (await cli("producerConnection", "-g", group, "-t", topic, "--json")).json()
        assert [c["clientId"] for c in data] == ["127.0.0.1@cli-test"]
    finally:
        await client.close()


# -- brokers -----------------------------------------------------------------------------------


async def test_cluster_and_broker_commands(cli: Cli, broker: BrokerApp) -> None:
    table = await cli.ok("clusterList")
    header, row = table.splitlines()
    assert header.split("  ")[0] == "#Cluster Name"
    assert row.split()[:5] == [CLUSTER, "broker-a", "0", broker.address, "V4_9_8"]
    rows = (await cli("clusterList", "--json")).json()
    assert rows[0]["addr"] == broker.address
    assert rows[0]["answered"] is True
    traffic = (await cli("clusterList", "-m", "--json")).json()
    assert traffic[0]["brokerName"] == "broker-a"

    status = await cli.ok("brokerStatus", "-b", broker.address)
    assert "brokerVersionDesc" in status
    by_cluster = (await cli("brokerStatus", "-c", CLUSTER, "--json")).json()
    assert by_cluster[broker.address]["brokerVersionDesc"] == "V4_9_8"

    config = await cli.ok("getBrokerConfig", "-b", broker.address)
    assert config.startswith(f"============{broker.address}============")
    updated = await cli.ok(
        "updateBrokerConfig", "-c", CLUSTER, "-k", "defaultTopicQueueNums", "-v", "5"
    )
    assert f"update broker config success, {broker.address}" in updated
    configs = (await cli("getBrokerConfig", "-c", CLUSTER, "--json")).json()
    assert configs[broker.address]["defaultTopicQueueNums"] == "5"
    refused = await cli("updateBrokerConfig", "-b", broker.address, "-k", "listenPort", "-v", "1")
    assert refused.code == 1
    assert refused.err.count("\n") == 1


# -- errors ------------------------------------------------------------------------------------


async def test_errors_are_one_line_and_usage_errors_exit_2(cli: Cli) -> None:
    _one_error_line(await cli("topicStatus", "-t", "NoSuchTopic"), "error: TOPIC_NOT_EXIST (17):")
    missing = await cli("topicStatus")
    assert missing.code == 2
    assert "-t/--topic" in missing.err
    assert (await cli("topicList", "--bogus")).code == 2
    assert (await cli("updateTopic", "-t", "X")).code == 2  # neither -b nor -c
    assert (await cli("updateTopic", "-t", "X", "-c", CLUSTER, "-o", "maybe")).code == 2
    assert (await cli("noSuchCommand")).code == 2
    assert (await cli("topicList", "-h")).code == 0

    out, err = io.StringIO(), io.StringIO()
    refused = await admin_cli.execute(["topicList", "-n", "127.0.0.1:1"], out=out, err=err)
    assert refused == 1
    assert err.getvalue().startswith("error: RemotingConnectError: ")
    assert err.getvalue().count("\n") == 1


def test_namesrv_addr_from_flag_env_or_default() -> None:
    given = argparse.Namespace(namesrv_addr="10.0.0.1:9876")
    unset = argparse.Namespace(namesrv_addr=None)
    assert admin_cli.namesrv_addr(given, {"NAMESRV_ADDR": "x:1"}) == "10.0.0.1:9876"
    assert admin_cli.namesrv_addr(unset, {"NAMESRV_ADDR": "x:1"}) == "x:1"
    assert admin_cli.namesrv_addr(unset, {}) == "127.0.0.1:9876"


def test_admin_help_through_the_installed_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rocketkube.launcher", "admin", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for name in ("updateTopic", "consumerProgress", "resetOffsetByTime", "consumeMessage"):
        assert name in done.stdout


# -- pure pieces -------------------------------------------------------------------------------


def test_describe_errors() -> None:
    broker_error = MQBrokerError(17, "topic X\nnot exist", "127.0.0.1:9876")
    assert admin_cli.describe(broker_error) == "TOPIC_NOT_EXIST (17): topic X not exist"
    assert admin_cli.describe(TopicNotExistError(17, None)) == "TOPIC_NOT_EXIST (17):"
    assert admin_cli.describe(TimeoutError()) == "TimeoutError"
    assert admin_cli.describe(OSError("boom")) == "OSError: boom"


def test_value_parsers() -> None:
    assert base.parse_bool("TRUE") is True
    assert base.parse_bool("false") is False
    with pytest.raises(argparse.ArgumentTypeError):
        base.parse_bool("yes")
    assert base.parse_timestamp("1700000000123") == 1700000000123
    local = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    assert base.parse_timestamp("2024-05-06#07:08:09:123") == int(local.timestamp() * 1000)
    with pytest.raises(argparse.ArgumentTypeError):
        base.parse_timestamp("2024-05-06 07:08")
    assert base.parse_timestamp_or_now("now") == -1


def test_table_aligns_columns_and_right_aligns_numbers() -> None:
    text = render.table(["#Name", "#N"], [["a", 1], ["long-name", 100]])
    assert text.splitlines() == ["#Name      #N", "a            1", "long-name  100"]
    assert render.table(["#A"], []) == "#A"
    assert render.key_values([("a", 1), ("bbb", "x")]) == "a  : 1\nbbb: x"


def test_topic_status_and_progress_rendering() -> None:
    utc = datetime.UTC
    mq = MessageQueue("T", "broker-a", 0)
    stats = TopicStatsTable({mq: TopicOffset(0, 5, 1_700_000_000_123)})
    lines = render.topic_status_text(stats, utc).splitlines()
    assert lines[1].split("  ")[0] == "broker-a"
    assert lines[1].endswith("2023-11-14 22:13:20,123")
    assert render.topic_stats_json(stats) == [
        {
            "topic": "T",
            "brokerName": "broker-a",
            "queueId": 0,
            "minOffset": 0,
            "maxOffset": 5,
            "lastUpdateTimestamp": 1_700_000_000_123,
        },
    ]
    consume = ConsumeStats({mq: OffsetWrapper(10, 4, 0)}, 1.5)
    text = render.consumer_progress_text(consume, utc)
    assert "N/A" in text
    assert text.endswith("Consume TPS: 1.50\nDiff Total: 6")
    assert render.consume_stats_json(consume)["offsets"][0]["diff"] == 6


def test_plan_ranges_splits_the_count_over_queues() -> None:
    q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    plans = messages.plan_ranges([(q0, 2, 10), (q1, 0, 5)], None, 10)
    assert [(p.queue.queue_id, p.begin, p.end) for p in plans] == [(0, 2, 10), (1, 0, 2)]
    from_offset = messages.plan_ranges([(q0, 2, 10)], 6, 100)
    assert [(p.begin, p.end) for p in from_offset] == [(6, 10)]
    assert messages.plan_ranges([(q0, 0, 10)], 12, 5) == []


def test_cluster_rows_from_runtime_tables() -> None:
    info = ClusterInfo(
        {"b": BrokerData(ClusterName("C"), BrokerName("b"), {0: "h:1", 1: "h:2"})}, {"C": {"b"}}
    )
    runtime = {
        "brokerVersionDesc": "V4_9_8",
        "putTps": "12.50 3.00 1.00",
        "getTransferedTps": "2.00 1.00 0.00",
        "earliestMessageTimeStamp": "1000",
        "commitLogDiskRatio": "0.25",
        "msgPutTotalTodayNow": "7",
        "msgPutTotalTodayMorning": "2",
        "msgPutTotalYesterdayMorning": "0",
    }
    rows = brokers.cluster_rows(info, {"h:1": runtime, "h:2": None}, 1000 + 7_200_000)
    assert [(r["brokerId"], r["inTps"], r["hours"], r["space"]) for r in rows] == [
        (0, 12.5, 2.0, 0.25),
        (1, 0.0, 0.0, 0.0),
    ]
    assert [r["answered"] for r in rows] == [True, False]
    traffic = brokers.traffic_rows(info, {"h:1": runtime})
    assert traffic == [
        {
            "cluster": "C",
            "brokerName": "b",
            "inTotalYest": 2,
            "outTotalYest": 0,
            "inTotalToday": 5,
            "outTotalToday": 0,
        }
    ]
