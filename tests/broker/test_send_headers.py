"""The send headers: V1 and V2 spellings of one model, the fast parser, its leniencies."""

from __future__ import annotations

import pytest

from rocketkube.common import errors
from rocketkube.common.protocol.send_headers import (
    SendFields,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    parse_send_header,
)
from rocketkube.common.remoting.header import CommandHeader

V2 = {
    "a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "-1", "f": "1",
    "g": "1700000000000", "h": "7", "i": "TAGS\x01a", "j": "2", "k": "false", "l": "16",
    "n": "broker-a",
}  # fmt: skip
V1 = {
    "producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
    "queueId": "-1", "sysFlag": "1", "bornTimestamp": "1700000000000", "flag": "7",
    "properties": "TAGS\x01a", "reconsumeTimes": "2", "unitMode": "false",
    "maxReconsumeTimes": "16",
}  # fmt: skip
EXPECTED = SendMessageRequestHeader(
    producer_group="PG", topic="T", default_topic="TBW102", default_topic_queue_nums=4,
    queue_id=-1, sys_flag=1, born_timestamp=1_700_000_000_000, flag=7, properties="TAGS\x01a",
    reconsume_times=2, unit_mode=False, max_reconsume_times=16,
)  # fmt: skip


def fields_of(header: SendMessageRequestHeader) -> tuple[object, ...]:
    return tuple(getattr(header, name) for name in SendFields._fields)


def test_v1_and_v2_decode_into_one_model() -> None:
    v2 = SendMessageRequestHeaderV2.decode(V2)
    v1 = SendMessageRequestHeader.decode(V1)
    assert isinstance(v2, SendMessageRequestHeader)
    assert fields_of(v2) == fields_of(v1) == fields_of(EXPECTED)
    assert tuple(parse_send_header(V2, v2=True)) == fields_of(EXPECTED)
    assert tuple(parse_send_header(V1, v2=False)) == fields_of(EXPECTED)


def test_encode_uses_each_spelling() -> None:
    v2 = SendMessageRequestHeaderV2(*parse_send_header(V1, v2=False))
    assert v2.encode() == {k: v for k, v in V2.items() if k != "n"}
    assert EXPECTED.encode() == V1


def test_fast_parser_agrees_with_the_generic_decoder() -> None:
    generic = CommandHeader.decode.__func__  # type: ignore[attr-defined]
    for cls, ext in ((SendMessageRequestHeaderV2, V2), (SendMessageRequestHeader, V1)):
        assert fields_of(generic(cls, ext)) == fields_of(cls.decode(ext))


@pytest.mark.parametrize(
    ("text", "batch"),
    [("true", True), ("TRUE", True), ("1", True), ("false", False), ("0", False), ("", None)],
)
def test_batch_flag(text: str, batch: bool | None) -> None:
    assert parse_send_header(V2 | {"m": text}, v2=True).batch is batch
    assert parse_send_header(V1 | {"batch": text}, v2=False).batch is batch


def test_empty_optional_fields_are_absent() -> None:
    fields = parse_send_header(V2 | {"i": "", "j": "", "k": "", "l": ""}, v2=True)
    assert (fields.reconsume_times, fields.unit_mode, fields.max_reconsume_times) == (
        None, None, None,
    )  # fmt: skip
    assert not fields.properties


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"b": None}, "the custom field <b> is null"),
        ({"d": ""}, "the custom field <d> has an invalid value ''"),
        ({"e": "one"}, "the custom field <e> has an invalid value 'one'"),
        ({"g": "1.5"}, "<g> has an invalid value"),
        ({"j": "x"}, "<j> has an invalid value 'x'"),
    ],
)
def test_errors_name_the_field(change: dict[str, str | None], message: str) -> None:
    ext = {k: v for k, v in (V2 | change).items() if v is not None}
    with pytest.raises(errors.HeaderError, match=message):
        SendMessageRequestHeaderV2.decode(ext)


def test_v1_errors_use_v1_names() -> None:
    ext = dict(V1)
    del ext["queueId"]
    with pytest.raises(errors.HeaderError, match="<queueId> is null"):
        parse_send_header(ext, v2=False)


def test_response_header() -> None:
    header = SendMessageResponseHeader(msg_id="AB", queue_id=3, queue_offset=9)
    assert header.encode() == {"msgId": "AB", "queueId": "3", "queueOffset": "9"}
    assert SendMessageResponseHeader.decode(header.encode() | {"MSG_REGION": "x"}) == header
