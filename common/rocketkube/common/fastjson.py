"""JSON as Java's fastjson writes and reads it: the bodies of RocketMQ requests and responses.

fastjson writes map keys as their Java type, which standard JSON cannot hold::

    {0:"10.0.0.1:10911",1:"10.0.0.2:10911"}                  Integer/Long keys, bare
    {{"brokerName":"b","queueId":0,"topic":"t"}:{"x":1}}       object keys (MessageQueue)

:func:`loads` parses with orjson first (standard JSON, the common case) and falls back to
a lenient parser (:func:`parse_lenient`) that also accepts

- bare numeric keys (``{0:"a"}`` gives the int key ``0``; a quoted ``"0"`` stays a str),
- objects and arrays as keys (an :class:`ObjectKey`, a tuple),
- bare identifier keys (``{a:1}``; ``true``/``false``/``null`` give ``True``/``False``/``None``),
- single-quoted strings and fastjson's extra escapes (``\\'``, ``\\xHH``, ``\\v``, ``\\0``-``\\7``),
- trailing commas in objects and arrays, surrounding whitespace including ``\\f`` and ``\\b``,
- integers of any size and the Java number suffixes ``L S B F D``.

Errors are :class:`FastjsonDecodeError`, a ``json.JSONDecodeError`` (so a ``ValueError``)
carrying the character position.

:func:`dumps` writes compact JSON (no spaces: the Go client splits route text on ``,`` and
``:``), UTF-8, with orjson when every key is a str and by hand otherwise: int keys quoted
(``{"0":"a"}``, what every client accepts) or bare with ``bare_int_keys``, and
:class:`ObjectKey` keys in fastjson's object-key form, which Java admin tools need.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import orjson

__all__ = ["FastjsonDecodeError", "ObjectKey", "dumps", "loads", "parse_lenient"]

MAX_DEPTH: Final = 256
"""Deepest nesting :func:`parse_lenient` accepts."""


class FastjsonDecodeError(json.JSONDecodeError):
    """Text that is not JSON even by fastjson's lenient rules; ``pos`` is the character index."""


class ObjectKey(Mapping[Any, Any]):
    """An immutable, hashable JSON object, used where fastjson writes an object as a map key.

    Equality and hash ignore the order of fields; iteration keeps it (it is the order the
    key is written in). Nested dicts and lists are frozen into ``ObjectKey`` and tuples.
    """

    __slots__ = ("_hash", "_map")

    _map: dict[Any, Any]
    _hash: int

    def __init__(
        self, fields: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = (), /, **kwargs: Any
    ) -> None:
        pairs = fields.items() if isinstance(fields, Mapping) else fields
        frozen = {key: _freeze(value) for key, value in pairs}
        for key, value in kwargs.items():
            frozen[key] = _freeze(value)
        object.__setattr__(self, "_map", frozen)
        object.__setattr__(self, "_hash", hash(frozenset(frozen.items())))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __getitem__(self, key: Any) -> Any:
        return self._map[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectKey):
            return NotImplemented
        return self._hash == other._hash and self._map == other._map

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"ObjectKey({self._map!r})"

    def __reduce__(self) -> tuple[type[ObjectKey], tuple[dict[Any, Any]]]:
        return (ObjectKey, (self._map,))

    def as_dict(self) -> dict[Any, Any]:
        """A mutable copy, with nested ``ObjectKey`` and tuples thawed to dicts and lists."""
        return {key: _thaw(value) for key, value in self._map.items()}


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return ObjectKey(value)
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, ObjectKey):
        return value.as_dict()
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


# -- loads ----------------------------------------------------------------------------------


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a JSON body as fastjson would: standard JSON fast, fastjson's forms leniently."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return parse_lenient(data)


def parse_lenient(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse with the lenient parser only (no orjson attempt); see the module docstring."""
    if isinstance(data, str):
        text = data
    else:
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            doc = raw.decode("utf-8", "replace")
            raise FastjsonDecodeError("Invalid UTF-8", doc, exc.start) from None
    parser = _Parser(text)
    try:
        return parser.document()
    except RecursionError:
        raise FastjsonDecodeError("Nesting too deep", text, parser.pos) from None


_WHITESPACE: Final = frozenset(" \t\n\r\f\b")
_NUMBER_RE: Final = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?([LSBFD])?")
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_$][\w$]*", re.ASCII)
_HEX4_RE: Final = re.compile(r"[0-9A-Fa-f]{4}")
_HEX2_RE: Final = re.compile(r"[0-9A-Fa-f]{2}")
_STRING_CHUNK: Final = {
    '"': re.compile(r'([^"\\]*)(["\\])', re.DOTALL),
    "'": re.compile(r"([^'\\]*)(['\\])", re.DOTALL),
}
_ESCAPES: Final = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "F": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    **{str(digit): chr(digit) for digit in range(8)},
}
_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}


class _Parser:
    """Recursive descent over a str; ``pos`` is the index of the next unread character."""

    __slots__ = ("end", "pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.end = len(text)
        self.pos = 1 if text.startswith("\ufeff") else 0

    def fail(self, message: str, pos: int | None = None) -> FastjsonDecodeError:
        return FastjsonDecodeError(message, self.text, self.pos if pos is None else pos)

    def skip_whitespace(self) -> str:
        """Skip whitespace and return the next character ('' at the end)."""
        text, pos, end = self.text, self.pos, self.end
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos
        return text[pos] if pos < end else ""

    def document(self) -> Any:
        value = self.value(0)
        if self.skip_whitespace():
            raise self.fail("Extra data")
        return value

    def value(self, depth: int) -> Any:
        char = self.skip_whitespace()
        if char == "{":
            return self.object(depth + 1)
        if char == "[":
            return self.array(depth + 1)
        if char == '"' or char == "'":
            return self.string(char)
        if char == "-" or "0" <= char <= "9":
            return self.number()
        match = _IDENTIFIER_RE.match(self.text, self.pos)
        if match is not None and match.group() in _LITERALS:
            self.pos = match.end()
            return _LITERALS[match.group()]
        raise self.fail("Expecting value")

    def key(self, depth: int) -> Any:
        char = self.skip_whitespace()
        if char == '"' or char == "'":
            return self.string(char)
        if char == "{":
            return ObjectKey(self.object(depth + 1))
        if char == "[":
            return _freeze(self.array(depth + 1))
        if char == "-" or "0" <= char <= "9":
            return self.number()
        match = _IDENTIFIER_RE.match(self.text, self.pos)
        if match is not None:
            self.pos = match.end()
            name = match.group()
            return _LITERALS.get(name, name)
        raise self.fail("Expecting property name")

    def object(self, depth: int) -> dict[Any, Any]:
        if depth > MAX_DEPTH:
            raise self.fail("Nesting too deep")
        self.pos += 1  # the "{"
        result: dict[Any, Any] = {}
        if self.skip_whitespace() == "}":
            self.pos += 1
            return result
        while True:
            key = self.key(depth)
            if self.skip_whitespace() != ":":
                raise self.fail("Expecting ':' delimiter")
            self.pos += 1
            result[key] = self.value(depth)
            char = self.skip_whitespace()
            self.pos += 1
            if char == "}":
                return result
            if char != ",":
                raise self.fail("Expecting ',' delimiter", self.pos - 1)
            if self.skip_whitespace() == "}":  # trailing comma
                self.pos += 1
                return result

    def array(self, depth: int) -> list[Any]:
        if depth > MAX_DEPTH:
            raise self.fail("Nesting too deep")
        self.pos += 1  # the "["
        result: list[Any] = []
        if self.skip_whitespace() == "]":
            self.pos += 1
            return result
        while True:
            result.append(self.value(depth))
            char = self.skip_whitespace()
            self.pos += 1
            if char == "]":
                return result
            if char != ",":
                raise self.fail("Expecting ',' delimiter", self.pos - 1)
            if self.skip_whitespace() == "]":  # trailing comma
                self.pos += 1
                return result

    def number(self) -> int | float:
        start = self.pos
        match = _NUMBER_RE.match(self.text, start)
        if match is None:
            raise self.fail("Expecting value")
        fraction, exponent, suffix = match.groups()
        digits = match.group()[:-1] if suffix else match.group()
        self.pos = match.end()
        try:
            if fraction or exponent or suffix in ("F", "D"):
                return float(digits)
            return int(digits)
        except ValueError:  # more digits than int() converts
            raise self.fail("Number out of range", start) from None

    def string(self, quote: str) -> str:
        text, start = self.text, self.pos
        pattern = _STRING_CHUNK[quote]
        chunks: list[str] = []
        pos = start + 1
        while True:
            match = pattern.match(text, pos)
            if match is None:
                raise self.fail("Unterminated string", start)
            content, terminator = match.groups()
            if content:
                chunks.append(content)
            pos = match.end()
            if terminator == quote:
                break
            escape = text[pos : pos + 1]
            if escape == "u":
                if not _HEX4_RE.fullmatch(text, pos + 1, pos + 5):
                    raise self.fail("Invalid \\uXXXX escape", pos - 1)
                code = int(text[pos + 1 : pos + 5], 16)
                pos += 5
                if (
                    0xD800 <= code <= 0xDBFF
                    and text.startswith("\\u", pos)
                    and _HEX4_RE.fullmatch(text, pos + 2, pos + 6)
                ):
                    low = int(text[pos + 2 : pos + 6], 16)
                    if 0xDC00 <= low <= 0xDFFF:
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        pos += 6
                chunks.append(chr(code))
            elif escape == "x":
                if not _HEX2_RE.fullmatch(text, pos + 1, pos + 3):
                    raise self.fail("Invalid \\xXX escape", pos - 1)
                chunks.append(chr(int(text[pos + 1 : pos + 3], 16)))
                pos += 3
            else:
                replacement = _ESCAPES.get(escape)
                if replacement is None:
                    raise self.fail("Invalid \\escape", pos - 1)
                chunks.append(replacement)
                pos += 1
        self.pos = pos
        return "".join(chunks)


# -- dumps ----------------------------------------------------------------------------------


def dumps(value: Any, *, bare_int_keys: bool = False, sort_keys: bool = False) -> bytes:
    """Serialize compactly as UTF-8 JSON, writing non-str map keys the fastjson way.

    ``sort_keys`` sorts every object's fields (numbers, then strings, then other keys).
    Besides JSON types, tuples and sets are written as arrays, :class:`ObjectKey` as an
    object; leaves orjson knows (dataclasses, enums by value, datetimes) are written by it.
    """
    option = orjson.OPT_SORT_KEYS if sort_keys else 0
    try:
        return orjson.dumps(value, option=option)
    except TypeError:  # orjson.JSONEncodeError: a non-str key, a set, an int over 64 bits
        pass
    out: list[bytes] = []
    _Writer(out, bare_int_keys=bare_int_keys, sort_keys=sort_keys, option=option).value(value)
    return b"".join(out)


class _Writer:
    """The slow path of :func:`dumps`: containers by hand, leaves through orjson."""

    __slots__ = ("bare_int_keys", "option", "out", "sort_keys")

    def __init__(
        self, out: list[bytes], *, bare_int_keys: bool, sort_keys: bool, option: int
    ) -> None:
        self.out = out
        self.bare_int_keys = bare_int_keys
        self.sort_keys = sort_keys
        self.option = option

    def value(self, value: Any) -> None:
        out = self.out
        if isinstance(value, Mapping):
            self.mapping(value)
        elif isinstance(value, list | tuple | set | frozenset):
            out.append(b"[")
            for index, item in enumerate(value):
                if index:
                    out.append(b",")
                self.value(item)
            out.append(b"]")
        elif isinstance(value, int) and not isinstance(value, bool):
            out.append(int.__repr__(value).encode())
        else:
            out.append(orjson.dumps(value, option=self.option))

    def mapping(self, mapping: Mapping[Any, Any]) -> None:
        out = self.out
        items: Iterable[tuple[Any, Any]] = mapping.items()
        if self.sort_keys:
            items = sorted(items, key=self.sort_order)
        out.append(b"{")
        first = True
        for key, item in items:
            if not first:
                out.append(b",")
            first = False
            self.key(key)
            out.append(b":")
            self.value(item)
        out.append(b"}")

    def key(self, key: Any) -> None:
        out = self.out
        if isinstance(key, str):
            out.append(orjson.dumps(key))
        elif isinstance(key, ObjectKey | tuple):
            self.value(key)
        elif key is None or isinstance(key, int | float):
            text = _scalar_key_text(key)
            out.append(text if self.bare_int_keys else b'"' + text + b'"')
        else:
            raise TypeError(f"Dict key of type {type(key).__name__} is not supported")

    def sort_order(self, item: tuple[Any, Any]) -> tuple[int, Any]:
        key = item[0]
        if isinstance(key, int | float) and not isinstance(key, bool):
            return (0, key)
        if isinstance(key, str):
            return (1, key)
        rendered: list[bytes] = []
        _Writer(rendered, bare_int_keys=True, sort_keys=True, option=self.option).key(key)
        return (2, b"".join(rendered))


def _scalar_key_text(key: int | float | None) -> bytes:
    if key is None:
        return b"null"
    if isinstance(key, bool):
        return b"true" if key else b"false"
    if isinstance(key, int):
        return int.__repr__(key).encode()
    return orjson.dumps(key)
