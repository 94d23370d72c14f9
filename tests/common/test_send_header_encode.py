"""The hand-written V2 send header encoder gives what the generic header encoder gives."""

from __future__ import annotations

import pytest

from rocketkube.common.protocol.send_headers import (
    SendFields,
    SendHeaderTemplate,
    SendMessageRequestHeaderV2,
    encode_send_header_v2,
    parse_send_header,
)
from rocketkube.common.remoting.header import CommandHeader

FULL = SendMessageRequestHeaderV2(
    "PG", "Topic", "TBW102", 4, 3, 1, 1700000000000, 7, "UNIQ_KEY\x01X\x02", 2, False, 16, True
)
MINIMAL = SendMessageRequestHeaderV2("PG", "Topic", "TBW102", 8, -1, 0, 1, 0)


@pytest.mark.parametrize("header", [FULL, MINIMAL], ids=["full", "minimal"])
def test_matches_the_generic_encoder(header: SendMessageRequestHeaderV2) -> None:
    generic = CommandHeader.encode(header)
    assert header.encode() == generic
    assert list(header.encode()) == list(generic)  # same key order on the wire
    assert encode_send_header_v2(SendFields(*parse_send_header(generic, v2=True))) == generic


@pytest.mark.parametrize(
    ("properties", "batch"),
    [("UNIQ_KEY\x01X\x02TAGS\x01T", False), (None, False), ("", True), ("UNIQ_KEY\x01X", True)],
)
def test_template_matches_the_encoder(properties: str | None, batch: bool) -> None:
    template = SendHeaderTemplate("PG", "TBW102", 4)
    ext = template.ext("Topic", 3, 1, 1700000000000, 7, properties, batch=batch)
    fields = SendFields(
        "PG", "Topic", "TBW102", 4, 3, 1, 1700000000000, 7,
        properties or None, 0, False, None, True if batch else None,
    )  # fmt: skip
    expected = encode_send_header_v2(fields)
    assert ext == expected
    assert list(ext) == list(expected)
