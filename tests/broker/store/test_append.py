"""Appending: round trip, queue offsets, segment roll with filler, batches, limits."""

from __future__ import annotations

import errno
import itertools
import struct
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest

from rocketkube.broker.store import (
    InnerMessage,
    MessageStore,
    PutStatus,
    StoreConfig,
    commitlog,
    mapped_file,
)
from rocketkube.common.message import ids, record

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]

SEGMENT = 64 * 1024


def test_round_trip_one_message(open_store: OpenStore, msg: MakeMessage, clock: Any) -> None:
    store = open_store()
    result = store.put_message(msg(b"payload", tags="TagA", keys="k1 k2", uniq="U1"))
    assert result.status is PutStatus.PUT_OK
    assert result.flush is None  # ASYNC_FLUSH
    (appended,) = result.appended
    assert appended.physical_offset == 0
    assert appended.queue_offset == 0
    assert appended.store_timestamp == clock.now
    assert appended.msg_id == ids.encode_offset_msg_id("10.0.0.1", 10911, 0)
    view = store.lookup_message(0)
    assert view is not None
    assert len(view) == appended.size
    message = record.decode(view)
    assert message.body == b"payload"
    assert message.topic == "TopicA"
    assert message.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1"}
    assert message.born_host == "10.0.0.9:40000"
    assert message.store_host == "10.0.0.1:10911"
    assert message.store_timestamp == clock.now
    assert store.commit_log_max_offset == appended.size
    got = store.get_messages("TopicA", 0, 0, 32)
    assert got.found
    assert got.body() == bytes(view)


def test_queue_offsets_per_queue_and_skipped_for_prepared_and_rollback(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    store = open_store()
    offsets = [
        store.put_message(msg(queue_id=q, sys_flag=flag)).appended[0].queue_offset
        for q, flag in [(0, 0), (0, 0), (1, 0), (0, 0x4), (0, 0xC), (0, 0x8), (1, 0)]
    ]
    assert offsets == [0, 1, 0, 0, 0, 2, 1]
    assert store.max_offset("TopicA", 0) == 3  # PREPARED and ROLLBACK are not in the CQ
    assert store.max_offset("TopicA", 1) == 2
    got = store.get_messages("TopicA", 0, 0, 32)
    assert got.queue_offsets == [0, 1, 2]
    assert [m.sys_flag & 0xC for m in record.decode_all(got.body())] == [0, 0, 0x8]


def test_segment_roll_writes_blank_filler(open_store: OpenStore, msg: MakeMessage) -> None:
    store = open_store()
    body = b"x" * 1000
    ends = []
    while store.commit_log_max_offset < SEGMENT:
        result = store.put_message(msg(body))
        ends.append(result.appended[0])
    first_in_second = ends[-1]
    assert first_in_second.physical_offset == SEGMENT
    last_in_first = ends[-2]
    filler_at = last_in_first.physical_offset + last_in_first.size
    segment = (store.paths.commit_log / f"{0:020d}").read_bytes()
    size, magic = struct.unpack_from(">ii", segment, filler_at)
    assert magic == record.BLANK_MAGIC
    assert size == SEGMENT - filler_at
    assert sorted(p.name for p in store.paths.commit_log.iterdir()) == [
        f"{0:020d}",
        f"{SEGMENT:020d}",
    ]
    got = store.get_messages("TopicA", 0, 0, 1000)
    assert got.message_count == 32  # maxTransferCountOnMessageInMemory
    everything = []
    offset = 0
    while True:
        got = store.get_messages("TopicA", 0, offset, 32)
        if not got.found:
            break
        everything.extend(record.decode_all(got.body()))
        offset = got.next_begin_offset
    assert [m.commit_log_offset for m in everything] == [e.physical_offset for e in ends]


def test_batch_that_does_not_fit_moves_whole(open_store: OpenStore, msg: MakeMessage) -> None:
    store = open_store()
    for _ in range(6):
        store.put_message(msg(b"y" * 10_000))  # 60.7 KB of 64 KiB used
    # 10 x ~610 B: the first would fit in the 4954 B left, the batch does not
    batch = [msg(b"b" * 500, uniq=f"B{i}") for i in range(10)]
    result = store.put_messages(batch)
    assert result.status is PutStatus.PUT_OK
    phys = [a.physical_offset for a in result.appended]
    assert phys[0] == SEGMENT
    assert all(b - a == result.appended[0].size for a, b in itertools.pairwise(phys))
    assert [a.queue_offset for a in result.appended] == list(range(6, 16))
    got = store.get_messages("TopicA", 0, 6, 32)
    assert len(got.buffers) == 1  # contiguous records: one zero-copy view
    assert [m.properties["UNIQ_KEY"] for m in record.decode_all(got.buffers[0])] == [
        f"B{i}" for i in range(10)
    ]


def test_limits_are_statuses(open_store: OpenStore, msg: MakeMessage, config: StoreConfig) -> None:
    store = open_store()
    too_big = store.put_message(msg(b"z" * (config.max_message_size + 1)))
    assert too_big.status is PutStatus.MESSAGE_ILLEGAL
    assert not too_big.appended
    props = msg(extra={"big": "v" * 40_000})
    assert store.put_message(props).status is PutStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.put_message(msg(topic="t" * 128)).status is PutStatus.MESSAGE_ILLEGAL
    assert store.put_message(msg(topic="../evil")).status is PutStatus.MESSAGE_ILLEGAL
    whole = [msg(b"w" * 10_000) for _ in range(7)]  # 70 KB > one 64 KiB segment
    assert store.put_messages(whole).status is PutStatus.MESSAGE_ILLEGAL
    assert store.commit_log_max_offset == 0
    assert store.put_messages([]).status is PutStatus.PUT_OK


def test_closed_store_refuses(open_store: OpenStore, msg: MakeMessage) -> None:
    store = open_store()
    store.close()
    assert store.put_message(msg()).status is PutStatus.SERVICE_NOT_AVAILABLE


def test_arrival_listener_called_once_per_batch_and_queue(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    store = open_store()
    calls: list[tuple[str, int, int, list[int]]] = []
    store.add_arrival_listener(lambda t, q, m, codes: calls.append((t, q, m, list(codes))))
    store.put_messages([msg(tags="TagA"), msg(tags="TagB"), msg(queue_id=2)])
    store.put_message(msg(sys_flag=0x4))  # PREPARED: no consume queue entry, no call
    assert calls == [("TopicA", 0, 2, [2598919, 2598920]), ("TopicA", 2, 1, [0])]


def test_page_reservation_failure_is_a_status(
    open_store: OpenStore, msg: MakeMessage, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()
    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(mapped_file.MappedFile, "populate", mock.Mock(side_effect=full))
    assert store.put_message(msg()).status is PutStatus.SERVICE_NOT_AVAILABLE
    old_kernel = OSError(errno.EINVAL, "Invalid argument")
    monkeypatch.setattr(mapped_file.MappedFile, "populate", mock.Mock(side_effect=old_kernel))
    assert store.put_message(msg()).ok  # unsupported: plain page faults from now on
    assert store.put_message(msg()).ok


def test_an_integer_out_of_its_record_field_is_illegal_and_takes_nothing(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    store = open_store()
    assert store.put_message(msg(b"first")).appended[0].queue_offset == 0
    end = store.commit_log_max_offset
    for field, value in [("flag", 1 << 31), ("reconsume_times", -(1 << 31) - 1),
                         ("sys_flag", 1 << 40), ("born_timestamp", 1 << 63),
                         ("prepared_transaction_offset", -(1 << 63) - 1)]:  # fmt: skip
        bad = msg(b"bad")._replace(**{field: value})  # type: ignore[arg-type]
        result = store.put_messages([msg(b"good"), bad])
        assert result.status is PutStatus.MESSAGE_ILLEGAL
        assert field in result.error
        assert store.commit_log_max_offset == end
        assert store.max_offset("TopicA", 0) == 1
    assert store.put_message(msg(b"second")).appended[0].queue_offset == 1


@pytest.mark.parametrize(
    ("field", "value"), [("flag", 1 << 31), ("born_timestamp", 1 << 64), ("queue_id", -(1 << 40))]
)
def test_a_run_that_fails_to_encode_takes_no_offset_and_leaves_no_record(
    open_store: OpenStore,
    msg: MakeMessage,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    value: int,
) -> None:
    """Should a message pass validation and still fail to encode, the run is undone: the
    records written before it are zeroed (a crash recovery cannot find them) and no queue
    offset is taken, with the compiled loop as with the Python one."""
    monkeypatch.setattr(commitlog, "_out_of_range", lambda _message: "")
    store = open_store()
    store.put_message(msg(b"first"))
    end = store.commit_log_max_offset
    bad = msg(b"bad", topic="TopicC")._replace(**{field: value})  # type: ignore[arg-type]
    run = [msg(b"a"), msg(b"b", queue_id=1), msg(b"c", topic="TopicB"), bad]
    result = store.put_messages(run)
    assert result.status is PutStatus.MESSAGE_ILLEGAL
    assert store.commit_log_max_offset == end
    assert store.put_message(msg(b"next")).appended[0].queue_offset == 1
    assert store.put_message(msg(b"new", queue_id=1)).appended[0].queue_offset == 0
    assert store.put_message(msg(b"new", topic="TopicB")).appended[0].queue_offset == 0
    store.close_abruptly()  # a crash: recovery scans the log for records
    store = open_store()
    found = store.get_messages("TopicA", 0, 0, 32)
    assert [m.body for m in record.decode_all(found.body())] == [b"first", b"next"]
    assert store.max_offset("TopicB", 0) == 1
    assert store.max_offset("TopicC", 0) == 0
