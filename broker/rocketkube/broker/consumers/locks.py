"""Queue locks of orderly consumers (Java ``RebalanceLockManager``), as a pure table.

Per consumer group and message queue one owner client id. A lock lives
``max_live_ms`` (RocketMQ: 60 s, ``rocketmq.broker.rebalance.lockMaxLiveTime``) after its
last renewal; orderly consumers renew every 20 s. The owner may re-lock (renewing it);
another client gets the queue only once the lock expired. Unlock removes a lock only for
its owner. Time comes from the caller's clock (epoch ms), so tests move it by hand.

The broker enforces nothing with these locks (neither does Java's): clients lock before
consuming a queue in order, and skip queues they could not lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

__all__ = ["DEFAULT_LOCK_MAX_LIVE_MS", "QueueLockTable"]

DEFAULT_LOCK_MAX_LIVE_MS: Final = 60_000

Q = TypeVar("Q")


@dataclass(slots=True)
class _Lock:
    client_id: str
    renewed_ms: int


class QueueLockTable:
    """``group -> queue -> (owner, last renewal)``; queues are any hashable value."""

    def __init__(self, clock: Callable[[], int], max_live_ms: int = DEFAULT_LOCK_MAX_LIVE_MS):
        self._clock = clock
        self._max_live_ms = max_live_ms
        self._groups: dict[str, dict[object, _Lock]] = {}

    def _expired(self, lock: _Lock, now: int) -> bool:
        return now - lock.renewed_ms > self._max_live_ms

    def try_lock(self, group: str, queues: Iterable[Q], client_id: str) -> set[Q]:
        """Lock or renew each queue for ``client_id``; the queues it now owns."""
        now = self._clock()
        locks = self._groups.setdefault(group, {})
        owned: set[Q] = set()
        for queue in queues:
            lock = locks.get(queue)
            if lock is None:
                locks[queue] = _Lock(client_id, now)
            elif lock.client_id == client_id or self._expired(lock, now):
                lock.client_id = client_id
                lock.renewed_ms = now
            else:
                continue
            owned.add(queue)
        return owned

    def unlock(self, group: str, queues: Iterable[object], client_id: str) -> None:
        """Release the queues ``client_id`` owns (expired or not); others stay locked."""
        locks = self._groups.get(group)
        if locks is None:
            return
        for queue in queues:
            lock = locks.get(queue)
            if lock is not None and lock.client_id == client_id:
                del locks[queue]
        if not locks:
            del self._groups[group]

    def owner(self, group: str, queue: object) -> str | None:
        """The client holding a live lock on the queue, or ``None``."""
        lock = self._groups.get(group, {}).get(queue)
        if lock is None or self._expired(lock, self._clock()):
            return None
        return lock.client_id
