"""Fixtures shared by every suite: a name server on 127.0.0.1 with a clock tests can move,
and in-process brokers registered with it (real sockets, real store files under tmp_path)."""

from __future__ import annotations

import operator
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from certs import CertFiles, make_certs
from hypothesis import settings
from waiting import WAIT_SECONDS, wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.protocol import admin_headers
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

#: ``await start_broker(name="broker-a", **settings)``: a started, registered broker.
StartBroker = Callable[..., Awaitable[BrokerApp]]
#: ``await create_topic(topic, queues=4)``
CreateTopic = Callable[..., Awaitable[None]]

# Shared CI machines stall now and then: property tests judge behaviour, never speed.
settings.register_profile("rocketkube", deadline=None)
settings.load_profile("rocketkube")


class FakeClock:
    """Milliseconds that only move when a test says so."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    """A CA, a server certificate for 127.0.0.1 and localhost, client certificates."""
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def namesrv_settings(tmp_path: Path) -> NamesrvSettings:
    return NamesrvSettings(
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        kv_config_path=str(tmp_path / "kv.json"),
    )


@pytest.fixture
async def namesrv(namesrv_settings: NamesrvSettings, clock: FakeClock) -> AsyncIterator[NamesrvApp]:
    app = NamesrvApp(namesrv_settings, clock)
    await app.start()
    yield app
    await app.stop()


@pytest.fixture
async def start_broker(tmp_path: Path, namesrv: NamesrvApp) -> AsyncIterator[StartBroker]:
    """Starts brokers registered with ``namesrv`` (small store files, ephemeral ports); the
    ones still running are stopped at the end. Keyword arguments override BrokerSettings."""
    apps: list[BrokerApp] = []

    async def start(name: str = "broker-a", **overrides: Any) -> BrokerApp:
        fields: dict[str, Any] = {
            "broker_name": name,
            "listen_port": 0,
            "http_port": 0,
            "bind_address": "127.0.0.1",
            "broker_ip1": "127.0.0.1",
            "namesrv_addr": namesrv.address,
            "store_path_root_dir": str(tmp_path / f"store-{name}-{len(apps)}"),
            "mapped_file_size_commit_log": 1 << 24,
            "mapped_file_size_consume_queue": 20 * 30_000,
            "max_hash_slot_num": 10_000,
            "max_index_num": 40_000,
            **overrides,
        }
        app = BrokerApp(BrokerSettings(**fields))
        apps.append(app)
        await app.start()
        registrar = app.registrar
        assert registrar is not None
        await wait_until(lambda: bool(registrar.registered), f"{name} registered")
        return app

    yield start
    for app in reversed(apps):
        await app.stop()


@pytest.fixture
async def broker(start_broker: StartBroker) -> BrokerApp:
    """One started broker, ``broker-a`` of ``DefaultCluster``."""
    return await start_broker()


@pytest.fixture
def names() -> tuple[str, str]:
    """A fresh (topic, consumer group) pair, so no test sees another's messages or offsets."""
    suffix = uuid.uuid4().hex[:10]
    return f"Topic_{suffix}", f"Group_{suffix}"


@pytest.fixture
def create_topic(namesrv: NamesrvApp, broker: BrokerApp) -> CreateTopic:
    """Create a topic as ``mqadmin updateTopic`` does: UPDATE_AND_CREATE_TOPIC (17) to the
    broker over the wire, then wait until the name server routes it."""

    async def create(topic: str, queues: int = 4, *, order: bool = False) -> None:
        header = admin_headers.CreateTopicRequestHeader(
            topic=topic,
            default_topic="TBW102",
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=6,
            topic_filter_type="SINGLE_TAG",
            order=order,
            topic_sys_flag=0,
        )
        client = RemotingClient()
        try:
            request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.encode())
            # answered once topics.json is on disk: a starved CI disk takes seconds
            response = await client.invoke(broker.address, request, WAIT_SECONDS)
        finally:
            await client.close()
        assert response.code == ResponseCode.SUCCESS, response.remark
        await wait_until(lambda: topic in namesrv.routes.topic_queue_table, f"{topic} routed")

    return create


@pytest.fixture
async def routed_topic(create_topic: CreateTopic, names: tuple[str, str]) -> str:
    """The fresh topic of ``names``, created with 4 queues and routed."""
    await create_topic(names[0], 4)
    return names[0]


def test_operator_is_the_standard_library() -> None:
    """Guard: no source root or tests/ package may shadow the stdlib ``operator``."""
    assert operator.__file__ is not None
    assert "site-packages" not in operator.__file__
    assert Path(operator.__file__).parent.name.startswith("python3")
