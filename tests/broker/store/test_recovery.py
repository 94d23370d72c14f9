"""Recovery: torn and corrupt tails after a crash, the clean restart path, the lock file,
and a real process killed mid-append."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rocketkube.broker.store import (
    GetStatus,
    InnerMessage,
    MessageStore,
    StoreConfig,
    StoreLockedError,
)
from rocketkube.common.message import record

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]


def log_records(store: MessageStore) -> list[record.RecordMeta]:
    """Every valid record of the commit log, by a fresh scan."""
    log = store._log
    return [record.read_meta(m.view, pos) for m, pos, _ in log.scan(log.min_offset)]


def queue_entries(store: MessageStore, topic: str, queue_id: int) -> list[tuple[int, int]]:
    """(queue offset, commit log offset) of each consume queue entry."""
    queue = store._queues.find(topic, queue_id)
    if queue is None:
        return []
    out = []
    for offset in range(queue.min_offset, queue.max_offset):
        entry = queue.entry(offset)
        assert entry is not None
        out.append((offset, entry[0]))
    return out


def assert_consistent(store: MessageStore) -> list[record.RecordMeta]:
    """Consume queues hold exactly the log's dispatchable records, in order."""
    records = log_records(store)
    expected: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for meta in records:
        if meta.sys_flag & 0xC in (0x4, 0xC):
            continue
        expected.setdefault((meta.topic, meta.queue_id), []).append(
            (meta.queue_offset, meta.physical_offset)
        )
    for (topic, queue_id), entries in expected.items():
        assert queue_entries(store, topic, queue_id) == entries
        assert store.max_offset(topic, queue_id) == entries[-1][0] + 1
    assert store.commit_log_max_offset == log_end(store, records)
    return records


def log_end(store: MessageStore, records: list[record.RecordMeta]) -> int:
    """Where the log must end: after its last record or, when the writer closed that
    record's segment with the blank filler and died before writing into the next one, at
    the segment's end (as Java's recovery ends there)."""
    if not records:
        return 0
    end = records[-1].physical_offset + records[-1].size
    segment = store._log.files.find(end)
    assert segment is not None
    at = end - segment.start
    if record.check(segment.view, at, segment.size, expected_offset=end) == record.CHECK_BLANK:
        return segment.end
    return end


def fill(store: MessageStore, msg: MakeMessage, count: int) -> None:
    for i in range(count):
        store.put_message(msg(b"%05d" % i + b"." * 900, queue_id=i % 3, keys=f"key{i}"))


def test_corrupt_body_in_tail_truncates_there(
    open_store: OpenStore, msg: MakeMessage, clock: Any
) -> None:
    store = open_store()
    fill(store, msg, 150)  # ~140 KB: three 64 KiB segments
    before = log_records(store)
    root = store.paths
    store.close_abruptly()
    assert root.abort.exists()
    victim = before[120]
    segment = root.commit_log / f"{victim.physical_offset // 65536 * 65536:020d}"
    data = bytearray(segment.read_bytes())
    data[victim.physical_offset % 65536 + 100] ^= 0x55  # a body byte: CRC mismatch
    segment.write_bytes(bytes(data))

    store = open_store()
    assert store.recovery is not None
    assert not store.recovery.clean
    records = assert_consistent(store)
    assert [r.physical_offset for r in records] == [r.physical_offset for r in before[:120]]
    assert store.commit_log_max_offset == victim.physical_offset
    assert store.query_by_key("TopicA", "key119", 32, 0, clock.now + 1).physical_offsets
    assert not store.query_by_key("TopicA", "key121", 32, 0, clock.now + 1).physical_offsets
    next_result = store.put_message(msg(b"after", queue_id=120 % 3))
    assert next_result.appended[0].physical_offset == victim.physical_offset
    assert next_result.appended[0].queue_offset == 40
    assert_consistent(store)


def test_torn_last_record_and_zeroed_tail(open_store: OpenStore, msg: MakeMessage) -> None:
    store = open_store()
    fill(store, msg, 30)
    before = log_records(store)
    paths = store.paths
    store.close_abruptly()
    last = before[-1]
    segment = paths.commit_log / f"{0:020d}"
    data = bytearray(segment.read_bytes())
    cut = last.physical_offset + last.size // 2
    data[cut : last.physical_offset + last.size] = bytes(last.physical_offset + last.size - cut)
    segment.write_bytes(bytes(data))

    store = open_store()
    records = assert_consistent(store)
    assert len(records) == 29
    assert store.max_offset("TopicA", 29 % 3) == 9  # queue 2 lost its 10th message


def test_log_ending_in_a_blank_filler_goes_on_in_the_next_segment(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    """Killed after closing a segment with its blank filler, before the record that did
    not fit was written: the log ends at the segment's end and goes on in a new one."""
    store = open_store()
    fill(store, msg, 80)  # ~75 KB: the second 64 KiB segment is begun
    before = log_records(store)
    paths = store.paths
    store.close_abruptly()
    first_in_second = next(r for r in before if r.physical_offset >= 65536)
    assert first_in_second.physical_offset == 65536
    kept = [r for r in before if r.physical_offset < 65536]
    assert kept[-1].physical_offset + kept[-1].size < 65536  # a blank filler follows
    (paths.commit_log / f"{65536:020d}").unlink()  # the next segment was never written
    (paths.checkpoint).unlink()

    store = open_store()
    assert store.recovery is not None
    assert not store.recovery.clean
    records = assert_consistent(store)
    assert [r.physical_offset for r in records] == [r.physical_offset for r in kept]
    assert store.commit_log_max_offset == 65536
    result = store.put_message(msg(b"next", queue_id=0))
    assert result.ok
    assert result.appended[0].physical_offset == 65536
    store.close()
    store = open_store()
    records = assert_consistent(store)
    assert records[-1].physical_offset == 65536
    assert len(records) == len(kept) + 1


def test_consume_queue_entries_past_the_log_end_are_dropped(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    store = open_store()
    fill(store, msg, 20)
    paths = store.paths
    before = log_records(store)
    store.close_abruptly()
    segment = paths.commit_log / f"{0:020d}"
    data = bytearray(segment.read_bytes())
    start = before[15].physical_offset
    data[start:] = bytes(len(data) - start)  # the log lost its last 5 records
    segment.write_bytes(bytes(data))
    (paths.checkpoint).unlink()  # and nothing says how far things got: full scan

    store = open_store()
    assert store.recovery is not None
    assert store.recovery.start == 0
    assert len(assert_consistent(store)) == 15
    got = store.get_messages("TopicA", 0, 0, 32)
    assert got.queue_offsets == [0, 1, 2, 3, 4]
    assert store.get_messages("TopicA", 0, 5, 32).status is GetStatus.OFFSET_OVERFLOW_ONE


def test_crash_recovery_replays_only_past_the_checkpoint(
    open_store: OpenStore, msg: MakeMessage, config: StoreConfig
) -> None:
    open_store = functools.partial(open_store, replace(config, max_hash_slot_num=10_000))
    store = open_store()
    fill(store, msg, 40)
    store.close()  # writes checkpoint safe offset = end
    store = open_store()
    fill(store, msg, 10)
    store.close_abruptly()
    store = open_store()
    assert store.recovery is not None
    assert store.recovery.replayed == 10
    assert len(assert_consistent(store)) == 50
    # key0..key9 twice (from the disk slots, then replayed), key10..key39 once
    for key, count in (("key0", 2), ("key9", 2), ("key10", 1), ("key39", 1)):
        assert len(store.query_by_key("TopicA", key, 32, 0, 2**62).physical_offsets) == count


def test_clean_restart_scans_nothing(open_store: OpenStore, msg: MakeMessage, clock: Any) -> None:
    store = open_store()
    fill(store, msg, 100)
    end = store.commit_log_max_offset
    store.close()
    assert not store.paths.abort.exists()
    store = open_store()
    assert store.recovery is not None
    assert (store.recovery.clean, store.recovery.replayed, store.recovery.end) == (True, 0, end)
    assert_consistent(store)
    result = store.put_message(msg(b"next", queue_id=1))
    assert result.appended[0].queue_offset == 33
    assert result.appended[0].physical_offset == end
    assert store.query_by_key("TopicA", "key7", 32, 0, clock.now + 1).physical_offsets


def test_clean_checkpoint_that_disagrees_falls_back_to_a_scan(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    store = open_store()
    fill(store, msg, 10)
    paths = store.paths
    store.close()
    store = open_store()
    fill(store, msg, 5)  # appended after the clean checkpoint was consumed...
    store._open = False  # ...then the process dies after somebody removed abort
    store._close_files()
    store._release_lock()
    paths.abort.unlink()
    store = open_store()
    assert store.recovery is not None
    assert not store.recovery.clean
    assert len(assert_consistent(store)) == 15


def test_second_store_on_the_same_directory_is_refused(
    open_store: OpenStore, config: StoreConfig
) -> None:
    open_store()
    with pytest.raises(StoreLockedError):
        MessageStore(config).open()


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from rocketkube.broker.store import InnerMessage, MessageStore, StoreConfig

    config = StoreConfig(
        store_path_root_dir=Path(sys.argv[1]),
        mapped_file_size_commit_log=256 * 1024,
        mapped_file_size_consume_queue=1000 * 20,
        max_hash_slot_num=1024,
        max_index_num=4096,
    )
    store = MessageStore(config)
    store.open()
    i = 0
    while True:
        batch = [
            InnerMessage("Kill", j % 4, b"%08d" % (i + j) * 8,
                         b"KEYS\\x01k%d\\x02UNIQ_KEY\\x01u%d" % (i + j, i + j))
            for j in range(10)
        ]
        assert store.put_messages(batch).ok
        i += 10
        if i % 500 == 0:
            print(i, flush=True)
    """
)


def test_process_killed_mid_append_recovers(tmp_path: Path, config: StoreConfig) -> None:
    root = tmp_path / "killed"
    command = [sys.executable, "-c", CHILD, str(root)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            acknowledged = 0
            while acknowledged < 3000:
                line = child.stdout.readline()
                assert line, "child died"
                acknowledged = int(line)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()

    store = MessageStore(
        replace(
            config,
            store_path_root_dir=root,
            mapped_file_size_commit_log=256 * 1024,
            mapped_file_size_consume_queue=1000 * 20,
            max_hash_slot_num=1024,
            max_index_num=4096,
        )
    )
    store.open()
    try:
        assert store.recovery is not None
        assert not store.recovery.clean
        records = assert_consistent(store)
        assert len(records) >= acknowledged
        bodies = [int(bytes(store.lookup_message_ext(r.physical_offset).body[:8]))  # type: ignore[union-attr]
                  for r in records]  # fmt: skip
        assert bodies == list(range(len(records)))
        last = len(records) - 1
        found = store.query_by_key("Kill", f"u{last}", 32, 0, 2**62)
        assert len(found.physical_offsets) == 1
        assert store.put_message(InnerMessage("Kill", 0, b"more")).ok
    finally:
        store.close()
