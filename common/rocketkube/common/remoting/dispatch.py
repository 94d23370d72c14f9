"""Request dispatch: a code -> processor table, instead of a big switch.

Unknown codes get REQUEST_CODE_NOT_SUPPORTED with the Java remark (and count as the
peer's fault, :mod:`~rocketkube.common.remoting.faults`), and every request (sync or
awaited) is reported to an optional observer for metrics. A processor that raises answers
its own request (or run) with SYSTEM_ERROR, never the others of the chunk
(:meth:`Connection.failure <rocketkube.common.remoting.connection.Connection.failure>`).

A processor may also serve a run of requests at once (:class:`BatchingProcessor`): the
connection hands over all requests decoded from one received chunk (``handle_many``), and
consecutive requests whose processors share a batch entry point go to it as one list, so
pipelined sends cost one store append instead of one each. Other requests are served one
by one, in arrival order.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import operator
import time
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from rocketkube.common.remoting import codes, faults
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.deferred import DeferredGroup, DeferredReply

Processor = Callable[[Connection, RemotingCommand], Reply]
#: Serves several requests at once: one reply per request, in order.
ManyProcessor = Callable[[Connection, Sequence[RemotingCommand]], Sequence[Reply]]


#: Told of every request: (request code, response code or None, seconds spent, how many
#: requests that was: a run of pipelined requests is told once per distinct result).
RequestObserver = Callable[[int, int | None, float, int], None]

_CODE: typing.Final = operator.attrgetter("code")


def not_supported(code: int) -> RemotingCommand:
    return RemotingCommand.response(
        codes.ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {code} not supported"
    )


@dataclass(frozen=True, slots=True)
class BatchingProcessor:
    """A processor with a batch entry point: ``many`` serves a run of requests (of any
    code registered with the same ``many``) as ``one`` would serve each in turn."""

    one: Processor
    many: ManyProcessor

    def __call__(self, conn: Connection, request: RemotingCommand) -> Reply:
        return self.one(conn, request)


class Dispatcher:
    """Routes each request to the processor registered for its code."""

    def __init__(
        self,
        processors: Mapping[int, Processor],
        observer: RequestObserver | None = None,
    ) -> None:
        self._processors = dict(processors)
        self._many = {
            code: p.many for code, p in processors.items() if isinstance(p, BatchingProcessor)
        }
        self._observer = observer

    @property
    def codes(self) -> frozenset[int]:
        return frozenset(self._processors)

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        processor = self._processors.get(request.code)
        if processor is None:
            conn.fault(faults.CODE, f"request code {request.code} is not supported")
            reply: Reply = not_supported(request.code)
        else:
            started = time.perf_counter()
            reply = processor(conn, request)
            if self._observer is not None:
                if reply is not None and not isinstance(reply, RemotingCommand):
                    return self._observed(request.code, reply, started)
                self._observer(request.code, _code_of(reply), time.perf_counter() - started, 1)
            return reply
        if self._observer is not None:
            self._observer(request.code, _code_of(reply), 0.0, 1)
        return reply

    def handle_many(self, conn: Connection, requests: Sequence[RemotingCommand]) -> list[Reply]:
        """Serve the requests of one received chunk in order: one reply each, in order."""
        batched = self._many
        count = len(requests)
        codes = list(map(_CODE, requests))
        many = batched.get(codes[0]) if count > 1 else None
        if many is not None and codes.count(codes[0]) == count:
            # One run of one code (pipelined sends): no walk over the run in Python.
            try:
                return list(self._handle_run(conn, requests, many))
            except Exception as exc:  # answers its own run only
                return _failures(conn, codes[0], exc, count)
        replies: list[Reply] = []
        at = 0
        while at < count:
            many = batched.get(codes[at])
            end = at + 1
            if many is not None:
                while end < count and batched.get(codes[end]) == many:
                    end += 1
            try:
                if many is None or end - at == 1:
                    replies.append(self.handle(conn, requests[at]))
                else:
                    replies += self._handle_run(conn, requests[at:end], many)
            except Exception as exc:  # answers its own request or run only
                replies += _failures(conn, codes[at], exc, end - at)
            at = end
        return replies

    def _handle_run(
        self, conn: Connection, run: Sequence[RemotingCommand], many: ManyProcessor
    ) -> Sequence[Reply]:
        started = time.perf_counter()
        replies = many(conn, run)
        if len(replies) != len(run):
            raise RuntimeError(f"{len(run)} requests got {len(replies)} replies")
        observer = self._observer
        if observer is None:
            return replies
        # Each request is told its share of the run's time; answered ones in one tally,
        # members of a deferred group in one tally when the group is resolved.
        share = (time.perf_counter() - started) / len(run)
        tally: dict[tuple[int, int | None], int] = {}
        rest = count_replies(run, replies, tally)
        observed = list(replies)
        groups: dict[tuple[DeferredGroup, int], list[DeferredReply]] | None = None
        for at in rest:
            request, reply = run[at], replies[at]
            if type(reply) is DeferredReply and reply.group is not None:
                if groups is None:
                    groups = {}
                slot = (reply.group, request.code)
                members = groups.get(slot)
                if members is None:
                    members = groups[slot] = []
                members.append(reply)
            else:
                observed[at] = self._observed(request.code, reply, started)  # type: ignore[arg-type]
        for (code, result), count in tally.items():
            observer(code, result, share, count)
        if groups is not None:
            for (group, code), members in groups.items():
                group.add_listener(
                    functools.partial(_observe_group, observer, code, members, started)
                )
        return observed

    def _observed(
        self, code: int, reply: Awaitable[RemotingCommand | None], started: float
    ) -> Awaitable[RemotingCommand | None]:
        """``reply``, told to the observer when it is done.

        A deferred reply or a future (thousands of SYNC_FLUSH sends wait on one flush) is
        observed by a listener or a done callback; only coroutines are wrapped, which costs
        a task per reply."""
        observer = self._observer
        assert observer is not None
        if isinstance(reply, DeferredReply):
            reply.add_listener(
                lambda given: observer(code, _code_of(given), time.perf_counter() - started, 1)
            )
            return reply
        if not isinstance(reply, asyncio.Future):
            return self._observed_coroutine(code, reply, started)

        def done(future: asyncio.Future[RemotingCommand | None]) -> None:
            if future.cancelled():
                return
            if future.exception() is not None:
                result: int | None = codes.ResponseCode.SYSTEM_ERROR
            else:
                result = _code_of(future.result())
            observer(code, result, time.perf_counter() - started, 1)

        reply.add_done_callback(done)
        return reply

    async def _observed_coroutine(
        self, code: int, reply: Awaitable[RemotingCommand | None], started: float
    ) -> RemotingCommand | None:
        assert self._observer is not None
        try:
            result = await reply
        except Exception:
            self._observer(code, codes.ResponseCode.SYSTEM_ERROR, time.perf_counter() - started, 1)
            raise
        self._observer(code, _code_of(result), time.perf_counter() - started, 1)
        return result


def count_replies(
    run: Sequence[RemotingCommand],
    replies: Sequence[Reply],
    tally: dict[tuple[int, int | None], int],
) -> list[int]:
    """Count each reply that answers now (None or a command) in ``tally``, by (request
    code, response code or None); the indexes of the others (deferred, awaitable).

    A run whose replies are all commands (pipelined sends answered at once) is counted by
    C-level iteration, no Python step per request; one of a single request code and a
    single response code (the common run) without hashing a key per request."""
    if all(map(isinstance, replies, itertools.repeat(RemotingCommand))):
        asked = list(map(_CODE, run))
        answered = list(map(_CODE, replies))
        if asked and asked.count(asked[0]) == len(asked) == answered.count(answered[0]):
            key = (asked[0], answered[0])
            tally[key] = tally.get(key, 0) + len(asked)
            return []
        for key, count in collections.Counter(zip(asked, answered, strict=True)).items():
            tally[key] = tally.get(key, 0) + count
        return []
    rest: list[int] = []
    for at, (request, reply) in enumerate(zip(run, replies, strict=True)):
        if reply is None or isinstance(reply, RemotingCommand):
            key = (request.code, None if reply is None else reply.code)
            tally[key] = tally.get(key, 0) + 1
        else:
            rest.append(at)
    return rest


def _failures(conn: Connection, code: int, exc: Exception, count: int) -> list[Reply]:
    """The answers to ``count`` requests of ``code`` whose processor raised ``exc``, as the
    connection answers a processor that raised (SYSTEM_ERROR naming the exception)."""
    failure = conn.failure(code, exc, count)
    return [RemotingCommand.response(failure.code, failure.remark) for _ in range(count)]


def _observe_group(
    observer: RequestObserver, code: int, members: list[DeferredReply], started: float
) -> None:
    """Tell the observer of a resolved group's members of one request code: once per
    distinct result."""
    seconds = time.perf_counter() - started
    tally: dict[int | None, int] = {}
    for reply in members:
        result = _code_of(reply.result())
        tally[result] = tally.get(result, 0) + 1
    for result, count in tally.items():
        observer(code, result, seconds, count)


def _code_of(reply: object) -> int | None:
    return reply.code if isinstance(reply, RemotingCommand) else None
