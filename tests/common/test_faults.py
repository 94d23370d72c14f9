"""Malformed traffic: classified, counted, told once per interval, and throttled.

The accounts are driven with a clock the test moves; the connections are real sockets on
127.0.0.1, one of them flooding, another well-behaved beside it.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator

import pytest
from waiting import wait_until

from rocketkube.common import errors
from rocketkube.common.remoting import faults, frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

ECHO, BAD_HEADER, BUG = 1000, 1001, 1002
UNKNOWN = 9999


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (errors.HeaderError("the custom field <topic> is null"), faults.HEADER),
        (errors.ProtocolError("malformed LockBatchRequestBody"), faults.BODY),
        (errors.MessageFormatError("bad batch"), faults.BODY),
        (ValueError("invalid literal for int()"), faults.VALUE),
        (OverflowError("Python int too large to convert to C long"), faults.VALUE),
        (struct.error("argument out of range"), faults.VALUE),
        (RuntimeError("boom"), None),
        (KeyError("x"), None),
    ],
)
def test_exceptions_are_the_peers_fault_or_our_bug(exc: BaseException, kind: str | None) -> None:
    assert faults.kind_of(exc) == kind


def test_one_warning_per_kind_and_connection_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = faults.FaultLog(faults.FaultPolicy(malformed_burst=1000), clock)
    peer = faults.PeerFaults(log, "10.0.0.1:5")
    for _ in range(5):
        peer.malformed(faults.HEADER, "the custom field <topic> is null")
    peer.malformed(faults.CODE, "request code 9999 is not supported")
    assert warnings(caplog, "(header)") == [
        "malformed request (header) from 10.0.0.1:5: the custom field <topic> is null"
    ]
    assert len(warnings(caplog, "(code)")) == 1
    clock.now += log.policy.warn_interval
    peer.malformed(faults.HEADER, "the custom field <group> is null")
    assert warnings(caplog, "(header)")[-1] == (
        "malformed request (header) from 10.0.0.1:5: the custom field <group> is null "
        "(and 4 more before, not logged)"
    )
    assert log.counts[faults.HEADER] == 6
    assert log.counts[faults.CODE] == 1


def test_a_server_writes_a_bounded_number_of_lines_whatever_its_connections(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = faults.FaultLog(faults.FaultPolicy(lines_per_interval=3), clock)
    for port in range(10):  # reconnecting peers: each connection is new
        peer = faults.PeerFaults(log, f"10.0.0.1:{port}")
        peer.malformed(faults.FRAME, "frame length 1 is below the minimum of 4")
        peer.close()
    assert len(warnings(caplog, "closing the connection")) == 3
    clock.now += log.policy.warn_interval
    faults.PeerFaults(log, "10.0.0.1:99").malformed(faults.FRAME, "unknown serialize type 5")
    assert warnings(caplog, "closing the connection")[-1].endswith(
        "unknown serialize type 5 (7 more from connections since closed, not logged)"
    )
    assert log.counts[faults.FRAME] == 11


def test_a_spent_budget_leaves_the_connection_unread_longer_each_time() -> None:
    clock = Clock()
    policy = faults.FaultPolicy(
        malformed_burst=10, malformed_per_second=5, first_backoff=0.5, max_backoff=2
    )
    log = faults.FaultLog(policy, clock)
    peer = faults.PeerFaults(log, "10.0.0.1:5")
    assert [peer.malformed(faults.BODY, "x") for _ in range(10)] == [0.0] * 10
    assert peer.malformed(faults.BODY, "x") == 0.5  # the budget spent
    assert peer.malformed(faults.BODY, "x", count=50) == 0.0  # held already: the same hold
    for backoff in (1.0, 2.0, 2.0):  # doubled each time, up to the most
        clock.now += 2  # the hold is over, the budget not full again: at it again
        assert peer.malformed(faults.BODY, "x", count=100) == backoff
    clock.now += 100  # behaved long enough to refill the budget: a fresh start
    assert peer.malformed(faults.BODY, "x", count=10) == 0.0
    assert peer.malformed(faults.BODY, "x") == 0.5
    assert log.throttles == 5


def test_a_host_whose_connections_keep_sending_garbage_has_its_new_ones_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    policy = faults.FaultPolicy(host_burst=3, host_per_second=2, max_backoff=1)
    log = faults.FaultLog(policy, clock)
    for port in range(3):
        assert faults.PeerFaults(log, f"10.0.0.1:{port}", "10.0.0.1").admit() == 0.0
        faults.PeerFaults(log, f"10.0.0.1:{port}", "10.0.0.1").malformed(faults.FRAME, "bad")
    assert log.admit("10.0.0.1") == 0.0  # the budget spent, not overdrawn
    faults.PeerFaults(log, "10.0.0.1:3", "10.0.0.1").malformed(faults.FRAME, "bad")
    assert log.admit("10.0.0.1") == 0.5  # until one connection's worth is refilled
    assert log.admit("10.0.0.2") == 0.0  # another host
    for _ in range(10):
        faults.PeerFaults(log, "10.0.0.1:9", "10.0.0.1").malformed(faults.FRAME, "bad")
    assert log.admit("10.0.0.1") == 1.0  # the most
    clock.now += 1.5  # refilled by 3: no longer overdrawn
    assert log.admit("10.0.0.1") == 0.0
    assert warnings(caplog, "new connections from 10.0.0.1 wait") != []


def test_an_overdrawn_host_has_its_open_connections_throttled_at_their_first_fault() -> None:
    clock = Clock()
    policy = faults.FaultPolicy(host_burst=2, host_per_second=1, first_backoff=0.5)
    log = faults.FaultLog(policy, clock)
    flooding = faults.PeerFaults(log, "10.0.0.1:1", "10.0.0.1")
    other = faults.PeerFaults(log, "10.0.0.2:1", "10.0.0.2")
    assert flooding.malformed(faults.BODY, "x") == 0.0  # its own budget and its host's
    for port in range(3):  # truncated requests, a connection each: the host overdrawn
        faults.PeerFaults(log, f"10.0.0.1:{port + 2}", "10.0.0.1").truncated("cut")
    assert log.counts[faults.FRAME] == 3
    assert log.host_wait("10.0.0.1") == 1.0
    assert flooding.malformed(faults.BODY, "x") == 1.0  # its own budget nearly full: the host's
    assert other.malformed(faults.BODY, "x") == 0.0  # another host's
    clock.now += 10  # the host behaved: its score decayed, its connections are free again
    assert log.host_wait("10.0.0.1") == 0.0
    assert flooding.malformed(faults.BODY, "x") == 0.0


def test_a_client_counts_its_servers_faults_but_never_stops_reading_them() -> None:
    log = faults.FaultLog(faults.CLIENT_POLICY, Clock())
    server = faults.PeerFaults(log, "10.0.0.1:10911", "10.0.0.1")
    assert {server.malformed(faults.CODE, "x", count=10_000) for _ in range(10)} == {0.0}
    for _ in range(100):
        faults.PeerFaults(log, "10.0.0.1:10911", "10.0.0.1").malformed(faults.FRAME, "x")
    assert log.admit("10.0.0.1") == 0.0
    assert (log.counts[faults.CODE], log.counts[faults.FRAME], log.throttles) == (100_000, 100, 0)


def test_our_bugs_are_tracebacks_rate_limited_too(caplog: pytest.LogCaptureFixture) -> None:
    log = faults.FaultLog(clock=Clock())
    peer = faults.PeerFaults(log, "10.0.0.1:5")
    for _ in range(3):
        try:
            raise RuntimeError("boom")
        except RuntimeError as exc:
            peer.bug(41, exc)
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == "request code 41 from 10.0.0.1:5 failed"
    assert record.exc_info is not None
    assert sum(log.counts.values()) == 0  # not the peer's fault


class Handlers:
    def echo(self, conn: Connection, req: RemotingCommand) -> Reply:
        return RemotingCommand.response(ext_fields=dict(req.ext_fields))

    def bad_header(self, conn: Connection, req: RemotingCommand) -> Reply:
        raise errors.HeaderError("the custom field <topic> is null")

    def bug(self, conn: Connection, req: RemotingCommand) -> Reply:
        raise RuntimeError("boom")


async def serve(
    policy: faults.FaultPolicy, clock: Clock | None = None
) -> tuple[RemotingServer, faults.FaultLog]:
    h = Handlers()
    fault_log = faults.FaultLog(policy) if clock is None else faults.FaultLog(policy, clock)
    table = {ECHO: h.echo, BAD_HEADER: h.bad_header, BUG: h.bug}
    server = RemotingServer(Dispatcher(table), "127.0.0.1", 0, faults=fault_log)
    await server.start()
    return server, fault_log


@pytest.fixture
async def good() -> AsyncIterator[RemotingClient]:
    client = RemotingClient(timeout=30)
    yield client
    await client.close()


async def read_answers(reader: asyncio.StreamReader, count: int) -> list[RemotingCommand]:
    decoder = frame.FrameDecoder()
    answers: list[RemotingCommand] = []
    while len(answers) < count:
        chunk = await asyncio.wait_for(reader.read(65536), 30)
        assert chunk, "closed by the server"
        answers += decoder.feed(chunk)
    return answers


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection without answering anything."""
    try:
        return await asyncio.wait_for(reader.read(), 30) == b""
    except ConnectionResetError:  # closed with bytes of ours unread
        return True


def pipelined(codes: list[int]) -> bytes:
    out = []
    for opaque, code in enumerate(codes, 1):
        request = RemotingCommand.request(code)
        request.opaque = opaque
        out.append(frame.encode_bytes(request))
    return b"".join(out)


async def test_an_undecodable_frame_closes_only_its_connection(
    good: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    server, fault_log = await serve(faults.FaultPolicy())
    address = f"127.0.0.1:{server.port}"
    try:
        await good.invoke(address, RemotingCommand.request(ECHO))
        for garbage in (struct.pack(">ii", 1, 0), struct.pack(">ii", 12, 8) + b"not json"):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(garbage + pipelined([ECHO]))  # closed at the garbage: no answer
            await writer.drain()
            assert await closed_by_server(reader)
            writer.close()
        answer = await good.invoke(address, RemotingCommand.request(ECHO, {"still": "ok"}))
        assert answer.ext_fields == {"still": "ok"}
        assert fault_log.counts[faults.FRAME] == 2
        assert len(warnings(caplog, "closing the connection from 127.0.0.1:")) == 2
    finally:
        await server.stop()


async def test_a_flooding_connection_is_throttled_and_told_of_once(
    good: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    policy = faults.FaultPolicy(
        malformed_burst=20, malformed_per_second=1, first_backoff=3600, max_backoff=3600
    )
    server, fault_log = await serve(policy)
    address = f"127.0.0.1:{server.port}"
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(pipelined([UNKNOWN, BAD_HEADER] * 150))
        await writer.drain()
        await wait_until(lambda: fault_log.throttles == 1, "the flooding connection held")
        answers = await read_answers(reader, 21)  # the budget and the one that spent it
        assert {a.code for a in answers} <= {
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            ResponseCode.SYSTEM_ERROR,
        }
        for i in range(5):  # the well-behaved connection is served meanwhile
            answer = await good.invoke(address, RemotingCommand.request(ECHO, {"i": str(i)}))
            assert answer.ext_fields == {"i": str(i)}
        served = fault_log.counts[faults.CODE] + fault_log.counts[faults.HEADER]
        assert 21 <= served <= 128  # held amid the chunk: the rest waits for an hour
        assert len(warnings(caplog, "malformed request (code) from")) == 1
        assert len(warnings(caplog, "malformed request (header) from")) == 1
        assert len(warnings(caplog, "for 3600 s: too many malformed requests")) == 1
        assert fault_log.throttles == 1
    finally:
        writer.close()
        await server.stop()


async def test_a_throttled_connection_is_served_again_after_its_back_off() -> None:
    policy = faults.FaultPolicy(
        malformed_burst=5, malformed_per_second=1, first_backoff=0.01, max_backoff=0.05
    )
    server, fault_log = await serve(policy)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(pipelined([UNKNOWN] * 300 + [ECHO]))
        await writer.drain()
        answers = await read_answers(reader, 301)
        assert [a.opaque for a in answers] == list(range(1, 302))  # every one, in order
        assert answers[-1].code == ResponseCode.SUCCESS
        assert fault_log.throttles >= 2
    finally:
        writer.close()
        await server.stop()


async def test_new_connections_of_a_host_sending_garbage_wait_but_open_ones_do_not(
    good: RemotingClient,
) -> None:
    policy = faults.FaultPolicy(host_burst=2, host_per_second=20)
    server, fault_log = await serve(policy, Clock())  # refilled only when the test says
    address = f"127.0.0.1:{server.port}"
    try:
        await good.invoke(address, RemotingCommand.request(ECHO))
        for _ in range(4):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(struct.pack(">ii", 1, 0))
            assert await closed_by_server(reader)
            writer.close()
        answer = await good.invoke(address, RemotingCommand.request(ECHO, {"open": "yes"}))
        assert answer.ext_fields == {"open": "yes"}
        throttles = fault_log.throttles
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(pipelined([ECHO]))
        (answer,) = await read_answers(reader, 1)  # after its wait (0.1 s: two overdrawn)
        assert answer.code == ResponseCode.SUCCESS
        assert fault_log.throttles == throttles + 1
        writer.close()
    finally:
        await server.stop()


async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to 127.0.0.1:``port`` from loopback address ``host``, as from that host."""
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(host, 0))


async def test_a_host_flooding_many_connections_is_held_while_a_good_host_is_served(
    good: RemotingClient,
) -> None:
    """127.0.0.2 opens a connection per truncated request, and sends malformed requests on
    connections opened before: once its budget is spent, its new connections wait unread
    and its open ones are held at their first malformed request, though none spent a budget
    of its own; its connection that sends only good requests, another host's and
    127.0.0.1's are all served."""
    policy = faults.FaultPolicy(
        host_burst=3, host_per_second=1, malformed_burst=1000, max_backoff=3600,
        first_backoff=3600,
    )  # fmt: skip
    server, fault_log = await serve(policy, Clock())  # never refilled: the test's clock
    address = f"127.0.0.1:{server.port}"
    port = server.port
    cut = frame.encode_bytes(RemotingCommand.request(ECHO, {"a": "b"}))[:-1]
    opened = []
    try:
        await good.invoke(address, RemotingCommand.request(ECHO))
        malformed = await connect("127.0.0.2", port)
        well_behaved = await connect("127.0.0.2", port)
        opened += [malformed[1], well_behaved[1]]
        malformed[1].write(pipelined([UNKNOWN]))
        (answer,) = await read_answers(malformed[0], 1)  # the host's budget is whole
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        for _ in range(4):  # a truncated request a connection: the host overdrawn
            reader, writer = await connect("127.0.0.2", port)
            writer.write(cut)
            writer.write_eof()
            assert await closed_by_server(reader)
            writer.close()
        assert fault_log.counts[faults.FRAME] == 4
        reader, writer = await connect("127.0.0.2", port)  # a new one: it waits, unread
        opened.append(writer)
        writer.write(cut)
        writer.write_eof()
        await wait_until(lambda: fault_log.throttles == 1, "the new connection held")
        malformed[1].write(pipelined([UNKNOWN]))  # answered: the hold comes after it
        (answer,) = await read_answers(malformed[0], 1)
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert fault_log.throttles == 2  # held, its own budget nearly whole
        malformed[1].write(pipelined([UNKNOWN]))
        other = await connect("127.0.0.3", port)
        opened.append(other[1])
        other[1].write(pipelined([UNKNOWN]))  # another host's budget is whole
        (answer,) = await read_answers(other[0], 1)
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        for i in range(50):  # the loop goes round: the good host and connection are served
            well_behaved[1].write(pipelined([ECHO]))
            (answer,) = await read_answers(well_behaved[0], 1)
            assert answer.code == ResponseCode.SUCCESS
            answer = await good.invoke(address, RemotingCommand.request(ECHO, {"i": str(i)}))
            assert answer.ext_fields == {"i": str(i)}
        assert fault_log.counts[faults.CODE] == 3  # the held one's last request unread
        assert fault_log.counts[faults.FRAME] == 4  # the waiting one's truncation unread
        assert fault_log.throttles == 2
    finally:
        for w in opened:
            w.close()
        await server.stop()


def test_a_new_connection_waits_for_its_host_on_uvloop_too() -> None:
    """uvloop reads a new connection once whatever it was told on connecting: what it read
    must wait with the connection, unanswered."""
    uvloop = pytest.importorskip("uvloop")

    async def scenario() -> tuple[int, bytes]:
        policy = faults.FaultPolicy(host_burst=1, host_per_second=1e-6, max_backoff=3600)
        server, fault_log = await serve(policy, Clock())
        good = RemotingClient(timeout=30)
        address = f"127.0.0.1:{server.port}"
        try:
            await good.invoke(address, RemotingCommand.request(ECHO))  # open before
            for _ in range(2):
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writer.write(struct.pack(">ii", 1, 0))
                assert await closed_by_server(reader)
                writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(pipelined([ECHO]) + struct.pack(">ii", 1, 0))
            await writer.drain()
            for _ in range(20):  # the server's loop goes round: the open connection is served
                await good.invoke(address, RemotingCommand.request(ECHO))
            frames = fault_log.counts[faults.FRAME]
        finally:
            await good.close()
            await server.stop()
        received = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        return frames, received

    # the waiting connection's garbage was not looked at, nor its request answered: it
    # was closed by the stop
    assert uvloop.run(scenario()) == (2, b"")


async def test_our_bug_answers_system_error_without_charging_the_peer(
    good: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    server, fault_log = await serve(faults.FaultPolicy(malformed_burst=1))
    address = f"127.0.0.1:{server.port}"
    try:
        for _ in range(3):
            answer = await good.invoke(address, RemotingCommand.request(BUG))
            assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "RuntimeError: boom")
        assert fault_log.throttles == 0
        assert len([r for r in caplog.records if r.exc_info]) == 1
    finally:
        await server.stop()


async def test_more_requests_than_a_turn_are_all_answered_in_order() -> None:
    server, _ = await serve(faults.FaultPolicy())
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        count = 3000  # several turns of one chunk (or a few)
        writer.write(pipelined([ECHO] * count))
        await writer.drain()
        answers = await read_answers(reader, count)
        assert [a.opaque for a in answers] == list(range(1, count + 1))
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
    finally:
        writer.close()
        await server.stop()
