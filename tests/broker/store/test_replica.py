"""A slave's store: bytes copied from a master's commit log, in chunks cut anywhere, make
the same commit log, consume queues and index as the master's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from rocketkube.broker.store import (
    GetStatus,
    InnerMessage,
    MessageStore,
    ReplicaMismatchError,
    StoreConfig,
)
from rocketkube.common.message import record

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]


def chunks(master: MessageStore, start: int, size: int) -> Iterator[tuple[int, bytes]]:
    """The master's log from ``start`` in chunks of at most ``size`` bytes, never crossing
    a segment: what a master's HA connection sends."""
    at = start
    while (data := master.read_commit_log(at, size)) is not None:
        yield at, bytes(data)
        at += len(data)


def copy_all(master: MessageStore, slave: MessageStore, size: int) -> int:
    end = slave.commit_log_max_offset
    for offset, data in chunks(master, end, size):
        end = slave.append_replica(offset, data)
    return end


def bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    """Every body in the queue, pulled from offset 0 as a consumer would."""
    found: list[bytes] = []
    offset = 0
    while (result := store.get_messages(topic, queue_id, offset, 32)).status is GetStatus.FOUND:
        found += [m.body for m in record.decode_all(b"".join(result.buffers))]
        offset = result.next_begin_offset
    return found


def two_records(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage
) -> tuple[MessageStore, bytes, int]:
    """An empty slave, and the master's log of two records "one" and "two" with the size
    of the first."""
    master = open_store()
    master.put_messages([msg(b"one"), msg(b"two")])
    data = bytes(master.read_commit_log(0, 1 << 20) or b"")
    return open_store(slave_config), data, record.check(data, 0)


@pytest.fixture
def slave_config(config: StoreConfig, tmp_path: Path) -> StoreConfig:
    return replace(config, store_path_root_dir=tmp_path / "slave", store_host="10.0.0.2:10911")


@pytest.mark.parametrize("chunk", [97, 32 * 1024])
def test_copy_in_any_chunks_makes_the_same_queues_and_index(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage, chunk: int
) -> None:
    master = open_store()
    slave = open_store(slave_config)
    for i in range(360):  # 64 KiB segments: three of them, each ended by a blank filler
        tags = "TagA" if i % 2 else "TagB"
        body = b"m%03d" % i + b"x" * 300
        put = master.put_messages(
            [msg(body, queue_id=i % 3, keys=f"K{i}", uniq=f"U{i}", tags=tags)]
        )
        assert put.ok
    assert len(master._log.files) > 2
    end = copy_all(master, slave, chunk)
    assert end == slave.commit_log_max_offset == master.commit_log_max_offset
    assert slave.dispatch_offset == end
    for queue_id in range(3):
        assert bodies(slave, "TopicA", queue_id) == bodies(master, "TopicA", queue_id)
        assert len(bodies(slave, "TopicA", queue_id)) == 120
    query = slave.query_by_key("TopicA", "K7", 10, 0, 2**62)
    assert [record.decode(b).body[:4] for b in query.buffers] == [b"m007"]
    assert slave.query_by_key("TopicA", "U359", 10, 0, 2**62).physical_offsets
    # the slave's next appends continue the queue offsets it copied
    assert slave._log.queue_offsets[("TopicA", 0)] == master._log.queue_offsets[("TopicA", 0)]


def test_a_cut_record_is_dispatched_when_its_rest_arrives(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage
) -> None:
    slave, data, first = two_records(open_store, slave_config, msg)
    cut = first + 10
    assert slave.append_replica(0, data[:cut]) == cut
    assert bodies(slave, "TopicA", 0) == [b"one"]
    assert slave.dispatch_offset == first
    slave.append_replica(cut, data[cut:])
    assert bodies(slave, "TopicA", 0) == [b"one", b"two"]
    assert slave.dispatch_offset == len(data)


def test_a_clean_shutdown_drops_a_cut_record_for_the_master_to_send_again(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage
) -> None:
    slave, data, first = two_records(open_store, slave_config, msg)
    slave.append_replica(0, data[: first + 10])
    slave.close()
    again = open_store(slave_config)
    assert again.recovery is not None
    assert again.recovery.clean
    assert again.commit_log_max_offset == first  # what it reports to the master
    again.append_replica(first, data[first:])
    assert bodies(again, "TopicA", 0) == [b"one", b"two"]


def test_an_empty_slave_starts_at_the_masters_segment(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage, config: StoreConfig
) -> None:
    master = open_store()
    slave = open_store(slave_config)
    while master.commit_log_max_offset < config.mapped_file_size_commit_log:
        master.put_messages([msg(b"y" * 1000)])
    start = config.mapped_file_size_commit_log
    for offset, data in chunks(master, start, 4096):
        slave.append_replica(offset, data)
    assert slave.commit_log_min_offset == start
    assert slave.commit_log_max_offset == master.commit_log_max_offset
    assert bodies(slave, "TopicA", 0) == []  # queue offsets below are not on this slave
    later = master.max_offset("TopicA", 0) - 1
    result = slave.get_messages("TopicA", 0, later, 1)
    assert result.status is GetStatus.FOUND


def test_bytes_that_do_not_continue_the_log_are_refused(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage
) -> None:
    master = open_store()
    slave = open_store(slave_config)
    master.put_messages([msg(b"one")])
    data = bytes(master.read_commit_log(0, 1 << 20) or b"")
    with pytest.raises(ReplicaMismatchError, match="segment boundary"):
        slave.append_replica(100, data)
    slave.append_replica(0, data)
    with pytest.raises(ReplicaMismatchError, match="ends at"):
        slave.append_replica(0, data)
    with pytest.raises(ReplicaMismatchError, match="cross the segment end"):
        slave.append_replica(len(data), b"\0" * (1 << 20))
    assert slave.commit_log_max_offset == len(data)


def test_a_restarted_slave_resumes_from_its_end(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage
) -> None:
    master = open_store()
    slave = open_store(slave_config)
    for i in range(10):
        master.put_messages([msg(b"a%d" % i)])
    copy_all(master, slave, 100)
    slave.close()
    for i in range(10):
        master.put_messages([msg(b"b%d" % i)])
    again = open_store(slave_config)
    copy_all(master, again, 100)
    assert bodies(again, "TopicA", 0) == bodies(master, "TopicA", 0)
    assert len(bodies(again, "TopicA", 0)) == 20


def test_a_corrupt_record_stops_dispatch_but_not_the_copy(
    open_store: OpenStore, slave_config: StoreConfig, msg: MakeMessage
) -> None:
    slave, good, first = two_records(open_store, slave_config, msg)
    data = bytearray(good)
    data[first + 4 : first + 8] = b"\0\0\0\0"  # the second record's magic
    assert slave.append_replica(0, data) == len(data)
    assert bodies(slave, "TopicA", 0) == [b"one"]
    assert slave.dispatch_offset == first
