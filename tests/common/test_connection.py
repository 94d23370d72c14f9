"""Remoting server and client over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest

from rocketkube.common import errors
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import ResponseCode, SerializeType
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

ECHO, SLOW, FAIL, PUSH, ONEWAY, TEMPLATED = 1000, 1001, 1002, 1003, 1004, 1005
STORED = frame.ResponseTemplate(
    ResponseCode.SUCCESS, {"region": 'a "quoted" 100% value'}, ("msgId", "queueOffset")
)


class Recorder:
    def __init__(self) -> None:
        self.oneway: list[RemotingCommand] = []
        self.observed: list[tuple[int, int | None]] = []
        self.connections: list[Connection] = []

    def echo(self, conn: Connection, req: RemotingCommand) -> Reply:
        return RemotingCommand.response(ext_fields=dict(req.ext_fields), body=bytes(req.body))

    async def slow(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(float(req.ext_fields["delay"]))
        return RemotingCommand.response(remark=req.ext_fields["delay"])

    def fail(self, conn: Connection, req: RemotingCommand) -> Reply:
        raise RuntimeError("boom")

    def oneway_(self, conn: Connection, req: RemotingCommand) -> Reply:
        self.oneway.append(req)
        return RemotingCommand.response()

    async def push(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        answer = await conn.invoke(RemotingCommand.request(ECHO, {"from": "server"}), 1.0)
        return RemotingCommand.response(remark=answer.ext_fields["from"])

    def templated(self, conn: Connection, req: RemotingCommand) -> Reply:
        return STORED.response(req.ext_fields["id"], str(req.opaque))

    def observe(self, code: int, result: int | None, seconds: float, count: int) -> None:
        self.observed += [(code, result)] * count


@pytest.fixture
async def served() -> AsyncIterator[tuple[RemotingServer, Recorder]]:
    rec = Recorder()
    table = {ECHO: rec.echo, SLOW: rec.slow, FAIL: rec.fail, PUSH: rec.push, ONEWAY: rec.oneway_}
    table[TEMPLATED] = rec.templated
    server = RemotingServer(
        Dispatcher(table, observer=rec.observe),
        "127.0.0.1",
        0,
        idle_timeout=60,
        on_connect=rec.connections.append,
    )
    await server.start()
    yield server, rec
    await server.stop()


async def test_request_response_and_unknown_code(served: tuple[RemotingServer, Recorder]) -> None:
    server, rec = served
    client = RemotingClient()
    addr = f"127.0.0.1:{server.port}"
    resp = await client.invoke(addr, RemotingCommand.request(ECHO, {"a": "1"}, b"body"))
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields == {"a": "1"}
    assert bytes(resp.body) == b"body"
    unknown = await client.invoke(addr, RemotingCommand.request(4242))
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert unknown.remark == " request type 4242 not supported"
    assert (ECHO, 0) in rec.observed
    await client.close()


@pytest.mark.parametrize("serialize", list(SerializeType))
async def test_templated_responses_answer_in_the_request_serialization(
    served: tuple[RemotingServer, Recorder], serialize: SerializeType
) -> None:
    server, rec = served
    client = RemotingClient()
    addr = f"127.0.0.1:{server.port}"
    requests = [RemotingCommand.request(TEMPLATED, {"id": f"{i:032X}"}) for i in range(20)]
    for request in requests:
        request.serialize_type = serialize
    answers = await asyncio.gather(*(client.invoke(addr, r, timeout=30) for r in requests))
    for request, answer in zip(requests, answers, strict=True):
        assert answer.serialize_type is serialize
        assert answer.code == ResponseCode.SUCCESS
        assert answer.opaque == request.opaque
        assert answer.ext_fields == {
            "region": 'a "quoted" 100% value',
            "msgId": request.ext_fields["id"],
            "queueOffset": str(request.opaque),
        }
    assert rec.observed.count((TEMPLATED, ResponseCode.SUCCESS)) == len(requests)
    await client.close()


async def test_processor_exception_answers_system_error(
    served: tuple[RemotingServer, Recorder],
) -> None:
    server, _ = served
    client = RemotingClient()
    resp = await client.invoke(f"127.0.0.1:{server.port}", RemotingCommand.request(FAIL))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "boom" in (resp.remark or "")
    await client.close()


async def test_slow_request_does_not_block_pipelined_ones(
    served: tuple[RemotingServer, Recorder],
) -> None:
    server, _ = served
    client = RemotingClient()
    addr = f"127.0.0.1:{server.port}"
    # Generous timeouts: a host stalling for seconds must not time the 1.5 s answer out.
    slow_request = RemotingCommand.request(SLOW, {"delay": "1.5"})
    slow = asyncio.create_task(client.invoke(addr, slow_request, timeout=30))
    await asyncio.sleep(0.05)
    fast = await client.invoke(addr, RemotingCommand.request(SLOW, {"delay": "0"}), timeout=30)
    assert fast.remark == "0"
    assert not slow.done()
    assert (await slow).remark == "1.5"
    await client.close()


async def test_oneway_gets_no_response(served: tuple[RemotingServer, Recorder]) -> None:
    server, rec = served
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(frame.encode_bytes(RemotingCommand.request(ONEWAY, oneway=True)))
    writer.write(frame.encode_bytes(RemotingCommand.request(ECHO, {"x": "y"})))
    await writer.drain()
    (reply,) = frame.FrameDecoder().feed(await read_frame(reader))
    assert reply.ext_fields == {"x": "y"}  # the first answer is the echo: no oneway reply
    assert len(rec.oneway) == 1
    writer.close()


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    head = await asyncio.wait_for(reader.readexactly(4), 2)
    (length,) = struct.unpack(">i", head)
    return head + await reader.readexactly(length)


async def test_malformed_frame_closes_only_that_connection(
    served: tuple[RemotingServer, Recorder],
) -> None:
    server, _ = served
    good = RemotingClient()
    addr = f"127.0.0.1:{server.port}"
    await good.invoke(addr, RemotingCommand.request(ECHO))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(struct.pack(">ii", 12, 8) + b"not json")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the server
    writer.close()
    resp = await good.invoke(addr, RemotingCommand.request(ECHO, {"still": "ok"}))
    assert resp.ext_fields == {"still": "ok"}
    await good.close()


async def test_idle_connection_is_closed() -> None:
    server = RemotingServer(Dispatcher({}), "127.0.0.1", 0, idle_timeout=0.3)
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    await server.stop()


async def test_server_initiated_request_on_client_connection(
    served: tuple[RemotingServer, Recorder],
) -> None:
    server, _ = served
    client_side = Dispatcher(
        {ECHO: lambda conn, req: RemotingCommand.response(ext_fields={"from": "client"})}
    )
    client = RemotingClient(client_side)
    resp = await client.invoke(f"127.0.0.1:{server.port}", RemotingCommand.request(PUSH))
    assert resp.remark == "client"
    await client.close()


async def test_timeout_then_reconnect_after_server_restart() -> None:
    rec = Recorder()
    server = RemotingServer(Dispatcher({SLOW: rec.slow, ECHO: rec.echo}), "127.0.0.1", 0)
    await server.start()
    port = server.port
    addr = f"127.0.0.1:{port}"
    client = RemotingClient(timeout=0.2)
    with pytest.raises(errors.RemotingTimeoutError):
        await client.invoke(addr, RemotingCommand.request(SLOW, {"delay": "1"}))
    await server.stop()
    with pytest.raises(errors.RemotingError):
        await client.invoke(addr, RemotingCommand.request(ECHO))
    server = RemotingServer(Dispatcher({ECHO: rec.echo}), "127.0.0.1", port)
    await server.start()
    resp = await client.invoke(addr, RemotingCommand.request(ECHO, {"back": "1"}))
    assert resp.ext_fields == {"back": "1"}
    await client.close()
    await server.stop()


async def test_connect_refused_is_retriable() -> None:
    client = RemotingClient(connect_timeout=1)
    with pytest.raises(errors.RemotingConnectError) as info:
        await client.invoke("127.0.0.1:1", RemotingCommand.request(ECHO))
    assert info.value.retriable
    await client.close()


def test_round_trip_on_uvloop() -> None:
    """Servers run on uvloop in production: its transports must work the same."""
    uvloop = pytest.importorskip("uvloop")

    async def scenario() -> tuple[int, dict[str, str]]:
        server = RemotingServer(Dispatcher({ECHO: Recorder().echo}), "127.0.0.1", 0)
        await server.start()
        client = RemotingClient()
        try:
            resp = await client.invoke(
                f"127.0.0.1:{server.port}", RemotingCommand.request(ECHO, {"loop": "uv"})
            )
            return resp.code, resp.ext_fields
        finally:
            await client.close()
            await server.stop()

    assert uvloop.run(scenario()) == (0, {"loop": "uv"})
