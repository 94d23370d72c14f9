"""fastjson-compatible JSON: the fast path, each lenient quirk, dumps forms, round trips."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common import fastjson

MQ = {"brokerName": "b", "queueId": 0, "topic": "t"}


# -- loads: standard JSON and the lenient quirks --------------------------------------------


def test_standard_json_parses_with_str_keys() -> None:
    assert fastjson.loads(b'{"0":"a","b":[1,2.5,true,null]}') == {
        "0": "a",
        "b": [1, 2.5, True, None],
    }


@pytest.mark.parametrize("data", [b'{"a":1}', bytearray(b'{"a":1}'), memoryview(b'{"a":1}')])
def test_loads_accepts_every_buffer_type(data: bytes | bytearray | memoryview) -> None:
    assert fastjson.loads(data) == {"a": 1}


def test_bare_numeric_keys_become_ints_as_fastjson_writes_route_data() -> None:
    body = b'{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a"}'
    assert fastjson.loads(body) == {
        "brokerAddrs": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
        "brokerName": "broker-a",
    }


def test_negative_and_long_bare_keys() -> None:
    assert fastjson.loads("{-1:'x',9223372036854775807:'y'}") == {
        -1: "x",
        9223372036854775807: "y",
    }


def test_object_keys_become_hashable_object_keys() -> None:
    body = (
        b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:'
        b'{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000}}}'
    )
    parsed = fastjson.loads(body)
    (key,) = parsed["offsetTable"]
    assert isinstance(key, fastjson.ObjectKey)
    assert key["topic"] == "t"
    assert key["queueId"] == 0
    assert key.as_dict() == MQ
    assert parsed["offsetTable"][fastjson.ObjectKey(MQ)]["consumerOffset"] == 8


def test_object_key_equality_ignores_field_order_but_iteration_keeps_it() -> None:
    a = fastjson.ObjectKey({"topic": "t", "queueId": 0, "brokerName": "b"})
    b = fastjson.ObjectKey(brokerName="b", queueId=0, topic="t")
    assert a == b
    assert hash(a) == hash(b)
    assert list(a) == ["topic", "queueId", "brokerName"]
    assert len(a) == 3
    assert a != fastjson.ObjectKey(brokerName="b", queueId=1, topic="t")
    assert a != MQ  # only equal to other ObjectKeys


def test_object_key_is_immutable_and_freezes_nested_values() -> None:
    key = fastjson.ObjectKey({"a": {"b": [1, {"c": 2}]}})
    assert key["a"] == fastjson.ObjectKey(b=(1, fastjson.ObjectKey(c=2)))
    assert key.as_dict() == {"a": {"b": [1, {"c": 2}]}}
    assert isinstance(hash(key), int)
    with pytest.raises(AttributeError):
        key._map = {}
    with pytest.raises(TypeError):
        key["a"] = 1  # type: ignore[index]


def test_object_key_copies_and_pickles() -> None:
    key = fastjson.ObjectKey({"mq": MQ, "ids": [1, 2]})
    assert copy.deepcopy(key) == key
    assert pickle.loads(pickle.dumps(key)) == key
    assert copy.deepcopy({key: 1}) == {key: 1}


def test_array_keys_become_tuples() -> None:
    assert fastjson.loads("{[1,2]:'x'}") == {(1, 2): "x"}


def test_single_quoted_strings_and_their_escapes() -> None:
    assert fastjson.loads("{'a':'it\\'s \"q\"','b':\"x'y\"}") == {"a": 'it\'s "q"', "b": "x'y"}


def test_bare_identifier_keys_and_literal_keys() -> None:
    assert fastjson.loads("{name:1,$x_2:2,true:3,null:4}") == {
        "name": 1,
        "$x_2": 2,
        True: 3,
        None: 4,
    }


def test_trailing_commas_and_whitespace() -> None:
    assert fastjson.loads(b' \t{"a":[1,2,],"b":{0:1,},}\n\n') == {"a": [1, 2], "b": {0: 1}}


def test_cpp_heartbeat_body_with_trailing_newline_and_bare_key() -> None:
    assert fastjson.loads(b'{"clientID":"c",0:1}\n') == {"clientID": "c", 0: 1}


def test_fastjson_escapes() -> None:
    text = r'{0:"\x41\v\0\u00e9\ud83d\ude00\/\F"}'
    assert fastjson.loads(text) == {0: "A\v\x00é😀/\f"}


def test_lone_surrogate_escape_is_kept_as_is() -> None:
    assert fastjson.loads(r'{0:"\ud800x"}') == {0: "\ud800x"}


def test_numbers_of_every_form() -> None:
    text = b"{0:[0,-7,1.5,-2e3,3E-2,12L,4F,5D,123456789012345678901234567890]}"
    assert fastjson.loads(text) == {
        0: [0, -7, 1.5, -2000.0, 0.03, 12, 4.0, 5.0, 123456789012345678901234567890]
    }
    floats = fastjson.loads(b"{0:[4F,5D]}")[0]
    assert all(isinstance(value, float) for value in floats)


def test_non_ascii_utf8_and_bom() -> None:
    assert fastjson.loads("\ufeff{0:'héllo'}".encode()) == {0: "héllo"}


def test_lenient_parser_handles_standard_json_alone() -> None:
    assert fastjson.parse_lenient('{"a":[1,{"b":null}],"c":"d"}') == {
        "a": [1, {"b": None}],
        "c": "d",
    }


@pytest.mark.parametrize(
    ("text", "message", "pos"),
    [
        ('{"a" 1}', "Expecting ':' delimiter", 5),
        ("{0:1 1:2}", "Expecting ',' delimiter", 5),
        ("[1 2]", "Expecting ',' delimiter", 3),
        ("{0:}", "Expecting value", 3),
        ("{0:'abc", "Unterminated string", 3),
        ('{0:"\\q"}', "Invalid \\escape", 4),
        ('{0:"\\u12"}', "Invalid \\uXXXX escape", 4),
        ("{0:1}x", "Extra data", 5),
        ("", "Expecting value", 0),
        ("{:1}", "Expecting property name", 1),
        ("{0:undefined}", "Expecting value", 3),
    ],
)
def test_errors_are_value_errors_with_position(text: str, message: str, pos: int) -> None:
    with pytest.raises(fastjson.FastjsonDecodeError) as caught:
        fastjson.loads(text)
    assert caught.value.msg == message
    assert caught.value.pos == pos
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, json.JSONDecodeError)


def test_invalid_utf8_reports_the_byte_position() -> None:
    with pytest.raises(fastjson.FastjsonDecodeError) as caught:
        fastjson.loads(b"{0:'\xff'}")
    assert caught.value.msg == "Invalid UTF-8"
    assert caught.value.pos == 4


def test_nesting_deeper_than_the_limit_is_an_error_not_a_crash() -> None:
    with pytest.raises(fastjson.FastjsonDecodeError, match="Nesting too deep"):
        fastjson.loads("{0:" * 300 + "1" + "}" * 300)
    value = fastjson.parse_lenient("[" * 200 + "]" * 200)
    for _ in range(199):
        assert len(value) == 1
        value = value[0]
    assert value == []


# -- dumps ----------------------------------------------------------------------------------


def test_dumps_is_compact_and_keeps_order_unless_asked() -> None:
    assert fastjson.dumps({"b": 1, "a": [1, 2], "c": {"d": None}}) == (
        b'{"b":1,"a":[1,2],"c":{"d":null}}'
    )
    assert fastjson.dumps({"b": 1, "a": 2}, sort_keys=True) == b'{"a":2,"b":1}'


def test_dumps_writes_non_ascii_as_utf8() -> None:
    assert fastjson.dumps({"k": "é"}) == b'{"k":"\xc3\xa9"}'


def test_int_keys_are_quoted_by_default() -> None:
    value = {"brokerAddrs": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}}
    assert fastjson.dumps(value) == b'{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}'


def test_int_keys_are_bare_when_asked() -> None:
    value = {"brokerAddrs": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}}
    assert fastjson.dumps(value, bare_int_keys=True) == (
        b'{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}'
    )


def test_object_keys_are_written_in_fastjson_object_key_form() -> None:
    value = {
        "offsetTable": {
            fastjson.ObjectKey(MQ): {
                "brokerOffset": 10,
                "consumerOffset": 8,
                "lastTimestamp": 1700000000000,
            }
        }
    }
    assert fastjson.dumps(value) == (
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:'
        b'{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000}}}'
    )


def test_sort_keys_sorts_object_keys_fields_and_numbers_numerically() -> None:
    value = {
        10: "ten",
        2: "two",
        "z": 1,
        fastjson.ObjectKey(topic="t", queueId=1, brokerName="b"): 5,
    }
    assert fastjson.dumps(value, sort_keys=True, bare_int_keys=True) == (
        b'{2:"two",10:"ten","z":1,{"brokerName":"b","queueId":1,"topic":"t"}:5}'
    )


def test_other_scalar_keys_and_sets() -> None:
    assert fastjson.dumps({True: 1, None: 2, 1.5: 3}) == b'{"true":1,"null":2,"1.5":3}'
    assert fastjson.dumps({0: {"a"}}) == b'{"0":["a"]}'
    assert fastjson.dumps({"big": 1 << 70}) == b'{"big":1180591620717411303424}'


def test_unsupported_key_type_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        fastjson.dumps({b"bytes": 1})


def test_object_key_as_a_value_is_an_object() -> None:
    assert fastjson.dumps({"mq": fastjson.ObjectKey(MQ)}) == (
        b'{"mq":{"brokerName":"b","queueId":0,"topic":"t"}}'
    )


# -- round trips ----------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(deadline=None)
@given(json_values)
def test_loads_reads_what_orjson_writes(value: Any) -> None:
    assert fastjson.loads(orjson.dumps(value)) == value


@settings(deadline=None)
@given(json_values)
def test_lenient_parser_reads_what_orjson_writes(value: Any) -> None:
    assert fastjson.parse_lenient(orjson.dumps(value)) == value


@settings(deadline=None)
@given(json_values)
def test_lenient_parser_reads_indented_json(value: Any) -> None:
    assert fastjson.parse_lenient(json.dumps(value, indent=2)) == value


fastjson_keys = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.builds(
    fastjson.ObjectKey,
    st.fixed_dictionaries(
        {"brokerName": st.text(max_size=5), "queueId": st.integers(0, 64), "topic": st.text()}
    ),
)
fastjson_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(fastjson_keys | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(deadline=None)
@given(fastjson_values, st.booleans())
def test_bare_keys_round_trip(value: Any, sort_keys: bool) -> None:
    assert fastjson.loads(fastjson.dumps(value, bare_int_keys=True, sort_keys=sort_keys)) == value


@settings(deadline=None)
@given(st.binary(max_size=64) | st.text(alphabet="{}[]:,'\"0a-.eE\\ux\n ", max_size=40))
def test_any_input_parses_or_raises_decode_error(data: bytes | str) -> None:
    error: fastjson.FastjsonDecodeError | None = None
    try:
        fastjson.loads(data)
    except fastjson.FastjsonDecodeError as exc:
        error = exc
    if error is not None:
        assert 0 <= error.pos <= len(data)
