"""A listening port that serves TLS and plain connections, as its
:class:`~rocketkube.common.remoting.tls.TlsMode` allows, told apart by the first byte each
client sends (RocketMQ's ``NettyRemotingServer.HandshakeHandler`` does the same).

Each accepted socket is peeked at (``MSG_PEEK``: the byte stays in the socket) until its
first byte arrives; then it is handed to the event loop with ``connect_accepted_socket``,
with the server's SSL context when that byte opens a TLS handshake record (0x16), so the
protocol made by the factory sees the decrypted stream and never knows which it got. The
peek comes first because asyncio cannot give back bytes it has read: ``start_tls`` on a
transport that read the ClientHello would wait for it forever. No remoting frame starts
with 0x16 (its first byte is the high byte of a length under 16 MiB), nor does a slave's
first HA report (the high byte of a commit log offset).

Refused connections are closed unanswered: a plain one when TLS is enforced, a TLS one
whose handshake fails (no client certificate where one is required, one signed by
another CA, a client that does not trust ours). Each is counted as a ``tls`` fault and
charged to its host (:mod:`~rocketkube.common.remoting.faults`); a warning names the host
at most once per ``warn_interval``, however many connections it opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Coroutine
from typing import Any, Final

from rocketkube.common.remoting import faults
from rocketkube.common.remoting.tls import HANDSHAKE_RECORD, TlsMode, TlsServerConfig

__all__ = ["TlsListener"]

log = logging.getLogger(__name__)

ACCEPT_RETRY_SECONDS: Final = 1.0
"""Pause in accepting after the system refused an accept (no file descriptors left), as
asyncio's own servers pause."""

HANDSHAKE_SECONDS: Final = 10.0
"""A TLS client has this long to finish its handshake."""


class TlsListener:
    """Listens on ``host:port`` for ``factory``'s protocol, as ``config`` allows.

    Quacks like the :class:`asyncio.Server` it stands in for: :attr:`sockets`,
    :meth:`close`, :meth:`wait_closed`. ``first_byte_timeout``: seconds a client may stay
    silent after connecting before it is closed.
    """

    def __init__(
        self,
        factory: Callable[[], asyncio.BaseProtocol],
        config: TlsServerConfig,
        fault_log: faults.FaultLog,
        *,
        first_byte_timeout: float,
    ) -> None:
        if not config.enabled:
            raise ValueError("a TLS listener needs TLS enabled")
        self._factory = factory
        self._enforcing = config.mode is TlsMode.ENFORCING
        self._context = config.context()
        self._faults = fault_log
        self._first_byte_timeout = first_byte_timeout
        self.sockets: list[socket.socket] = []
        self._tasks: set[asyncio.Task[None]] = set()
        # host -> its warnings (rate-limited per host, not per connection)
        self._hosts: dict[str, faults.PeerFaults] = {}

    async def start(self, host: str, port: int, backlog: int = 1024) -> None:
        """Bind every address ``host`` resolves to (all interfaces for ``""``), on one
        port (``port=0``: the first bind picks it)."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        try:
            for family, address in dict.fromkeys((info[0], str(info[4][0])) for info in infos):
                listening = socket.create_server((address, port), family=family, backlog=backlog)
                self.sockets.append(listening)
                listening.setblocking(False)
                port = port or int(listening.getsockname()[1])
                self._spawn(self._accept(listening))
        except OSError:  # one address would not bind: none stays bound
            self.close()
            raise

    def close(self) -> None:
        """Stop listening; connections being told apart are dropped, served ones stay."""
        for task in list(self._tasks):
            task.cancel()
        for listening in self.sockets:
            listening.close()

    async def wait_closed(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                accepted, _ = await loop.sock_accept(listening)
            except OSError as exc:
                log.error("cannot accept on %s: %s", listening.getsockname(), exc)
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            self._spawn(self._admit(accepted))

    async def _admit(self, accepted: socket.socket) -> None:
        """Hand ``accepted`` over, with TLS or without, or close it. Once handed, the
        socket is its transport's to close, whether the handshake succeeds or not."""
        accepted.setblocking(False)
        peer = _peer_of(accepted)
        try:
            first = await asyncio.wait_for(_first_byte(accepted), self._first_byte_timeout)
        except (OSError, TimeoutError):
            first = b""  # gone, or silent past the idle timeout
        except asyncio.CancelledError:  # the listener closes
            accepted.close()
            raise
        tls = first[:1] == bytes([HANDSHAKE_RECORD])
        if not first or (self._enforcing and not tls):
            accepted.close()
            if first:
                self._refuse(peer, "a plain connection where TLS is enforced")
            return
        loop = asyncio.get_running_loop()
        try:
            if tls:
                await loop.connect_accepted_socket(
                    self._factory,
                    accepted,
                    ssl=self._context,
                    ssl_handshake_timeout=HANDSHAKE_SECONDS,
                )
            else:
                await loop.connect_accepted_socket(self._factory, accepted)
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            if tls and not isinstance(exc, ConnectionResetError | BrokenPipeError):
                self._refuse(peer, f"TLS handshake failed: {exc}")

    def _refuse(self, peer: object, reason: str) -> None:
        """Count and (rate-limited) tell a connection closed unanswered."""
        fault_log = self._faults
        fault_log.counts[faults.TLS] += 1
        host = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        fault_log.charge_host(host)
        told = self._hosts.pop(host, None)  # re-inserted: the dict stays oldest first
        if told is None:
            if len(self._hosts) >= fault_log.policy.hosts_kept:
                oldest = next(iter(self._hosts))
                self._hosts.pop(oldest).close()
            told = faults.PeerFaults(fault_log, host, host)
        self._hosts[host] = told
        told.warn(faults.TLS, f"closing connections from {host}: {reason}", fault_log.clock())


async def _first_byte(sock: socket.socket) -> bytes:
    """The first byte ``sock`` received, left in it; ``b""`` when the peer closed."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            return sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            pass
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(sock.fileno(), _wake, readable)
        try:
            await readable
        finally:
            loop.remove_reader(sock.fileno())


def _wake(readable: asyncio.Future[None]) -> None:
    if not readable.done():
        readable.set_result(None)


def _peer_of(sock: socket.socket) -> object:
    with contextlib.suppress(OSError):
        return sock.getpeername()
    return None
