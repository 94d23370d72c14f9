"""One remoting connection, used the same way by servers and clients.

The connection owns framing, its requests waiting for their responses
(:mod:`~rocketkube.common.remoting.pending`), and the dispatch of requests the peer sends
us: a server gets client requests, a client gets the server-initiated ones
(NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE...). Responses produced
while handling one received chunk are written in a single ``writelines``, every
:data:`ANSWER_EVERY` requests when the chunk holds more.

One event loop serves every connection, so none may keep it: a connection is served at
most :data:`TURN_REQUESTS` requests per turn of the loop, the rest waiting (the connection
unread) until every other connection had its turn. A frame that does not decode closes
the connection; a request its handler refuses as malformed is answered, and charged to
the connection's budget: a peer that spends it is left unread for a while
(:mod:`~rocketkube.common.remoting.faults`, which also keeps the log quiet about them).

A server's connection is bounded (``max_requests_in_flight``): past that many requests
waiting for their answers, a request is answered SYSTEM_BUSY at once, unserved; and while
its answers wait to be written (a peer that sends and does not read), it is neither read
nor served (:meth:`Connection.pause_writing`), so that they stay in the peer's buffers,
not in ours. Its idle
timeout closes it when it stays silent that long, and when a frame it began stays
incomplete that long, however slowly its bytes trickle in (a slowloris peer).

A request handler returns a response, ``None`` (no response), or an awaitable of
either; awaitables are answered when they finish, so slow requests (long polling,
a group-committed flush) never block the ones pipelined behind them. A
:class:`~rocketkube.common.remoting.deferred.DeferredReply` is answered in the call
that resolves it, without an event loop callback.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import operator
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from rocketkube.common import errors
from rocketkube.common.remoting import codes, faults, frame
from rocketkube.common.remoting.addresses import format_address
from rocketkube.common.remoting.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand
from rocketkube.common.remoting.deferred import DeferredGroup, DeferredReply, WaitingAnswers
from rocketkube.common.remoting.pending import PendingRequests

log = logging.getLogger(__name__)

_FLAG: typing.Final = operator.attrgetter("flag")
_IS_RESPONSE: typing.Final = FLAG_RESPONSE.__and__

Reply = RemotingCommand | None | Awaitable[RemotingCommand | None]

ANSWER_EVERY: typing.Final = 128
"""A received chunk's answers are written after each this many of its requests.

A pipelining peer sends more as answers come back: writing a large chunk's answers (up to
256 KiB, hundreds of small sends) only once all are served would leave the peer idle
meanwhile, and then the server idle until the peer sent more. Writing every 128 requests
keeps both busy, for a few more ``write`` calls (docs/performance.md, 2026-11-26)."""

TURN_REQUESTS: typing.Final = 4 * ANSWER_EVERY
"""Requests a connection is served in one turn of the event loop, at most; the rest of a
received chunk waits for the next turn, after the other connections had theirs, with the
connection unread meanwhile. A pipelining peer's chunk (over 300 small sends) is one turn;
one made of tiny malformed requests (thousands) is several."""


class RequestHandler(Protocol):
    """Answers the requests that arrive on a connection.

    A handler may also have ``handle_many(conn, requests) -> Sequence[Reply]``: it then
    gets all requests decoded from one received chunk at once and answers each, in order.
    """

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply: ...


class Connection(asyncio.Protocol):
    """An asyncio protocol speaking RocketMQ remoting frames."""

    def __init__(
        self,
        handler: RequestHandler | None = None,
        *,
        idle_timeout: float | None = None,
        on_close: Callable[[Connection], None] | None = None,
        fault_log: faults.FaultLog | None = None,
        before_request: Callable[[RemotingCommand], None] | None = None,
        max_frame_length: int = frame.MAX_FRAME_LENGTH,
        max_requests_in_flight: int | None = None,
        backpressure: bool = False,
    ) -> None:
        """``fault_log``: the account of malformed traffic this connection shares (a
        server's, for all of its connections), else one of its own. ``before_request``:
        applied to every request this side sends, just before it is encoded (a client's
        signature, :func:`rocketkube.common.acl.sign`; Java's ``RPCHook``).
        ``max_requests_in_flight``: the peer's requests waiting for their answers, at most
        (None: unbounded). ``backpressure``: stop reading the peer while the answers to it
        wait to be written (a server's; a client never stops reading its answers)."""
        self._handler = handler
        self._before_request = before_request
        self._idle_timeout = idle_timeout
        self._on_close = on_close
        self._faults = faults.PeerFaults(fault_log or faults.FaultLog(), "?")
        self._decoder = frame.FrameDecoder(max_frame_length)
        self._max_in_flight = max_requests_in_flight
        self._in_flight = 0
        """The peer's requests served but not answered yet (awaited, deferred)."""
        self._partial_since: float | None = None
        """Loop time the incomplete frame in the decoder began to wait (None: none)."""
        self._templated_frames = frame.compiled_templated_frames() or frame.templated_frames
        self._held_frames = frame.compiled_held_frames() or frame.held_frames
        self._loop = asyncio.get_running_loop()
        self._pending = PendingRequests(self._loop)
        self._opaque = itertools.count(1)
        self._transport: asyncio.Transport | None = None
        self._outbox: list[bytes | bytearray | memoryview] | None = None
        # Answers made meanwhile join one outbox, written when the batch ends (a received
        # chunk served, a resolved group answered).
        self._batching = False
        # Requests decoded but not served yet (their turn comes), and why the connection
        # is not read: requests wait, or it is held (throttled) until a timer releases it.
        self._waiting: list[RemotingCommand] = []
        self._turn_due = False
        self._held: asyncio.TimerHandle | None = None
        self._unread: list[bytes] = []  # received while held, decoded at the release
        self._paused = False
        self._backpressure = backpressure
        self._write_paused = False
        """The transport holds more than its high-water mark of unwritten bytes."""
        self._last_io = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None
        self.closed: asyncio.Future[None] = self._loop.create_future()
        self.remote_address = "?"
        self.local_address = "?"

    # -- asyncio.Protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport: no isinstance check here.
        self._transport = typing.cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.remote_address = format_address(peer)
        self.local_address = format_address(transport.get_extra_info("sockname"))
        self._faults.peer = self._pending.peer = self.remote_address
        self._faults.host = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        wait = self._faults.admit()
        if wait:
            self._hold(wait)
        self._last_io = self._loop.time()
        if self._idle_timeout:
            self._idle_timer = self._loop.call_later(self._idle_timeout, self._check_idle)

    def data_received(self, data: bytes) -> None:
        now = self._last_io = self._loop.time()
        if self._held is not None:  # uvloop reads once after a hold made on connecting
            self._unread.append(data)
            self._pause_reading()
            return
        try:
            commands = self._decoder.feed(data)
        except errors.ProtocolError as exc:
            self._faults.malformed(faults.FRAME, str(exc))
            self.abort()
            return
        if not self._decoder.buffered:
            self._partial_since = None
        elif commands or self._partial_since is None:
            self._partial_since = now  # a frame began in this chunk
        requests = commands
        if any(map(_IS_RESPONSE, map(_FLAG, commands))):  # looked at in C, not Python
            requests = []
            for cmd in commands:
                if cmd.flag & FLAG_RESPONSE:
                    self._pending.complete(cmd)
                else:
                    requests.append(cmd)
        if self._waiting or self._held is not None:
            self._waiting += requests  # after those waiting for their turn
        elif requests:
            self._turn(requests)

    def _turn(self, requests: list[RemotingCommand]) -> None:
        """Serve up to :data:`TURN_REQUESTS` of ``requests`` now, their answers written
        every :data:`ANSWER_EVERY`; the rest wait for the next turn of the loop, and so
        does all of it once the connection is held."""
        if len(requests) > TURN_REQUESTS:
            self._waiting = requests[TURN_REQUESTS:] + self._waiting
            requests = requests[:TURN_REQUESTS]
            self._pause_reading()
            self._next_turn_soon()
        self._batching = True
        try:
            if self._max_in_flight is not None:
                requests = self._admit(requests, self._max_in_flight - self._in_flight)
            if len(requests) == 1:
                self._serve(requests[0])
            elif len(requests) <= ANSWER_EVERY:
                if requests:  # none when all were refused
                    self._serve_many(requests)
            else:
                for start in range(0, len(requests), ANSWER_EVERY):
                    if self._held is not None or self._write_paused:  # the rest waits
                        self._waiting = requests[start:] + self._waiting
                        break
                    self._serve_many(requests[start : start + ANSWER_EVERY])
                    self._flush()
        finally:
            self._batching = False
            self._flush()

    def _admit(self, requests: list[RemotingCommand], room: int) -> list[RemotingCommand]:
        """The first ``room`` of ``requests``, to be served: should all of them stay in
        flight, the bound still holds. The others are answered SYSTEM_BUSY."""
        if len(requests) <= room:
            return requests
        room = max(room, 0)
        refused = requests[room:]
        limit = self._max_in_flight
        self._faults.refuse_in_flight(
            f"answering SYSTEM_BUSY to {self.remote_address}: {self._in_flight} of its "
            f"requests in flight, serverChannelMaxRequestsInFlight {limit}",
            len(refused),
        )
        remark = (f"[OVERLOAD]system busy: {self._in_flight} requests of this connection in "
                  f"flight, at most {limit}")  # fmt: skip
        for request in refused:
            self._reply(request, _error(codes.ResponseCode.SYSTEM_BUSY, remark))
        return requests[:room]

    def _next_turn_soon(self) -> None:
        if not self._turn_due:
            self._turn_due = True
            self._loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        """The turn of the requests waiting; reading again once none is left."""
        self._turn_due = False
        if self._held is not None or not self.is_open or self._write_paused:
            return  # the release (or resume_writing, or nothing) comes next
        waiting, self._waiting = self._waiting, []
        if waiting:
            self._turn(waiting)
        if not self._waiting and self._held is None:
            self._resume_reading()

    def _hold(self, seconds: float) -> None:
        """Neither read nor serve this connection for ``seconds`` (a throttled peer)."""
        if self._held is None and self.is_open:
            self._pause_reading()
            self._held = self._loop.call_later(seconds, self._release)

    def _release(self) -> None:
        self._held = None
        unread, self._unread = self._unread, []
        if unread:
            self.data_received(b"".join(unread))
        if self._held is not None:
            return  # held again by what was unread
        if self._waiting:
            self._next_turn_soon()
        else:
            self._resume_reading()

    def _pause_reading(self) -> None:
        if self.is_open:  # even when paused: uvloop does not keep a pause made on connecting
            assert self._transport is not None
            self._transport.pause_reading()
            self._paused = True

    def _resume_reading(self) -> None:
        if self._paused and self.is_open and not self._write_paused:
            assert self._transport is not None
            self._transport.resume_reading()
            self._paused = False

    def pause_writing(self) -> None:
        """Too many answers unwritten: with ``backpressure``, stop reading and serving the
        peer until they are written."""
        if self._backpressure:
            self._write_paused = True
            self._pause_reading()

    def resume_writing(self) -> None:
        if not self._write_paused:
            return
        self._write_paused = False
        if self._held is not None:
            return  # the release comes next
        if self._waiting:
            self._next_turn_soon()
        else:
            self._resume_reading()

    def eof_received(self) -> bool | None:
        """The peer ended its stream: a frame begun and left incomplete is its fault (a
        truncated request), charged to its host. The transport closes (None)."""
        buffered = self._decoder.buffered
        if buffered:
            self._faults.truncated(f"{buffered} bytes of an incomplete frame")
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._held is not None:
            self._held.cancel()
        self._waiting = []
        self._unread = []
        self._faults.close()
        self._pending.close()
        if not self.closed.done():
            self.closed.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    # -- public API --------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def send(self, cmd: RemotingCommand) -> None:
        """Queue a command; everything queued in one loop step goes out in one write.

        Responses made while a received chunk is handled are written when it is done;
        others (awaited replies, client requests) at the end of the current loop step, so
        pipelined requests and replies completing together share one system call.
        """
        if not self.is_open:
            raise errors.ConnectionClosedError(f"connection to {self.remote_address} is closed")
        head, body = frame.encode(cmd)
        outbox = self._writing()
        outbox.append(head)
        if body:
            outbox.append(body)

    def _queue_frame(self, data: bytes) -> None:
        """:meth:`send` of a frame already encoded; dropped when the connection is closed."""
        if not self.is_open:
            log.debug("could not answer %s: connection closed", self.remote_address)
            return
        self._writing().append(data)

    def _writing(self) -> list[bytes | bytearray | memoryview]:
        """The outbox of this loop step (its flush scheduled), for frames to write."""
        self._last_io = self._loop.time()
        outbox = self._outbox
        if outbox is None:
            outbox = self._outbox = []
            if not self._batching:
                self._loop.call_soon(self._flush)
        return outbox

    def _flush(self) -> None:
        outbox, self._outbox = self._outbox, None
        if outbox and self._transport is not None and not self._transport.is_closing():
            self._transport.writelines(outbox)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for the response with the same opaque.

        RemotingTimeoutError after ``timeout`` seconds (the connection stays open);
        ConnectionClosedError when the connection is lost first.
        """
        future = self.invoke_future(request, timeout)
        try:
            return await future
        finally:
            self._pending.forget(request.opaque)  # cancelled: forget it now

    def invoke_future(
        self, request: RemotingCommand, timeout: float
    ) -> asyncio.Future[RemotingCommand]:
        """:meth:`invoke` without a coroutine: the future gets the response, or the error
        :meth:`invoke` would raise. For callers that chain a callback (a coroutine per
        request is a good part of a pipelining client's cost). A cancelled future's entry
        goes when its answer or its deadline comes. Raises ConnectionClosedError at once
        when the connection is closed.
        """
        opaque = request.opaque = next(self._opaque)
        request.flag &= ~(FLAG_RESPONSE | FLAG_ONEWAY)
        if self._before_request is not None:
            self._before_request(request)
        self.send(request)
        return self._pending.add(opaque, request.code, timeout)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        request.opaque = next(self._opaque)
        request.flag = (request.flag | FLAG_ONEWAY) & ~FLAG_RESPONSE
        if self._before_request is not None:
            self._before_request(request)
        self.send(request)

    def close(self) -> None:
        """Close after writing whatever is queued."""
        if self._transport is not None:
            self._flush()
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def fault(self, kind: str, detail: str, count: int = 1) -> None:
        """The peer sent ``count`` malformed requests of ``kind`` (see
        :mod:`~rocketkube.common.remoting.faults`), answered by the caller: counted, told
        (rate-limited), and charged to this connection's budget."""
        backoff = self._faults.malformed(kind, detail, count)
        if backoff:
            self._hold(backoff)

    def failure(self, code: int, exc: BaseException, count: int = 1) -> RemotingCommand:
        """The answer to ``count`` requests of ``code`` whose handler raised ``exc``:
        SYSTEM_ERROR naming it. A malformed request (:func:`faults.kind_of`) is the peer's
        fault (:meth:`fault`); anything else is our bug, its traceback logged."""
        kind = faults.kind_of(exc)
        if kind is None:
            self._faults.bug(code, exc)
        else:
            self.fault(kind, f"request code {code}: {exc}", count)
        if isinstance(exc, errors.HeaderError):
            return _error(codes.ResponseCode.SYSTEM_ERROR, str(exc))
        return _error(codes.ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    # -- internals ---------------------------------------------------------------

    def _serve(self, request: RemotingCommand) -> None:
        if self._handler is None:
            self.fault(faults.CODE, f"request code {request.code} is not served here")
            self._reply(
                request,
                _error(
                    codes.ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                    f" request type {request.code} not supported",
                ),
            )
            return
        try:
            reply = self._handler.handle(self, request)
        except Exception as exc:  # answers this request only
            self._reply(request, self.failure(request.code, exc))
            return
        self._answer(request, reply)

    def _serve_many(self, requests: list[RemotingCommand]) -> None:
        """The requests of one received chunk, to the handler's optional ``handle_many``
        (one reply per request, in order) or one by one."""
        handle_many: Callable[[Connection, list[RemotingCommand]], Sequence[Reply]] | None = (
            getattr(self._handler, "handle_many", None)
        )
        if handle_many is None:
            for request in requests:
                self._serve(request)
            return
        try:
            replies = handle_many(self, requests)
        except Exception as exc:  # answers these requests only
            failure = self.failure(requests[0].code, exc, len(requests))
            for request in requests:
                self._reply(request, _error(failure.code, failure.remark or ""))
            return
        groups: dict[DeferredGroup, WaitingAnswers] | None = None
        # The common answers of a run (stored sends) are written as _reply_to would.
        rest = self._templated_frames(requests, replies, self._writing())
        for at in rest:
            request, reply = requests[at], replies[at]
            if type(reply) is not DeferredReply or reply.group is None:
                self._answer(request, reply)
                continue
            if request.flag & FLAG_ONEWAY:
                continue  # nothing to answer
            if groups is None:
                groups = {}
            held = groups.get(reply.group)
            if held is None:
                held = groups[reply.group] = WaitingAnswers()
            held.replies.append(reply)
            held.opaques.append(request.opaque)
            held.serializations.append(request.serialize_type)
        if groups is not None:
            for group, held in groups.items():
                self._in_flight += len(held.replies)
                group.add_listener(functools.partial(self._answer_held, held))

    def _answer_held(self, held: WaitingAnswers) -> None:
        """Answer resolved group members at once: one outbox, one write."""
        self._in_flight -= len(held.replies)
        if not self.is_open:
            log.debug("could not answer %s: connection closed", self.remote_address)
            return
        outer = self._batching  # resolved amid a received chunk: its outbox takes them
        self._batching = True
        try:
            rest = self._held_frames(held.replies, held.opaques, held.serializations,
                                     self._writing())  # fmt: skip
            for at in rest:
                self._reply_to(held.opaques[at], 0, held.serializations[at],
                               held.replies[at].result())  # fmt: skip
        finally:
            if not outer:
                self._batching = False
                self._flush()

    def _answer(self, request: RemotingCommand, reply: Reply) -> None:
        if reply is None or isinstance(reply, RemotingCommand):
            self._reply(request, reply)
        elif isinstance(reply, DeferredReply):
            # Only what answering needs is kept: the request holds its header fields and a
            # view of the whole received chunk, thousands of them while a flush runs.
            opaque, flag, serialize = request.opaque, request.flag, request.serialize_type
            self._in_flight += 1
            reply.add_listener(lambda given: self._reply_deferred(opaque, flag, serialize, given))
        else:
            future = asyncio.ensure_future(reply)
            self._in_flight += 1
            future.add_done_callback(lambda done: self._reply_later(request, done))

    def _reply_deferred(
        self,
        opaque: int,
        request_flag: int,
        serialize: codes.SerializeType,
        reply: RemotingCommand | None,
    ) -> None:
        self._in_flight -= 1
        self._reply_to(opaque, request_flag, serialize, reply)

    def _reply_later(
        self, request: RemotingCommand, done: asyncio.Future[RemotingCommand | None]
    ) -> None:
        self._in_flight -= 1
        if done.cancelled():
            return
        exc = done.exception()
        reply = self.failure(request.code, exc) if exc is not None else done.result()
        if self.is_open:
            self._reply(request, reply)

    def _reply(self, request: RemotingCommand, reply: RemotingCommand | None) -> None:
        self._reply_to(request.opaque, request.flag, request.serialize_type, reply)

    def _reply_to(
        self,
        opaque: int,
        request_flag: int,
        serialize: codes.SerializeType,
        reply: RemotingCommand | None,
    ) -> None:
        """Answer the request of ``opaque``, in its serialization; dropped when the
        connection is closed."""
        if reply is None or request_flag & FLAG_ONEWAY:
            return
        if isinstance(reply, frame.TemplatedResponse) and serialize is codes.SerializeType.JSON:
            data = reply.json_frame(opaque)
            outbox = self._outbox
            if outbox is not None and self._batching:
                outbox.append(data)  # amid a batch: open, and its time just taken
            else:
                self._queue_frame(data)
            return
        reply.opaque = opaque
        reply.flag |= FLAG_RESPONSE
        # Answer in the request's serialization: JSON-only clients (C++, ali-ons) always
        # speak JSON, so they always get JSON back.
        reply.serialize_type = serialize
        try:
            self.send(reply)
        except errors.RemotingError:
            log.debug("could not answer %s: connection closed", self.remote_address)

    def _check_idle(self) -> None:
        """Close the connection idle for the timeout, or whose incomplete frame waited
        that long; else look again when the first of these can be."""
        timeout = self._idle_timeout
        assert timeout is not None
        now = self._loop.time()
        partial = self._partial_since
        if partial is not None and now - partial >= timeout:
            self._faults.slow_frame(
                f"closing the connection from {self.remote_address}: a frame incomplete "
                f"for {now - partial:.1f} s ({self._decoder.buffered} bytes of it received)"
            )
            self.abort()
        elif now - self._last_io >= timeout:
            log.info("closing connection from %s: idle for %.0fs", self.remote_address,
                     now - self._last_io)  # fmt: skip
            self.close()
        else:
            due = min(self._last_io, math.inf if partial is None else partial) + timeout
            self._idle_timer = self._loop.call_later(due - now, self._check_idle)


def _error(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand.response(code, remark)
