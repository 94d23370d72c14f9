"""Typed headers: wire names, required fields, Java-style parsing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rocketkube.common import errors
from rocketkube.common.remoting.header import CommandHeader, wire


@dataclass(frozen=True, slots=True)
class Example(CommandHeader):
    topic: str
    queue_id: int
    order: bool = False
    accept_standard_json_only: bool | None = None
    short: str | None = field(default=None, metadata=wire("a"))


def test_decode_camel_case_and_explicit_wire_names() -> None:
    header = Example.decode(
        {"topic": "T", "queueId": "3", "order": "TRUE", "acceptStandardJsonOnly": "x", "a": "s"}
    )
    assert header == Example("T", 3, True, False, "s")


def test_encode_skips_none_and_writes_java_booleans() -> None:
    assert Example("T", 1, order=True).encode() == {"topic": "T", "queueId": "1", "order": "true"}


def test_missing_required_field_names_it() -> None:
    with pytest.raises(errors.HeaderError, match="<queueId> is null"):
        Example.decode({"topic": "T"})


def test_bad_integer_is_a_header_error() -> None:
    with pytest.raises(errors.HeaderError, match="queueId"):
        Example.decode({"topic": "T", "queueId": "one"})


@pytest.mark.parametrize("text", [str(2**63), str(-(2**63) - 1), "1" * 40])
def test_integer_out_of_a_java_long_is_a_header_error(text: str) -> None:
    with pytest.raises(errors.HeaderError, match="queueId"):
        Example.decode({"topic": "T", "queueId": text})
    assert Example.decode({"topic": "T", "queueId": str(2**63 - 1)}).queue_id == 2**63 - 1
