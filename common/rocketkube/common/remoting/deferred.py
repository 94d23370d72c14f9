"""A reply a processor gives later, without an asyncio future per request.

Group commit answers thousands of SYNC_FLUSH sends when one fsync ends. An asyncio future
per send would cost the future, two done callbacks (the connection's and the metrics
observer's) and, when resolved, two event loop handles run one by one. A
:class:`DeferredReply` calls its listeners directly, inside
:meth:`~DeferredReply.resolve`, so answering a flushed group is one loop over direct calls
and the responses go out in one write.

It is still awaitable (a coroutine or a test may ``await`` it like any reply).

The replies a group commit answers together can be members of one :class:`DeferredGroup`.
Whoever answers or observes several of them (the connection, the dispatcher's metrics)
listens to the group once instead of to each member: listener calls and closures per
send would live until the flush, and every young garbage collection meanwhile would walk
them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator, Sequence
from typing import Any

from rocketkube.common.remoting import codes
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["DeferredGroup", "DeferredReply", "GroupListener", "ReplyListener", "WaitingAnswers"]

log = logging.getLogger(__name__)

ReplyListener = Callable[[RemotingCommand | None], None]
"""Told the reply once it is given (``None``: no response)."""

GroupListener = Callable[[], None]
"""Told once every member of a group was given its reply."""


class DeferredReply:
    """A response (or ``None``) given once by :meth:`resolve`; listeners run at that call,
    or at once when added after it. A listener that raises is logged and does not keep
    the others from being told."""

    __slots__ = ("_listeners", "_reply", "_resolved", "group")

    def __init__(self, group: DeferredGroup | None = None) -> None:
        self._listeners: list[ReplyListener] | None = None  # most replies get none
        self._reply: RemotingCommand | None = None
        self._resolved = False
        self.group = group
        """The group resolving this reply with others, if any."""

    def done(self) -> bool:
        """Whether the reply was given."""
        return self._resolved

    def result(self) -> RemotingCommand | None:
        """The reply given; asking before it was given is a bug."""
        if not self._resolved:
            raise asyncio.InvalidStateError("the reply was not given yet")
        return self._reply

    def add_listener(self, listener: ReplyListener) -> None:
        if self._resolved:
            _tell(listener, self._reply)
        elif self._listeners is None:
            self._listeners = [listener]
        else:
            self._listeners.append(listener)

    def resolve(self, reply: RemotingCommand | None) -> None:
        """Give the reply and tell every listener; later calls are ignored."""
        if self._resolved:
            return
        self._resolved = True
        self._reply = reply
        listeners, self._listeners = self._listeners, None
        if listeners is not None:
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


class DeferredGroup:
    """Deferred replies given together by one :meth:`resolve`.

    Members are made by :meth:`member`; a member's own listeners are told as for any
    deferred reply, then the group's listeners once, when every member has its reply.
    A group listener added after that is told at once."""

    __slots__ = ("_listeners", "_resolved", "_size")

    def __init__(self) -> None:
        self._listeners: list[GroupListener] = []
        self._resolved = False
        self._size = 0

    def member(self) -> DeferredReply:
        self._size += 1
        return DeferredReply(self)

    def done(self) -> bool:
        return self._resolved

    def add_listener(self, listener: GroupListener) -> None:
        if self._resolved:
            _tell_group(listener)
        else:
            self._listeners.append(listener)

    def resolve(
        self, members: Sequence[DeferredReply], replies: Sequence[RemotingCommand | None]
    ) -> None:
        """Give each member the reply at its place in ``replies``, then tell the group's
        listeners; later calls are ignored. Every member is given one, in any order."""
        if self._resolved:
            return
        if len(members) != self._size or len(replies) != self._size:
            raise ValueError(
                f"{len(members)} members and {len(replies)} replies given to a group of "
                f"{self._size}"
            )
        if any(member.group is not self for member in members):
            raise ValueError("a member of another group was given")
        for member, reply in zip(members, replies, strict=True):
            member.resolve(reply)
        self._resolved = True
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            _tell_group(listener)


def _tell(listener: ReplyListener, reply: RemotingCommand | None) -> None:
    try:
        listener(reply)
    except Exception:
        log.exception("a reply listener failed")


def _tell_group(listener: GroupListener) -> None:
    try:
        listener()
    except Exception:
        log.exception("a reply listener failed")


class WaitingAnswers:
    """A group's members waiting to be answered, with what answering needs of their
    requests (the connection's), in parallel lists: a tuple per member,
    alive until a flush, made young garbage collections frequent."""

    __slots__ = ("opaques", "replies", "serializations")

    def __init__(self) -> None:
        self.replies: list[DeferredReply] = []
        self.opaques: list[int] = []
        self.serializations: list[codes.SerializeType] = []
