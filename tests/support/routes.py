"""What the name server routes a topic to, read as a client does."""

from __future__ import annotations

import asyncio

from rocketkube.common.protocol import route
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["route_ids", "wait_until_routed"]


async def route_ids(namesrv_addr: str, topic: str) -> set[int]:
    """Broker ids the name server routes ``topic`` to (none when it has no route)."""
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        answer = await client.invoke(namesrv_addr, request)
    finally:
        await client.close()
    if answer.code != ResponseCode.SUCCESS:
        return set()
    return {i for b in route.TopicRouteData.decode(answer.body).broker_datas
            for i in b.broker_addrs}  # fmt: skip


async def wait_until_routed(namesrv_addr: str, topic: str, ids: set[int]) -> None:
    """Wait (30 s at most) until ``topic`` is routed to exactly the brokers ``ids``."""
    for _ in range(300):
        if await route_ids(namesrv_addr, topic) == ids:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{topic} not routed to brokers {ids}")
