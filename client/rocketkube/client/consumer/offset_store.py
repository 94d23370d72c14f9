"""Where a push consumer keeps its consume offsets (Java ``OffsetStore``).

Both stores hold the offsets in memory, updated as messages are consumed, and make them
durable from time to time (every ``persist_interval`` and at shutdown):

- :class:`RemoteOffsetStore` (clustering): the group's offsets live on the broker owning
  each queue; :meth:`~RemoteOffsetStore.persist` sends UPDATE_CONSUMER_OFFSET (15) and
  :meth:`~RemoteOffsetStore.read_stored` QUERY_CONSUMER_OFFSET (14), both through an
  :class:`OffsetBroker` the consumer provides (so the store does no I/O of its own).
- :class:`LocalFileOffsetStore` (broadcasting): every client consumes every queue and keeps
  its own offsets in a crash-safe file, Java's ``offsets.json`` format::

      {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42, ...}}

An offset is the next one to consume; ``None`` means "never stored".
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from rocketkube.client.routing import MessageQueue
from rocketkube.common import atomic_file, fastjson
from rocketkube.common.protocol import admin_bodies

__all__ = ["LocalFileOffsetStore", "OffsetBroker", "OffsetStore", "RemoteOffsetStore"]


class OffsetBroker(Protocol):
    """The two broker calls a remote store needs."""

    async def query_offset(self, queue: MessageQueue) -> int | None:
        """The group's stored offset of ``queue`` (QUERY_CONSUMER_OFFSET), ``None`` if none."""
        ...

    async def update_offset(self, queue: MessageQueue, offset: int) -> None:
        """Store the group's offset of ``queue`` (UPDATE_CONSUMER_OFFSET)."""
        ...


class OffsetStore(abc.ABC):
    """The in-memory offset table both stores share; subclasses say where it persists."""

    def __init__(self) -> None:
        self._table: dict[MessageQueue, int] = {}
        self._persisted: dict[MessageQueue, int] = {}

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool = False) -> None:
        """Set the next offset to consume of ``queue``; ``increase_only`` never moves it back.

        Consumption finishes out of order, so the consumer reports progress with
        ``increase_only``; seeks and offset resets move it anywhere.
        """
        current = self._table.get(queue)
        if increase_only and current is not None and current >= offset:
            return
        self._table[queue] = offset

    def read(self, queue: MessageQueue) -> int | None:
        """The in-memory offset of ``queue``, ``None`` when there is none."""
        return self._table.get(queue)

    def remove(self, queue: MessageQueue) -> None:
        """Forget ``queue`` (no longer consumed here) without persisting it."""
        self._table.pop(queue, None)
        self._persisted.pop(queue, None)

    def queues(self) -> list[MessageQueue]:
        """The queues with an in-memory offset."""
        return sorted(self._table)

    async def load(self) -> None:  # noqa: B027 - only the file store has anything to read
        """Read what was persisted before."""

    @abc.abstractmethod
    async def read_stored(self, queue: MessageQueue) -> int | None:
        """The persisted offset of ``queue``, ``None`` when none was ever stored."""

    @abc.abstractmethod
    async def persist(self, queues: Iterable[MessageQueue]) -> None:
        """Make the in-memory offsets of ``queues`` durable."""


class RemoteOffsetStore(OffsetStore):
    """Clustering offsets, kept by the brokers through ``broker``."""

    def __init__(self, broker: OffsetBroker) -> None:
        super().__init__()
        self._broker = broker

    async def read_stored(self, queue: MessageQueue) -> int | None:
        """QUERY_CONSUMER_OFFSET; the answer also becomes the in-memory offset."""
        offset = await self._broker.query_offset(queue)
        if offset is not None and offset >= 0:
            self._table[queue] = offset
            self._persisted[queue] = offset
            return offset
        return None

    async def persist(self, queues: Iterable[MessageQueue]) -> None:
        """UPDATE_CONSUMER_OFFSET for every queue whose offset changed since its last one.

        Every queue is tried; the first failure is raised afterwards.
        """
        failure: Exception | None = None
        for queue in sorted(set(queues)):
            offset = self._table.get(queue)
            if offset is None or self._persisted.get(queue) == offset:
                continue
            try:
                await self._broker.update_offset(queue, offset)
            except Exception as exc:
                failure = failure or exc
                continue
            self._persisted[queue] = offset
        if failure is not None:
            raise failure


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting offsets in one JSON file, written atomically (keeps a ``.bak``) from a
    worker thread, so a slow disk does not stall the consumer's event loop.

    :meth:`persist` writes every offset held in memory, plus the queues of the file this
    client no longer consumes, so nothing already stored is lost.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._stored: dict[MessageQueue, int] = {}
        self._saver = atomic_file.BackgroundSaver(path, lambda: _encode_offsets(self._stored))

    @property
    def path(self) -> Path:
        return self._saver.path

    async def load(self) -> None:
        """Read the file (or its ``.bak``); a missing or unreadable file is an empty table."""
        stored = atomic_file.load_text(self.path, _parse_offsets)
        self._stored = dict(stored or {})
        self._table.update(self._stored)

    async def read_stored(self, queue: MessageQueue) -> int | None:
        """The offset of ``queue`` in the file as last loaded or written."""
        offset = self._stored.get(queue)
        if offset is not None:
            self._table[queue] = offset
        return offset

    async def persist(self, queues: Iterable[MessageQueue]) -> None:
        """Rewrite the file with the offsets of ``queues`` updated from memory."""
        changed = False
        for queue in queues:
            offset = self._table.get(queue)
            if offset is not None and self._stored.get(queue) != offset:
                self._stored[queue] = offset
                changed = True
        if changed or not self.path.exists():
            self._saver.changed()
        await self._saver.flush()


def _encode_offsets(table: dict[MessageQueue, int]) -> bytes:
    keys = {
        admin_bodies.MessageQueue(q.topic, q.broker_name, q.queue_id).as_key(): offset
        for q, offset in sorted(table.items())
    }
    return fastjson.dumps({"offsetTable": keys})


def _parse_offsets(text: str) -> dict[MessageQueue, int]:
    data = fastjson.loads(text)
    table: dict[MessageQueue, int] = {}
    for key, offset in (data.get("offsetTable") or {}).items():
        mq = admin_bodies.MessageQueue.from_key(key)
        table[MessageQueue(mq.topic, mq.broker_name, mq.queue_id)] = int(offset)
    return table
