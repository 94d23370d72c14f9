"""Frame codec: exact bytes, both header serializations, client quirks, fuzzing."""

from __future__ import annotations

import struct

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common import errors
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.codes import SerializeType
from rocketkube.common.remoting.command import RemotingCommand


def json_frame(header: bytes, body: bytes = b"", serialize: int = 0) -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), serialize << 24 | len(header)) + (
        header + body
    )


def test_binary_empty_success_response_matches_reference_bytes() -> None:
    cmd = RemotingCommand.response()
    cmd.opaque = 7
    cmd.serialize_type = SerializeType.ROCKETMQ
    expected = bytes.fromhex("000000190100001500000001990000000700000001")
    expected += bytes.fromhex("0000000000000000")
    assert frame.encode_bytes(cmd) == expected


def test_binary_header_with_remark_and_ext_fields_built_field_by_field() -> None:
    cmd = RemotingCommand(code=105, opaque=258, flag=2, language="GO", version=317)
    cmd.remark = "hi"
    cmd.ext_fields = {"topic": "T1"}
    cmd.serialize_type = SerializeType.ROCKETMQ
    cmd.body = b"xyz"
    header = (
        struct.pack(">hbhii", 105, 9, 317, 258, 2)
        + struct.pack(">i", 2)
        + b"hi"
        + struct.pack(">i", 2 + 5 + 4 + 2)
        + struct.pack(">h", 5)
        + b"topic"
        + struct.pack(">i", 2)
        + b"T1"
    )
    assert frame.encode_bytes(cmd) == json_frame(header, b"xyz", serialize=1)
    (decoded,) = frame.FrameDecoder().feed(frame.encode_bytes(cmd))
    assert (decoded.code, decoded.opaque, decoded.flag) == (105, 258, 2)
    assert (decoded.language, decoded.version, decoded.remark) == ("GO", 317, "hi")
    assert decoded.ext_fields == {"topic": "T1"}
    assert bytes(decoded.body) == b"xyz"
    assert decoded.serialize_type == SerializeType.ROCKETMQ


def test_binary_header_drops_empty_values_and_last_duplicate_wins() -> None:
    entries = b""
    for key, value in ((b"a", b"1"), (b"e", b""), (b"a", b"2")):
        entries += struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value
    header = struct.pack(">hbhiii", 10, 0, 409, 1, 0, 0) + struct.pack(">i", len(entries))
    (cmd,) = frame.FrameDecoder().feed(json_frame(header + entries, serialize=1))
    assert cmd.ext_fields == {"a": "2"}
    assert cmd.remark is None


def test_json_header_exact_encoding() -> None:
    cmd = RemotingCommand.response(17, "No topic route info", {"k": "v"})
    cmd.opaque = 5
    header = (
        b'{"code":17,"extFields":{"k":"v"},"flag":1,"language":"JAVA","opaque":5,'
        b'"remark":"No topic route info","serializeTypeCurrentRPC":"JSON","version":409}'
    )
    assert frame.encode_bytes(cmd) == json_frame(header)


def test_json_header_from_cpp_client_numbers_booleans_and_newline() -> None:
    header = (
        b'{"code":105,"extFields":{"topic":"T","queueId":0,"k":false,"u":true,'
        b'"n":null,"AccessKey":""},"flag":0,"language":"CPP","opaque":3,"remark":"",'
        b'"version":63}\n'
    )
    (cmd,) = frame.FrameDecoder().feed(json_frame(header))
    assert cmd.ext_fields == {
        "topic": "T",
        "queueId": "0",
        "k": "false",
        "u": "true",
        "AccessKey": "",
    }
    assert cmd.language == "CPP"
    assert cmd.version == 63
    assert cmd.serialize_type == SerializeType.JSON


def test_json_header_without_ext_fields_and_numeric_language() -> None:
    (cmd,) = frame.FrameDecoder().feed(json_frame(b'{"code":34,"language":9,"opaque":1}'))
    assert cmd.ext_fields == {}
    assert cmd.language == "GO"
    assert cmd.flag == 0


def test_decoder_handles_split_and_pipelined_frames() -> None:
    cmds = [RemotingCommand.request(10, {"i": str(i)}, body=bytes([i]) * i) for i in range(20)]
    for i, cmd in enumerate(cmds):
        cmd.opaque = i
    stream = b"".join(frame.encode_bytes(c) for c in cmds)
    decoder = frame.FrameDecoder()
    got = []
    for start in range(0, len(stream), 7):
        got.extend(decoder.feed(stream[start : start + 7]))
    assert [c.opaque for c in got] == list(range(20))
    assert [bytes(c.body) for c in got] == [bytes([i]) * i for i in range(20)]
    assert decoder.buffered == 0


def test_a_15_mib_frame_in_4_kib_pieces_is_reassembled() -> None:
    """Each piece is gathered, and the frame decoded once it is complete, by either scan
    (``reassembly_cpu.py`` in this folder prints what it costs)."""
    body = bytes(range(256)) * (15 * 4096)
    big = RemotingCommand.request(310, {"k": "v"}, body)
    big.opaque = 1
    small = RemotingCommand.request(34, {"n": "2"})
    small.opaque = 2
    stream = frame.encode_bytes(big) + frame.encode_bytes(small)
    assert len(stream) < frame.MAX_FRAME_LENGTH
    for scan in {frame.FrameDecoder.scan, frame.compiled_scan()} - {None}:
        decoder = frame.FrameDecoder(scan=scan)
        got: list[RemotingCommand] = []
        for start in range(0, len(stream), 4096):
            got += decoder.feed(stream[start : start + 4096])
        assert [(c.opaque, c.code, c.ext_fields) for c in got] == [
            (1, 310, {"k": "v"}),
            (2, 34, {"n": "2"}),
        ]
        assert bytes(got[0].body) == body
        assert decoder.buffered == 0


def test_small_bodies_are_copied_and_large_ones_are_views_of_the_received_bytes() -> None:
    sizes = (0, frame.COPIED_BODY, frame.COPIED_BODY + 1, 64 * 1024)
    stream = b"".join(
        frame.encode_bytes(RemotingCommand.request(310, {}, body=b"x" * size)) for size in sizes
    )
    for scan in {frame.FrameDecoder.scan, frame.compiled_scan()} - {None}:
        got = frame.FrameDecoder(scan=scan).feed(stream)
        assert [type(c.body) for c in got] == [bytes, bytes, memoryview, memoryview]
        assert [len(c.body) for c in got] == list(sizes)


def test_frame_over_16_mib_is_rejected() -> None:
    with pytest.raises(errors.FrameTooLargeError):
        frame.FrameDecoder().feed(struct.pack(">i", 16 * 1024 * 1024 + 1))


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">ii", 3, 0),
        json_frame(b"[1,2]"),
        json_frame(b'{"code":"x"}'),
        json_frame(b"{not json"),
        json_frame(b'{"code":1}', serialize=5),
        struct.pack(">ii", 8, 100) + b"abcd",
    ],
)
def test_malformed_frames_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(errors.ProtocolError):
        frame.FrameDecoder().feed(data)


@settings(max_examples=500)
@given(st.binary(max_size=300))
def test_any_bytes_decode_to_commands_or_protocol_error(data: bytes) -> None:
    try:
        cmds = frame.FrameDecoder().feed(data)
    except errors.ProtocolError:
        return
    assert all(isinstance(c, RemotingCommand) for c in cmds)


@settings(max_examples=300)
@given(
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.dictionaries(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8), max_size=5),
    st.binary(max_size=64),
    st.sampled_from(list(SerializeType)),
)
def test_round_trip(code: int, opaque: int, ext: dict[str, str], body: bytes, ser: int) -> None:
    cmd = RemotingCommand(code=code, opaque=opaque, ext_fields=ext, body=body)
    cmd.serialize_type = SerializeType(ser)
    (back,) = frame.FrameDecoder().feed(frame.encode_bytes(cmd))
    assert (back.code, back.opaque, back.ext_fields, bytes(back.body)) == (code, opaque, ext, body)


@given(
    st.dictionaries(
        st.text(max_size=5), st.one_of(st.integers(-(2**63), 2**63 - 1), st.booleans(), st.text())
    )
)
def test_ext_values_are_always_strings(ext: dict[str, object]) -> None:
    header = orjson.dumps({"code": 1, "extFields": ext})
    (cmd,) = frame.FrameDecoder().feed(json_frame(header))
    assert all(isinstance(v, str) for v in cmd.ext_fields.values())
    for key, value in ext.items():
        if isinstance(value, bool):
            assert cmd.ext_fields[key] == ("true" if value else "false")


@given(
    st.dictionaries(st.text(min_size=1, max_size=6), st.text(max_size=8), max_size=3),
    st.lists(st.from_regex(r"[0-9A-F]{0,32}", fullmatch=True), min_size=1, max_size=3),
    st.integers(-(2**31), 2**31 - 1),
)
def test_templated_response_frame_is_the_encoded_command(
    fixed: dict[str, str], values: list[str], opaque: int
) -> None:
    variable = [f"v{i}" for i in range(len(values))]
    fixed = {k: v for k, v in fixed.items() if k not in variable}
    template = frame.ResponseTemplate(17, fixed, variable)
    response = template.response(*values)
    assert response.ext_fields == {**fixed, **dict(zip(variable, values, strict=True))}
    data = response.json_frame(opaque)
    response.opaque = opaque
    assert data == frame.encode_bytes(response)
    (back,) = frame.FrameDecoder().feed(data)
    assert (back.code, back.opaque, back.flag) == (17, opaque, 1)
    assert back.ext_fields == response.ext_fields


def test_response_template_needs_its_markers_once() -> None:
    with pytest.raises(ValueError, match="not in the header once"):
        frame.ResponseTemplate(0, {"x": "7261902417333919"}, ["a"])  # holds the opaque mark


def test_templated_response_fills_its_fields_on_first_read() -> None:
    template = frame.ResponseTemplate(0, {"r": "x"}, ["a"])
    one, two = template.response(5), template.response(6)
    one.opaque = 42  # set before anything is read: kept
    assert one.flag == 1
    assert one.opaque == 42
    assert one.ext_fields == {"r": "x", "a": "5"}
    one.ext_fields["r"] = "changed"
    assert two.ext_fields == {"r": "x", "a": "6"}
    with pytest.raises(AttributeError):
        _ = one.no_such_field  # type: ignore[attr-defined]
