"""Offset message ids, client unique ids and the packed host layout."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common import errors
from rocketkube.common.message import ids, model


def epoch_ms(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> int:
    moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    return int(moment.timestamp()) * 1000


# -- packed hosts ---------------------------------------------------------------------------


def test_pack_ipv4_host() -> None:
    assert ids.pack_host("10.0.0.1", 10911) == bytes([10, 0, 0, 1]) + struct.pack(">i", 10911)


def test_pack_ipv6_host() -> None:
    expected = bytes(15) + b"\x01" + struct.pack(">i", 10911)
    assert ids.pack_host("::1", 10911) == expected
    assert ids.pack_host("[::1]", 10911) == expected


def test_ipv4_mapped_ipv6_packs_as_ipv4() -> None:
    assert ids.pack_host("::ffff:1.2.3.4", 5) == b"\x01\x02\x03\x04\x00\x00\x00\x05"


def test_unpack_host() -> None:
    assert ids.unpack_host(b"\x0a\x00\x00\x01" + struct.pack(">i", 10911)) == ("10.0.0.1", 10911)
    assert ids.unpack_host(memoryview(bytes(15) + b"\x01" + struct.pack(">i", 9))) == ("::1", 9)


@pytest.mark.parametrize("host", ["example.com", "10.0.0", "1.2.3.4.5", "", ":::"])
def test_pack_rejects_non_ip_hosts(host: str) -> None:
    with pytest.raises(errors.MessageFormatError):
        ids.pack_host(host, 1)


@pytest.mark.parametrize("port", [-1, 65536])
def test_pack_rejects_bad_ports(port: int) -> None:
    with pytest.raises(ValueError, match="port"):
        ids.pack_host("1.2.3.4", port)


@pytest.mark.parametrize("size", [0, 4, 7, 9, 16, 19, 21])
def test_unpack_rejects_other_sizes(size: int) -> None:
    with pytest.raises(errors.MessageFormatError):
        ids.unpack_host(bytes(size))


@settings(deadline=None)
@given(st.ip_addresses(), st.integers(0, 65535))
def test_pack_round_trip(address: object, port: int) -> None:
    host = str(address)
    packed = ids.pack_host(host, port)
    unpacked_host, unpacked_port = ids.unpack_host(packed)
    assert unpacked_port == port
    assert ids.pack_host(unpacked_host, unpacked_port) == packed


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("10.0.0.1:10911", ("10.0.0.1", 10911)),
        ("/10.0.0.1:10911", ("10.0.0.1", 10911)),
        ("[::1]:10911", ("::1", 10911)),
        ("::1:10911", ("::1", 10911)),
    ],
)
def test_split_host_port(address: str, expected: tuple[str, int]) -> None:
    assert ids.split_host_port(address) == expected


@pytest.mark.parametrize("address", ["10.0.0.1", "10.0.0.1:", ":1", "h:x", "h:70000", "h:-1"])
def test_split_host_port_rejects(address: str) -> None:
    with pytest.raises(errors.MessageFormatError):
        ids.split_host_port(address)


def test_join_host_port() -> None:
    assert ids.join_host_port("10.0.0.1", 10911) == "10.0.0.1:10911"
    assert ids.join_host_port("::1", 10911) == "[::1]:10911"
    assert ids.split_host_port(ids.join_host_port("fe80::2", 7)) == ("fe80::2", 7)


# -- offset message ids ---------------------------------------------------------------------


def test_reference_offset_id() -> None:
    assert ids.encode_offset_msg_id("10.0.0.1", 10911, 123456) == "0A00000100002A9F000000000001E240"
    assert ids.decode_offset_msg_id("0A00000100002A9F000000000001E240") == (
        "10.0.0.1",
        10911,
        123456,
    )


def test_offset_id_built_field_by_field() -> None:
    raw = bytes([192, 168, 1, 20]) + struct.pack(">i", 10911) + struct.pack(">q", 2**40 + 7)
    assert ids.encode_offset_msg_id("192.168.1.20", 10911, 2**40 + 7) == raw.hex().upper()


def test_ipv6_offset_id_is_56_chars() -> None:
    msg_id = ids.encode_offset_msg_id("2001:db8::1", 10911, 5)
    raw = bytes.fromhex("20010db8000000000000000000000001") + struct.pack(">iq", 10911, 5)
    assert msg_id == raw.hex().upper()
    assert len(msg_id) == 56
    assert ids.decode_offset_msg_id(msg_id) == ("2001:db8::1", 10911, 5)


def test_decode_accepts_lower_case() -> None:
    assert ids.decode_offset_msg_id("0a00000100002a9f000000000001e240")[2] == 123456


@pytest.mark.parametrize(
    "msg_id",
    [
        "",
        "0A00000100002A9F000000000001E24",  # 31 chars
        "0A00000100002A9F000000000001E2400",  # 33 chars
        "0A00000100002A9F000000000001E24G",  # not hex
        "0A 000100002A9F000000000001E240",  # fromhex would skip the space
        "0A00000100002A9F800000000001E240",  # negative offset
    ],
)
def test_decode_rejects_bad_ids(msg_id: str) -> None:
    with pytest.raises(errors.MessageFormatError):
        ids.decode_offset_msg_id(msg_id)


def test_encode_rejects_bad_offset() -> None:
    with pytest.raises(errors.MessageFormatError):
        ids.encode_offset_msg_id("10.0.0.1", 1, -1)
    with pytest.raises(errors.MessageFormatError):
        ids.encode_offset_msg_id("10.0.0.1", 1, 2**63)


def test_message_format_error_is_both_protocol_and_value_error() -> None:
    with pytest.raises(errors.ProtocolError):
        ids.decode_offset_msg_id("zz")
    with pytest.raises(ValueError, match="offset message id"):
        ids.decode_offset_msg_id("zz")


@settings(deadline=None)
@given(st.ip_addresses(v=4), st.integers(0, 65535), st.integers(0, 2**63 - 1))
def test_offset_id_round_trip(address: object, port: int, offset: int) -> None:
    msg_id = ids.encode_offset_msg_id(str(address), port, offset)
    assert len(msg_id) == 32
    assert msg_id == msg_id.upper()
    assert ids.decode_offset_msg_id(msg_id) == (str(address), port, offset)


def test_message_ext_ids() -> None:
    ext = model.MessageExt("T", b"", store_host="10.0.0.1:10911", commit_log_offset=123456)
    assert ext.msg_id == "0A00000100002A9F000000000001E240"
    assert ext.client_msg_id == ext.msg_id
    ext.properties["UNIQ_KEY"] = "AC11000100002A9F0000000000000001"
    assert ext.client_msg_id == "AC11000100002A9F0000000000000001"
    assert ext.msg_id == "0A00000100002A9F000000000001E240"


# -- client unique ids ----------------------------------------------------------------------


class FakeClock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def test_unique_id_layout_field_by_field() -> None:
    clock = FakeClock(epoch_ms(2024, 3, 5, 1, 2, 3) + 456)
    gen = ids.UniqueIdGenerator("10.0.0.9", pid=0x12345, salt=0xCAFEBABE, clock=clock, tz=UTC)
    since_month = clock.now_ms - epoch_ms(2024, 3, 1)
    prefix = bytes([10, 0, 0, 9]) + struct.pack(">H", 0x2345) + struct.pack(">I", 0xCAFEBABE)
    assert gen.prefix == prefix.hex().upper()
    assert gen.next_id() == (prefix + struct.pack(">iH", since_month, 0)).hex().upper()
    assert gen.next_id() == (prefix + struct.pack(">iH", since_month, 1)).hex().upper()
    assert len(gen.next_id()) == 32


def test_unique_ids_are_distinct_and_counter_wraps_at_16_bits() -> None:
    gen = ids.UniqueIdGenerator(pid=1, salt=1, clock=FakeClock(epoch_ms(2024, 1, 2)), tz=UTC)
    made = [gen.next_id() for _ in range(65537)]
    assert len(set(made[:65536])) == 65536
    assert made[0][-4:] == "0000"
    assert made[65535][-4:] == "FFFF"
    assert made[65536] == made[0]  # same millisecond, counter wrapped


def test_unique_id_time_restarts_at_the_next_month() -> None:
    clock = FakeClock(epoch_ms(2024, 12, 31, 23, 59, 59))
    gen = ids.UniqueIdGenerator(pid=1, salt=1, clock=clock, tz=UTC)
    first = gen.next_id()
    assert int(first[20:28], 16) == epoch_ms(2024, 12, 31, 23, 59, 59) - epoch_ms(2024, 12, 1)
    clock.now_ms = epoch_ms(2025, 1, 1, 0, 0, 1)
    assert int(gen.next_id()[20:28], 16) == 1000


def test_unique_id_small_clock_step_back_gives_zero_time() -> None:
    clock = FakeClock(epoch_ms(2024, 6, 1))
    gen = ids.UniqueIdGenerator(pid=1, salt=1, clock=clock, tz=UTC)
    clock.now_ms -= 500
    assert gen.next_id()[20:28] == "00000000"


def test_generators_hold_their_own_state() -> None:
    clock = FakeClock(epoch_ms(2024, 6, 1))
    a = ids.UniqueIdGenerator(pid=1, salt=1, clock=clock, tz=UTC)
    b = ids.UniqueIdGenerator(pid=1, salt=2, clock=clock, tz=UTC)
    a.next_id()
    assert a.next_id()[-4:] == "0001"
    assert b.next_id()[-4:] == "0000"
    assert a.prefix != b.prefix


def test_unique_id_with_default_clock_and_ipv6_host() -> None:
    gen = ids.UniqueIdGenerator("2001:db8::1")
    assert len(gen.next_id()) == 56
    assert gen.next_id().startswith("20010DB8")
