"""Reading: every get status, tag filtering, offsets by time, lookup by offset and key."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rocketkube.broker.store import GetStatus, InnerMessage, MessageStore, StoreConfig
from rocketkube.broker.store.memory import total_memory_bytes
from rocketkube.common.message import hashing, record

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]


@pytest.fixture
def store(open_store: OpenStore, msg: MakeMessage, clock: Any) -> MessageStore:
    """TopicA queue 0 with 10 messages, tags alternating TagA/TagB, 1 s apart."""
    s = open_store()
    for i in range(10):
        s.put_message(msg(f"m{i}".encode(), tags="TagA" if i % 2 == 0 else "TagB", uniq=f"U{i}"))
        clock.advance(1000)
    return s


def test_status_no_matched_logic_queue(store: MessageStore) -> None:
    got = store.get_messages("Nope", 0, 5, 32)
    assert (got.status, got.next_begin_offset) == (GetStatus.NO_MATCHED_LOGIC_QUEUE, 0)


def test_status_no_message_in_queue(store: MessageStore, msg: MakeMessage) -> None:
    store.put_message(msg(topic="Half", sys_flag=0x4))  # prepared only: no CQ entry...
    store.put_message(msg(topic="Empty"))
    store.delete_topic("Empty")
    store._queues.find_or_create("Empty", 0)  # a queue that exists but holds nothing
    got = store.get_messages("Empty", 0, 3, 32)
    assert (got.status, got.next_begin_offset) == (GetStatus.NO_MESSAGE_IN_QUEUE, 0)
    assert store.get_messages("Half", 0, 0, 32).status is GetStatus.NO_MATCHED_LOGIC_QUEUE


def test_status_overflow_one_and_badly(store: MessageStore) -> None:
    one = store.get_messages("TopicA", 0, 10, 32)
    assert (one.status, one.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_ONE, 10)
    badly = store.get_messages("TopicA", 0, 15, 32)
    assert (badly.status, badly.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, 10)
    assert (badly.min_offset, badly.max_offset) == (0, 10)


def test_status_found_with_bounds(store: MessageStore) -> None:
    got = store.get_messages("TopicA", 0, 3, 4)
    assert got.status is GetStatus.FOUND
    assert got.next_begin_offset == 7
    assert got.queue_offsets == [3, 4, 5, 6]
    assert [m.body for m in record.decode_all(got.body())] == [b"m3", b"m4", b"m5", b"m6"]
    assert len(got.buffers) == 1
    assert got.total_size == len(got.buffers[0])


def test_tag_filter_and_no_matched_message(store: MessageStore, msg: MakeMessage) -> None:
    code_a = hashing.tags_code("TagA")
    got = store.get_messages("TopicA", 0, 0, 32, lambda code: code == code_a)
    assert got.queue_offsets == [0, 2, 4, 6, 8]
    assert len(got.buffers) == 5  # not contiguous any more
    assert got.next_begin_offset == 10
    none = store.get_messages("TopicA", 0, 0, 32, lambda code: False)
    assert (none.status, none.next_begin_offset) == (GetStatus.NO_MATCHED_MESSAGE, 10)


def test_status_offset_too_small_and_message_was_removing(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    store = open_store()
    for _ in range(8):
        store.put_message(msg(b"x" * 10_000))
    assert len(store._log.files) == 2
    store._log.files.delete_first(1)  # commit log segment gone, consume queue not yet cleaned
    skipping = store.get_messages("TopicA", 0, 0, 32)
    assert skipping.queue_offsets == [6, 7]  # entries of the deleted segment are skipped
    removing = store.get_messages("TopicA", 0, 0, 32, lambda code: False)
    assert removing.status is GetStatus.MESSAGE_WAS_REMOVING
    store._retention.clean_derived()
    low = store.min_offset("TopicA", 0)
    assert low == 6
    small = store.get_messages("TopicA", 0, 2, 32)
    assert (small.status, small.next_begin_offset) == (GetStatus.OFFSET_TOO_SMALL, 6)
    assert store.get_messages("TopicA", 0, 6, 32).queue_offsets == [6, 7]


def test_status_offset_found_null(open_store: OpenStore, msg: MakeMessage) -> None:
    store = open_store()
    store.put_messages([msg(b"s") for _ in range(150)])  # consume queue files of 100 entries
    queue = store._queues.find("TopicA", 0)
    assert queue is not None
    queue.files.delete_first(1)  # the file is gone but the min offset was not moved yet
    got = store.get_messages("TopicA", 0, 40, 32)
    assert (got.status, got.next_begin_offset) == (GetStatus.OFFSET_FOUND_NULL, 100)


def test_offset_by_timestamp_and_earliest(store: MessageStore, clock: Any) -> None:
    t0 = clock.now - 10_000  # store time of offset 0
    assert store.offset_by_timestamp("TopicA", 0, t0) == 0
    assert store.offset_by_timestamp("TopicA", 0, t0 + 3000) == 3  # exact
    assert store.offset_by_timestamp("TopicA", 0, t0 + 3400) == 3  # closer to 3
    assert store.offset_by_timestamp("TopicA", 0, t0 + 3600) == 4  # closer to 4
    assert store.offset_by_timestamp("TopicA", 0, t0 + 3500) == 3  # a tie goes earlier
    assert store.offset_by_timestamp("TopicA", 0, t0 - 99_999) == 0
    assert store.offset_by_timestamp("TopicA", 0, t0 + 99_999) == 9
    assert store.offset_by_timestamp("Nope", 0, t0) == 0
    assert store.earliest_message_time("TopicA", 0) == t0
    assert store.earliest_message_time("Nope", 0) == -1
    assert store.store_timestamp("TopicA", 0, 4) == t0 + 4000


def test_lookup_by_offset(store: MessageStore) -> None:
    got = store.get_messages("TopicA", 0, 2, 1)
    (message,) = record.decode_all(got.body())
    found = store.lookup_message_ext(message.commit_log_offset)
    assert found is not None
    assert found.body == b"m2"
    assert store.lookup_message(message.commit_log_offset + 1) is None  # not a record start
    assert store.lookup_message(10**9) is None


def test_query_by_key_and_uniq_key(store: MessageStore, msg: MakeMessage, clock: Any) -> None:
    store.put_message(msg(b"k1", keys="order-1 shared", uniq="X1"))
    store.put_message(msg(b"k2", keys="shared", uniq="X2"))
    store.put_message(msg(b"other-topic", topic="TopicB", keys="shared"))
    everything = (0, clock.now + 1000)
    by_uniq = store.query_by_key("TopicA", "U3", 32, *everything)
    assert [m.body for m in record.decode_all(by_uniq.body())] == [b"m3"]
    shared = store.query_by_key("TopicA", "shared", 32, *everything)
    assert [m.body for m in record.decode_all(shared.body())] == [b"k2", b"k1"]  # newest first
    assert store.query_by_key("TopicA", "shared", 1, *everything).physical_offsets == [
        shared.physical_offsets[0]
    ]
    assert store.query_by_key("TopicA", "order-1", 32, *everything).physical_offsets == [
        shared.physical_offsets[1]
    ]
    assert store.query_by_key("TopicA", "missing", 32, *everything).buffers == []
    assert store.query_by_key("TopicA", "U3", 32, clock.now + 5000, clock.now + 9000).buffers == []
    assert shared.index_last_update_phy_offset == store.commit_log_max_offset - len(
        store.lookup_message(shared.index_last_update_phy_offset) or b""
    )


def test_index_rolls_to_new_files(open_store: OpenStore, msg: MakeMessage, clock: Any) -> None:
    store = open_store()  # 256 entries per index file in these tests
    for i in range(600):
        store.put_message(msg(b"i", uniq=f"K{i}"))
    assert len(list(store.paths.index.iterdir())) == 3
    for probe in ("K0", "K300", "K599"):
        got = store.query_by_key("TopicA", probe, 32, 0, clock.now + 1)
        assert [m.properties["UNIQ_KEY"] for m in record.decode_all(got.body())] == [probe]


def test_delete_topic(store: MessageStore, msg: MakeMessage) -> None:
    assert store.delete_topic("TopicA") == 1
    assert store.get_messages("TopicA", 0, 0, 32).status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    assert not (store.paths.consume_queue / "TopicA").exists()
    assert store.put_message(msg()).appended[0].queue_offset == 0
    assert store.topics() == ["TopicA"]


def test_a_read_far_behind_the_log_end_suggests_a_slave(
    open_store: OpenStore, msg: MakeMessage, config: StoreConfig
) -> None:
    first = open_store()
    for i in range(10):
        first.put_message(msg(b"m%d" % i))
    size = first.get_messages("TopicA", 0, 0, 1).total_size  # every record has this size
    first.close()
    half = replace(config, access_message_in_memory_max_ratio=50)
    store = open_store(half, memory_bytes=lambda: 2 * 3 * size)  # 3 records "in memory"

    def suggested(offset: int, max_nums: int) -> bool:
        return store.get_messages("TopicA", 0, offset, max_nums).suggest_pulling_from_slave

    # Measured from the last entry read, the one that stopped the batch included (Java).
    assert suggested(0, 1)  # read up to entry 1: 9 records behind the end
    assert suggested(5, 1)  # entry 6: 4 behind
    assert not suggested(6, 1)  # entry 7: 3 behind, not more than the memory
    assert not suggested(7, 32)


def test_the_memory_is_the_cgroup_limit_when_lower(tmp_path: Path) -> None:
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    assert total_memory_bytes((v2, v1)) == physical  # no cgroup files
    v1.write_text(f"{1 << 62}\n")  # cgroup v1 without a limit: a huge number
    assert total_memory_bytes((v2, v1)) == physical
    v2.write_text("max\n")
    assert total_memory_bytes((v2, v1)) == physical
    v2.write_text("536870912\n")
    assert total_memory_bytes((v2, v1)) == 512 << 20
