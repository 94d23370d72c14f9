"""The properties string codec, the well-known names, and the Message accessors over them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common.message import model
from rocketkube.common.message import properties as props
from rocketkube.common.message.properties import PropertyName


def test_encode_joins_entries_in_insertion_order_without_trailing_separator() -> None:
    encoded = props.encode_properties({"TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true"})
    assert encoded == "TAGS" + "\x01" + "TagA" + "\x02" + "KEYS" + "\x01" + "k1 k2" + "\x02" + (
        "WAIT" + "\x01" + "true"
    )


def test_encode_skips_none_values_and_empty_map() -> None:
    assert props.encode_properties({"A": None, "B": "1", "C": None}) == "B\x011"
    assert props.encode_properties({}) == ""


def test_decode_java_form() -> None:
    assert props.decode_properties("TAGS\x01TagA\x02KEYS\x01k1 k2") == {
        "TAGS": "TagA",
        "KEYS": "k1 k2",
    }


def test_decode_go_trailing_separator_and_bytes() -> None:
    assert props.decode_properties(b"UNIQ_KEY\x01ABC\x02TAGS\x01t\x02") == {
        "UNIQ_KEY": "ABC",
        "TAGS": "t",
    }
    assert props.decode_properties(memoryview(b"a\x01b")) == {"a": "b"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x02",
        "\x02\x02",
        "ab",  # shorter than 3
        "a\x01",  # too short and no value
        "abc",  # no name/value separator
        "\x01bc",  # empty name
        "ab\x01",  # empty value
    ],
)
def test_decode_drops_malformed_entries(text: str) -> None:
    assert props.decode_properties(text) == {}


def test_decode_keeps_good_entries_around_bad_ones() -> None:
    text = "ab\x02A\x011\x02\x01zz\x02B\x01x\x01y\x02C\x01\x02A\x012"
    assert props.decode_properties(text) == {"A": "2", "B": "x\x01y"}


def test_decode_replaces_invalid_utf8() -> None:
    assert props.decode_properties(b"K\x01\xff\xfe") == {"K": "\ufffd\ufffd"}


def test_decode_utf8_values() -> None:
    assert props.decode_properties("K\x01é".encode()) == {"K": "é"}


safe_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"),
    min_size=1,
)


@settings(deadline=None)
@given(st.dictionaries(safe_text, safe_text))
def test_round_trip(properties: dict[str, str]) -> None:
    decoded = props.decode_properties(props.encode_properties(properties))
    expected = {k: v for k, v in properties.items() if len(k) + 1 + len(v) >= 3}
    assert decoded == expected
    assert list(decoded) == list(expected)


@settings(deadline=None)
@given(st.text())
def test_decode_never_fails(text: str) -> None:
    for name, value in props.decode_properties(text).items():
        assert name
        assert value
        assert "\x02" not in name + value


def test_well_known_names_are_the_wire_names() -> None:
    assert PropertyName.WAIT == "WAIT"
    assert PropertyName.DELAY == "DELAY"
    assert PropertyName.REAL_QID == "REAL_QID"
    assert PropertyName.TRAN_MSG == "TRAN_MSG"
    assert PropertyName.PGROUP == "PGROUP"
    assert PropertyName.TRACE_ON == "TRACE_ON"
    assert PropertyName.CONSUME_START_TIME == "CONSUME_START_TIME"
    assert "UNIQ_KEY" in PropertyName.RESERVED
    assert "myUserProperty" not in PropertyName.RESERVED
    assert props.KEY_SEPARATOR == " "


# -- Message accessors ----------------------------------------------------------------------


def test_message_defaults_and_accessors_on_empty_properties() -> None:
    msg = model.Message("T", b"body")
    assert msg.flag == 0
    assert msg.properties == {}
    assert msg.tags is None
    assert msg.keys == []
    assert msg.unique_key is None
    assert msg.delay_level == 0
    assert msg.wait_store_ok is True


def test_message_accessors_read_properties() -> None:
    msg = model.Message(
        "T",
        b"",
        properties={
            "TAGS": "TagA",
            "KEYS": " k1  k2 ",
            "UNIQ_KEY": "U1",
            "DELAY": "3",
            "WAIT": "false",
        },
    )
    assert msg.tags == "TagA"
    assert msg.keys == ["k1", "k2"]
    assert msg.unique_key == "U1"
    assert msg.delay_level == 3
    assert msg.wait_store_ok is False


def test_message_accessors_write_and_clear_properties() -> None:
    msg = model.Message("T", b"")
    msg.tags = "TagA"
    msg.keys = ["a", "b"]
    msg.unique_key = "U"
    msg.delay_level = 2
    assert msg.properties == {"TAGS": "TagA", "KEYS": "a b", "UNIQ_KEY": "U", "DELAY": "2"}
    msg.tags = None
    msg.keys = []
    msg.unique_key = None
    msg.delay_level = 0
    assert msg.properties == {}


def test_bad_delay_level_reads_as_no_delay() -> None:
    assert model.Message("T", b"", properties={"DELAY": "x"}).delay_level == 0


def test_messages_are_slotted_and_do_not_share_property_maps() -> None:
    a = model.Message("T", b"")
    b = model.Message("T", b"")
    a.properties["X"] = "1"
    assert b.properties == {}
    assert not hasattr(a, "__dict__")
    assert not hasattr(model.MessageExt("T", b""), "__dict__")
