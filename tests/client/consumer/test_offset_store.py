"""Offset stores: the in-memory table, the broker-backed store, the local file store."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketkube.client.consumer.offset_store import LocalFileOffsetStore, RemoteOffsetStore
from rocketkube.client.routing import MessageQueue

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)


class InMemoryBroker:
    """An OffsetBroker keeping the offsets in a dict, counting updates."""

    def __init__(self) -> None:
        self.offsets: dict[MessageQueue, int] = {}
        self.updates: list[tuple[MessageQueue, int]] = []
        self.failing: set[MessageQueue] = set()

    async def query_offset(self, queue: MessageQueue) -> int | None:
        return self.offsets.get(queue)

    async def update_offset(self, queue: MessageQueue, offset: int) -> None:
        if queue in self.failing:
            raise ConnectionError("broker down")
        self.offsets[queue] = offset
        self.updates.append((queue, offset))


async def test_increase_only_never_moves_back() -> None:
    store = RemoteOffsetStore(InMemoryBroker())
    store.update(Q0, 10)
    store.update(Q0, 7, increase_only=True)
    assert store.read(Q0) == 10
    store.update(Q0, 7)
    assert store.read(Q0) == 7


async def test_remote_persists_only_changes() -> None:
    broker = InMemoryBroker()
    store = RemoteOffsetStore(broker)
    store.update(Q0, 5)
    store.update(Q1, 3)
    await store.persist([Q0, Q1])
    await store.persist([Q0, Q1])
    assert broker.updates == [(Q0, 5), (Q1, 3)]
    store.update(Q1, 4)
    await store.persist([Q0, Q1])
    assert broker.updates[-1] == (Q1, 4)
    assert len(broker.updates) == 3


async def test_remote_read_stored_fills_memory() -> None:
    broker = InMemoryBroker()
    broker.offsets[Q0] = 42
    store = RemoteOffsetStore(broker)
    assert await store.read_stored(Q0) == 42
    assert store.read(Q0) == 42
    assert await store.read_stored(Q1) is None


async def test_remote_persist_tries_every_queue_then_raises() -> None:
    broker = InMemoryBroker()
    broker.failing.add(Q0)
    store = RemoteOffsetStore(broker)
    store.update(Q0, 1)
    store.update(Q1, 2)
    with pytest.raises(ConnectionError):
        await store.persist([Q0, Q1])
    assert broker.offsets == {Q1: 2}
    broker.failing.clear()
    await store.persist([Q0, Q1])
    assert broker.offsets == {Q0: 1, Q1: 2}


async def test_local_file_round_trip_in_java_format(tmp_path: Path) -> None:
    path = tmp_path / "c@DEFAULT" / "g" / "offsets.json"
    store = LocalFileOffsetStore(path)
    await store.load()
    assert await store.read_stored(Q0) is None
    store.update(Q0, 9)
    store.update(Q1, 4)
    await store.persist([Q0, Q1])
    assert path.read_text() == (
        '{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:9,'
        '{"brokerName":"broker-a","queueId":1,"topic":"T"}:4}}'
    )
    again = LocalFileOffsetStore(path)
    await again.load()
    assert await again.read_stored(Q0) == 9
    assert again.read(Q1) == 4


async def test_local_file_keeps_queues_no_longer_consumed(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    store = LocalFileOffsetStore(path)
    store.update(Q0, 1)
    store.update(Q1, 2)
    await store.persist([Q0, Q1])
    store.remove(Q1)
    store.update(Q0, 3)
    await store.persist([Q0])
    again = LocalFileOffsetStore(path)
    await again.load()
    assert (again.read(Q0), again.read(Q1)) == (3, 2)


async def test_local_file_falls_back_to_backup(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    store = LocalFileOffsetStore(path)
    store.update(Q0, 1)
    await store.persist([Q0])
    store.update(Q0, 2)
    await store.persist([Q0])
    path.write_text("{not json")
    again = LocalFileOffsetStore(path)
    await again.load()
    assert again.read(Q0) == 1
