"""Long polling (Java ``PullRequestHoldService``): pulls that found nothing wait here.

A pull whose answer would be PULL_NOT_FOUND (19), that set FLAG_SUSPEND, is held under its
``(topic, queueId)`` until one of:

- the store's arrival listener reports new entries on that queue (once per append batch)
  with a max offset past the pull's offset and a tags code its filter accepts (any code
  when the batch's codes are unknown);
- its own timer fires (``suspendTimeoutMillis``, or ``shortPollingTimeMills`` when
  ``longPollingEnable`` is off).

The pull is then run again by the processor's ``rerun`` callback (no suspending, no offset
commit) and its answer completes the future the processor returned, so the connection
replies with the original opaque. Wake-ups run in a later loop iteration, never inside the
append that triggered them. A held pull whose connection closes is dropped unanswered.

No polling loop: one ``loop.call_later`` timer per held pull plus the arrival listener.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rocketkube.broker.store import MessageStore, TagFilter
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection

__all__ = ["PullRequestHoldService", "Rerun"]

log = logging.getLogger(__name__)

Rerun = Callable[[], RemotingCommand | None]
"""Runs the held pull again; its result is the answer."""

QueueKey = tuple[str, int]


class _HeldPull:
    __slots__ = ("conn", "future", "key", "offset", "rerun", "tag_filter", "timer")

    def __init__(
        self,
        conn: Connection,
        key: QueueKey,
        offset: int,
        tag_filter: TagFilter | None,
        rerun: Rerun,
        future: asyncio.Future[RemotingCommand | None],
    ) -> None:
        self.conn = conn
        self.key = key
        self.offset = offset
        self.tag_filter = tag_filter
        self.rerun = rerun
        self.future = future
        self.timer: asyncio.TimerHandle | None = None

    def wanted(self, max_offset: int, tags_codes: list[int]) -> bool:
        if self.offset >= max_offset:
            return False
        matches = self.tag_filter
        return matches is None or not tags_codes or any(map(matches, tags_codes))


class PullRequestHoldService:
    """Holds suspended pulls; registers itself as the store's arrival listener."""

    def __init__(self, store: MessageStore) -> None:
        self._by_queue: dict[QueueKey, dict[_HeldPull, None]] = {}
        self._by_conn: dict[Connection, dict[_HeldPull, None]] = {}
        self._count = 0
        self._closed = False
        store.add_arrival_listener(self.on_arrival)

    def held_count(self, topic: str | None = None, queue_id: int | None = None) -> int:
        """Pulls held now: all of them, or those of one queue."""
        if topic is None or queue_id is None:
            return self._count
        return len(self._by_queue.get((topic, queue_id), ()))

    def hold(
        self,
        conn: Connection,
        topic: str,
        queue_id: int,
        offset: int,
        tag_filter: TagFilter | None,
        timeout_ms: int,
        rerun: Rerun,
    ) -> asyncio.Future[RemotingCommand | None]:
        """Hold a pull; the future gets ``rerun()``'s answer on wake-up or timeout.

        The future is cancelled (no answer) when the connection closes or the service does.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[RemotingCommand | None] = loop.create_future()
        if self._closed or not conn.is_open:
            future.cancel()
            return future
        entry = _HeldPull(conn, (topic, queue_id), offset, tag_filter, rerun, future)
        self._by_queue.setdefault(entry.key, {})[entry] = None
        of_conn = self._by_conn.get(conn)
        if of_conn is None:
            of_conn = self._by_conn[conn] = {}
            conn.closed.add_done_callback(lambda _: self._drop_connection(conn))
        of_conn[entry] = None
        self._count += 1
        entry.timer = loop.call_later(max(timeout_ms, 0) / 1000, self._expire, entry)
        return future

    def on_arrival(self, topic: str, queue_id: int, max_offset: int, tags_codes: list[int]) -> None:
        """The store's arrival listener: wake the held pulls the new entries satisfy."""
        held = self._by_queue.get((topic, queue_id))
        if not held:
            return
        woken = [entry for entry in held if entry.wanted(max_offset, tags_codes)]
        if not woken:
            return
        for entry in woken:
            self._forget(entry)
        asyncio.get_running_loop().call_soon(self._answer_all, woken)

    def close(self) -> None:
        """Drop every held pull unanswered (broker shutdown)."""
        self._closed = True
        for held in list(self._by_queue.values()):
            for entry in list(held):
                self._forget(entry)
                entry.future.cancel()
        self._by_conn.clear()

    # -- internals ---------------------------------------------------------------------

    def _forget(self, entry: _HeldPull) -> None:
        held = self._by_queue.get(entry.key)
        if held is None or entry not in held:
            return  # already answered or dropped
        del held[entry]
        if not held:
            del self._by_queue[entry.key]
        of_conn = self._by_conn.get(entry.conn)
        if of_conn is not None:
            of_conn.pop(entry, None)
        if entry.timer is not None:
            entry.timer.cancel()
        self._count -= 1

    def _expire(self, entry: _HeldPull) -> None:
        self._forget(entry)
        self._answer(entry)

    def _answer_all(self, entries: list[_HeldPull]) -> None:
        for entry in entries:
            self._answer(entry)

    def _answer(self, entry: _HeldPull) -> None:
        future = entry.future
        if future.done():
            return
        if not entry.conn.is_open:
            future.cancel()
            return
        try:
            reply = entry.rerun()
        except Exception as exc:  # answered SYSTEM_ERROR by the connection
            future.set_exception(exc)
        else:
            future.set_result(reply)

    def _drop_connection(self, conn: Connection) -> None:
        of_conn = self._by_conn.pop(conn, None)
        if not of_conn:
            return
        log.debug("dropping %d held pulls of closed connection %s", len(of_conn),
                  conn.remote_address)  # fmt: skip
        for entry in list(of_conn):
            self._forget(entry)
            entry.future.cancel()
