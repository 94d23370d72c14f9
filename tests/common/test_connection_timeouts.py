"""Request timeouts of a client connection: exact per request, without closing it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from waiting import WAIT_SECONDS

from rocketkube.common import errors
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

SLOW = 1001


async def _slow(conn: Connection, req: RemotingCommand) -> RemotingCommand:
    await asyncio.sleep(float(req.ext_fields["delay"]))
    return RemotingCommand.response(remark=req.ext_fields["delay"])


@pytest.fixture
async def conn() -> AsyncIterator[Connection]:
    server = RemotingServer(Dispatcher({SLOW: _slow}), "127.0.0.1", 0)
    await server.start()
    client = RemotingClient()
    yield await client.connection(f"127.0.0.1:{server.port}")
    await client.close()
    await server.stop()


def _slow_request(delay: float) -> RemotingCommand:
    return RemotingCommand.request(SLOW, {"delay": str(delay)})


async def test_timeout_names_the_request_and_keeps_the_connection(conn: Connection) -> None:
    with pytest.raises(errors.RemotingTimeoutError, match=r"request code 1001 within 0\.100s"):
        await conn.invoke(_slow_request(2), 0.1)
    assert conn.is_open
    answer = await asyncio.wait_for(conn.invoke(_slow_request(0), WAIT_SECONDS), WAIT_SECONDS)
    assert answer.remark == "0"


async def test_a_shorter_deadline_after_a_longer_one_fires_first(conn: Connection) -> None:
    long = asyncio.ensure_future(conn.invoke(_slow_request(0.5), WAIT_SECONDS))
    short = asyncio.ensure_future(conn.invoke(_slow_request(5), 0.1))
    with pytest.raises(errors.RemotingTimeoutError):
        await asyncio.wait_for(short, WAIT_SECONDS)
    assert not long.done()
    assert (await asyncio.wait_for(long, WAIT_SECONDS)).remark == "0.5"


async def test_a_late_answer_is_dropped(conn: Connection) -> None:
    with pytest.raises(errors.RemotingTimeoutError):
        await conn.invoke(_slow_request(0.2), 0.05)
    await asyncio.sleep(0.3)  # the answer arrives for a request nobody waits for
    assert (await conn.invoke(_slow_request(0), WAIT_SECONDS)).remark == "0"


async def test_losing_the_connection_fails_pending_requests(conn: Connection) -> None:
    pending = asyncio.ensure_future(conn.invoke(_slow_request(5), WAIT_SECONDS))
    await asyncio.sleep(0)
    conn.abort()
    with pytest.raises(errors.ConnectionClosedError):
        await asyncio.wait_for(pending, WAIT_SECONDS)


async def test_a_cancelled_request_leaves_nothing_pending(conn: Connection) -> None:
    pending = asyncio.ensure_future(conn.invoke(_slow_request(5), 0.2))
    await asyncio.sleep(0.05)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert not conn._pending
    await asyncio.sleep(0.3)  # the sweep at the cancelled request's deadline finds nothing
    assert conn.is_open


async def test_invoke_future_gets_the_answer_or_the_timeout(conn: Connection) -> None:
    answer = await asyncio.wait_for(conn.invoke_future(_slow_request(0), 5), WAIT_SECONDS)
    assert answer.remark == "0"
    with pytest.raises(errors.RemotingTimeoutError, match=r"request code 1001 within 0\.100s"):
        await asyncio.wait_for(conn.invoke_future(_slow_request(2), 0.1), WAIT_SECONDS)
    assert not conn._pending
    assert conn.is_open


async def test_invoke_future_on_a_closed_connection_raises_at_once(conn: Connection) -> None:
    conn.abort()
    await asyncio.wait_for(conn.closed, WAIT_SECONDS)
    with pytest.raises(errors.ConnectionClosedError):
        conn.invoke_future(_slow_request(0), 5)
    assert not conn._pending
