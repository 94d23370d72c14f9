"""The real C++ client (PyPI ``rocketmq==0.4.4``): its first acknowledged send to a new topic
leaves a route on the name server for a consumer started right after, as Apache's broker
registers an auto-created topic before it answers the send.

The broker registers through a proxy that holds each request 2 s, so an answer given before
the registration would leave no route when the client's process has ended."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from slow_proxy import slow_proxy
from waiting import WAIT_SECONDS

from rocketkube.broker.app import BrokerApp
from rocketkube.common.protocol import route
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("cpp_roundtrip.py")
LAG_SECONDS = 2.0


@pytest.fixture
async def slow_namesrv(namesrv: NamesrvApp) -> AsyncIterator[str]:
    async with slow_proxy(namesrv.address, LAG_SECONDS) as address:
        yield address


@pytest.mark.usefixtures("cpp_client")
async def test_the_cpp_producers_first_send_leaves_a_route(
    namesrv: NamesrvApp,
    slow_namesrv: str,
    start_broker: Callable[..., Awaitable[BrokerApp]],
    run_client: Callable[..., Awaitable[Any]],
) -> None:
    await start_broker(namesrv_addr=slow_namesrv)
    argv = [sys.executable, str(SCRIPT), namesrv.address, "CppFirstSend", "CppRoute", "1"]
    run = await run_client([*argv, "produce", "60"], timeout=90)
    assert [s["status"] for s in run.result["sent"]] == ["OK"]
    client = RemotingClient()
    try:
        request = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "CppFirstSend"}
        )
        resp = await client.invoke(namesrv.address, request, WAIT_SECONDS)
    finally:
        await client.close()
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert route.TopicRouteData.decode(resp.body).queue_datas
