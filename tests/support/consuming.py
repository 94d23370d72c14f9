"""Consume a topic with the SDK's push consumer until given messages have all arrived."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from waiting import wait_until

from rocketkube.client.consumer.listener import ConsumeContext, ConsumeStatus
from rocketkube.client.consumer.push import PushConsumer
from rocketkube.common.message.model import MessageExt

__all__ = ["consume_until_all"]


async def consume_until_all(
    namesrv_addr: str, group: str, topic: str, msg_ids: Collection[str], offsets: Path,
    **options: Any,
) -> list[bytes]:  # fmt: skip
    """Consume ``topic`` from the first message until every one of ``msg_ids`` arrived,
    then stop the consumer (its offsets committed); the bodies received, sorted. Pulls
    are short and retried fast; ``options`` are more PushConsumer keywords."""
    received: dict[str, MessageExt] = {}

    async def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        received.update((m.client_msg_id, m) for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv_addr, consume_from="first", rebalance_interval=1.0,
                            suspend_timeout=1.0, pull_error_delay=0.2, offset_store_dir=offsets,
                            **options)  # fmt: skip
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        await wait_until(lambda: set(msg_ids) <= set(received), f"{len(msg_ids)} consumed")
    return sorted(m.body for m in received.values())
