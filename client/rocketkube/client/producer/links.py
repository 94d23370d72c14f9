"""A producer's standing with its brokers: heartbeats, the connections they introduced, and
UNREGISTER_CLIENT on close (docs/protocol.md §7.2, §13.2).

A broker checks a half message back only on a connection that declared the producer's group
in a HEART_BEAT (34), so every connection a send uses carries one first; every master of the
routes in use gets another each ``heartbeat_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Final

from rocketkube.client import routing
from rocketkube.common import errors
from rocketkube.common.names import ClientId, GroupName, TopicName
from rocketkube.common.protocol.admin_headers import UnregisterClientRequestHeader
from rocketkube.common.protocol.heartbeat import HeartbeatData
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection

log = logging.getLogger(__name__)

_UNREGISTER_TIMEOUT: Final = 1.0


class ProducerLinks:
    """The connections of producer ``client_id`` of ``group`` that brokers know it on.

    :attr:`registered` maps a broker address to its connection (the send path reads it
    directly); :attr:`topics` are the topics sent to, whose masters get the heartbeats.
    """

    __slots__ = ("client_id", "group", "registered", "timeout", "topics")

    def __init__(self, client_id: str, group: str, timeout: float) -> None:
        self.client_id = ClientId(client_id)
        self.group = GroupName(group)
        self.timeout = timeout
        self.registered: dict[str, Connection] = {}
        self.topics: set[TopicName] = set()

    async def connection(self, client: RemotingClient, addr: str) -> Connection:
        """The connection to ``addr`` for a send, with a heartbeat written on it first unless
        it already carried one: the broker must know this producer before a half message can
        be checked back. The heartbeat is written oneway just ahead of the send, so the
        broker handles it first and no send waits for it (Java heartbeats off the send path;
        a send blocked behind a slow heartbeat would time out under load)."""
        conn = await client.connection(addr)
        if self.registered.get(addr) is not conn:
            self.registered[addr] = conn
            conn.invoke_oneway(self._heartbeat_request())
        return conn

    async def heartbeat_forever(
        self, interval: float, started: Callable[[], tuple[RemotingClient, routing.RouteCache]]
    ) -> None:
        """Every ``interval`` seconds, HEART_BEAT to each master of the routes in use; a
        failure is logged and tried again next round. ``started`` raises once closed."""
        while True:
            await asyncio.sleep(interval)
            client, routes = started()
            for addr in self._master_addrs(routes):
                try:
                    await self._heartbeat_one(client, addr)
                except errors.RemotingError as exc:
                    log.warning("heartbeat to %s failed: %s", addr, exc)

    async def unregister(self) -> None:
        """UNREGISTER_CLIENT (35) on every registered broker, best effort; forgets them."""
        header = UnregisterClientRequestHeader(client_id=self.client_id, producer_group=self.group)
        registered, self.registered = self.registered, {}
        for addr, conn in sorted(registered.items()):
            if not conn.is_open:
                continue
            request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.encode())
            try:
                await conn.invoke(request, min(self.timeout, _UNREGISTER_TIMEOUT))
            except errors.RemotingError as exc:
                log.debug("unregister from %s failed: %s", addr, exc)

    def _heartbeat_request(self) -> RemotingCommand:
        body = HeartbeatData(client_id=self.client_id, producer_groups=[self.group]).encode()
        return RemotingCommand.request(RequestCode.HEART_BEAT, body=body)

    async def _heartbeat_one(self, client: RemotingClient, addr: str) -> None:
        """HEART_BEAT (34) with this producer's group to ``addr``; transport errors raise."""
        conn = await client.connection(addr)
        response = await conn.invoke(self._heartbeat_request(), self.timeout)
        if response.code != ResponseCode.SUCCESS:
            log.warning("heartbeat to %s: %s %s", addr, response.code, response.remark)
            return
        self.registered[addr] = conn

    def _master_addrs(self, routes: routing.RouteCache) -> Iterable[str]:
        """Master addresses of every route this producer sent to."""
        addrs: set[str] = set()
        for topic in self.topics:
            info = routes.cached(topic)
            if info is not None:
                addrs.update(b.master_addr for b in info.route.broker_datas if b.master_addr)
        return sorted(addrs)
