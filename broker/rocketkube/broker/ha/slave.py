"""The slave's side of replication: one connection to the master's HA port, writing what
it streams into this broker's commit log at the same offsets.

The master's HA address is ``haMasterAddress`` when set, else the one the name server
gave at registration (the master registers it under the same brokerName). The slave
reports its commit log end when it connects (where to start), after every chunk it wrote
and on every heartbeat. A chunk that does not continue this log (the master's offset is
not this log's end) drops the connection, as RocketMQ does; so does silence longer than
``haHousekeepingInterval``. Losing the master asks for a registration at once
(``on_lost``), whose answer tells where the master is now. The connection is TLS when
the broker's own connections are (``tls.enable``, or an enforcing ``tls.server.mode``).

The slave retries :data:`FIRST_RETRY_SECONDS` after losing its master, then every
``haReconnectInterval`` (5 s) while the master stays away, as RocketMQ's HAClient does,
each time to the master address it knows then. It never backs off further: a SYNC_MASTER
answers SLAVE_NOT_AVAILABLE until a slave is back, and each such answer a client retries
stores one more copy of its message. Until it knows any master address it looks for one
every :data:`FIRST_RETRY_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from rocketkube.broker.ha import wire
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.store import MessageStore, ReplicaMismatchError
from rocketkube.common import errors
from rocketkube.common.message.ids import split_host_port
from rocketkube.common.tasks import cancel_and_wait

__all__ = ["FIRST_RETRY_SECONDS", "HAClient"]

_log = logging.getLogger(__name__)

#: The wait before the first retry of a master just lost: short, since a restarted master
#: may be back at once, yet not none, so a master that accepts and drops is not hammered.
FIRST_RETRY_SECONDS = 1.0

Sleep = Callable[[float], Awaitable[None]]


class HAClient:
    """Keeps a slave's commit log a copy of its master's."""

    def __init__(self, store: MessageStore, settings: BrokerSettings,
                 master_ha_addr: Callable[[], str | None],
                 on_lost: Callable[[], None] = lambda: None,
                 sleep: Sleep = asyncio.sleep) -> None:  # fmt: skip
        self._store = store
        self._on_lost = on_lost
        self._sleep = sleep
        self._configured = settings.ha_master_address
        tls = settings.tls_client()
        self._ssl = tls.context() if tls is not None else None
        self._learnt = master_ha_addr
        self._housekeeping = settings.ha_housekeeping_interval / 1000
        self._max_body = settings.mapped_file_size_commit_log
        self._interval = settings.ha_reconnect_interval / 1000
        self._first_retry = min(FIRST_RETRY_SECONDS, self._interval)
        self._task: asyncio.Task[None] | None = None
        self.connected_to: str | None = None
        """The master HA address of the running session, if any."""

    def master_address(self) -> str | None:
        return self._configured or self._learnt()

    def gauges(self) -> list[tuple[str, str, float]]:
        """Replication gauges for /metrics."""
        connected = 1.0 if self.connected_to else 0.0
        return [("ha_master_connected", "1 while replicating from the master", connected)]

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ha-client")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        failing = False  # logged once per outage, not at every attempt
        last: str | None = None
        delay = 0.0
        while True:
            await self._sleep(delay)
            address = self.master_address()
            if not address:  # not learnt yet: a registration answer gives it, look soon
                delay = self._first_retry
                continue
            delay = self._interval
            if address != last:
                failing, last = False, address
            try:
                await self._session(address)
            except (OSError, EOFError, TimeoutError, errors.RocketKubeError) as exc:
                if self.connected_to:  # it was connected: a new outage
                    delay, failing = self._first_retry, False
                    self._on_lost()  # the master may come back elsewhere: ask around
                if not failing:
                    _log.warning("replication from master %s stopped: %s; retrying every "
                                 "%.1f s", address, exc, self._interval)  # fmt: skip
                failing = True
            finally:
                self.connected_to = None

    async def _session(self, address: str) -> None:
        host, port = split_host_port(address)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=self._ssl),
                                                self._housekeeping)  # fmt: skip
        try:
            self.connected_to = address
            store = self._store
            _log.info("replicating from master %s, from commit log offset %d", address,
                      store.commit_log_max_offset)  # fmt: skip
            writer.write(wire.OFFSET.pack(store.commit_log_max_offset))
            await writer.drain()
            while True:
                header = await asyncio.wait_for(
                    reader.readexactly(wire.TRANSFER_HEADER.size), self._housekeeping
                )
                offset, size = wire.transfer_header(header, self._max_body)
                body = await reader.readexactly(size) if size else b""
                mine = store.commit_log_max_offset
                if mine and offset != mine:
                    raise ReplicaMismatchError(
                        f"master sends offset {offset}, this commit log ends at {mine}"
                    )
                end = store.append_replica(offset, body) if size else mine
                writer.write(wire.OFFSET.pack(end))
                await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
