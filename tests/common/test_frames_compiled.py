"""The compiled frame scan (``_frames.pyx``) splits and decodes as ``FrameDecoder.scan``.

Both decoders are fed the same bytes: the same commands (every field, bodies by type and
value), the same bytes carried over, or the same error with the same message. Hypothesis draws
whole commands in both serializations, JSON headers of any shape and raw bytes.
"""

from __future__ import annotations

import asyncio
import pickle
import struct

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common import errors
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.codes import SerializeType
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.deferred import DeferredReply

COMPILED = frame.compiled_scan()
pytestmark = [
    pytest.mark.compiled,
    pytest.mark.skipif(COMPILED is None, reason="compiled modules not built"),
]


def json_frame(header: object, body: bytes = b"", serialize: int = 0) -> bytes:
    raw = header if isinstance(header, bytes) else orjson.dumps(header)
    return struct.pack(">ii", 4 + len(raw) + len(body), serialize << 24 | len(raw)) + raw + body


def fields(command: RemotingCommand) -> tuple[object, ...]:
    return (command.code, command.opaque, command.flag, command.language, command.version,
            command.remark, command.ext_fields, type(command.body), bytes(command.body),
            command.serialize_type)  # fmt: skip


def decoded(scan: frame.Scan | None, chunks: list[bytes]) -> object:
    """Each chunk's commands, then what is carried over; or the error raised."""
    decoder = frame.FrameDecoder(scan=scan)
    try:
        out: list[object] = [[fields(c) for c in decoder.feed(chunk)] for chunk in chunks]
    except errors.ProtocolError as exc:
        return (type(exc), str(exc))
    return [*out, decoder.buffered]


def alike(*chunks: bytes) -> None:
    compiled = decoded(COMPILED, list(chunks))
    assert compiled == decoded(frame.FrameDecoder.scan, list(chunks))


SEND = {
    "code": 310, "extFields": {"a": "g", "b": "T", "i": "TAGS\x01x"}, "flag": 0,
    "language": "JAVA", "opaque": 7, "serializeTypeCurrentRPC": "JSON", "version": 409,
}  # fmt: skip


@pytest.mark.parametrize(
    "chunks",
    [
        [json_frame(SEND, b"body") * 3],
        [json_frame(SEND, b"x" * size) for size in (0, 480, 481, 5000)],  # copies, then views
        [json_frame(SEND, b"body")[:9], json_frame(SEND, b"body")[9:] + b"\x00\x00"],
        [json_frame({**SEND, "extFields": {"d": 4, "k": True, "x": None}})],  # C++: coerced
        [json_frame({"code": 1})],  # defaults
        [json_frame({**SEND, "language": 1, "remark": 5})],  # numeric language, no remark
        [json_frame({**SEND, "remark": "r"})],
        [json_frame({**SEND, "opaque": True})],  # a bool is no integer: refused
        [json_frame({**SEND, "code": "310"})],
        [json_frame({**SEND, "extFields": [1]})],
        [json_frame(b"[1,2]")],
        [json_frame(b"{not json")],
        [json_frame(b'{"code":1}\n ')],  # trailing white space
        [json_frame(SEND, serialize=5)],  # unknown serialization
        [json_frame(b"{}")[:4] + struct.pack(">i", 200) + b"{}"],  # header past the frame
        [struct.pack(">ii", 3, 0)],  # below the minimum
        [struct.pack(">i", 16 * 1024 * 1024 + 1)],  # too large
        [json_frame(SEND) + struct.pack(">ii", 3, 0)],  # good, then bad: nothing returned
        [
            frame.encode_bytes(
                RemotingCommand(5, 9, ext_fields={"k": "v"}, serialize_type=SerializeType.ROCKETMQ)
            )
        ],
    ],
)
def test_the_same_commands_or_the_same_error(chunks: list[bytes]) -> None:
    alike(*chunks)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
_headers = st.fixed_dictionaries(
    {},
    optional={
        "code": _json_values,
        "opaque": _json_values,
        "flag": _json_values,
        "version": _json_values,
        "language": _json_values,
        "remark": _json_values,
        "extFields": st.dictionaries(st.text(max_size=4), _json_values, max_size=4) | _json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_headers, st.binary(max_size=20)), max_size=4), st.integers(0, 40))
def test_any_json_headers_decode_alike(frames: list[tuple[dict[str, object], bytes]],
                                       cut: int) -> None:  # fmt: skip
    data = b"".join(json_frame(header, body) for header, body in frames)
    alike(data[:cut], data[cut:])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_decode_alike(data: bytes) -> None:
    alike(data)


TEMPLATED = frame.compiled_templated_frames()
ODD_REGION = frame.ResponseTemplate(0, {"MSG_REGION": "a%sb%%c%d", "TRACE_ON": "é"}, ("x", "y"))
STORED = frame.ResponseTemplate(0, {"MSG_REGION": "DefaultRegion"}, ("msgId", "queueId", "n"))


def request(opaque: int, serialize: SerializeType = SerializeType.JSON,
            oneway: bool = False) -> RemotingCommand:  # fmt: skip
    made = RemotingCommand.request(310, {}, oneway=oneway)
    made.opaque, made.serialize_type = opaque, serialize
    return made


def written(render: frame.TemplatedFrames, requests: list[RemotingCommand],
            replies: list[object]) -> tuple[list[bytes], list[int]]:  # fmt: skip
    outbox: frame.Outbox = []
    rest = render(requests, replies, outbox)
    return [bytes(data) for data in outbox], rest


def test_templated_answers_are_written_alike() -> None:
    assert TEMPLATED is not None
    ids = ",".join(f"7F000001000027{n:018X}" for n in range(300))  # a batch's answer
    runs: list[tuple[RemotingCommand, object]] = [
        (request(1), STORED.response("7F0000010000271100000000000000A0", 3, 17)),
        (request(-(2**31)), STORED.response(ids, 0, 2**62)),
        (request(2**40), ODD_REGION.response("é%s", -5)),
        (request(4, oneway=True), STORED.response("id", 1, 2)),  # nothing to write
        (request(5, SerializeType.ROCKETMQ), STORED.response("id", 1, 2)),  # left
        (request(6), STORED.response(1.5, None, 2**70)),  # rendered by json_frame
        (request(7), RemotingCommand.response()),  # left
        (request(8), None),  # left
    ]
    requests = [r for r, _ in runs]
    replies = [reply for _, reply in runs]
    compiled = written(TEMPLATED, requests, replies)
    assert compiled == written(frame.templated_frames, requests, replies)
    frames, rest = compiled
    assert rest == [4, 6, 7]
    expected = [reply.json_frame(r.opaque) for r, reply in runs[:3] + runs[5:6]]  # type: ignore[attr-defined]
    assert frames == [b"".join(expected)], "the run's frames in order, in one buffer"
    assert frames[0].startswith(frame.encode_bytes(
        RemotingCommand(0, 1, 1, ext_fields={
            "MSG_REGION": "DefaultRegion", "msgId": "7F0000010000271100000000000000A0",
            "queueId": "3", "n": "17"})
    ))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=12),
    st.lists(st.text(max_size=8) | st.integers(-(2**64), 2**64), min_size=2, max_size=2),
    st.integers(-(2**63), 2**63 - 1),
)
def test_any_template_and_values_are_written_alike(
    region: str, values: list[object], opaque: int
) -> None:
    assert TEMPLATED is not None
    template = frame.ResponseTemplate(0, {"MSG_REGION": region}, ("a", "b"))
    runs = ([request(opaque)], [template.response(*values)])
    assert written(TEMPLATED, *runs) == written(frame.templated_frames, *runs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "header",
    [
        b' \t\n{ "code" : 310 , "extFields" : { "a" : "b" } , "opaque" : 3 }\r\n ',
        b'{"code":1,"extFields":{"k":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u00e9\\u20ac"}}',
        b'{"code":1,"extFields":{"k":"\\ud83d\\ude00","\\u006b2":"v"}}',  # pair, escaped name
        b'{"code":1,"extFields":{"k":"\\ud83d"}}',  # lone high surrogate: orjson refuses
        b'{"code":1,"extFields":{"k":"\\ude00"}}',  # lone low surrogate
        b'{"code":1,"extFields":{"k":"\\x"}}',  # unknown escape
        b'{"code":1,"extFields":{"k":"\\u12"}}',
        b'{"code":1,"extFields":{"k":"a\x01b"}}',  # a raw control character
        b'{"code":1,"extFields":{"k":"\xc3\xa9\xe2\x82\xac"}}',  # UTF-8
        b'{"code":1,"extFields":{"k":"\xc3"}}',  # broken UTF-8
        b'{"code":1,"extFields":{"k":"a","k":"b"},"code":2}',  # repeated names: the last
        b'{"code":1,"extFields":{"":"v","a":"","\\u0062":"1","\\"":"2","\x7f":"3"}}',  # short names
        b'{"code":1,"extFields":{"k":"a"},"extFields":{}}',
        b'{"code":1,"extFields":{},}',  # a trailing comma
        b'{"code":01}',
        b'{"code":-0,"opaque":-2147483648,"flag":999999999999999999}',
        b'{"code":1,"opaque":1234567890123456789}',  # 19 digits: orjson's call
        b'{"code":1.0}',
        b'{"code":1e2}',
        b'{"code":1,"version":"409"}',  # a string where an integer belongs
        b'{"code":1,"language":7}',
        b'{"code":1,"remark":null}',
        b'{"code":1,"remark":"\\u00e9"}',
        b'{"code":1,"x":[1,{"y":null}],"z":true}',
        b'{"c\\u006fde":1}',  # an escaped name: orjson's call
        b'{"opaque":1}',  # no code
        b"{}",
        b'{"code":1}x',
        b'{"code":1',
        b'{"code":1,"extFields":{"k":1}}',  # coerced by the Python path
        b'{"code":1,"extFields":null}',
        b'{"code":1,"extFields":"s"}',
    ],
)
def test_headers_at_the_edges_of_the_subset_decode_alike(header: bytes) -> None:
    alike(json_frame(header, b"body"))


@pytest.mark.parametrize("at", range(18))
@pytest.mark.parametrize(
    "special", [b'\\"', b"\\\\", b"\\u0001", b"\\u00e9", b"\x01", b"\xc3\xa9", b"\xc3", b"\x7f"]
)
def test_a_special_byte_anywhere_in_a_long_string_decodes_alike(at: int, special: bytes) -> None:
    # Plain string bytes are skipped eight at a time: what stops the skip is found at
    # every place of the eight, in long and short strings, keys and values.
    text = b"a" * at + special + b"z" * (17 - at)
    header = b'{"code":1,"extFields":{"k":"' + text + b'","' + text + b'":"v"},"remark":"' + text
    alike(json_frame(header + b'"}', b"body"))


@st.composite
def _spelled(draw: st.DrawFn) -> bytes:
    """A header spelled by hand: random white space, characters escaped at random."""

    def ws() -> str:
        return draw(st.sampled_from(["", "", " ", "\n\t ", "\r"]))

    def string(text: str) -> str:
        out = []
        for char in text:
            if char in '"\\' or ord(char) < 32 or draw(st.booleans()):
                point = ord(char)
                if point > 0xFFFF:
                    point -= 0x10000
                    out.append(f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04X}")
                else:
                    out.append(f"\\u{point:04x}")
            else:
                out.append(char)
        return '"' + "".join(out) + '"'

    texts = st.text(max_size=6)
    members = [f'{ws()}"code"{ws()}:{ws()}{draw(st.integers(-(10**18), 10**18))}{ws()}']
    ext = draw(st.dictionaries(texts, texts, max_size=4))
    inner = ",".join(f"{ws()}{string(k)}{ws()}:{ws()}{string(v)}{ws()}" for k, v in ext.items())
    members.append(f'{ws()}"extFields"{ws()}:{ws()}{{{inner}}}{ws()}')
    members.append(f'"language":{string(draw(texts))}')
    members.append(f'"remark":{string(draw(texts))}')
    order = draw(st.permutations(members))
    return (ws() + "{" + ",".join(order) + "}" + ws()).encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None)
@given(_spelled())
def test_hand_spelled_headers_decode_alike(header: bytes) -> None:
    alike(json_frame(header, b"b"))


def test_the_common_headers_need_no_fallback() -> None:
    """Java's, Go's and the SDK's request headers are parsed by the scan itself."""
    assert COMPILED is not None

    def refuse(_frame: memoryview) -> RemotingCommand:
        raise AssertionError("left to decode_frame")

    data = json_frame(SEND, b"body") + json_frame(b' {"code":34, "extFields":{}}\n')
    commands, end = COMPILED(memoryview(data), 1 << 24, refuse)
    assert end == len(data)
    assert [fields(c) for c in commands] == [
        (310, 7, 0, "JAVA", 409, None, SEND["extFields"], bytes, b"body", SerializeType.JSON),
        (34, 0, 0, "JAVA", 0, None, {}, bytes, b"", SerializeType.JSON),
    ]


def test_one_decoder_decodes_thousands_of_short_strings_alike() -> None:
    """The compiled scanner shares short strings through a small cache, across chunks."""
    values = [format(n, "x") * (1 + n % 4) for n in range(3000)]  # collisions and reuse
    data = b"".join(
        json_frame({"code": 310, "extFields": {values[n]: values[-n], "k": values[n // 2]}})
        for n in range(len(values))
    )
    chunks = [data[at : at + 4096] for at in range(0, len(data), 4096)]
    alike(*chunks)


def test_resolved_replies_are_written_alike() -> None:
    held = frame.compiled_held_frames()
    assert held is not None
    results: list[RemotingCommand | None] = [
        STORED.response("id", 1, 2),
        RemotingCommand.response(1, "refused"),
        None,
        STORED.response("x", 3, 4),  # to a ROCKETMQ-serialized request: left
        STORED.response(1.5, 0, 0),  # rendered by json_frame
    ]
    replies = []
    for result in results:
        reply = DeferredReply()
        reply.resolve(result)
        replies.append(reply)
    opaques = [1, 2, 3, 4, 5]
    kinds = [SerializeType.JSON] * 3 + [SerializeType.ROCKETMQ, SerializeType.JSON]

    def written(render: frame.HeldFrames) -> tuple[list[bytes], list[int]]:
        outbox: frame.Outbox = []
        rest = render(replies, opaques, kinds, outbox)
        return [bytes(data) for data in outbox], rest

    compiled = written(held)
    assert compiled == written(frame.held_frames)
    assert compiled[1] == [1, 2, 3]
    pending = [DeferredReply()]
    for render in (held, frame.held_frames):
        with pytest.raises(asyncio.InvalidStateError):
            render(pending, [1], [SerializeType.JSON], [])


def test_a_scanned_send_reads_and_writes_as_a_command() -> None:
    assert COMPILED is not None
    data = frame.encode_bytes(RemotingCommand.request(310, {"b": "T", "a": "g"}, b"x"))
    (command,), _ = COMPILED(memoryview(data), 1 << 24, frame.decode_frame)
    assert (command.header_names, command.header_values) == ("ba", ["T", "g"])
    assert list(command.ext_fields.items()) == [("b", "T"), ("a", "g")]  # made, in order
    assert command.header_values is None
    command.ext_fields["c"] = "1"
    assert command.ext_fields == {"b": "T", "a": "g", "c": "1"}  # the same dict kept
    command.ext_fields = {"z": "2"}
    copy = pickle.loads(pickle.dumps(command))
    assert copy == command
    assert (type(copy), copy.opaque, copy.ext_fields, bytes(copy.body)) == (
        RemotingCommand,
        command.opaque,
        {"z": "2"},
        b"x",
    )
    assert copy != RemotingCommand(310)
    with pytest.raises(TypeError):
        hash(copy)  # mutable, compared by value: unhashable, as the dataclass
