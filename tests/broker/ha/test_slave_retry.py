"""How often a slave asks for its master: the first retry soon after losing it, then a
fixed ``haReconnectInterval``, never a growing back-off (RocketMQ's HAClient waits 5 s).

The waits go through a recording sleep, so the schedule is asserted without waiting it
out; the connections are real (a closed port, a server that drops the slave)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

from waiting import WAIT_SECONDS

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.ha import slave
from rocketkube.broker.settings import BrokerSettings


class RecordingSleep:
    """Records each wait and returns at once; parks from the ``stop_at``-th wait on."""

    def __init__(self, stop_at: int) -> None:
        self.delays: list[float] = []
        self.stop_at = stop_at
        self.done = asyncio.Event()

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        if len(self.delays) >= self.stop_at:
            self.done.set()
            await asyncio.Event().wait()  # until the client is stopped
        await asyncio.sleep(0)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def run_until_recorded(
    context: BrokerContext, settings: BrokerSettings, sleep: RecordingSleep,
    on_lost: Callable[[], None] = lambda: None,
) -> None:  # fmt: skip
    client = slave.HAClient(context.store, settings, lambda: None, on_lost, sleep)
    client.start()
    try:
        await asyncio.wait_for(sleep.done.wait(), WAIT_SECONDS)
    finally:
        await client.stop()


def slave_settings(settings: BrokerSettings, port: int) -> BrokerSettings:
    return settings.model_copy(update={"broker_id": 1, "ha_master_address": f"127.0.0.1:{port}"})


async def test_an_absent_master_is_asked_for_every_interval(
    broker_settings: BrokerSettings, context: BrokerContext
) -> None:
    settings = slave_settings(broker_settings, closed_port())
    assert settings.ha_reconnect_interval == 5_000  # RocketMQ's HAClient's 5 s
    sleep = RecordingSleep(stop_at=8)
    await run_until_recorded(context, settings, sleep)
    assert sleep.delays == [0.0] + [5.0] * 7  # the first attempt at once, then no back-off


async def test_a_lost_master_is_retried_soon_then_every_interval(
    broker_settings: BrokerSettings, context: BrokerContext
) -> None:
    async def drop_and_go(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.close()  # the master goes away: later connections are refused
        writer.close()

    server = await asyncio.start_server(drop_and_go, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings = slave_settings(broker_settings, port).model_copy(
        update={"ha_reconnect_interval": 3_000}
    )
    lost: list[bool] = []
    sleep = RecordingSleep(stop_at=5)
    try:
        await run_until_recorded(context, settings, sleep, lambda: lost.append(True))
    finally:
        server.close()
        await server.wait_closed()
    assert sleep.delays == [0.0, slave.FIRST_RETRY_SECONDS, 3.0, 3.0, 3.0]
    assert lost == [True]  # a registration was asked for, to learn where the master went
