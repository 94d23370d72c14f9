"""A remoting server's limits over real sockets on 127.0.0.1: the frame length, the
connections it holds, the requests in flight per connection, and the time a frame may stay
incomplete (a slowloris peer trickling bytes keeps no connection past the idle timeout)."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest

from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer, ServerLimits

ECHO, WAIT, LARGE = 1000, 1001, 1002
LARGE_ANSWER = 256 * 1024


class Gate:
    """WAIT requests are answered once :attr:`opened` is set."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.served = 0

    def echo(self, conn: Connection, req: RemotingCommand) -> Reply:
        return RemotingCommand.response(ext_fields=dict(req.ext_fields))

    def large(self, conn: Connection, req: RemotingCommand) -> Reply:
        self.served += 1
        return RemotingCommand.response(body=b"a" * LARGE_ANSWER)

    async def wait(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await self.opened.wait()
        return RemotingCommand.response(ext_fields=dict(req.ext_fields))


@pytest.fixture
async def gate() -> Gate:
    return Gate()


async def started(gate: Gate, limits: ServerLimits, idle_timeout: float = 60) -> RemotingServer:
    dispatcher = Dispatcher({ECHO: gate.echo, WAIT: gate.wait, LARGE: gate.large})
    server = RemotingServer(dispatcher, "127.0.0.1", 0, idle_timeout=idle_timeout, limits=limits)
    await server.start()
    return server


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    client = RemotingClient()
    yield client
    await client.close()


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """Whether the server closes the stream (EOF or reset) before it writes anything."""
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except ConnectionResetError:
        return True


def request_frame(code: int, opaque: int, **ext: str) -> bytes:
    request = RemotingCommand.request(code, dict(ext))
    request.opaque = opaque
    return frame.encode_bytes(request)


async def test_a_length_over_the_maximum_closes_the_connection_at_its_four_bytes(
    gate: Gate, client: RemotingClient
) -> None:
    server = await started(gate, ServerLimits(max_frame_length=4096))
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">i", 4097))  # nothing of the frame follows
        assert await closed_by_server(reader)
        writer.close()
        assert server.faults.counts["frame"] == 1
        # A frame of the maximum is served, on another connection.
        request = RemotingCommand.request(ECHO, body=b"")
        request.body = b"x" * (4096 - len(frame.encode_bytes(request)) + 4)
        answer = await client.invoke(f"127.0.0.1:{server.port}", request)
        assert answer.code == ResponseCode.SUCCESS
    finally:
        await server.stop()


async def test_connections_past_the_cap_are_closed_at_accept_and_counted(gate: Gate) -> None:
    server = await started(gate, ServerLimits(max_connections=2))
    try:
        held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(2)]
        for opaque, (reader, writer) in enumerate(held, 1):
            writer.write(request_frame(ECHO, opaque))
            assert len(await reader.read(4096)) > 8  # accepted and answered
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(request_frame(ECHO, 9))
        assert await closed_by_server(reader)
        writer.close()
        assert server.faults.refused["connections"] == 1
        assert len(server.connections) == 2
        port = held[0][1].get_extra_info("sockname")[1]
        (first,) = (c for c in server.connections if c.remote_address.endswith(f":{port}"))
        held[0][1].close()
        await asyncio.wait_for(first.closed, 10)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(request_frame(ECHO, 10))
        assert len(await reader.read(4096)) > 8  # room again
        for _, w in [*held[1:], (reader, writer)]:
            w.close()
    finally:
        await server.stop()


async def test_requests_past_the_in_flight_bound_are_answered_system_busy(
    gate: Gate, client: RemotingClient
) -> None:
    server = await started(gate, ServerLimits(max_requests_in_flight=3))
    address = f"127.0.0.1:{server.port}"
    try:
        waiting = [
            asyncio.ensure_future(client.invoke(address, RemotingCommand.request(WAIT, {"n": n})))
            for n in ("0", "1", "2")
        ]
        await asyncio.sleep(0)  # the three are written in one step
        busy = await client.invoke(address, RemotingCommand.request(ECHO))
        assert busy.code == ResponseCode.SYSTEM_BUSY
        assert (busy.remark or "").startswith("[OVERLOAD]")
        assert not any(w.done() for w in waiting)
        gate.opened.set()
        answers = await asyncio.gather(*waiting)
        assert [a.ext_fields["n"] for a in answers] == ["0", "1", "2"]
        assert (await client.invoke(address, RemotingCommand.request(ECHO))).code == 0
        assert server.faults.refused["in_flight"] == 1
    finally:
        await server.stop()


async def test_a_pipelined_burst_past_the_bound_gets_busy_for_the_excess_only(
    gate: Gate,
) -> None:
    server = await started(gate, ServerLimits(max_requests_in_flight=5))
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"".join(request_frame(WAIT, opaque) for opaque in range(1, 9)))
        busy = [await read_answer(reader) for _ in range(3)]
        assert [(a.opaque, a.code) for a in busy] == [(6, 2), (7, 2), (8, 2)]
        gate.opened.set()
        served = sorted([(await read_answer(reader)).opaque for _ in range(5)])
        assert served == [1, 2, 3, 4, 5]
        writer.close()
    finally:
        await server.stop()


async def read_answer(reader: asyncio.StreamReader) -> RemotingCommand:
    (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))
    return frame.decode_frame(memoryview(await reader.readexactly(length)))


async def test_a_frame_trickled_a_byte_at_a_time_is_cut_at_the_idle_timeout(gate: Gate) -> None:
    server = await started(gate, ServerLimits(), idle_timeout=0.5)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        data = request_frame(ECHO, 1, fill="x" * 1000)
        sent = 0
        while not reader.at_eof() and sent < len(data):
            writer.write(data[sent : sent + 1])  # every write is I/O: never idle
            sent += 1
            await asyncio.sleep(0.05)
            if server.faults.refused["slow_frame"]:
                break
        assert sent < len(data)
        assert await closed_by_server(reader)
        assert server.faults.refused["slow_frame"] == 1
        writer.close()
    finally:
        await server.stop()


async def test_frames_completing_across_writes_keep_a_slow_connection_open(gate: Gate) -> None:
    """Each write completes the frame the one before began: a frame is always incomplete
    between writes, but none for long."""
    server = await started(gate, ServerLimits(), idle_timeout=0.5)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        stream = b"".join(request_frame(ECHO, opaque) for opaque in range(1, 16))
        step = len(stream) // 15
        pieces = (
            [stream[: step // 2]]
            + [  # every piece after the first ends a frame
                stream[i : i + step] for i in range(step // 2, len(stream), step)
            ]
        )
        for piece in pieces:
            writer.write(piece)
            await asyncio.sleep(0.1)  # 15 pieces: 1.5 s, three idle timeouts
        answers = [await read_answer(reader) for _ in range(15)]
        assert [a.opaque for a in answers] == list(range(1, 16))
        assert server.faults.refused["slow_frame"] == 0
        writer.close()
    finally:
        await server.stop()


async def test_a_peer_that_does_not_read_its_answers_is_not_read_either(gate: Gate) -> None:
    """400 answers of 256 KiB (100 MiB) asked for and not read: the server stops reading
    the peer once its answers back up, instead of holding them all; they all come once the
    peer reads."""
    server = await started(gate, ServerLimits())
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        requests = 400
        writer.write(b"".join(request_frame(LARGE, opaque) for opaque in range(1, requests + 1)))
        await asyncio.sleep(0.5)  # time to serve them all, were it reading
        assert gate.served < requests
        (conn,) = server.connections
        assert conn._transport is not None
        held = conn._transport.get_write_buffer_size()
        assert held <= 129 * (LARGE_ANSWER + 200)  # a batch of answers, at most
        answers = [await read_answer(reader) for _ in range(requests)]
        assert [a.opaque for a in answers] == list(range(1, requests + 1))
        assert gate.served == requests
        writer.close()
    finally:
        await server.stop()
