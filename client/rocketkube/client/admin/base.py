"""The plumbing of :class:`~rocketkube.client.admin.client.AdminClient`: its lifecycle, requests to
name servers and brokers with error mapping, finding the brokers of a cluster or a topic, and
the name server reads everything else builds on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from rocketkube.client.admin.settings import AdminSettings
from rocketkube.client.constructors import pick_settings
from rocketkube.client.errors import ClientStateError, MQClientError, for_code
from rocketkube.client.lifecycle import AsyncLifecycle
from rocketkube.common import acl
from rocketkube.common import errors as common_errors
from rocketkube.common.names import TopicName
from rocketkube.common.protocol import namesrv_headers as nh
from rocketkube.common.protocol import route as rt
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.tls import TlsConfig, client_config

__all__ = ["AdminBase"]

T = TypeVar("T")

_DEFAULT_SETTINGS: Final = AdminSettings(namesrv_addr="")
"""What the keyword form builds when given no keyword (:func:`pick_settings`)."""


class AdminBase(AsyncLifecycle):
    """Connections, request plumbing and name server reads; see :class:`AdminClient`."""

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        timeout: float = AdminSettings.timeout,
        tls: TlsConfig | bool | None = AdminSettings.tls,
        credentials: acl.CredentialsLike | None = AdminSettings.credentials,
        settings: AdminSettings | None = None,
    ) -> None:
        settings = pick_settings(
            settings,
            namesrv_addr,
            AdminSettings(
                namesrv_addr=namesrv_addr or "", timeout=timeout, tls=tls, credentials=credentials
            ),
            _DEFAULT_SETTINGS,
            needs="a name server address",
        )
        self.settings = settings
        self.namesrv_addrs = [a.strip() for a in settings.namesrv_addr.split(";") if a.strip()]
        if not self.namesrv_addrs:
            raise ValueError(f"no name server address in {settings.namesrv_addr!r}")
        self.timeout = settings.timeout
        self.tls = client_config(settings.tls)
        self.credentials = acl.credentials_of(settings.credentials)
        self._remoting: RemotingClient | None = None
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Make the client usable; connections open lazily on first use."""
        if self._closed:
            raise ClientStateError("the admin client is closed")
        if self._remoting is None:
            self._remoting = RemotingClient(
                connect_timeout=self.timeout,
                timeout=self.timeout,
                tls=self.tls,
                credentials=self.credentials,
            )

    async def close(self) -> None:
        """Close every connection; the client cannot be started again."""
        self._closed = True
        remoting, self._remoting = self._remoting, None
        if remoting is not None:
            await remoting.close()

    # -- plumbing -----------------------------------------------------------------------

    def _client(self) -> RemotingClient:
        if self._remoting is None:
            raise ClientStateError("the admin client is not started (or already closed)")
        return self._remoting

    async def _invoke(
        self,
        address: str,
        code: int,
        ext: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        allow: frozenset[int] = frozenset(),
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send a request; raise the mapped error unless SUCCESS or a code in ``allow``.
        ``timeout`` replaces the client's for this request."""
        request = RemotingCommand.request(code, ext, body)
        response = await self._client().invoke(address, request, timeout)
        if response.code != ResponseCode.SUCCESS and response.code not in allow:
            raise for_code(response.code, response.remark, address)
        return response

    async def _any_namesrv(
        self, code: int, ext: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        """The first name server's answer that arrives; transport errors try the next."""
        last: common_errors.RemotingError | None = None
        for address in self.namesrv_addrs:
            try:
                return await self._invoke(address, code, ext, body)
            except common_errors.RemotingError as exc:
                last = exc
        assert last is not None
        raise last

    async def _every_namesrv(
        self, code: int, ext: dict[str, str] | None = None, body: bytes = b""
    ) -> dict[str, RemotingCommand]:
        return await self._each(
            self.namesrv_addrs, lambda addr: self._invoke(addr, code, ext, body)
        )

    @staticmethod
    async def _each(addresses: list[str], call: Callable[[str], Awaitable[T]]) -> dict[str, T]:
        """``call`` on every address concurrently; the first failure is raised."""
        results = await asyncio.gather(*(call(addr) for addr in addresses))
        return dict(zip(addresses, results, strict=True))

    async def _cluster_masters(self, cluster: str) -> list[str]:
        info = await self.cluster_info()
        names = info.cluster_addr_table.get(cluster)
        if not names:
            raise MQClientError(f"no broker in cluster {cluster!r}")
        masters = []
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and data.master_addr is not None:
                masters.append(data.master_addr)
        if not masters:
            raise MQClientError(f"no master broker in cluster {cluster!r}")
        return masters

    async def cluster_brokers(self, cluster: str, *, masters_only: bool = True) -> list[str]:
        """The addresses of ``cluster``'s masters (with ``masters_only=False``, of every
        broker, slaves too), sorted; MQClientError for an unknown or empty cluster."""
        if masters_only:
            return await self._cluster_masters(cluster)
        info = await self.cluster_info()
        names = info.cluster_addr_table.get(cluster)
        if not names:
            raise MQClientError(f"no broker in cluster {cluster!r}")
        return sorted(
            addr
            for name in names
            if (data := info.broker_addr_table.get(name)) is not None
            for addr in data.broker_addrs.values()
        )

    async def _all_masters(self) -> list[str]:
        info = await self.cluster_info()
        return sorted(
            data.master_addr
            for data in info.broker_addr_table.values()
            if data.master_addr is not None
        )

    async def _route_brokers(self, topic: str, *, masters_only: bool = True) -> list[str]:
        """One address per broker of the topic's route: its master (or any, if allowed)."""
        route = await self.topic_route(topic)
        addrs = []
        for data in route.broker_datas:
            addr = data.master_addr
            if addr is None and not masters_only and data.broker_addrs:
                addr = data.broker_addrs[min(data.broker_addrs)]
            if addr is not None:
                addrs.append(addr)
        return sorted(set(addrs))

    @staticmethod
    def _targets(cluster: str | None, broker_addr: str | None) -> None:
        if (cluster is None) == (broker_addr is None):
            raise ValueError("give exactly one of cluster and broker_addr")

    # -- name server reads --------------------------------------------------------------

    async def cluster_info(self) -> rt.ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (106): brokers by name and broker names by cluster."""
        response = await self._any_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        return rt.ClusterInfo.decode(response.body)

    async def topic_list(self) -> list[TopicName]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every topic the name server routes."""
        response = await self._any_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return rt.decode_topic_list(response.body)

    async def topic_route(self, topic: str) -> rt.TopicRouteData:
        """GET_ROUTEINFO_BY_TOPIC (105): the topic's queues and brokers.

        Raises :class:`~rocketkube.client.errors.TopicNotExistError` for an unknown topic.
        """
        header = nh.GetRouteInfoRequestHeader(topic=topic)
        response = await self._any_namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, header.encode())
        return rt.TopicRouteData.decode(response.body)
