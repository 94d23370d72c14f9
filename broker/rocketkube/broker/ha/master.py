"""The master's side of replication: a server on ``haListenPort`` streaming the commit log
to each connected slave, and the wait of SYNC_MASTER sends for a slave's acknowledgement.

Each slave connection runs two tasks: one reads the slave's offset reports (the first is
where to start; each raises ``acked``, the highest offset a slave has written, but never
past what was sent to it), one sends commit log chunks of at most ``haTransferBatchSize``
bytes, woken by every append (not by polling), and a heartbeat header after
``haSendHeartbeatInterval`` of idleness. A connection that sends nothing for
``haHousekeepingInterval`` is closed. The HA port accepts TLS and plain connections as
the broker's ``tls.server.mode`` says, like the remoting port
(:class:`~rocketkube.common.remoting.listener.TlsListener`).

SYNC_MASTER waits (:meth:`HAService.when_acked`) are kept in arrival order and answered
by the acknowledgements, one timer covering the oldest deadline: no task per send.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable

from rocketkube.broker.ha import wire
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.store import MessageStore
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.faults import FaultLog
from rocketkube.common.remoting.listener import TlsListener

__all__ = ["HAService", "start_problem"]

_log = logging.getLogger(__name__)

#: Answers to a SYNC_MASTER wait: ``done(code)`` with one of these response codes.
AckCallback = Callable[[int], None]


class _SlaveLink:
    """One connected slave."""

    def __init__(self, service: HAService, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:  # fmt: skip
        self._service = service
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.reported = -1
        """The slave's last reported commit log end (-1: nothing reported yet)."""
        self.sent = -1
        """Where the stream to the slave has reached; -1 until it starts, and for ever
        when the slave's start is not in this master's log (it is not a copy)."""
        self.wake = asyncio.Event()
        self._started = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def close(self) -> None:
        """End :meth:`serve` (which then closes the connection)."""
        for task in self._tasks:
            task.cancel()

    async def serve(self) -> None:
        tasks = self._tasks = [
            asyncio.create_task(self._read(), name=f"ha-read {self.peer}"),
            asyncio.create_task(self._transfer(), name=f"ha-transfer {self.peer}"),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    _log.info("slave %s disconnected: %s", self.peer, task.exception())
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()

    async def _read(self) -> None:
        buffer = bytearray()
        while True:
            try:
                data = await asyncio.wait_for(self._reader.read(4096), self._service.housekeeping)
            except TimeoutError:
                _log.warning("slave %s sent nothing for %.0f s: closing", self.peer,
                             self._service.housekeeping)  # fmt: skip
                return
            if not data:
                _log.info("slave %s closed the replication connection", self.peer)
                return
            buffer += data
            offset = wire.last_offset(buffer)
            if offset is None:
                continue
            self.reported = offset
            if not self._started.is_set():
                self._started.set()
            if self.sent >= 0:  # only what was sent counts, whatever a slave claims
                self._service.acknowledge(min(offset, self.sent))

    async def _transfer(self) -> None:
        await self._started.wait()
        service = self._service
        store = service.store
        position = wire.transfer_start(self.reported, store.commit_log_max_offset,
                                       service.segment_size)  # fmt: skip
        problem = start_problem(position, store.commit_log_min_offset,
                                store.commit_log_max_offset)  # fmt: skip
        if problem is None:
            self.sent = position
            _log.info("slave %s replicating from commit log offset %d", self.peer, position)
        else:
            _log.error("slave %s: %s", self.peer, problem)
        while True:
            self.wake.clear()
            chunk = store.read_commit_log(position, service.batch_size)
            if chunk is not None:
                data = bytes(chunk)
                self._writer.write(wire.TRANSFER_HEADER.pack(position, len(data)) + data)
                position += len(data)
                if self.sent >= 0:
                    self.sent = position
                await self._writer.drain()
                continue
            try:
                await asyncio.wait_for(self.wake.wait(), service.heartbeat)
            except TimeoutError:
                self._writer.write(wire.TRANSFER_HEADER.pack(position, 0))
                await self._writer.drain()


def start_problem(position: int, low: int, high: int) -> str | None:
    """Why a slave cannot replicate from ``position`` of a log holding ``low..high``."""
    if position < low:
        return (f"asks for commit log offset {position}, which this master no longer has (it "
                f"keeps {low}..{high}): the slave fell behind retention and cannot catch up; "
                "stop it, empty its store and start it again to copy this master from its last "
                "segment")  # fmt: skip
    if position > high:
        return (
            f"asks for commit log offset {position}, past this master's {low}..{high}: it "
            "is not a copy of this master, and its acknowledgements do not count"
        )
    return None


class HAService:
    """Serves slaves on the HA port and tracks what they have acknowledged."""

    def __init__(self, store: MessageStore, settings: BrokerSettings) -> None:
        self.store = store
        self._host = settings.bind_address
        self._port = settings.effective_ha_port
        self.batch_size = settings.ha_transfer_batch_size
        self.heartbeat = settings.ha_send_heartbeat_interval / 1000
        self.housekeeping = settings.ha_housekeeping_interval / 1000
        self.segment_size = settings.mapped_file_size_commit_log
        self._fallbehind_max = settings.ha_slave_fallbehind_max
        self._timeout = settings.slave_timeout / 1000
        self.acked = 0
        """The highest commit log end a slave has acknowledged (push2SlaveMaxOffset)."""
        self._links: dict[_SlaveLink, asyncio.Task[None]] = {}
        self._waiters: collections.deque[tuple[int, float, AckCallback]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None
        self._tls = settings.tls_server()
        self.faults = FaultLog()
        """Connections refused for TLS (the only faults the HA port counts)."""
        self._server: asyncio.Server | TlsListener | None = None
        store.add_append_listener(self._appended)

    @property
    def port(self) -> int:
        """The bound HA port."""
        assert self._server is not None, "not started"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def slaves(self) -> list[tuple[str, int]]:
        """``(peer, reported commit log end)`` of each connected slave."""
        return [(link.peer, link.reported) for link in self._links]

    def gauges(self) -> list[tuple[str, str, float]]:
        """Replication gauges for /metrics."""
        behind = max(0, self.store.commit_log_max_offset - self.acked)
        return [
            ("ha_slaves", "Slaves connected for replication", float(len(self._links))),
            ("ha_slave_lag_bytes", "Commit log bytes no slave has acknowledged", float(behind)),
            ("ha_sync_waiting", "SYNC_MASTER sends waiting for a slave", float(len(self._waiters))),
        ]

    async def start(self) -> None:
        if not self._tls.enabled:
            self._server = await asyncio.start_server(self._serve, self._host, self._port)
            return
        listener = TlsListener(
            self._stream_protocol, self._tls, self.faults, first_byte_timeout=self.housekeeping
        )
        await listener.start(self._host, self._port)
        self._server = listener

    def _stream_protocol(self) -> asyncio.StreamReaderProtocol:
        """What :func:`asyncio.start_server` makes for each connection."""
        return asyncio.StreamReaderProtocol(asyncio.StreamReader(), self._serve)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        serving = list(self._links.values())
        for link in self._links:
            link.close()
        await asyncio.gather(*serving, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        self._fail_waiters()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = _SlaveLink(self, reader, writer)
        _log.info("slave %s connected for replication", link.peer)
        task = asyncio.current_task()
        assert task is not None
        self._links[link] = task
        try:
            await link.serve()
        finally:
            del self._links[link]

    def _appended(self, end: int) -> None:
        for link in self._links:
            link.wake.set()

    # -- SYNC_MASTER -----------------------------------------------------------------------

    def slave_ok(self) -> bool:
        """A slave copying this master is connected, and acknowledged less than
        ``haSlaveFallbehindMax`` behind."""
        if not any(link.sent >= 0 for link in self._links):
            return False
        return self.store.commit_log_max_offset - self.acked < self._fallbehind_max

    def when_acked(self, offset: int, done: AckCallback) -> None:
        """Call ``done(code)`` once a slave has written up to ``offset``: SUCCESS, or
        FLUSH_SLAVE_TIMEOUT after ``slaveTimeout``, or SLAVE_NOT_AVAILABLE at once when
        no usable slave is connected."""
        if offset <= self.acked:
            done(ResponseCode.SUCCESS)
            return
        if not self.slave_ok():
            done(ResponseCode.SLAVE_NOT_AVAILABLE)
            return
        loop = asyncio.get_running_loop()
        self._waiters.append((offset, loop.time() + self._timeout, done))
        if self._timer is None:
            self._timer = loop.call_at(self._waiters[0][1], self._expire)

    def acknowledge(self, offset: int) -> None:
        """A slave reported ``offset``: answer the waits it covers, oldest first."""
        if offset <= self.acked:
            return
        self.acked = offset
        waiters = self._waiters
        while waiters and waiters[0][0] <= offset:
            _call(waiters.popleft()[2], ResponseCode.SUCCESS)
        if not waiters and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        """Answer the waits past their deadline (one held back behind an older, larger
        wait may have been covered meanwhile)."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        waiters = self._waiters
        while waiters and waiters[0][1] <= now:
            offset, _deadline, done = waiters.popleft()
            covered = offset <= self.acked
            _call(done, ResponseCode.SUCCESS if covered else ResponseCode.FLUSH_SLAVE_TIMEOUT)
        if waiters:
            self._timer = loop.call_at(waiters[0][1], self._expire)

    def _fail_waiters(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._waiters:
            _call(self._waiters.popleft()[2], ResponseCode.SLAVE_NOT_AVAILABLE)


def _call(done: AckCallback, code: int) -> None:
    try:
        done(code)
    except Exception:
        _log.exception("answering a send that waited for a slave failed")
