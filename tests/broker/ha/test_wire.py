"""The replication streams' framing."""

from __future__ import annotations

from rocketkube.broker.ha import wire


def test_last_offset_takes_the_last_whole_report_and_keeps_a_partial_one() -> None:
    buffer = bytearray(wire.OFFSET.pack(5) + wire.OFFSET.pack(900) + b"\0\0\0")
    assert wire.last_offset(buffer) == 900
    assert buffer == b"\0\0\0"
    assert wire.last_offset(buffer) is None
    buffer += b"\0\0\0\0\x01"
    assert wire.last_offset(buffer) == 1
    assert buffer == b""


def test_an_empty_slave_starts_at_the_masters_last_segment() -> None:
    assert wire.transfer_start(0, 2500, 1000) == 2000
    assert wire.transfer_start(0, 0, 1000) == 0
    assert wire.transfer_start(1234, 2500, 1000) == 1234


def test_transfer_header_layout() -> None:
    assert wire.TRANSFER_HEADER.pack(1, 2) == b"\0" * 7 + b"\x01" + b"\0\0\0\x02"
