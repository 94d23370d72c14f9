"""The stored record (docs/store.md §2.1): exact bytes built field by field, check()
verdicts, fuzzing."""

from __future__ import annotations

import contextlib
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common import errors
from rocketkube.common.message import ids, record

BODY = b"hello world"
PROPS = "TAGS\x01TagA\x02UNIQ_KEY\x01ABC"


def expected_v4_record(physical_offset: int = 4096) -> bytes:
    body_crc = zlib.crc32(BODY) & 0x7FFFFFFF
    fields = [
        struct.pack(">i", 91 + len(BODY) + 6 + len(PROPS)),  # TOTALSIZE
        bytes.fromhex("DAA320A7"),  # MAGICCODE
        struct.pack(">i", body_crc),
        struct.pack(">i", 3),  # QUEUEID
        struct.pack(">i", 7),  # FLAG
        struct.pack(">q", 42),  # QUEUEOFFSET
        struct.pack(">q", physical_offset),
        struct.pack(">i", 0x8),  # SYSFLAG: COMMIT
        struct.pack(">q", 1_700_000_000_000),  # BORNTIMESTAMP
        bytes([192, 168, 0, 5]) + struct.pack(">i", 40001),  # BORNHOST
        struct.pack(">q", 1_700_000_000_123),  # STORETIMESTAMP
        bytes([10, 0, 0, 1]) + struct.pack(">i", 10911),  # STOREHOST
        struct.pack(">i", 2),  # RECONSUMETIMES
        struct.pack(">q", 0),  # PREPARED TRANSACTION OFFSET
        struct.pack(">i", len(BODY)) + BODY,
        struct.pack(">b", 6) + b"TopicA",
        struct.pack(">h", len(PROPS)) + PROPS.encode(),
    ]
    return b"".join(fields)


def encode_v4(physical_offset: int = 4096) -> bytes:
    return record.encode(
        topic="TopicA",
        body=BODY,
        properties=PROPS,
        queue_id=3,
        flag=7,
        queue_offset=42,
        physical_offset=physical_offset,
        sys_flag=0x8,
        born_timestamp=1_700_000_000_000,
        born_host="192.168.0.5:40001",
        store_timestamp=1_700_000_000_123,
        store_host="10.0.0.1:10911",
        reconsume_times=2,
    )


def test_v4_record_matches_bytes_built_field_by_field() -> None:
    assert encode_v4() == expected_v4_record()
    assert record.record_size(len(BODY), 6, len(PROPS)) == len(expected_v4_record())


def test_encode_into_writes_at_a_position_of_a_larger_buffer() -> None:
    buf = bytearray(b"\xee" * 300)
    size = record.encode_into(
        buf,
        10,
        topic=b"TopicA",
        queue_id=3,
        flag=7,
        queue_offset=42,
        physical_offset=4096,
        sys_flag=0x8 | 0x30,  # stale v6 bits are corrected from the host lengths
        born_timestamp=1_700_000_000_000,
        born_host=ids.pack_host("192.168.0.5", 40001),
        store_timestamp=1_700_000_000_123,
        store_host=ids.pack_host("10.0.0.1", 10911),
        reconsume_times=2,
        prepared_transaction_offset=0,
        body=memoryview(BODY),
        properties=PROPS.encode(),
    )
    assert bytes(buf[10 : 10 + size]) == expected_v4_record()
    assert buf[:10] == b"\xee" * 10
    assert buf[10 + size] == 0xEE


def test_decode_round_trip_v4() -> None:
    message = record.decode(expected_v4_record())
    assert message.topic == "TopicA"
    assert message.body == BODY
    assert message.properties == {"TAGS": "TagA", "UNIQ_KEY": "ABC"}
    assert (message.queue_id, message.flag, message.queue_offset) == (3, 7, 42)
    assert message.commit_log_offset == 4096
    assert message.born_host == "192.168.0.5:40001"
    assert message.store_host == "10.0.0.1:10911"
    assert message.store_timestamp == 1_700_000_000_123
    assert message.reconsume_times == 2
    assert message.body_crc == zlib.crc32(BODY) & 0x7FFFFFFF
    assert message.store_size == len(expected_v4_record())
    assert message.msg_id == "0A00000100002A9F0000000000001000"


def test_ipv6_hosts_set_flags_and_widen_the_record() -> None:
    data = record.encode(topic="T", body=b"x", born_host="[::1]:5", store_host="[fe80::2]:6")
    assert len(data) == record.record_size(1, 1, 0, 20, 20)
    (sys_flag,) = struct.unpack_from(">i", data, 36)
    assert sys_flag == 0x30
    assert data[48:64] == bytes(15) + b"\x01"  # born address
    assert struct.unpack_from(">i", data, 64) == (5,)  # born port
    message = record.decode(data)
    assert message.born_host == "[::1]:5"
    assert message.store_host == "[fe80::2]:6"
    assert record.store_timestamp_at(data, 0) == 0
    assert record.check(data, 0) == len(data)


def test_store_timestamp_and_meta_read_in_place() -> None:
    data = expected_v4_record()
    assert record.store_timestamp_at(data, 0) == 1_700_000_000_123
    meta = record.read_meta(data, 0)
    assert meta == record.RecordMeta(
        len(data), 3, 42, 4096, 0x8, 1_700_000_000_123, "TopicA", PROPS.encode()
    )


def test_iter_records_over_a_concatenated_body() -> None:
    body = encode_v4(0) + record.encode(topic="B", body=b"2", queue_offset=1)
    messages = record.decode_all(body)
    assert [m.topic for m in messages] == ["TopicA", "B"]
    with pytest.raises(errors.ProtocolError):
        record.decode_all(body + b"\x00\x00")


def test_check_verdicts() -> None:
    good = expected_v4_record()
    assert record.check(good, 0) == len(good)
    assert record.check(good, 0, expected_offset=4096) == len(good)
    assert record.check(good, 0, expected_offset=0) == record.CHECK_INVALID
    torn_body = bytearray(good)
    torn_body[90] ^= 0xFF  # inside the body (which starts at 88): CRC mismatch
    assert record.check(torn_body, 0) == record.CHECK_INVALID
    assert record.check(torn_body, 0, verify_crc=False) == len(good)
    assert record.check(good[:-1], 0) == record.CHECK_INVALID  # truncated
    assert record.check(bytes(64), 0) == record.CHECK_END
    bad_magic = b"\x00\x00\x00\x60\x12\x34\x56\x78" + bytes(88)
    assert record.check(bad_magic, 0) == record.CHECK_INVALID
    blank = bytearray(32)
    record.blank_into(blank, 0, 32)
    assert bytes(blank[:8]) == bytes.fromhex("00000020CBD43194")
    assert record.check(blank, 0, 32) == record.CHECK_BLANK
    assert record.check(blank, 0, 40) == record.CHECK_BLANK  # limit clipped to the buffer
    assert record.check(blank, 0, 24) == record.CHECK_INVALID  # does not end at the limit


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=-4, max_value=310))
def test_arbitrary_bytes_give_a_result_or_protocol_error(data: bytes, pos: int) -> None:
    verdict = record.check(data, pos)
    assert verdict > 0 or verdict in (record.CHECK_BLANK, record.CHECK_END, record.CHECK_INVALID)
    with contextlib.suppress(errors.ProtocolError):
        record.decode(data, pos)
    with contextlib.suppress(errors.ProtocolError):
        record.read_meta(data, pos)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=40))
def test_valid_record_with_mutations_never_raises_unexpectedly(at: int, noise: bytes) -> None:
    data = bytearray(expected_v4_record())
    data[at : at + len(noise)] = noise
    verdict = record.check(data, 0)
    assert verdict == len(data) or verdict < 0 or verdict == record.CHECK_BLANK or verdict > 0
    try:
        message = record.decode(data, 0)
    except errors.ProtocolError:
        return
    assert message.store_size <= len(data)
