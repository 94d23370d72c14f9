"""Request dispatch: a code -> processor table, instead of a big switch.

Unknown codes get REQUEST_CODE_NOT_SUPPORTED with the Java remark, and every
request (sync or awaited) is reported to an optional observer for metrics.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping

from rocketkube.common.remoting import codes
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply

Processor = Callable[[Connection, RemotingCommand], Reply]


#: Told of every request: (request code, response code or None, seconds spent).
RequestObserver = Callable[[int, int | None, float], None]


def not_supported(code: int) -> RemotingCommand:
    return RemotingCommand.response(
        codes.ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {code} not supported"
    )


class Dispatcher:
    """Routes each request to the processor registered for its code."""

    def __init__(
        self,
        processors: Mapping[int, Processor],
        observer: RequestObserver | None = None,
    ) -> None:
        self._processors = dict(processors)
        self._observer = observer

    @property
    def codes(self) -> frozenset[int]:
        return frozenset(self._processors)

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        processor = self._processors.get(request.code)
        if processor is None:
            reply: Reply = not_supported(request.code)
        else:
            started = time.perf_counter()
            reply = processor(conn, request)
            if self._observer is not None:
                if reply is not None and not isinstance(reply, RemotingCommand):
                    return self._observed(request.code, reply, started)
                self._observer(request.code, _code_of(reply), time.perf_counter() - started)
            return reply
        if self._observer is not None:
            self._observer(request.code, _code_of(reply), 0.0)
        return reply

    async def _observed(
        self, code: int, reply: Awaitable[RemotingCommand | None], started: float
    ) -> RemotingCommand | None:
        assert self._observer is not None
        try:
            result = await reply
        except Exception:
            self._observer(code, codes.ResponseCode.SYSTEM_ERROR, time.perf_counter() - started)
            raise
        self._observer(code, _code_of(result), time.perf_counter() - started)
        return result


def _code_of(reply: object) -> int | None:
    return reply.code if isinstance(reply, RemotingCommand) else None
