"""The rocketkube SDK with real third-party clients, both ways: what ali-ons (npm) and the C++
client (PyPI ``rocketmq``) send, the rocketkube push consumer receives, and what the rocketkube
producer sends, their push consumers receive, with bodies, tags, keys and a user property
intact."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketkube.client import (
    ConsumeContext,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

HERE = Path(__file__).parent
COUNT = 200
QUEUES = 4
SCRIPT_DEADLINE_SECONDS = 60
KILL_AFTER_SECONDS = 90
TAGS = ("TagA", "TagB")

RunClient = Callable[..., Awaitable[Any]]
CreateTopic = Callable[..., Awaitable[None]]


def _expected(prefix: str) -> dict[str, dict[str, str]]:
    return {
        f"{prefix}-{i}": {"tags": TAGS[i % 2], "keys": f"key-{i}", "custom": f"c{i}"}
        for i in range(COUNT)
    }


async def _sdk_send(namesrv: str, topic: str) -> None:
    async with Producer("SdkInteropProducer", namesrv, send_timeout=30.0) as producer:
        for i in range(COUNT):
            message = Message(topic, f"rk-{i}".encode())
            message.tags = TAGS[i % 2]
            message.keys = [f"key-{i}"]
            message.properties["custom"] = f"c{i}"
            await producer.send(message)


def _received(result: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        r["body"]: {"tags": r["tags"], "keys": r["keys"], "custom": r["custom"]}
        for r in result["received"]
    }


@pytest.mark.usefixtures("broker")
async def test_sdk_producer_to_alions_push_consumer(
    node: str,
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: CreateTopic,
    run_client: RunClient,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    await _sdk_send(namesrv.address, topic)
    argv = [node, "alions_roundtrip.js", namesrv.address, topic, group, str(COUNT)]
    argv += ["consume", str(SCRIPT_DEADLINE_SECONDS * 1000)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS, cwd=HERE / "node")
    assert _received(run.result) == _expected("rk")


@pytest.mark.usefixtures("cpp_client", "broker")
async def test_sdk_producer_to_cpp_push_consumer(
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: CreateTopic,
    run_client: RunClient,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    await _sdk_send(namesrv.address, topic)
    argv = [sys.executable, str(HERE / "cpp_roundtrip.py"), namesrv.address, topic, group]
    argv += [str(COUNT), "consume", str(SCRIPT_DEADLINE_SECONDS)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS)
    assert _received(run.result) == _expected("rk")


async def _sdk_receive(namesrv: str, topic: str, group: str) -> dict[str, dict[str, str]]:
    """What a rocketkube push consumer receives of ``topic`` until COUNT distinct bodies."""
    seen: dict[str, dict[str, str]] = {}
    complete = asyncio.Event()

    def on_messages(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        for m in messages:
            custom = m.properties.get("custom", "")
            seen[m.body.decode()] = {
                "tags": m.tags or "",
                "keys": " ".join(m.keys),
                "custom": custom,
            }
        if len(seen) >= COUNT:
            complete.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv, consume_from="first", rebalance_interval=2.0)
    await consumer.subscribe(topic, "TagA || TagB")
    consumer.register_listener(on_messages)
    async with consumer:
        await asyncio.wait_for(complete.wait(), SCRIPT_DEADLINE_SECONDS)
    return seen


@pytest.mark.usefixtures("broker")
async def test_alions_producer_to_sdk_push_consumer(
    node: str,
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: CreateTopic,
    run_client: RunClient,
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    argv = [node, "alions_roundtrip.js", namesrv.address, topic, group, str(COUNT)]
    argv += ["produce", str(SCRIPT_DEADLINE_SECONDS * 1000)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS, cwd=HERE / "node")
    assert len(run.result["sent"]) == COUNT
    assert await _sdk_receive(namesrv.address, topic, group) == _expected("alions")


@pytest.mark.usefixtures("cpp_client", "broker")
async def test_cpp_producer_to_sdk_push_consumer(
    namesrv: NamesrvApp,
    names: tuple[str, str],
    run_client: RunClient,
) -> None:
    topic, group = names
    argv = [sys.executable, str(HERE / "cpp_roundtrip.py"), namesrv.address, topic, group]
    argv += [str(COUNT), "produce", str(SCRIPT_DEADLINE_SECONDS)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS)
    assert {s["status"] for s in run.result["sent"]} == {"OK"}
    assert await _sdk_receive(namesrv.address, topic, group) == _expected("cpp")
