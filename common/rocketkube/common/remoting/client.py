"""The asyncio remoting client: one connection per address, reopened on failure; over TLS
when given a :class:`~rocketkube.common.remoting.tls.TlsConfig`; every request signed
when given :class:`~rocketkube.common.acl.Credentials`."""

from __future__ import annotations

import asyncio
import functools
import logging

from rocketkube.common import acl, errors
from rocketkube.common.remoting.addresses import split_address
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, RequestHandler
from rocketkube.common.remoting.faults import CLIENT_POLICY, FaultLog
from rocketkube.common.remoting.tls import TlsConfig

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 3.0


class RemotingClient:
    """Sends requests to servers by address; serves their requests with ``handler``."""

    def __init__(
        self,
        handler: RequestHandler | None = None,
        *,
        connect_timeout: float = DEFAULT_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
        tls: TlsConfig | None = None,
        credentials: acl.Credentials | None = None,
    ) -> None:
        """``tls``: connect with TLS (its files are read here: ``OSError`` or
        ``ssl.SSLError`` when one does not load); None: plain TCP. ``credentials``: sign
        every request (a broker with ``aclEnable=true``)."""
        self._handler = handler
        self._sign = (
            None if credentials is None else functools.partial(acl.sign, credentials=credentials)
        )
        self._ssl = tls.context() if tls is not None else None
        self._connect_timeout = connect_timeout
        self.timeout = timeout
        self._connections: dict[str, Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False
        self.faults = FaultLog(CLIENT_POLICY)
        """Malformed traffic from the servers, all connections together."""

    async def connection(self, address: str) -> Connection:
        """The open connection to ``address``, connecting (once) if needed."""
        conn = self._connections.get(address)
        if conn is not None and conn.is_open:
            return conn
        lock = self._locks.setdefault(address, asyncio.Lock())
        async with lock:
            conn = self._connections.get(address)
            if conn is not None and conn.is_open:
                return conn
            if self._closed:
                raise errors.RemotingConnectError("client is closed")
            conn = await self._connect(address)
            self._connections[address] = conn
            return conn

    async def _connect(self, address: str) -> Connection:
        try:
            host, port = split_address(address)
        except ValueError as exc:
            raise errors.RemotingConnectError(str(exc)) from None
        loop = asyncio.get_running_loop()

        def forget(conn: Connection) -> None:
            if self._connections.get(address) is conn:
                del self._connections[address]

        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Connection(
                        self._handler,
                        on_close=forget,
                        fault_log=self.faults,
                        before_request=self._sign,
                    ),
                    host,
                    port,
                    ssl=self._ssl,
                ),
                self._connect_timeout,
            )
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            raise errors.RemotingConnectError(f"cannot connect to {address}: {exc}") from None
        return protocol

    async def invoke(
        self, address: str, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        conn = await self.connection(address)
        return await conn.invoke(request, self.timeout if timeout is None else timeout)

    async def invoke_oneway(self, address: str, request: RemotingCommand) -> None:
        conn = await self.connection(address)
        conn.invoke_oneway(request)

    def close_connection(self, address: str) -> None:
        conn = self._connections.pop(address, None)
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        self._closed = True
        conns = list(self._connections.values())
        self._connections.clear()
        for conn in conns:
            conn.close()
        for conn in conns:
            await conn.closed
