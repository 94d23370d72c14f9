"""A full disk is an error the store handles, never a SIGBUS: on a real tmpfs filled to its
last block, every file the store maps gets its blocks before it is written through the
mapping, an append that needs blocks the disk lacks is refused before anything is written,
and the store opens, reads and takes appends again once space returns.

The disk-use ratio rule (``diskSpaceWarningLevelRatio``) is set out of reach here, so
that what refuses is the allocation itself; ``test_disk_guard.py`` covers the ratio.
"""

from __future__ import annotations

import dataclasses
import errno
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tmpfs import fill, tmpfs

from rocketkube.broker.store import (
    GetStatus,
    InnerMessage,
    MessageStore,
    PutStatus,
    StoreConfig,
)
from rocketkube.broker.store.commitlog import ALLOCATION_UNIT
from rocketkube.broker.store.consume_queue import ALLOCATION_UNIT as QUEUE_UNIT
from rocketkube.broker.store.disk_guard import disk_usage_ratio
from rocketkube.broker.store.index import ALLOCATION_UNIT as INDEX_UNIT
from rocketkube.broker.store.mapped_file import MappedFile
from rocketkube.common.message import record

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]
DISK = 4 << 20


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", DISK) as path:
        yield path


@pytest.fixture
def full_disk_config(config: StoreConfig, disk: Path) -> StoreConfig:
    return dataclasses.replace(
        config, store_path_root_dir=disk / "store", disk_space_warning_level_ratio=1.01
    )


@pytest.fixture
def open_full(open_store: OpenStore, full_disk_config: StoreConfig) -> Callable[[], MessageStore]:
    """Opens the store on the small disk, measuring it for real."""
    return lambda: open_store(full_disk_config, disk_usage=disk_usage_ratio)


def bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    found: list[bytes] = []
    offset = 0
    while (result := store.get_messages(topic, queue_id, offset, 32)).status is GetStatus.FOUND:
        found += [m.body for m in record.decode_all(b"".join(result.buffers))]
        offset = result.next_begin_offset
    return found


def test_a_file_created_on_a_full_disk_is_an_oserror_and_leaves_nothing(disk: Path) -> None:
    fill(disk / "filler")
    path = disk / "00000000000000000000"
    with pytest.raises(OSError, match="No space left") as caught:
        MappedFile(path, 0, 64 * 1024)
    assert caught.value.errno == errno.ENOSPC
    assert not path.exists()


def test_a_file_is_written_only_where_its_blocks_are(disk: Path) -> None:
    mapped = MappedFile(disk / "00000000000000000000", 0, 64 * 1024, allocate=8192)
    fill(disk / "filler")
    assert mapped.allocated == 8192
    mapped.mm[0:8192] = b"x" * 8192  # its own blocks: no fault
    with pytest.raises(OSError, match="No space left") as caught:
        mapped.allocate(16384)
    assert caught.value.errno == errno.ENOSPC
    assert mapped.allocated == 8192
    (disk / "filler").unlink()
    mapped.allocate(16384)
    assert mapped.allocated == 16384
    mapped.mm[8192:16384] = b"y" * 8192
    mapped.close()


def test_files_take_disk_as_they_fill_not_at_creation(
    open_store: OpenStore, config: StoreConfig, msg: MakeMessage
) -> None:
    """Blocks come ahead of the writer in steps: a store with one small message holds a
    first step of its 64 MiB segment, of its 6 MB queue file and of its index file's
    entries, as sparse files did; they grow with what is written."""
    store = open_store(
        dataclasses.replace(
            config,
            mapped_file_size_commit_log=64 << 20,
            mapped_file_size_consume_queue=6_000_000,
            max_hash_slot_num=1000,
            max_index_num=200_000,
        )
    )
    assert store.put_message(msg(b"one", uniq="U")).ok

    def on_disk(path: Path) -> int:
        return path.stat().st_blocks * 512

    segment = store.paths.commit_log / "00000000000000000000"
    queue_file = store.paths.queue_dir("TopicA", 0) / "00000000000000000000"
    (index_file,) = store.paths.index.iterdir()
    slots = 40 + 4 * 1000
    assert ALLOCATION_UNIT <= on_disk(segment) < ALLOCATION_UNIT + (1 << 20)
    assert QUEUE_UNIT <= on_disk(queue_file) < QUEUE_UNIT + (1 << 20)
    assert slots + INDEX_UNIT <= on_disk(index_file) < slots + INDEX_UNIT + (1 << 20)
    keys = " ".join(f"k{n}" for n in range(100))
    for _ in range(600):  # 6 MB of records, 60,000 keys
        assert store.put_message(msg(b"x" * 10_000, keys=keys)).ok
    assert on_disk(segment) >= store.commit_log_max_offset + ALLOCATION_UNIT
    assert on_disk(index_file) >= slots + 60_000 * 20
    assert len(store.query_by_key("TopicA", "k99", 1000, 0, 2**62).buffers) == 64  # at most


def test_a_new_topic_on_a_full_disk_is_refused_with_nothing_written(
    disk: Path, open_full: Callable[[], MessageStore], msg: MakeMessage
) -> None:
    store = open_full()
    assert store.put_message(msg(b"first", topic="Old")).ok
    fill(disk / "filler")
    assert store.put_message(msg(b"second", topic="Old")).ok  # its blocks were allocated
    end = store.commit_log_max_offset

    refused = store.put_message(msg(b"new", topic="New", uniq="U1"))

    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert "disk full" in refused.error
    assert "No space left" in refused.error
    assert store.commit_log_max_offset == end  # no byte of it in the commit log
    assert store.max_offset("New", 0) == 0  # no queue offset taken
    assert "New" not in store.topics()  # no empty queue left behind
    assert not store.writable
    assert "disk full" in (store.write_refusal or "")
    later = store.put_message(msg(b"third", topic="Old"))  # a state: refused until space
    assert later.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert bodies(store, "Old", 0) == [b"first", b"second"]  # reads go on


def test_a_run_longer_than_the_reservation_is_refused_whole(
    tmp_path: Path, open_store: OpenStore, full_disk_config: StoreConfig, msg: MakeMessage
) -> None:
    """9 MB in one run: past the 4 MiB allocated ahead of the writer, so the append itself
    must allocate, and on a full disk refuses the run before writing a record of it."""
    with tmpfs(tmp_path / "bigger", 24 << 20) as disk:
        config = dataclasses.replace(
            full_disk_config,
            store_path_root_dir=disk / "store",
            mapped_file_size_commit_log=16 << 20,
            mapped_file_size_consume_queue=6_000_000,
            message_index_enable=False,
        )
        store = open_store(config, disk_usage=disk_usage_ratio)
        assert store.put_message(msg(b"first")).ok
        assert store.put_message(msg(b"second")).ok  # 8 MiB allocated ahead now
        fill(disk / "filler")
        run = [msg(b"%04d" % i + b"r" * 15_000) for i in range(600)]
        end = store.commit_log_max_offset

        refused = store.put_messages(run)

        assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE
        assert "disk full" in refused.error
        assert store.commit_log_max_offset == end
        assert store.max_offset("TopicA", 0) == 2
        assert bodies(store, "TopicA", 0) == [b"first", b"second"]
        store.close()


def test_appends_are_taken_again_once_space_returns(
    disk: Path, open_full: Callable[[], MessageStore], msg: MakeMessage, clock: object
) -> None:
    store = open_full()
    fill(disk / "filler")
    assert store.put_message(msg(b"refused")).status is PutStatus.SERVICE_NOT_AVAILABLE
    (disk / "filler").unlink()
    clock.advance(1000)  # type: ignore[attr-defined]  # the next append measures the disk

    assert store.put_message(msg(b"taken")).ok
    assert store.writable
    assert bodies(store, "TopicA", 0) == [b"taken"]


def test_filling_the_disk_refuses_and_loses_no_acknowledged_message(
    disk: Path, open_full: Callable[[], MessageStore], msg: MakeMessage
) -> None:
    """Appends to four queues, a key each, until the disk is full: commit log segments,
    queue files and index files all run out in turn."""
    store = open_full()
    taken: dict[int, list[bytes]] = {q: [] for q in range(4)}
    for i in range(100_000):
        queue_id = i % 4
        body = b"%06d" % i + b"m" * 4000
        before = (store.commit_log_max_offset, store.max_offset("TopicA", queue_id))
        result = store.put_message(msg(body, queue_id=queue_id, keys=f"k{i}"))
        if not result.ok:
            assert result.status is PutStatus.SERVICE_NOT_AVAILABLE
            assert (store.commit_log_max_offset, store.max_offset("TopicA", queue_id)) == before
            break
        taken[queue_id].append(body)
    else:
        pytest.fail("the disk never filled")
    assert sum(map(len, taken.values())) > 100
    for queue_id, expected in taken.items():
        assert bodies(store, "TopicA", queue_id) == expected
    last = taken[3][-1] if taken[3] else taken[0][-1]
    key = f"k{int(last[:6])}"
    assert store.query_by_key("TopicA", key, 32, 0, 2**62).buffers  # the index has it


@pytest.mark.parametrize("crash", [False, True], ids=["clean", "crash"])
def test_a_store_opens_on_a_full_disk_and_serves_reads(
    disk: Path, open_full: Callable[[], MessageStore], msg: MakeMessage, crash: bool
) -> None:
    store = open_full()
    for i in range(20):
        assert store.put_message(msg(b"m%d" % i, queue_id=i % 2, uniq=f"U{i}")).ok
    fill(disk / "filler")
    if crash:
        store.close_abruptly()
    else:
        store.close()

    again = open_full()

    assert again.recovery is not None
    assert again.recovery.clean is not crash
    assert bodies(again, "TopicA", 0) == [b"m%d" % i for i in range(0, 20, 2)]
    assert bodies(again, "TopicA", 1) == [b"m%d" % i for i in range(1, 20, 2)]
    assert again.query_by_key("TopicA", "U7", 32, 0, 2**62).buffers
    refused = again.put_message(msg(b"new", topic="New"))
    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE


def test_index_keys_without_room_are_left_out_and_the_message_stored(
    disk: Path,
    open_store: OpenStore,
    full_disk_config: StoreConfig,
    msg: MakeMessage,
) -> None:
    """More keys than the reservation counts on, the index file full and no disk for the
    next one: the message is stored, the keys that do not fit are not indexed."""
    config = dataclasses.replace(full_disk_config, max_index_num=64)
    store = open_store(config, disk_usage=disk_usage_ratio)
    assert store.put_message(msg(b"warm", uniq="U0")).ok
    fill(disk / "filler")
    keys = " ".join(f"k{i}" for i in range(80))

    result = store.put_message(msg(b"keyed", keys=keys))

    assert result.ok
    assert bodies(store, "TopicA", 0) == [b"warm", b"keyed"]
    assert store.query_by_key("TopicA", "k0", 32, 0, 2**62).buffers
    assert not store.query_by_key("TopicA", "k79", 32, 0, 2**62).buffers
    assert store.index_dropped_keys > 0


def test_a_slave_on_a_full_disk_writes_no_replica_byte(
    disk: Path,
    open_store: OpenStore,
    full_disk_config: StoreConfig,
    config: StoreConfig,
    msg: MakeMessage,
) -> None:
    master = open_store()
    for i in range(12):  # more than a 64 KiB segment
        assert master.put_message(msg(b"%02d" % i + b"r" * 8000)).ok
    slave = open_store(full_disk_config, disk_usage=disk_usage_ratio)
    first = bytes(master.read_commit_log(0, 1 << 20) or b"")
    end = slave.append_replica(0, first)
    fill(disk / "filler")

    with pytest.raises(OSError, match="No space left") as caught:  # no next segment
        slave.append_replica(end, bytes(master.read_commit_log(end, 1 << 20) or b""))

    assert caught.value.errno == errno.ENOSPC
    assert slave.commit_log_max_offset == end
    copied = bodies(slave, "TopicA", 0)
    assert 0 < len(copied) < 12
    assert copied == bodies(master, "TopicA", 0)[: len(copied)]
