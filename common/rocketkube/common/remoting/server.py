"""The asyncio remoting server: accepts connections and hands requests to a handler; its
:attr:`~RemotingServer.faults` account for the malformed traffic of all its connections.
With TLS enabled (:mod:`~rocketkube.common.remoting.tls`) a
:class:`~rocketkube.common.remoting.listener.TlsListener` accepts in place of asyncio's own
server, and tells TLS from plain connections before they reach the protocol.

What one server takes of its peers is bounded by its :class:`ServerLimits` (documented in
docs/reliability.md, *Limits*): a frame's length, the connections it holds, the requests
in flight on each, and the time a connection may stay idle or leave a frame incomplete."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import typing
from collections.abc import Callable

from rocketkube.common.remoting import faults as faults_
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.connection import Connection, RequestHandler
from rocketkube.common.remoting.faults import FaultLog
from rocketkube.common.remoting.listener import TlsListener
from rocketkube.common.remoting.tls import TlsServerConfig

log = logging.getLogger(__name__)

#: RocketMQ's serverChannelMaxIdleTimeSeconds.
DEFAULT_IDLE_TIMEOUT = 120.0


@dataclasses.dataclass(frozen=True, slots=True)
class ServerLimits:
    """What a server takes of its peers, at most (the servers' settings name each)."""

    max_frame_length: int = frame.MAX_FRAME_LENGTH
    """``com.rocketmq.remoting.frameMaxLength``: a frame announcing more is refused, its
    connection closed, once its 4 length bytes are read (nothing of it is buffered)."""
    max_connections: int = 10_000
    """``serverMaxConnections``: connections past this many are closed at accept."""
    max_requests_in_flight: int = 10_000
    """``serverChannelMaxRequestsInFlight``: requests of one connection waiting for their
    answers (a flush, a long poll, a reply from elsewhere), at most; more are answered
    SYSTEM_BUSY at once."""


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
        limits: ServerLimits | None = None,
    ) -> None:
        """``tls``: which connections to accept (plain only when None or disabled); its
        files are read at :meth:`start`. ``idle_timeout``: seconds a connection may stay
        silent, or leave a frame incomplete, before it is closed."""
        self._handler = handler
        self.faults = faults or FaultLog()
        self._host = host
        self._port = port
        self._idle_timeout = idle_timeout
        self.limits = limits or ServerLimits()
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
        limits = server.limits
        super().__init__(
            server._handler,
            idle_timeout=server._idle_timeout,
            fault_log=server.faults,
            max_frame_length=limits.max_frame_length,
            max_requests_in_flight=limits.max_requests_in_flight,
            backpressure=True,
        )
        self._owner = server
        self._refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        owner = self._owner
        if len(owner.connections) >= owner.limits.max_connections:
            self._refused = True
            peer = transport.get_extra_info("peername")
            owner.faults.refuse(
                faults_.CONNECTIONS,
                f"closing a new connection from {peer}: the server holds "
                f"{len(owner.connections)} connections, serverMaxConnections",
            )
            typing.cast(asyncio.Transport, transport).abort()
            return
        super().connection_made(transport)
        owner.connections.add(self)
        if owner._on_connect is not None:
            owner._on_connect(self)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._refused:
            return
        self._owner.connections.discard(self)
        if self._owner._on_close is not None:
            self._owner._on_close(self)
