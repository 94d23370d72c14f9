"""The bounded inflate every reader of peer zlib data goes through: a cap it never
passes, and the errors of a plain ``zlib.decompress`` for what is not a zlib stream."""

from __future__ import annotations

import zlib

import pytest

from rocketkube.common import errors
from rocketkube.common.inflate import inflate

DATA = bytes(range(256)) * 40  # 10,240 bytes


def test_a_stream_inflating_exactly_to_the_cap_passes() -> None:
    assert inflate(zlib.compress(DATA), len(DATA)) == DATA


def test_one_byte_over_the_cap_is_refused() -> None:
    with pytest.raises(errors.InflateLimitError, match="inflates past 10239 bytes") as caught:
        inflate(zlib.compress(DATA), len(DATA) - 1)
    assert caught.value.limit == len(DATA) - 1
    assert isinstance(caught.value, errors.ProtocolError)


def test_a_bomb_is_refused_at_the_cap() -> None:
    bomb = zlib.compress(bytes(16 << 20), 9)  # 16 MiB of zeros in about 16 KiB
    assert len(bomb) < 20_000
    with pytest.raises(errors.InflateLimitError):
        inflate(bomb, 1 << 20)


def test_empty_input_and_an_empty_stream() -> None:
    assert inflate(zlib.compress(b""), 0) == b""
    with pytest.raises(zlib.error):
        inflate(b"", 10)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01garbage",  # no zlib header
        zlib.compress(DATA)[:-10],  # truncated
        zlib.compress(DATA)[:-4] + b"\x00\x00\x00\x00",  # wrong checksum
    ],
    ids=["garbage", "truncated", "bad-checksum"],
)
def test_what_is_no_zlib_stream_raises_the_decode_error(data: bytes) -> None:
    with pytest.raises(zlib.error):
        inflate(data, 1 << 20)


def test_bytes_after_the_stream_are_ignored_as_zlib_does() -> None:
    data = zlib.compress(b"abc") + b"trailing"
    assert inflate(data, 3) == zlib.decompress(data) == b"abc"


def test_memoryview_input_and_a_negative_cap() -> None:
    assert inflate(memoryview(zlib.compress(DATA)), len(DATA)) == DATA
    with pytest.raises(ValueError, match="must not be negative"):
        inflate(zlib.compress(DATA), -1)
