"""The requests a connection sent and waits for: one table keyed by ``opaque``, one timer.

Responses are matched by opaque, never by arrival order. asyncio.wait_for costs a future,
a timer and callbacks per request, and a pipelining client makes tens of thousands a
second; Java sweeps its response table once a second. This table sweeps at the earliest
deadline instead, so timeouts stay exact, and since answers usually come long before it,
a sweep runs about once per timeout.
"""

from __future__ import annotations

import asyncio
import logging
import math

from rocketkube.common import errors
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["PendingRequests"]

log = logging.getLogger(__name__)


class PendingRequests:
    """A connection's requests waiting for their responses, each with its deadline."""

    __slots__ = ("_entries", "_expiry", "_expiry_at", "_loop", "peer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # opaque -> (future, deadline, request code, timeout)
        self._entries: dict[int, tuple[asyncio.Future[RemotingCommand], float, int, float]] = {}
        self._expiry: asyncio.TimerHandle | None = None
        self._expiry_at = math.inf
        self.peer = "?"
        """The peer's address, for the errors' messages."""

    def __len__(self) -> int:
        """How many requests wait."""
        return len(self._entries)

    def add(self, opaque: int, code: int, timeout: float) -> asyncio.Future[RemotingCommand]:
        """The future of request ``opaque`` (of request ``code``): its response, or
        RemotingTimeoutError once ``timeout`` seconds passed."""
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        deadline = self._loop.time() + timeout
        self._entries[opaque] = (future, deadline, code, timeout)
        if deadline < self._expiry_at:
            self._arm(deadline)
        return future

    def forget(self, opaque: int) -> None:
        """Drop request ``opaque`` (its caller no longer waits)."""
        self._entries.pop(opaque, None)

    def complete(self, response: RemotingCommand) -> None:
        """Give ``response`` to the request of its opaque (logged when none waits)."""
        entry = self._entries.pop(response.opaque, None)
        if entry is None:
            log.debug("response with unknown opaque %d from %s", response.opaque, self.peer)
        elif not entry[0].done():
            entry[0].set_result(response)

    def close(self) -> None:
        """The connection is lost: every waiting request fails with ConnectionClosedError."""
        if self._expiry is not None:
            self._expiry.cancel()
        entries, self._entries = self._entries, {}
        for future, *_ in entries.values():
            if not future.done():
                future.set_exception(
                    errors.ConnectionClosedError(f"connection to {self.peer} closed")
                )

    def _arm(self, when: float) -> None:
        """Run :meth:`_expire` at loop time ``when`` (instead of any earlier arming)."""
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry = self._loop.call_at(when, self._expire)
        self._expiry_at = when

    def _expire(self) -> None:
        """Fail the requests whose deadline passed; re-arm for the earliest left."""
        self._expiry, self._expiry_at = None, math.inf
        now = self._loop.time()
        earliest = math.inf
        expired: list[int] = []
        for opaque, (_, deadline, _, _) in self._entries.items():
            if deadline <= now:
                expired.append(opaque)
            elif deadline < earliest:
                earliest = deadline
        for opaque in expired:
            future, _, code, timeout = self._entries.pop(opaque)
            if not future.done():
                future.set_exception(
                    errors.RemotingTimeoutError(
                        f"no response from {self.peer} to request code {code} within {timeout:.3f}s"
                    )
                )
        if earliest < math.inf:
            self._arm(earliest)
