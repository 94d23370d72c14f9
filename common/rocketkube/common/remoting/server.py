"""The asyncio remoting server: accepts connections and hands requests to a handler; its
:attr:`~RemotingServer.faults` account for the malformed traffic of all its connections.
With TLS enabled (:mod:`~rocketkube.common.remoting.tls`) a
:class:`~rocketkube.common.remoting.listener.TlsListener` accepts in place of asyncio's own
server, and tells TLS from plain connections before they reach the protocol."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rocketkube.common.remoting.connection import Connection, RequestHandler
from rocketkube.common.remoting.faults import FaultLog
from rocketkube.common.remoting.listener import TlsListener
from rocketkube.common.remoting.tls import TlsServerConfig

log = logging.getLogger(__name__)

#: RocketMQ's serverChannelMaxIdleTimeSeconds.
DEFAULT_IDLE_TIMEOUT = 120.0


class RemotingServer:
    """Listens on ``host:port``; ``port=0`` picks a free one (see :attr:`port`)."""

    def __init__(
        self,
        handler: RequestHandler,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        on_connect: Callable[[Connection], None] | None = None,
        on_close: Callable[[Connection], None] | None = None,
        faults: FaultLog | None = None,
        tls: TlsServerConfig | None = None,
    ) -> None:
        """``tls``: which connections to accept (plain only when None or disabled); its
        files are read at :meth:`start`."""
        self._handler = handler
        self.faults = faults or FaultLog()
        self._host = host
        self._port = port
        self._idle_timeout = idle_timeout
        self._on_connect = on_connect
        self._on_close = on_close
        self._tls = tls
        self._server: asyncio.Server | TlsListener | None = None
        self.connections: set[Connection] = set()

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self._port
        return int(self._server.sockets[0].getsockname()[1])

    def _make_connection(self) -> Connection:
        return _ServerConnection(self)

    async def start(self) -> None:
        if self._tls is not None and self._tls.enabled:
            listener = TlsListener(
                self._make_connection,
                self._tls,
                self.faults,
                first_byte_timeout=self._idle_timeout,
            )
            await listener.start(self._host, self._port, backlog=1024)
            self._server = listener
        else:
            loop = asyncio.get_running_loop()
            self._server = await loop.create_server(
                self._make_connection, self._host, self._port, reuse_address=True, backlog=1024
            )
        mode = self._tls.mode if self._tls is not None else "disabled"
        log.info("remoting server listening on %s:%d, TLS %s", self._host, self.port, mode)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for conn in list(self.connections):
            conn.close()
        await self._server.wait_closed()
        self._server = None


class _ServerConnection(Connection):
    def __init__(self, server: RemotingServer) -> None:
        super().__init__(
            server._handler, idle_timeout=server._idle_timeout, fault_log=server.faults
        )
        self._owner = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._owner.connections.add(self)
        if self._owner._on_connect is not None:
            self._owner._on_connect(self)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._owner.connections.discard(self)
        if self._owner._on_close is not None:
            self._owner._on_close(self)
