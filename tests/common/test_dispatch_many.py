"""Serving a received chunk at once: ``Dispatcher.handle_many`` groups consecutive
requests of a :class:`BatchingProcessor` into runs, keeps arrival order, tells the
observer of each request; the connection answers every request exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import types
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from waiting import wait_until

from rocketkube.common.remoting import frame
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import FLAG_ONEWAY, RemotingCommand
from rocketkube.common.remoting.connection import ANSWER_EVERY, Connection, Reply
from rocketkube.common.remoting.deferred import DeferredGroup, DeferredReply
from rocketkube.common.remoting.dispatch import BatchingProcessor, Dispatcher
from rocketkube.common.remoting.faults import FaultLog
from rocketkube.common.remoting.server import RemotingServer

PUT, PUT_V2, OTHER, SLOW, UNKNOWN = 2000, 2001, 2002, 2003, 9999


class Log:
    """Processors that log what they serve, in the order they serve it."""

    def __init__(self) -> None:
        self.served: list[str] = []
        self.observed: list[tuple[int, int | None]] = []
        self.pending: list[asyncio.Future[RemotingCommand | None]] = []
        self.deferred: list[DeferredReply] = []
        self.groups: list[DeferredGroup] = []
        self.members: list[DeferredReply] = []

    def one(self, conn: Connection, req: RemotingCommand) -> Reply:
        self.served.append(f"one:{req.opaque}")
        return RemotingCommand.response(remark=f"one:{req.opaque}")

    def many(self, conn: Connection, reqs: Sequence[RemotingCommand]) -> list[Reply]:
        self.served.append("many:" + ",".join(str(r.opaque) for r in reqs))
        self.groups.append(DeferredGroup())
        return [self._many_reply(r) for r in reqs]

    def _many_reply(self, req: RemotingCommand) -> Reply:
        if req.ext_fields.get("later"):
            return self._later(req)
        if req.ext_fields.get("future"):
            self.pending.append(asyncio.get_running_loop().create_future())
            return self.pending[-1]
        if req.ext_fields.get("deferred"):
            self.deferred.append(DeferredReply())
            return self.deferred[-1]
        if req.ext_fields.get("grouped"):  # answered with the others of its run, later
            self.members.append(self.groups[-1].member())
            return self.members[-1]
        return RemotingCommand.response(remark=f"many:{req.opaque}")

    async def _later(self, req: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.01)
        return RemotingCommand.response(remark=f"later:{req.opaque}")

    def other(self, conn: Connection, req: RemotingCommand) -> Reply:
        self.served.append(f"other:{req.opaque}")
        return RemotingCommand.response(remark=f"other:{req.opaque}")

    def observe(self, code: int, result: int | None, seconds: float, count: int) -> None:
        self.observed += [(code, result)] * count


def dispatcher(log: Log) -> Dispatcher:
    batching = BatchingProcessor(log.one, log.many)
    return Dispatcher(
        {PUT: batching, PUT_V2: BatchingProcessor(log.one, log.many), OTHER: log.other},
        observer=log.observe,
    )


def requests(*codes: int) -> list[RemotingCommand]:
    out = []
    for opaque, code in enumerate(codes, 1):
        req = RemotingCommand.request(code)
        req.opaque = opaque
        out.append(req)
    return out


NO_CONN = cast(Connection, None)


async def test_runs_of_batching_codes_go_to_many_in_order() -> None:
    log = Log()
    reqs = requests(PUT, PUT_V2, PUT, OTHER, PUT, UNKNOWN, PUT, PUT)
    fault_log = FaultLog()
    replies = dispatcher(log).handle_many(Connection(fault_log=fault_log), reqs)
    assert log.served == ["many:1,2,3", "other:4", "one:5", "many:7,8"]
    remarks = [r.remark if isinstance(r, RemotingCommand) else None for r in replies]
    assert remarks == [
        "many:1",
        "many:2",
        "many:3",
        "other:4",
        "one:5",
        " request type 9999 not supported",
        "many:7",
        "many:8",
    ]
    assert len(log.observed) == len(reqs)
    assert log.observed[5] == (UNKNOWN, ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
    assert fault_log.counts["code"] == 1  # the peer's fault


async def test_awaited_replies_of_a_run_are_observed_when_done() -> None:
    log = Log()
    reqs = requests(PUT, PUT)
    reqs[1].ext_fields["later"] = "1"
    replies = dispatcher(log).handle_many(NO_CONN, reqs)
    assert isinstance(replies[0], RemotingCommand)
    assert len(log.observed) == 1
    later = await asyncio.wait_for(cast(asyncio.Future[RemotingCommand], replies[1]), 10)
    assert later.remark == "later:2"
    assert log.observed == [(PUT, 0), (PUT, 0)]


async def test_future_replies_of_a_run_are_observed_by_callback_when_resolved() -> None:
    """Futures (a SYNC_FLUSH send's answer) come back as they are, not wrapped in a task
    each, and are told to the observer when resolved: failed ones as SYSTEM_ERROR,
    cancelled ones not at all."""
    log = Log()
    reqs = requests(PUT, PUT, PUT, PUT)
    for req in reqs[1:]:
        req.ext_fields["future"] = "1"
    replies = dispatcher(log).handle_many(NO_CONN, reqs)
    assert replies[1:] == log.pending
    assert log.observed == [(PUT, 0)]
    ok, failed, cancelled = log.pending
    ok.set_result(RemotingCommand.response(ResponseCode.FLUSH_DISK_TIMEOUT))
    failed.set_exception(RuntimeError("store broke"))
    cancelled.cancel()
    await asyncio.sleep(0)  # done callbacks run on the next loop turn
    await asyncio.sleep(0)
    assert log.observed == [
        (PUT, 0),
        (PUT, ResponseCode.FLUSH_DISK_TIMEOUT),
        (PUT, ResponseCode.SYSTEM_ERROR),
    ]
    assert isinstance(failed.exception(), RuntimeError)


def test_deferred_replies_of_a_run_are_observed_in_the_call_that_resolves_them() -> None:
    """Deferred replies (a SYNC_FLUSH send's answer) are told to the observer as they are
    resolved, without waiting for a loop turn, each once."""
    log = Log()
    reqs = requests(PUT, PUT, PUT)
    for req in reqs[1:]:
        req.ext_fields["deferred"] = "1"
    replies = dispatcher(log).handle_many(NO_CONN, reqs)
    assert replies[1:] == log.deferred
    assert log.observed == [(PUT, 0)]
    flushed, timed_out = log.deferred
    timed_out.resolve(RemotingCommand.response(ResponseCode.FLUSH_DISK_TIMEOUT))
    assert log.observed == [(PUT, 0), (PUT, ResponseCode.FLUSH_DISK_TIMEOUT)]
    flushed.resolve(RemotingCommand.response())
    flushed.resolve(RemotingCommand.response(ResponseCode.SYSTEM_ERROR))  # ignored
    assert log.observed == [(PUT, 0), (PUT, ResponseCode.FLUSH_DISK_TIMEOUT), (PUT, 0)]


def test_members_of_a_group_are_observed_once_per_result_when_it_is_resolved() -> None:
    log = Log()
    reqs = requests(PUT, PUT_V2, PUT, PUT)
    for req in reqs[1:]:
        req.ext_fields["grouped"] = "1"
    replies = dispatcher(log).handle_many(NO_CONN, reqs)
    assert log.observed == [(PUT, 0)]
    (group,) = log.groups
    members = log.members
    assert replies[1:] == members
    timeout = ResponseCode.FLUSH_DISK_TIMEOUT
    group.resolve(
        members,
        [
            RemotingCommand.response(),
            RemotingCommand.response(timeout),
            RemotingCommand.response(),
        ],
    )
    assert sorted(log.observed) == [(PUT, 0), (PUT, 0), (PUT, timeout), (PUT_V2, 0)]


class Client(asyncio.Protocol):
    def __init__(self) -> None:
        self.decoder = frame.FrameDecoder()
        self.replies: list[RemotingCommand] = []
        self.changed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.replies += self.decoder.feed(data)
        self.changed.set()

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(20):
            while len(self.replies) < count:
                self.changed.clear()
                await self.changed.wait()


@contextlib.asynccontextmanager
async def connected(handler: object) -> AsyncIterator[tuple[asyncio.Transport, Client]]:
    """A server of ``handler`` on 127.0.0.1 and a client connected to it."""
    server = RemotingServer(handler, "127.0.0.1", 0)  # type: ignore[arg-type]
    await server.start()
    try:
        transport, client = await asyncio.get_running_loop().create_connection(
            Client, "127.0.0.1", server.port
        )
        try:
            yield transport, client
        finally:
            transport.close()
    finally:
        await server.stop()


async def serve_chunk(handler: object, reqs: list[RemotingCommand]) -> list[RemotingCommand]:
    """Write ``reqs`` in one write to a server of ``handler``; the replies by opaque."""
    async with connected(handler) as (transport, client):
        transport.write(b"".join(frame.encode_bytes(r) for r in reqs))
        await client.wait_for(len(reqs))
        await asyncio.sleep(0.1)  # nothing more may come
        return sorted(client.replies, key=lambda r: r.opaque)


async def test_connection_answers_a_chunk_once_per_request() -> None:
    log = Log()
    reqs = requests(PUT, PUT, OTHER, PUT, PUT)
    reqs[3].ext_fields["later"] = "1"
    replies = await serve_chunk(dispatcher(log), reqs)
    assert [r.opaque for r in replies] == [1, 2, 3, 4, 5]
    assert [r.remark for r in replies] == ["many:1", "many:2", "other:3", "later:4", "many:5"]


async def test_connection_answers_deferred_replies_when_resolved_in_one_write() -> None:
    log = Log()
    reqs = requests(PUT, PUT, PUT)
    for req in reqs:
        req.ext_fields["deferred"] = "1"
    async with connected(dispatcher(log)) as (transport, client):
        transport.write(b"".join(frame.encode_bytes(r) for r in reqs))
        await wait_until(lambda: len(log.deferred) == len(reqs), "every request served")
        await asyncio.sleep(0.05)
        assert client.replies == []  # nothing answered before it is resolved
        for number, reply in enumerate(reversed(log.deferred)):
            reply.resolve(RemotingCommand.response(remark=f"resolved {number}"))
        await client.wait_for(len(reqs))
        assert sorted((r.opaque, r.remark) for r in client.replies) == [
            (1, "resolved 2"),
            (2, "resolved 1"),
            (3, "resolved 0"),
        ]


async def test_connection_answers_a_group_when_it_is_resolved_but_not_its_oneway_member() -> None:
    log = Log()
    reqs = requests(PUT, PUT, PUT, PUT)
    for req in reqs[1:]:
        req.ext_fields["grouped"] = "1"
    reqs[2].flag |= FLAG_ONEWAY
    async with connected(dispatcher(log)) as (transport, client):
        transport.write(b"".join(frame.encode_bytes(r) for r in reqs))
        await client.wait_for(1)
        await asyncio.sleep(0.05)
        assert [(r.opaque, r.remark) for r in client.replies] == [(1, "many:1")]
        (group,) = log.groups
        group.resolve(
            log.members,
            [RemotingCommand.response(remark=f"flushed {n}") for n in range(len(log.members))],
        )
        await client.wait_for(3)
        await asyncio.sleep(0.05)  # nothing more may come
        assert [(r.opaque, r.remark) for r in client.replies] == [
            (1, "many:1"),
            (2, "flushed 0"),
            (4, "flushed 2"),
        ]


class Holding:
    """A handler answering later, that keeps the requests it got."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []
        self.replies: list[DeferredReply] = []

    def handle(self, conn: Connection, req: RemotingCommand) -> Reply:
        self.requests.append(req)
        self.replies.append(DeferredReply())
        return self.replies[-1]


async def test_a_deferred_reply_does_not_keep_its_request_alive() -> None:
    """While thousands of sends wait for a flush, their requests (header fields, a view of
    the received chunk) must not be held by the connection waiting to answer them."""
    handler = Holding()
    async with connected(handler) as (transport, client):
        transport.write(frame.encode_bytes(requests(OTHER)[0]))
        await wait_until(lambda: len(handler.requests) == 1, "the request served")
        (request,) = handler.requests
        holders = [r for r in gc.get_referrers(request) if r is not handler.requests]
        assert not [h for h in holders if isinstance(h, types.CellType)]
        handler.replies[0].resolve(RemotingCommand.response(remark="answered"))
        await client.wait_for(1)
        assert (client.replies[0].opaque, client.replies[0].remark) == (1, "answered")


class Broken:
    """A handler whose batch entry point fails."""

    def handle(self, conn: Connection, req: RemotingCommand) -> Reply:
        return RemotingCommand.response(remark="one")

    def handle_many(self, conn: Connection, reqs: Sequence[RemotingCommand]) -> list[Reply]:
        raise RuntimeError("boom")


class OneByOne:
    """A handler without a batch entry point."""

    def handle(self, conn: Connection, req: RemotingCommand) -> Reply:
        return RemotingCommand.response(remark=f"one:{req.opaque}")


async def test_failing_run_answers_its_own_requests_with_system_error() -> None:
    log = Log()

    def broken(conn: Connection, reqs: Sequence[RemotingCommand]) -> list[Reply]:
        raise RuntimeError("boom")

    handler = Dispatcher({PUT: BatchingProcessor(log.one, broken), OTHER: log.other})
    replies = await serve_chunk(handler, requests(OTHER, PUT, PUT, OTHER))
    assert [r.code for r in replies] == [0, ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_ERROR, 0]
    assert "boom" in (replies[1].remark or "")
    assert log.served == ["other:1", "other:4"]


async def test_failing_batch_entry_answers_each_request_with_system_error() -> None:
    replies = await serve_chunk(Broken(), requests(PUT, PUT, PUT))
    assert [r.code for r in replies] == [ResponseCode.SYSTEM_ERROR] * 3
    assert all("boom" in (r.remark or "") for r in replies)


async def test_handler_without_batch_entry_serves_one_by_one() -> None:
    replies = await serve_chunk(OneByOne(), requests(PUT, OTHER, PUT))
    assert [r.remark for r in replies] == ["one:1", "one:2", "one:3"]


class RecordingTransport(asyncio.Transport):
    """Keeps each ``writelines`` call's bytes, one entry per call."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def writelines(self, list_of_data: Any) -> None:
        self.writes.append(b"".join(list_of_data))

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 10911) if name in ("peername", "sockname") else default


async def test_a_long_chunk_is_answered_every_answer_every_requests_in_order() -> None:
    """A pipelining peer sends more as answers come back: a chunk of more than
    ANSWER_EVERY requests is served and written in slices, not in one write at its end."""
    log = Log()
    count = 2 * ANSWER_EVERY + 5
    reqs = requests(*[PUT] * count)
    conn = Connection(dispatcher(log))
    transport = RecordingTransport()
    conn.connection_made(transport)
    conn.data_received(b"".join(frame.encode_bytes(r) for r in reqs))
    assert [len(run.split(",")) for run in log.served] == [ANSWER_EVERY, ANSWER_EVERY, 5]
    assert len(transport.writes) == 3
    decoder = frame.FrameDecoder()
    answered = [decoder.feed(chunk) for chunk in transport.writes]
    assert [len(part) for part in answered] == [ANSWER_EVERY, ANSWER_EVERY, 5]
    assert [r.opaque for part in answered for r in part] == list(range(1, count + 1))
    assert log.observed == [(PUT, 0)] * count
