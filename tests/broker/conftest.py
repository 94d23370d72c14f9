"""Broker fixtures: a context over a real store in a temporary directory."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import prometheus_client
import pytest

from rocketkube.broker.consumers.clients import ClientManager
from rocketkube.broker.consumers.groups import SubscriptionGroupManager
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.stats import BrokerStats
from rocketkube.broker.store import MessageStore
from rocketkube.broker.topics import TopicConfigManager


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@pytest.fixture
def broker_settings(tmp_path: Path, request: pytest.FixtureRequest) -> BrokerSettings:
    """Small store files; a test changes fields with ``parametrize(..., indirect=True)``."""
    overrides: dict[str, object] = getattr(request, "param", {})
    return BrokerSettings(
        broker_name="broker-a",
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        broker_ip1="127.0.0.1",
        store_path_root_dir=str(tmp_path / "store"),
        mapped_file_size_commit_log=1 << 20,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
        **overrides,
    )


@pytest.fixture
async def context(broker_settings: BrokerSettings) -> AsyncIterator[BrokerContext]:
    """A broker context with a started store; ``broker_addr`` is a placeholder port."""
    config_dir = Path(broker_settings.store_path_root_dir) / "config"
    store = MessageStore(broker_settings.store_config(listen_port=10911))
    store.open()
    await store.start()
    ctx = BrokerContext(
        settings=broker_settings,
        store=store,
        topics=TopicConfigManager(broker_settings, config_dir / "topics.json", wall_clock_ms),
        groups=SubscriptionGroupManager(config_dir / "subscriptionGroup.json", wall_clock_ms),
        offsets=ConsumerOffsetManager(config_dir / "consumerOffset.json"),
        clients=ClientManager(),
        stats=BrokerStats(prometheus_client.CollectorRegistry()),
        clock=wall_clock_ms,
        broker_addr="127.0.0.1:10911",
        permission=broker_settings.broker_permission,
    )
    yield ctx
    await store.shutdown()
