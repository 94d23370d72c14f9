"""Retention with an injected clock and disk use: expiry, deleteWhen, disk pressure."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from rocketkube.broker.store import (
    GetStatus,
    InnerMessage,
    MessageStore,
    PutStatus,
    StoreConfig,
    mapped_file,
)

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]
HOUR = 3_600_000


class Disk:
    def __init__(self, ratio: float = 0.10) -> None:
        self.ratio = ratio

    def __call__(self, _path: object) -> float:
        return self.ratio


def three_segments(store: MessageStore, msg: MakeMessage, clock: Any) -> None:
    """Four segments: 0 and 1 closed at the start, 2 closed 1.5 h later, 3 active; the
    clock ends 2 h after the start."""
    for i in range(18):  # 6 records of ~10 KB per 64 KiB segment
        store.put_message(msg(b"%03d" % i + b"r" * 10_000, keys=f"key{i}"))
    assert len(store._log.files) == 3
    clock.advance(HOUR * 3 // 2)
    store.put_message(msg(b"n" * 10_000))
    assert len(store._log.files) == 4
    clock.advance(HOUR // 2)
    store.put_message(msg(b"last"))


def test_nothing_deleted_outside_delete_when(
    open_store: OpenStore, msg: MakeMessage, clock: Any
) -> None:
    disk = Disk()
    store = open_store(disk_usage=disk)
    three_segments(store, msg, clock)
    assert store.clean_expired_files() == 0
    assert store.commit_log_min_offset == 0


def test_expired_segments_deleted_at_delete_when(
    open_store: OpenStore, msg: MakeMessage, clock: Any, config: StoreConfig
) -> None:
    hour = time.localtime((clock.now + 2 * HOUR) / 1000).tm_hour
    cfg = dataclasses.replace(config, delete_when=f"{hour:02d};23", file_reserved_time=1)
    store = open_store(cfg, disk_usage=Disk())
    three_segments(store, msg, clock)
    assert len(store._log.files) == 4
    index_files = len(list(store.paths.index.iterdir()))
    deleted = store.clean_expired_files()
    assert deleted == 2  # segment 2 closed half an hour ago: not expired (1 h reserved)
    assert store.commit_log_min_offset == 2 * 65536
    low = store.min_offset("TopicA", 0)
    assert low > 0
    too_small = store.get_messages("TopicA", 0, 0, 32)
    assert (too_small.status, too_small.next_begin_offset) == (GetStatus.OFFSET_TOO_SMALL, low)
    assert store.get_messages("TopicA", 0, low, 32).found
    assert not store.query_by_key("TopicA", "key0", 32, 0, clock.now).physical_offsets
    assert len(list(store.paths.index.iterdir())) <= index_files
    assert sorted(p.name for p in store.paths.commit_log.iterdir())[0] == f"{2 * 65536:020d}"


async def test_deleted_segments_are_closed_off_the_event_loop(
    open_store: OpenStore,
    msg: MakeMessage,
    clock: Any,
    config: StoreConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed_in: list[tuple[str, int]] = []
    unmap_and_close = mapped_file._unmap_and_close

    def spy(mm: Any, fd: int, path: Path) -> None:
        closed_in.append((path.name, threading.get_ident()))
        unmap_and_close(mm, fd, path)

    monkeypatch.setattr(mapped_file, "_unmap_and_close", spy)
    hour = time.localtime((clock.now + 2 * HOUR) / 1000).tm_hour
    cfg = dataclasses.replace(config, delete_when=f"{hour:02d}", file_reserved_time=1)
    store = open_store(cfg, disk_usage=Disk())
    three_segments(store, msg, clock)
    assert store.clean_expired_files() == 2
    assert not (store.paths.commit_log / f"{0:020d}").exists()  # unlinked at once
    segments = {f"{0:020d}", f"{65536:020d}"}
    await wait_until(lambda: segments <= {name for name, _ in closed_in}, "segments closed")
    loop_thread = threading.get_ident()
    assert all(thread != loop_thread for name, thread in closed_in if name in segments)


def test_disk_pressure_deletes_expired_then_everything(
    open_store: OpenStore, msg: MakeMessage, clock: Any, config: StoreConfig
) -> None:
    disk = Disk()
    store = open_store(dataclasses.replace(config, file_reserved_time=1), disk_usage=disk)
    three_segments(store, msg, clock)
    disk.ratio = 0.80  # above diskMaxUsedSpaceRatio (75): expired ones go at any hour
    assert store.clean_expired_files() == 2
    disk.ratio = 0.86  # above diskSpaceCleanForciblyRatio: unexpired ones go too
    assert store.clean_expired_files() == 1
    assert len(store._log.files) == 1  # never the active segment
    assert store.put_message(msg()).ok


def test_disk_full_refuses_appends(open_store: OpenStore, msg: MakeMessage) -> None:
    disk = Disk(0.95)
    store = open_store(disk_usage=disk)
    refused = store.put_message(msg())
    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert "disk full" in refused.error
    assert store.disk_use_ratio() == 0.95
    assert not store.writable
    disk.ratio = 0.50
    store.clean_expired_files()
    assert store.put_message(msg()).ok


async def test_background_retention_notices_a_full_disk(
    config: StoreConfig, msg: MakeMessage
) -> None:
    disk = Disk()
    store = MessageStore(dataclasses.replace(config, clean_resource_interval=10), disk_usage=disk)
    await store.start()
    assert store.put_message(msg()).ok
    disk.ratio = 0.99
    for _ in range(200):
        if not store.writable:
            break
        await asyncio.sleep(0.01)
    assert store.put_message(msg()).status is PutStatus.SERVICE_NOT_AVAILABLE
    await store.shutdown()
