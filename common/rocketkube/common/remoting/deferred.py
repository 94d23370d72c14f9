"""A reply a processor gives later, without an asyncio future per request.

Group commit answers thousands of SYNC_FLUSH sends when one fsync ends. As asyncio
futures, each send cost a future, two done callbacks (the connection's and the metrics
observer's) and, when resolved, two event loop handles run one by one. A
:class:`DeferredReply` calls its listeners directly, inside
:meth:`~DeferredReply.resolve`, so answering a flushed group is one loop over plain calls
and the responses go out in one write.

It is still awaitable (a coroutine or a test may ``await`` it like any reply).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any

from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["DeferredReply", "ReplyListener"]

log = logging.getLogger(__name__)

ReplyListener = Callable[[RemotingCommand | None], None]
"""Told the reply once it is given (``None``: no response)."""


class DeferredReply:
    """A response (or ``None``) given once by :meth:`resolve`; listeners run at that call,
    or at once when added after it. A listener that raises is logged and does not keep
    the others from being told."""

    __slots__ = ("_listeners", "_reply", "_resolved")

    def __init__(self) -> None:
        self._listeners: list[ReplyListener] = []
        self._reply: RemotingCommand | None = None
        self._resolved = False

    def done(self) -> bool:
        """Whether the reply was given."""
        return self._resolved

    def add_listener(self, listener: ReplyListener) -> None:
        if self._resolved:
            _tell(listener, self._reply)
        else:
            self._listeners.append(listener)

    def resolve(self, reply: RemotingCommand | None) -> None:
        """Give the reply and tell every listener; later calls are ignored."""
        if self._resolved:
            return
        self._resolved = True
        self._reply = reply
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            _tell(listener, reply)

    def __await__(self) -> Generator[Any, None, RemotingCommand | None]:
        if self._resolved:
            return self._reply
        future: asyncio.Future[RemotingCommand | None] = asyncio.get_running_loop().create_future()

        def given(reply: RemotingCommand | None) -> None:
            if not future.done():
                future.set_result(reply)

        self.add_listener(given)
        return (yield from future)


def _tell(listener: ReplyListener, reply: RemotingCommand | None) -> None:
    try:
        listener(reply)
    except Exception:
        log.exception("a reply listener failed")
