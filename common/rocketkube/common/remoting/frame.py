"""Frame codec: RemotingCommand <-> bytes, both header serializations.

Frame layout (big-endian)::

    0   int32  length          = 4 + headerLen + bodyLen (does not count itself)
    4   int32  headerLenWord   = serializeType << 24 | headerLen (24 bits)
    8   H      header          JSON (type 0) or ROCKETMQ binary (type 1)
    8+H B      body

ROCKETMQ binary header (fixed part 21 bytes)::

    int16 code | int8 language | int16 version | int32 opaque | int32 flag
    int32 remarkLen | remark | int32 extLen | {int16 keyLen | key | int32 valLen | val}*

JSON headers may carry ``extFields`` values as numbers or booleans (C++, ali-ons):
they are coerced the way fastjson does (``true`` -> ``"true"``), never with
Python's ``str(True)``. Trailing whitespace after the JSON object is accepted.
Decoding never raises anything but :class:`~rocketkube.common.errors.ProtocolError`.

A hot path's answer can be a :class:`TemplatedResponse`: its JSON frame is one string
format of a :class:`ResponseTemplate` encoded once, instead of a command built, a header
dict serialized and the frame assembled per answer.
"""

from __future__ import annotations

import struct
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from rocketkube.common import compiled, errors
from rocketkube.common.remoting import codes
from rocketkube.common.remoting.command import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERVER_VERSION,
    Body,
    PyRemotingCommand,
    RemotingCommand,
)
from rocketkube.common.remoting.deferred import DeferredReply

MAX_FRAME_LENGTH = 16 * 1024 * 1024

COPIED_BODY: Final = codes.COPIED_BODY

_HEAD = struct.Struct(">ii")
_BIN_FIXED = struct.Struct(">hbhiii")  # code, language, version, opaque, flag, remarkLen
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_LANGUAGE_NAMES = {member.value: member.name for member in codes.LanguageCode}
_ONLY_STR: Final = frozenset({str})


def _coerce_value(value: Any) -> str | None:
    """fastjson's conversion of an extFields value to the String the Java side sees."""
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return orjson.dumps(value).decode()


def _language_name(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return _LANGUAGE_NAMES.get(value, "OTHER")
    return "OTHER"


def _int_field(header: dict[str, Any], key: str, default: int | None) -> int:
    value = header.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.ProtocolError(f"JSON header field {key!r} is not an integer: {value!r}")
    return value


def decode_json_header(data: bytes | memoryview) -> RemotingCommand:
    try:
        header = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise errors.ProtocolError(f"JSON header does not parse: {exc}") from None
    if type(header) is not dict:
        raise errors.ProtocolError("JSON header is not an object")
    get = header.get
    raw_ext = get("extFields")
    ext: dict[str, str]
    if raw_ext is None:
        ext = {}
    elif type(raw_ext) is not dict:
        raise errors.ProtocolError("JSON header extFields is not an object")
    elif _ONLY_STR.issuperset(map(type, raw_ext.values())):
        ext = raw_ext  # the common case (Java, Go): already strings, nothing to coerce
    else:
        ext = {}
        for key, value in raw_ext.items():
            text = _coerce_value(value)
            if text is not None:
                ext[key] = text
    code = get("code")
    opaque = get("opaque", 0)
    flag = get("flag", 0)
    version = get("version", 0)
    if not (type(code) is int and type(opaque) is int and type(flag) is int
            and type(version) is int):  # fmt: skip
        # Off the hot path: names the offending field (bools are not integers).
        code = _int_field(header, "code", None)
        opaque = _int_field(header, "opaque", 0)
        flag = _int_field(header, "flag", 0)
        version = _int_field(header, "version", 0)
    language = get("language", "JAVA")
    remark = get("remark")
    return RemotingCommand(
        code,
        opaque,
        flag,
        language if type(language) is str else _language_name(language),
        version,
        remark if type(remark) is str else None,
        ext,
        b"",
        codes.SerializeType.JSON,
    )


def encode_json_header(cmd: RemotingCommand) -> bytes:
    header: dict[str, Any] = {"code": cmd.code}
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    header["flag"] = cmd.flag
    header["language"] = cmd.language
    header["opaque"] = cmd.opaque
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    return orjson.dumps(header)


def _read_string(view: memoryview, pos: int, length: int) -> str:
    if length < 0 or pos + length > len(view):
        raise errors.ProtocolError("binary header string runs past the header")
    try:
        return str(view[pos : pos + length], "utf-8")
    except UnicodeDecodeError as exc:
        raise errors.ProtocolError(f"binary header string is not UTF-8: {exc}") from None


def decode_binary_header(data: bytes | memoryview) -> RemotingCommand:
    view = memoryview(data)
    if len(view) < _BIN_FIXED.size + 4:
        raise errors.ProtocolError(f"binary header of {len(view)} bytes is shorter than 21")
    code, language, version, opaque, flag, remark_len = _BIN_FIXED.unpack_from(view, 0)
    pos = _BIN_FIXED.size
    remark = _read_string(view, pos, remark_len) if remark_len > 0 else None
    pos += max(remark_len, 0)
    if pos + 4 > len(view):
        raise errors.ProtocolError("binary header ends before its extFields length")
    (ext_len,) = _I32.unpack_from(view, pos)
    pos += 4
    end = pos + ext_len
    if ext_len < 0 or end > len(view):
        raise errors.ProtocolError("binary header extFields run past the header")
    ext: dict[str, str] = {}
    while pos < end:
        if pos + 2 > end:
            raise errors.ProtocolError("binary header key length is truncated")
        (key_len,) = _I16.unpack_from(view, pos)
        pos += 2
        key = _read_string(view, pos, key_len)
        pos += max(key_len, 0)
        if pos + 4 > end:
            raise errors.ProtocolError("binary header value length is truncated")
        (val_len,) = _I32.unpack_from(view, pos)
        pos += 4
        value = _read_string(view, pos, val_len)
        pos += max(val_len, 0)
        if pos > end:
            raise errors.ProtocolError("binary header entry runs past extFields")
        # Java maps zero-length strings to null: such entries disappear.
        if key and value:
            ext[key] = value
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        language=_LANGUAGE_NAMES.get(language, "OTHER"),
        version=version,
        remark=remark,
        ext_fields=ext,
        serialize_type=codes.SerializeType.ROCKETMQ,
    )


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    try:
        language = codes.LanguageCode[cmd.language].value
    except KeyError:
        language = codes.LanguageCode.OTHER.value
    remark = cmd.remark.encode() if cmd.remark else b""
    parts = [_BIN_FIXED.pack(cmd.code, language, cmd.version, cmd.opaque, cmd.flag, len(remark))]
    parts.append(remark)
    entries = []
    for key, value in cmd.ext_fields.items():
        k, v = key.encode(), value.encode()
        entries += [_I16.pack(len(k)), k, _I32.pack(len(v)), v]
    ext = b"".join(entries)
    parts += [_I32.pack(len(ext)), ext]
    return b"".join(parts)


def encode(cmd: RemotingCommand) -> tuple[bytes, Body]:
    """The frame as (length + header word + header, body), ready for ``writelines``."""
    if cmd.serialize_type == codes.SerializeType.ROCKETMQ:
        header = encode_binary_header(cmd)
    else:
        header = encode_json_header(cmd)
    body_len = len(cmd.body)
    length = 4 + len(header) + body_len
    if length > MAX_FRAME_LENGTH:
        raise errors.FrameTooLargeError(f"frame of {length} bytes exceeds {MAX_FRAME_LENGTH}")
    word = (int(cmd.serialize_type) << 24) | len(header)
    return _HEAD.pack(length, word) + header, cmd.body


def encode_bytes(cmd: RemotingCommand) -> bytes:
    head, body = encode(cmd)
    return head + bytes(body)


def decode_frame(frame: memoryview) -> RemotingCommand:
    """Decode one frame without its leading length field (header word onwards)."""
    if len(frame) < 4:
        raise errors.ProtocolError("frame is shorter than its header-length word")
    (word,) = _I32.unpack_from(frame, 0)
    serialize = (word >> 24) & 0xFF
    header_len = word & 0xFFFFFF
    if 4 + header_len > len(frame):
        raise errors.ProtocolError(
            f"header length {header_len} exceeds the frame ({len(frame) - 4} bytes left)"
        )
    header = frame[4 : 4 + header_len]
    if serialize == codes.SerializeType.JSON:
        cmd = decode_json_header(header)
    elif serialize == codes.SerializeType.ROCKETMQ:
        cmd = decode_binary_header(header)
    else:
        raise errors.ProtocolError(f"unknown serialize type {serialize}")
    body = frame[4 + header_len :]
    cmd.body = bytes(body) if len(body) <= COPIED_BODY else body
    return cmd


Scan: TypeAlias = Callable[
    [memoryview, int, Callable[[memoryview], RemotingCommand]], tuple[list[RemotingCommand], int]
]


def compiled_scan() -> Scan | None:
    """The compiled :meth:`FrameDecoder.scan` (``_frames.pyx``; one per decoder: it
    keeps a cache of short strings), or None: not built, or turned off."""
    scanner = compiled.load("rocketkube.common.remoting._frames", "Scanner")
    made = typing.cast("Callable[[], Scan] | None", scanner)
    return None if made is None else made()


class FrameDecoder:
    """Incremental decoder: feed it received bytes, get back every complete command.

    Bodies are zero-copy memoryview slices of the received chunk; only a frame that
    straddles chunks is copied: its pieces gathered in the carry-over buffer, which is
    scanned (and copied once) only when the frame it waits for is complete. A 15 MiB
    frame arriving in 4 KiB pieces costs a few copies of itself, not one per piece.
    """

    __slots__ = ("_carry", "_scan", "_wanted", "max_frame_length")

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH, scan: Scan | None = None) -> None:
        """``scan`` splits a chunk as :meth:`scan` does (:func:`compiled_scan`'s by
        default when built)."""
        self._carry = bytearray()
        self._wanted = 0
        """Bytes the carry-over must hold before a frame can be complete in it."""
        self.max_frame_length = max_frame_length
        self._scan = scan or compiled_scan() or FrameDecoder.scan

    @property
    def buffered(self) -> int:
        return len(self._carry)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        carry = self._carry
        if carry:
            carry += data
            if len(carry) < self._wanted:
                return []  # the frame waited for is not complete yet
            data = bytes(carry)
            carry.clear()
        view = memoryview(data)
        out, pos = self._scan(view, self.max_frame_length, decode_frame)
        if pos < len(view):
            carry += view[pos:]
            # The scan refused a bad length, so one that is there is that of a frame.
            self._wanted = 4 + _I32.unpack_from(carry)[0] if len(carry) >= 4 else 4
        return out

    @staticmethod
    def scan(
        view: memoryview, max_frame_length: int, decode: Callable[[memoryview], RemotingCommand]
    ) -> tuple[list[RemotingCommand], int]:
        """The commands of every complete frame in ``view``, each decoded by ``decode``
        (``decode_frame``), and where the first incomplete one starts."""
        size = len(view)
        pos = 0
        out: list[RemotingCommand] = []
        while size - pos >= 4:
            (length,) = _I32.unpack_from(view, pos)
            if length < 4 or length > max_frame_length:
                if length > max_frame_length:
                    raise errors.FrameTooLargeError(
                        f"frame length {length} exceeds {max_frame_length}"
                    )
                raise errors.ProtocolError(f"frame length {length} is below the minimum of 4")
            end = pos + 4 + length
            if end > size:
                break
            out.append(decode(view[pos + 4 : end]))
            pos = end
        return out, pos


class TemplatedResponse(PyRemotingCommand):
    """A response of a :class:`ResponseTemplate`, made for a hot path: its fields are
    those of the template's response, its ``ext_fields`` dict (the template's fixed
    extFields and the ``values`` of its variable ones) is made when first read, and the
    connection writes its JSON frame from the template (:meth:`json_frame`). The class
    is the compiled one of ``_frames.pyx`` when that serves (see ``command``)."""

    __slots__ = ("_made", "template", "values")

    def __init__(self, template: ResponseTemplate, values: tuple[object, ...]) -> None:
        # Not the base __init__: its ext_fields store would go through the property below.
        self.code = template.code
        self.opaque = 0
        self.flag = FLAG_RESPONSE
        self.language = "JAVA"
        self.version = SERVER_VERSION
        self.remark = None
        self.body = b""
        self.serialize_type = codes.SerializeType.JSON
        self.template = template
        self.values = values
        """The variable extFields' values, in the template's order."""
        self._made: dict[str, str] | None = None

    @property
    def ext_fields(self) -> dict[str, str]:
        ext = self._made
        if ext is None:
            template = self.template
            ext = dict(template.fixed)
            ext.update(zip(template.variable, map(str, self.values), strict=True))
            self._made = ext
        return ext

    @ext_fields.setter
    def ext_fields(self, value: dict[str, str]) -> None:
        self._made = value

    def json_frame(self, opaque: int) -> bytes:
        """The whole frame (length field included) answering the request ``opaque``: the
        bytes :func:`encode_bytes` makes of this command with that opaque, JSON-serialized."""
        header = (self.template.header % (*self.values, opaque)).encode()
        return _HEAD.pack(4 + len(header), len(header)) + header


PyTemplatedResponse = TemplatedResponse
"""The Python implementation, whichever serves."""

if not TYPE_CHECKING:
    TemplatedResponse = (
        compiled.load("rocketkube.common.remoting._frames", "TemplatedResponse")
        or PyTemplatedResponse
    )


class ResponseTemplate:
    """The JSON header of response ``code`` with the ``fixed`` extFields, the ``variable``
    ones (in that order) and the opaque left as placeholders; :meth:`response` fills them.

    Variable values must need no JSON escaping (digits, hex ids): they are formatted in
    as they are, unchecked, as this is for hot paths.
    """

    __slots__ = ("code", "fixed", "header", "parts", "variable")

    _MARK = "\x00{}\x00"

    def __init__(self, code: int, fixed: Mapping[str, str], variable: Sequence[str]) -> None:
        self.code = code
        self.fixed = dict(fixed)
        self.variable = tuple(variable)
        sample = RemotingCommand(code, 0, FLAG_RESPONSE, ext_fields=dict(self.fixed))
        sample.ext_fields.update({key: self._MARK.format(i) for i, key in enumerate(variable)})
        sample.opaque = _TEMPLATE_OPAQUE
        text = encode_json_header(sample).decode().replace("%", "%%")
        marks = [orjson.dumps(self._MARK.format(i)).decode() for i in range(len(self.variable))]
        for mark, placeholder in [*((m, '"%s"') for m in marks), (str(_TEMPLATE_OPAQUE), "%d")]:
            if text.count(mark) != 1:
                raise ValueError(f"response template: {mark!r} is not in the header once")
            text = text.replace(mark, placeholder)
        self.header = text
        self.parts = _literal_parts(text)
        """The header's UTF-8 around its placeholders (the variable values, then the
        opaque), ``%%`` unescaped: what a compiled renderer joins with the values."""

    def response(self, *values: object) -> TemplatedResponse:
        """The response with ``values`` (``str()`` of each) for the variable extFields, in
        their order."""
        return TemplatedResponse(self, values)


def _literal_parts(text: str) -> tuple[bytes, ...]:
    """``text`` (a %-format of ``%s`` and ``%d`` placeholders) cut at its placeholders."""
    parts: list[str] = []
    current: list[str] = []
    at = 0
    while at < len(text):
        char = text[at]
        if char == "%":
            follower = text[at + 1]
            if follower == "%":
                current.append("%")
            else:
                parts.append("".join(current))
                current = []
            at += 2
            continue
        current.append(char)
        at += 1
    parts.append("".join(current))
    return tuple(part.encode() for part in parts)


Outbox: TypeAlias = list[bytes | bytearray | memoryview]
TemplatedFrames: TypeAlias = Callable[
    [Sequence[RemotingCommand], Sequence[object], Outbox], list[int]
]


def templated_frames(
    requests: Sequence[RemotingCommand], replies: Sequence[object], outbox: Outbox
) -> list[int]:
    """Write the answers of a run that are templated responses to JSON requests: their
    frames (none for a oneway request) appended to ``outbox`` joined in one buffer, one
    object and one piece of the write for the whole run. The indexes of the other replies
    are returned, for the caller to answer. (``_frames.pyx`` has this compiled.)"""
    rest: list[int] = []
    frames: list[bytes] = []
    try:
        for i, (request, reply) in enumerate(zip(requests, replies, strict=True)):
            if type(reply) is TemplatedResponse and request.serialize_type is _JSON:
                if not request.flag & FLAG_ONEWAY:
                    frames.append(reply.json_frame(request.opaque))
            else:
                rest.append(i)
    finally:
        if frames:
            outbox.append(b"".join(frames))
    return rest


HeldFrames: TypeAlias = Callable[
    [Sequence[DeferredReply], Sequence[int], Sequence[codes.SerializeType], Outbox], list[int]
]


def held_frames(
    replies: Sequence[DeferredReply],
    opaques: Sequence[int],
    serializations: Sequence[codes.SerializeType],
    outbox: Outbox,
) -> list[int]:
    """:func:`templated_frames` for resolved deferred replies, with what answering needs
    of their requests in parallel lists (none of them oneway): the frames of templated
    results to JSON requests appended to ``outbox`` in one buffer; the indexes of the
    others."""
    rest: list[int] = []
    frames: list[bytes] = []
    try:
        for i, (reply, opaque, serialize) in enumerate(
            zip(replies, opaques, serializations, strict=True)
        ):
            result = reply.result()
            if type(result) is TemplatedResponse and serialize is _JSON:
                frames.append(result.json_frame(opaque))
            else:
                rest.append(i)
    finally:
        if frames:
            outbox.append(b"".join(frames))
    return rest


def compiled_held_frames() -> HeldFrames | None:
    """The compiled :func:`held_frames`, or None: not built, or turned off."""
    return typing.cast(
        "HeldFrames | None",
        compiled.load("rocketkube.common.remoting._frames", "held_frames"),
    )


def compiled_templated_frames() -> TemplatedFrames | None:
    """The compiled :func:`templated_frames`, or None: not built, or turned off."""
    return typing.cast(
        "TemplatedFrames | None",
        compiled.load("rocketkube.common.remoting._frames", "templated_frames"),
    )


_JSON: Final = codes.SerializeType.JSON

#: An opaque no header holds by chance (the JSON of its digits is unique in a template).
_TEMPLATE_OPAQUE: Final = 7_261_902_417_333_919
