"""The slave's side of replication: one connection to the master's HA port, writing what
it streams into this broker's commit log at the same offsets.

The master's HA address is ``haMasterAddress`` when set, else the one the name server
gave at registration (the master registers it under the same brokerName). The slave
reports its commit log end when it connects (where to start), after every chunk it wrote
and on every heartbeat. A chunk that does not continue this log (the master's offset is
not this log's end) drops the connection, as RocketMQ does; so does silence longer than
``haHousekeepingInterval``. It reconnects after ``RECONNECT_SECONDS``, doubling the wait
up to ``MAX_RECONNECT_SECONDS`` while the master stays away; losing the master also asks
for a registration at once (``on_lost``), whose answer tells where the master is now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from rocketkube.broker.ha import wire
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.store import MessageStore, ReplicaMismatchError
from rocketkube.common import errors
from rocketkube.common.message.ids import split_host_port
from rocketkube.common.tasks import cancel_and_wait

__all__ = ["MAX_RECONNECT_SECONDS", "RECONNECT_SECONDS", "HAClient"]

_log = logging.getLogger(__name__)

RECONNECT_SECONDS = 1.0
MAX_RECONNECT_SECONDS = 30.0


class HAClient:
    """Keeps a slave's commit log a copy of its master's."""

    def __init__(self, store: MessageStore, settings: BrokerSettings,
                 master_ha_addr: Callable[[], str | None],
                 on_lost: Callable[[], None] = lambda: None) -> None:  # fmt: skip
        self._store = store
        self._on_lost = on_lost
        self._configured = settings.ha_master_address
        self._learnt = master_ha_addr
        self._housekeeping = settings.ha_housekeeping_interval / 1000
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
        delay = RECONNECT_SECONDS
        failing = False  # logged once per outage, not at every attempt
        last: str | None = None
        while True:
            address = self.master_address()
            if address != last:  # a new master address: try it at once
                delay, failing, last = RECONNECT_SECONDS, False, address
            if address:
                try:
                    await self._session(address)
                except (OSError, EOFError, TimeoutError, errors.RocketKubeError) as exc:
                    if self.connected_to:  # it was connected: a new outage
                        delay, failing = RECONNECT_SECONDS, False
                        self._on_lost()  # the master may come back elsewhere: ask around
                    if not failing:
                        _log.warning("replication from master %s stopped: %s; retrying every "
                                     "%.0f-%.0f s", address, exc, RECONNECT_SECONDS,
                                     MAX_RECONNECT_SECONDS)  # fmt: skip
                    failing = True
                finally:
                    self.connected_to = None
            await asyncio.sleep(delay)
            delay = min(2 * delay, MAX_RECONNECT_SECONDS)

    async def _session(self, address: str) -> None:
        host, port = split_host_port(address)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
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
                offset, size = wire.TRANSFER_HEADER.unpack(header)
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
