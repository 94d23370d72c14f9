"""The messages a push consumer holds for one queue, and the offset it may commit.

Pulled messages wait here, by queue offset, until consumed. Consumption finishes out of
order (concurrent listeners), so the committable offset is the smallest offset still held,
or the largest one ever held plus one once everything is consumed: a crash re-delivers what
was in flight, and never skips it (Java ``ProcessQueue``).

Orderly consumption moves a batch from the waiting messages to ``consuming`` with
:meth:`ProcessQueue.take`, then :meth:`~ProcessQueue.commit` (consumed: the offset moves
past the batch) or :meth:`~ProcessQueue.rollback` (consume the same batch again later).

No I/O here: the pull loop adds, consume tasks remove, and the consumer reads :attr:`count`
and :attr:`size_bytes` for flow control and :attr:`dropped` to stop a queue it lost.
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketkube.common.message.model import MessageExt
from rocketkube.common.protocol.running_info import ProcessQueueInfo

__all__ = ["ProcessQueue"]


class ProcessQueue:
    """One queue's held messages (see the module docstring)."""

    def __init__(self) -> None:
        self._waiting: dict[int, MessageExt] = {}
        self._consuming: dict[int, MessageExt] = {}
        self._max_offset = -1
        self.size_bytes = 0
        #: Set when the queue is no longer this consumer's: results are then ignored.
        self.dropped = False
        #: Orderly clustering: whether this client holds the broker lock of the queue.
        self.locked = False
        #: ``loop.time()`` of the last successful lock (orderly clustering).
        self.last_lock_time = 0.0
        #: Epoch ms of the last pull answered and the last listener call (running info).
        self.last_pull_timestamp = 0
        self.last_consume_timestamp = 0

    @property
    def count(self) -> int:
        """Messages held, waiting or being consumed."""
        return len(self._waiting) + len(self._consuming)

    @property
    def max_offset(self) -> int:
        """The largest queue offset ever added; -1 before the first message."""
        return self._max_offset

    def add(self, messages: Iterable[MessageExt]) -> list[MessageExt]:
        """Hold ``messages``; returns the ones that were new (a repeated offset is skipped)."""
        added: list[MessageExt] = []
        for message in messages:
            offset = message.queue_offset
            if offset in self._waiting or offset in self._consuming:
                continue
            if offset < self._max_offset:
                # Out of order (an offset reset moved back): keep the dict sorted.
                self._waiting[offset] = message
                self._waiting = dict(sorted(self._waiting.items()))
            else:
                self._waiting[offset] = message
            self._max_offset = max(self._max_offset, offset)
            self.size_bytes += len(message.body)
            added.append(message)
        return added

    def remove(self, messages: Iterable[MessageExt]) -> int | None:
        """Forget consumed ``messages``; the offset to commit, ``None`` if none was held."""
        if not self._waiting:
            return None
        for message in messages:
            held = self._waiting.pop(message.queue_offset, None)
            if held is not None:
                self.size_bytes -= len(held.body)
        return self.committable()

    def committable(self) -> int:
        """The smallest offset held, or one past the largest when nothing is held."""
        firsts = [next(iter(held)) for held in (self._consuming, self._waiting) if held]
        return min(firsts) if firsts else self._max_offset + 1

    def info(self, commit_offset: int, *, now_ms: int, now_monotonic: float) -> ProcessQueueInfo:
        """This queue for GET_CONSUMER_RUNNING_INFO (Java ``fillProcessQueueInfo``): the
        waiting messages are the cache, the orderly batch being consumed the "transaction";
        the lock time (monotonic) is given as epoch ms, from the two clocks' readings now."""
        lock_ms = 0
        if self.last_lock_time:
            lock_ms = now_ms - int((now_monotonic - self.last_lock_time) * 1000)
        waiting, consuming = self._waiting, self._consuming
        return ProcessQueueInfo(
            commit_offset=commit_offset,
            cached_msg_min_offset=next(iter(waiting)) if waiting else 0,
            cached_msg_max_offset=next(reversed(waiting)) if waiting else 0,
            cached_msg_count=len(waiting),
            cached_msg_size_in_mib=self.size_bytes // (1024 * 1024),
            transaction_msg_min_offset=next(iter(consuming)) if consuming else 0,
            transaction_msg_max_offset=next(reversed(consuming)) if consuming else 0,
            transaction_msg_count=len(consuming),
            locked=self.locked,
            last_lock_timestamp=lock_ms,
            dropped=self.dropped,
            last_pull_timestamp=self.last_pull_timestamp,
            last_consume_timestamp=self.last_consume_timestamp,
        )

    # -- orderly -----------------------------------------------------------------------------

    def take(self, batch_size: int) -> list[MessageExt]:
        """Move up to ``batch_size`` of the lowest waiting messages to ``consuming``."""
        out: list[MessageExt] = []
        for offset in list(self._waiting)[:batch_size]:
            message = self._waiting.pop(offset)
            self._consuming[offset] = message
            out.append(message)
        return out

    def commit(self) -> int:
        """The consuming batch is done: forget it; returns the offset to commit."""
        for message in self._consuming.values():
            self.size_bytes -= len(message.body)
        self._consuming.clear()
        return self.committable()

    def rollback(self) -> None:
        """Put the consuming batch back in front of the waiting messages."""
        self._waiting = dict(sorted({**self._waiting, **self._consuming}.items()))
        self._consuming.clear()

    def clear(self) -> None:
        """Drop every held message (an offset reset starts the queue over)."""
        self._waiting.clear()
        self._consuming.clear()
        self.size_bytes = 0
