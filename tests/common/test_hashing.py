"""Java String.hashCode and the tags code stored in consume queue entries."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common.message import hashing


def reference_hash(s: str) -> int:
    """Java's definition, spelled out: sum of c[i] * 31^(n-1-i) over UTF-16 units, int32."""
    units = s.encode("utf-16-be", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    total = sum(c * pow(31, len(codes) - 1 - i, 2**32) for i, c in enumerate(codes)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("TagA", 2598919),
        ("TagB", 2598920),
        ("hello", 99162322),
        ("Hello, World!", 1498789909),
        ("polygenelubricants", -2147483648),  # the well-known Integer.MIN_VALUE hash
        ("é", 233),
        ("😀", 1772899),  # one code point, two UTF-16 units: 0xD83D * 31 + 0xDE00
    ],
)
def test_known_java_hash_codes(text: str, expected: int) -> None:
    assert hashing.java_string_hash(text) == expected


def test_hash_wraps_to_negative_int32() -> None:
    value = hashing.java_string_hash("the quick brown fox jumps over the lazy dog")
    assert value == reference_hash("the quick brown fox jumps over the lazy dog")
    assert -(2**31) <= value < 2**31


@settings(deadline=None)
@given(st.text())
def test_matches_the_definition(text: str) -> None:
    value = hashing.java_string_hash(text)
    assert value == reference_hash(text)
    assert -(2**31) <= value < 2**31


def test_lone_surrogates_hash_as_their_code_unit() -> None:
    assert hashing.java_string_hash("\ud800") == 0xD800


@pytest.mark.parametrize("tags", [None, ""])
def test_absent_or_empty_tags_give_zero(tags: str | None) -> None:
    assert hashing.tags_code(tags) == 0


def test_tags_code_is_the_string_hash() -> None:
    assert hashing.tags_code("TagA") == 2598919
    assert hashing.tags_code("TagA") == 2598919  # cached path
    assert hashing.tags_code("TagA || TagB") == hashing.java_string_hash("TagA || TagB")
