"""A created topic is routable when its creation is answered: the broker registers the change
with every name server before it answers (as Apache's broker does), both UPDATE_AND_CREATE_TOPIC
and a send that auto-creates its topic; a burst of creations shares registrations, and a name
server that never answers holds the answer only for a bound."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from slow_proxy import slow_proxy
from waiting import WAIT_SECONDS

from rocketkube.broker.app import BrokerApp
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.common.protocol import route
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

StartBroker = Callable[..., Awaitable[BrokerApp]]
CLUSTER = "DefaultCluster"
SLOW_SECONDS = 0.3


@pytest.fixture
async def second_namesrv(
    namesrv_settings: NamesrvSettings, tmp_path: Path, clock: Callable[[], int]
) -> AsyncIterator[NamesrvApp]:
    settings = namesrv_settings.model_copy(update={"kv_config_path": str(tmp_path / "kv2.json")})
    app = NamesrvApp(settings, clock)
    await app.start()
    yield app
    await app.stop()


@pytest.fixture
def silent_namesrv() -> Iterator[str]:
    """An address that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
async def slow_namesrv(namesrv: NamesrvApp) -> AsyncIterator[str]:
    """The name server behind a proxy that holds each request a while: a broker registering
    through it would answer before the route exists, were it not waiting for the round."""
    async with slow_proxy(namesrv.address, SLOW_SECONDS) as address:
        yield address


async def route_of(namesrv: str, topic: str) -> route.TopicRouteData | None:
    """One lookup, no retry: what a client started now would see."""
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        resp = await client.invoke(namesrv, request, WAIT_SECONDS)
    finally:
        await client.close()
    if resp.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return route.TopicRouteData.decode(resp.body)


async def test_a_created_topic_is_routed_by_every_name_server_when_answered(
    start_broker: StartBroker, namesrv: NamesrvApp, second_namesrv: NamesrvApp
) -> None:
    both = f"{namesrv.address};{second_namesrv.address}"
    await start_broker(namesrv_addr=both)
    async with AdminClient(both) as admin:
        await admin.create_topic("Fresh", cluster=CLUSTER, read_queue_nums=6, write_queue_nums=6)
        for addr in (namesrv.address, second_namesrv.address):
            found = await route_of(addr, "Fresh")
            assert found is not None, f"{addr} has no route for the topic just created"
            assert [q.write_queue_nums for q in found.queue_datas] == [6]
        await admin.create_topic("Fresh", cluster=CLUSTER, read_queue_nums=9, write_queue_nums=9)
        grown = await route_of(namesrv.address, "Fresh")
        assert grown is not None
        assert [q.write_queue_nums for q in grown.queue_datas] == [9]


async def test_a_burst_of_creations_is_routed_when_each_is_answered(
    start_broker: StartBroker, namesrv: NamesrvApp, slow_namesrv: str
) -> None:
    await start_broker(namesrv_addr=slow_namesrv)
    topics = [f"Burst{i}" for i in range(30)]
    async with AdminClient(namesrv.address) as admin:

        async def create_then_look(topic: str) -> route.TopicRouteData | None:
            await admin.create_topic(topic, cluster=CLUSTER, read_queue_nums=2, write_queue_nums=2)
            return await route_of(namesrv.address, topic)

        found = await asyncio.gather(*(create_then_look(t) for t in topics))
    assert [t for t, r in zip(topics, found, strict=True) if r is None] == []


async def test_a_silent_name_server_delays_the_answer_only_for_a_bound(
    start_broker: StartBroker, namesrv: NamesrvApp, silent_namesrv: str
) -> None:
    addrs = f"{namesrv.address};{silent_namesrv}"
    broker = await start_broker(namesrv_addr=addrs, register_broker_timeout_mills=500)
    assert broker.registrar is not None
    assert broker.registrar.registered == {namesrv.address}
    async with AdminClient(namesrv.address, timeout=WAIT_SECONDS) as admin:
        await admin.create_topic("Despite", cluster=CLUSTER)  # answered, not timed out
    assert await route_of(namesrv.address, "Despite") is not None


def send_request(topic: str, body: bytes) -> RemotingCommand:
    """SEND_MESSAGE_V2 as a client sends to a topic it has no route for (TBW102's)."""
    ext = {
        "a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
        "g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false",
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


async def test_a_send_that_creates_its_topic_is_answered_once_routed(
    start_broker: StartBroker, namesrv: NamesrvApp, slow_namesrv: str
) -> None:
    broker = await start_broker(namesrv_addr=slow_namesrv)
    client = RemotingClient()
    try:
        sent = await client.invoke(broker.address, send_request("AutoOne", b"x"), WAIT_SECONDS)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert await route_of(namesrv.address, "AutoOne") is not None
        # pipelined: several sends read in one chunk, a few of them creating their topics
        topics = [f"AutoMany{i % 5}" for i in range(40)]
        answers = await asyncio.gather(
            *(client.invoke(broker.address, send_request(t, b"y"), WAIT_SECONDS) for t in topics)
        )
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
        for topic in sorted(set(topics)):
            assert await route_of(namesrv.address, topic) is not None, topic
    finally:
        await client.close()


async def test_the_sdk_producers_first_send_leaves_a_route_for_consumers(
    start_broker: StartBroker, namesrv: NamesrvApp, slow_namesrv: str
) -> None:
    await start_broker(namesrv_addr=slow_namesrv)
    async with Producer("PG_route", namesrv.address, send_timeout=WAIT_SECONDS) as producer:
        await producer.send(Message("FirstSend", b"hello"))
    found = await route_of(namesrv.address, "FirstSend")
    assert found is not None
    assert [q.write_queue_nums for q in found.queue_datas] == [4]
