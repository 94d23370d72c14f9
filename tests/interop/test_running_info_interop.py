"""GET_CONSUMER_RUNNING_INFO with real third-party consumers: the C++ RocketMQ client 1.0.1
(PyPI ``rocketmq==0.4.4``) answers it, and the admin parses the body it writes
(fastjson-style MessageQueue object keys); ali-ons never answers server requests (its
``mq_client.js`` leaves the handler commented out), so the broker's timeout answer, after
its 10 s wait, must reach the admin as a clear error."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.errors import MQBrokerError
from rocketkube.common.protocol.admin_bodies import ConsumerConnection, MessageQueue
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("cpp_push_consumer.py")
NODE_DIR = Path(__file__).with_name("node")
NODE_SCRIPT = NODE_DIR / "alions_idle_consumer.js"
QUEUES = 4
WAIT_SECONDS = 45.0
SCRIPT_DEADLINE_SECONDS = 60
KILL_AFTER_SECONDS = 90


async def _online(admin: AdminClient, group: str) -> ConsumerConnection:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            cc = await admin.consumer_connections(group)
            if cc.connections:
                return cc
        except MQBrokerError:
            pass
        assert time.monotonic() < deadline, f"the C++ consumer of {group} never came online"
        await asyncio.sleep(0.2)


@pytest.mark.usefixtures("cpp_client", "broker")
async def test_cpp_push_consumer_reports_its_running_info(
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: Callable[..., Awaitable[None]],
    run_client: Callable[..., Awaitable[Any]],
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    stop = tmp_path / "stop"
    argv = [sys.executable, str(SCRIPT), namesrv.address, topic, group, str(stop)]
    client: asyncio.Future[Any] = asyncio.ensure_future(
        run_client([*argv, str(SCRIPT_DEADLINE_SECONDS)], timeout=KILL_AFTER_SECONDS)
    )
    try:
        async with AdminClient(namesrv.address, timeout=10.0) as admin:
            cc = await _online(admin, group)
            [conn] = cc.connections
            assert conn.language == "CPP"
            wanted = {MessageQueue(topic, "broker-a", i) for i in range(QUEUES)}
            deadline = time.monotonic() + WAIT_SECONDS
            while True:
                info = await admin.consumer_running_info(group, conn.client_id)
                if wanted <= set(info.mq_table):
                    break
                assert time.monotonic() < deadline, f"queues never rebalanced: {info.mq_table}"
                await asyncio.sleep(0.5)
            assert topic in {s.topic for s in info.subscriptions}
            # C++ 1.0.1 writes its own values ("V3_1_8", and "flase" for not orderly).
            assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
            assert all(not pq.dropped for pq in info.mq_table.values())
    finally:
        stop.touch()
        await asyncio.wait_for(client, KILL_AFTER_SECONDS + 10)


@pytest.mark.usefixtures("broker")
async def test_alions_consumer_never_answers_and_the_error_is_clear(
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: Callable[..., Awaitable[None]],
    run_client: Callable[..., Awaitable[Any]],
    node: str,
    tmp_path: Path,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    stop = tmp_path / "stop"
    argv = [node, NODE_SCRIPT.name, namesrv.address, topic, group, str(stop)]
    client: asyncio.Future[Any] = asyncio.ensure_future(
        run_client(
            [*argv, str(SCRIPT_DEADLINE_SECONDS * 1000)], timeout=KILL_AFTER_SECONDS, cwd=NODE_DIR
        )
    )
    try:
        async with AdminClient(namesrv.address, timeout=10.0) as admin:
            [conn] = (await _online(admin, group)).connections
            with pytest.raises(MQBrokerError) as caught:
                await admin.consumer_running_info(group, conn.client_id)
    finally:
        stop.touch()
        await asyncio.wait_for(client, KILL_AFTER_SECONDS + 10)
    assert caught.value.code == ResponseCode.CONSUME_MSG_TIMEOUT
    assert caught.value.remark == (
        f"consumer <{group}> <{conn.client_id}> Timeout: no answer within 10s"
    )
