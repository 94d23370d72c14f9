"""The SEND_BATCH_MESSAGE body: exact bytes, zero-copy slices, malformed input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common import errors
from rocketkube.common.message import batch


def item_bytes(flag: int, body: bytes, properties: bytes, *, magic: int = 0, crc: int = 0) -> bytes:
    total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(properties)
    return (
        struct.pack(">i", total)
        + struct.pack(">i", magic)
        + struct.pack(">i", crc)
        + struct.pack(">i", flag)
        + struct.pack(">i", len(body))
        + body
        + struct.pack(">h", len(properties))
        + properties
    )


def test_encode_matches_field_by_field_bytes() -> None:
    items = [
        batch.BatchItem(0, b"hello", "TAGS\x01TagA\x02UNIQ_KEY\x01ID1"),
        batch.BatchItem(7, b"", ""),
    ]
    assert batch.encode_batch(items) == item_bytes(
        0, b"hello", b"TAGS\x01TagA\x02UNIQ_KEY\x01ID1"
    ) + item_bytes(7, b"", b"")


def test_encode_reference_sizes() -> None:
    encoded = batch.encode_batch([batch.BatchItem(1, b"abc", "K\x01v")])
    assert encoded == bytes.fromhex("0000001c0000000000000000000000010000000361626300034b0176")


def test_encode_writes_utf8_properties() -> None:
    encoded = batch.encode_batch([batch.BatchItem(0, b"", "K\x01é")])
    assert encoded == item_bytes(0, b"", "K\x01é".encode())


def test_encode_accepts_memoryview_bodies() -> None:
    assert batch.encode_batch([batch.BatchItem(0, memoryview(b"xy"), "")]) == item_bytes(
        0, b"xy", b""
    )


def test_encode_rejects_properties_over_32767_bytes() -> None:
    with pytest.raises(errors.MessageFormatError):
        batch.encode_batch([batch.BatchItem(0, b"", "K\x01" + "v" * 32766)])


def test_decode_several_items() -> None:
    body = item_bytes(3, b"one", b"A\x011") + item_bytes(-1, b"", b"") + item_bytes(0, b"3", b"")
    assert batch.decode_batch(body) == [
        batch.BatchItem(3, b"one", "A\x011"),
        batch.BatchItem(-1, b"", ""),
        batch.BatchItem(0, b"3", ""),
    ]


def test_decode_ignores_magic_and_crc() -> None:
    body = item_bytes(0, b"x", b"", magic=-626843481, crc=12345)
    assert batch.decode_batch(body) == [batch.BatchItem(0, b"x", "")]


def test_decode_slices_without_copying() -> None:
    buffer = bytearray(item_bytes(0, b"payload", b""))
    (item,) = batch.decode_batch(buffer)
    assert isinstance(item.body, memoryview)
    buffer[20] = ord("P")
    assert bytes(item.body) == b"Payload"


def test_decode_empty_body_is_no_items() -> None:
    assert batch.decode_batch(b"") == []


def test_decode_replaces_invalid_utf8_properties() -> None:
    assert batch.decode_batch(item_bytes(0, b"", b"K\x01\xff"))[0].properties == "K\x01\ufffd"


def test_decode_accepts_non_byte_memoryview() -> None:
    raw = item_bytes(0, b"ab", b"")
    assert batch.decode_batch(memoryview(raw).cast("B", (len(raw),)))[0].body == b"ab"
    (item,) = batch.decode_batch(memoryview(raw[:28]).cast("I"))
    assert bytes(item.body) == b"ab"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x00\x00\x00", "bytes left"),
        (item_bytes(0, b"abc", b"")[:-1], "TOTALSIZE"),  # truncated
        (struct.pack(">iiiii", 21, 0, 0, 0, 0) + b"\x00\x00", "TOTALSIZE 21"),  # below minimum
        (struct.pack(">iiiii", -5, 0, 0, 0, 0) + b"\x00\x00", "TOTALSIZE -5"),
        (struct.pack(">iiiii", 22, 0, 0, 0, -1) + b"\x00\x00", "BODYLEN -1"),
        (struct.pack(">iiiii", 24, 0, 0, 0, 3) + b"abc\x00", "BODYLEN 3"),
        (struct.pack(">iiiii", 25, 0, 0, 0, 1) + b"a\x00\x01x\x00", "PROPLEN 1"),  # slack byte
        (struct.pack(">iiiii", 23, 0, 0, 0, 0) + b"\xff\xffx", "PROPLEN -1"),
        (item_bytes(0, b"", b"") + b"\x00", "1 bytes left"),  # trailing garbage
    ],
)
def test_decode_rejects_inconsistent_input(body: bytes, message: str) -> None:
    with pytest.raises(errors.ProtocolError, match=message):
        batch.decode_batch(body)


items_strategy = st.lists(
    st.builds(
        batch.BatchItem,
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=64),
        st.text(max_size=32),
    ),
    max_size=6,
)


@settings(deadline=None)
@given(items_strategy)
def test_round_trip(items: list[batch.BatchItem]) -> None:
    assert batch.decode_batch(batch.encode_batch(items)) == items


@settings(deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_items_or_protocol_error(data: bytes) -> None:
    try:
        items = batch.decode_batch(data)
    except errors.ProtocolError:
        return
    assert all(isinstance(item.body, memoryview) for item in items)
    assert sum(22 + len(item.body) for item in items) <= len(data)
    if not any("\ufffd" in item.properties for item in items):
        assert sum(22 + len(item.body) + len(item.properties.encode()) for item in items) == len(
            data
        )


@settings(deadline=None)
@given(st.binary(min_size=22, max_size=200))
def test_valid_looking_headers_with_random_tails_never_raise_other_errors(data: bytes) -> None:
    framed = struct.pack(">i", len(data)) + data[4:]
    try:
        items = batch.decode_batch(framed)
    except errors.ProtocolError:
        return
    assert len(items) == 1


@settings(deadline=None)
@given(items_strategy.filter(bool), st.data())
def test_cutting_into_the_last_item_is_a_protocol_error(
    items: list[batch.BatchItem], data: st.DataObject
) -> None:
    encoded = batch.encode_batch(items)
    last_size = len(batch.encode_batch(items[-1:]))
    cut = data.draw(st.integers(1, last_size - 1))
    with pytest.raises(errors.ProtocolError):
        batch.decode_batch(encoded[:-cut])
    assert batch.decode_batch(encoded[:-last_size]) == items[:-1]
