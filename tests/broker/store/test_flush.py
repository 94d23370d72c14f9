"""Flushing: group commit shares fsyncs, the sync flush timeout, async flush, checkpoint."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketkube.broker.store import (
    FlushDiskType,
    InnerMessage,
    MessageStore,
    PutStatus,
    StoreConfig,
    checkpoint,
)
from rocketkube.broker.store.mapped_file import MappedFile

MakeMessage = Callable[..., InnerMessage]


class CountingSync:
    """The commit log's range sync, counting calls; it can be held to simulate a slow
    disk."""

    def __init__(self, *, real: bool = True) -> None:
        self.calls = 0
        self.real = real
        self.release = threading.Event()
        self.release.set()

    def __call__(self, mapped: MappedFile, start: int, end: int) -> None:
        self.calls += 1
        self.release.wait(10)
        if self.real:
            mapped.sync_range(start, end)


def sync_config(config: StoreConfig, **changes: Any) -> StoreConfig:
    """SYNC_FLUSH, with a 60 s ``syncFlushTimeout`` unless given: a CI run on a host whose
    fdatasync stalled for over the default 5 s answered FLUSH_DISK_TIMEOUT."""
    from dataclasses import replace

    changes.setdefault("sync_flush_timeout", 60_000)
    return replace(config, flush_disk_type=FlushDiskType.SYNC_FLUSH, **changes)


async def test_group_commit_shares_flushes(
    config: StoreConfig, msg: MakeMessage, clock: Any
) -> None:
    fsync = CountingSync()
    quiet = sync_config(config, flush_interval_consume_queue=60_000)  # count log flushes only
    store = MessageStore(quiet, clock=clock, log_sync=fsync)
    await store.start()
    fsync.calls = 0
    flushes_before = store.flush_count

    async def producer(n: int) -> list[PutStatus]:
        statuses = []
        for i in range(25):
            result = store.put_message(msg(f"{n}-{i}".encode(), queue_id=n % 4))
            statuses.append(await result.wait())
        return statuses

    results = await asyncio.gather(*(producer(n) for n in range(40)))
    assert all(s is PutStatus.PUT_OK for statuses in results for s in statuses)
    sends = 40 * 25
    flushes = store.flush_count - flushes_before
    assert flushes <= sends // 10, (flushes, sends)
    assert fsync.calls <= 2 * flushes
    assert store.flushed_offset == store.commit_log_max_offset
    await store.shutdown()


async def test_many_waiters_on_one_flush(config: StoreConfig, msg: MakeMessage) -> None:
    store = MessageStore(sync_config(config))
    await store.start()
    flushes = store.flush_count
    results = [store.put_message(msg()) for _ in range(200)]
    assert len({id(r.flush._future) for r in results if r.flush}) == 1
    statuses = await asyncio.gather(*(r.wait() for r in results))
    assert set(statuses) == {PutStatus.PUT_OK}
    assert store.flush_count == flushes + 1
    await store.shutdown()


async def test_sync_flush_timeout(config: StoreConfig, msg: MakeMessage) -> None:
    fsync = CountingSync(real=False)
    # Long enough that the flushes after the disk is back meet it on a stalling machine.
    store = MessageStore(sync_config(config, sync_flush_timeout=2000), log_sync=fsync)
    await store.start()
    fsync.release.clear()  # the disk hangs
    try:
        result = store.put_message(msg(b"slow"))
        assert await result.wait() is PutStatus.FLUSH_DISK_TIMEOUT
        assert result.appended  # appended and readable even so
        assert store.get_messages("TopicA", 0, 0, 1).found
    finally:
        fsync.release.set()
    for _ in range(500):  # the hung flush completes once the disk is back
        if store.flushed_offset == store.commit_log_max_offset:
            break
        await asyncio.sleep(0.01)
    assert store.flushed_offset == store.commit_log_max_offset
    later = store.put_message(msg(b"later"))
    other = store.put_message(msg(b"other"))
    waiter = asyncio.ensure_future(later.wait())
    await asyncio.sleep(0)
    waiter.cancel()  # a cancelled waiter does not break the future the others share
    assert await other.wait() is PutStatus.PUT_OK
    assert store.flushed_offset == store.commit_log_max_offset
    await store.shutdown()


async def test_async_flush_runs_in_background(config: StoreConfig, msg: MakeMessage) -> None:
    store = MessageStore(config)
    await store.start()
    result = store.put_message(msg())
    assert result.flush is None
    for _ in range(200):
        if store.flushed_offset == store.commit_log_max_offset:
            break
        await asyncio.sleep(0.01)
    assert store.flushed_offset == store.commit_log_max_offset
    point = checkpoint.Checkpoint(store.paths.checkpoint)
    for _ in range(200):
        point.load()
        if point.safe_offset == store.commit_log_max_offset:
            break
        await asyncio.sleep(0.01)
    assert point.safe_offset == store.commit_log_max_offset
    assert point.clean_max_offset == -1  # running
    end = store.commit_log_max_offset
    await store.shutdown()
    point.load()
    assert point.clean_max_offset == end
    assert not store.paths.abort.exists()


async def test_safe_offset_waits_for_the_index_flush(config: StoreConfig, msg: MakeMessage) -> None:
    """The index is flushed less often than the consume queues; the checkpoint's safe
    offset (where a crash scan starts) must not pass what the index has on disk."""
    from dataclasses import replace

    store = MessageStore(replace(config, flush_interval_index=3_600_000))
    await store.start()
    point = checkpoint.Checkpoint(store.paths.checkpoint)

    async def checkpoint_covers(timestamp: int) -> None:
        for _ in range(500):
            point.load()
            if point.logics_msg_timestamp >= timestamp:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the consume queue flush did not run")

    first = store.put_message(msg(keys="k1")).appended[0]
    await checkpoint_covers(first.store_timestamp)  # the first round flushes the index too
    indexed = store.commit_log_max_offset
    for _ in range(500):  # the commit log's own flush may come a round after the queues'
        point.load()
        if point.safe_offset == indexed:
            break
        await asyncio.sleep(0.01)
    assert point.safe_offset == indexed
    assert point.index_msg_timestamp == first.store_timestamp
    await asyncio.sleep(0.005)
    second = store.put_message(msg(keys="k2")).appended[0]
    assert second.store_timestamp > first.store_timestamp
    await checkpoint_covers(second.store_timestamp)
    assert point.safe_offset == indexed  # the index is not due for an hour
    assert point.index_msg_timestamp == first.store_timestamp
    end = store.commit_log_max_offset
    await store.shutdown()  # a clean shutdown flushes everything
    point.load()
    assert point.safe_offset == point.clean_max_offset == end
    assert point.index_msg_timestamp == second.store_timestamp


def test_sync_flush_without_event_loop_flushes_inline(
    config: StoreConfig, msg: MakeMessage
) -> None:
    fsync = CountingSync()
    store = MessageStore(sync_config(config), log_sync=fsync)
    store.open()
    fsync.calls = 0
    result = store.put_message(msg())
    assert result.status is PutStatus.PUT_OK
    assert result.flush is None
    assert fsync.calls == 1
    store.close()


def test_a_range_sync_writes_the_range_and_leaves_the_mapping_closable(tmp_path: Path) -> None:
    mapped = MappedFile(tmp_path / "00000000000000000000", 0, 4 * 4096)
    try:
        mapped.mm[5000:5011] = b"hello world"
        mapped.sync_range(5000, 5011)  # an unaligned range: its pages
        mapped.sync_range(4096, 1 << 30)  # past the end: clamped
        mapped.sync_range(8192, 8192)  # empty: nothing
        with open(mapped.path, "rb") as file:
            file.seek(5000)
            assert file.read(11) == b"hello world"
    finally:
        mapped.close()  # no buffer export left behind
    assert mapped.closed


async def test_a_commit_log_flush_syncs_only_what_was_appended_since_the_last(
    config: StoreConfig, msg: MakeMessage
) -> None:
    """Pages mapped ahead of the writer stay unwritten: a sync of the whole file wrote
    them as zeros and made each fault again when the log reached it."""
    ranges: list[tuple[int, int, int]] = []

    def sync(mapped: MappedFile, start: int, end: int) -> None:
        ranges.append((mapped.start, start, end))
        mapped.sync_range(start, end)

    store = MessageStore(sync_config(config), log_sync=sync)
    await store.start()
    first = store.commit_log_max_offset
    assert await store.put_message(msg(b"one")).wait() is PutStatus.PUT_OK
    middle = store.commit_log_max_offset
    assert await store.put_message(msg(b"two")).wait() is PutStatus.PUT_OK
    end = store.commit_log_max_offset
    assert ranges[-2:] == [(0, first, middle), (0, middle, end)]
    await store.shutdown()
