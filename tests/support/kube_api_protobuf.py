"""Request bodies in Kubernetes' protobuf encoding, decoded to the JSON form the emulated
API server stores: only what Helm sends that way (client-go's typed clients write
protobuf): Secrets and ConfigMaps, the release storage of Helm's two drivers, and the
DeleteOptions that remove them.

The encoding (``k8s.io/apimachinery/pkg/runtime/serializer/protobuf``)::

    "k8s\\x00"  runtime.Unknown {1: typeMeta {1: apiVersion, 2: kind}, 2: raw (the object),
                                3: contentEncoding, 4: contentType}

and of the objects (``k8s.io/api/core/v1/generated.proto``), by field number::

    Secret      1 metadata, 2 data map<string, bytes>, 3 type, 4 stringData, 5 immutable
    ConfigMap   1 metadata, 2 data map<string, string>, 3 binaryData map<string, bytes>,
                4 immutable
    DeleteOptions  1 gracePeriodSeconds, 3 orphanDependents, 4 propagationPolicy, 5 dryRun
    ObjectMeta  1 name, 2 generateName, 3 namespace, 5 uid, 6 resourceVersion,
                11 labels, 12 annotations, 14 finalizers (others are skipped)

A map is a repeated entry message {1: key, 2: value}; an empty string means unset (Go
writes every optional string). Any other kind is refused.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["MEDIA_TYPE", "decode"]

MEDIA_TYPE: Final = "application/vnd.kubernetes.protobuf"
_MAGIC: Final = b"k8s\x00"
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5

Field = tuple[int, int | bytes]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[Field]:
    """(field number, value) of each field: an int for varints, bytes for the rest."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, at = _varint(data, at)
            yield number, value
        elif wire == _LEN:
            size, at = _varint(data, at)
            yield number, data[at : at + size]
            at += size
        elif wire in (_I64, _I32):
            width = 8 if wire == _I64 else 4
            yield number, data[at : at + width]
            at += width
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _text(value: int | bytes) -> str:
    assert isinstance(value, bytes)
    return value.decode()


def _entry(value: int | bytes) -> tuple[str, bytes]:
    assert isinstance(value, bytes)
    found = {number: item for number, item in _fields(value)}
    raw = found.get(2, b"")
    assert isinstance(raw, bytes)
    return _text(found.get(1, b"")), raw


_META_STRINGS: Final = {1: "name", 2: "generateName", 3: "namespace", 5: "uid",
                        6: "resourceVersion"}  # fmt: skip
_META_MAPS: Final = {11: "labels", 12: "annotations"}


def _metadata(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for number, value in _fields(data):
        if number in _META_STRINGS and value:  # Go writes empty strings too
            meta[_META_STRINGS[number]] = _text(value)
        elif number in _META_MAPS:
            key, raw = _entry(value)
            meta.setdefault(_META_MAPS[number], {})[key] = raw.decode()
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _utf8(raw: bytes) -> str:
    return raw.decode()


def _object(kind: str, maps: Mapping[int, tuple[str, Callable[[bytes], str]]], data: bytes,
            strings: Mapping[int, str], booleans: Mapping[int, str]) -> dict[str, Any]:  # fmt: skip
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": kind}
    for number, value in _fields(data):
        if number == 1:
            assert isinstance(value, bytes)
            obj["metadata"] = _metadata(value)
        elif number in maps:
            name, convert = maps[number]
            key, raw = _entry(value)
            obj.setdefault(name, {})[key] = convert(raw)
        elif number in strings and value:
            obj[strings[number]] = _text(value)
        elif number in booleans:
            obj[booleans[number]] = bool(value)
    return obj


def _secret(data: bytes) -> dict[str, Any]:
    maps = {2: ("data", _base64), 4: ("stringData", _utf8)}
    return _object("Secret", maps, data, {3: "type"}, {5: "immutable"})


def _config_map(data: bytes) -> dict[str, Any]:
    maps = {2: ("data", _utf8), 3: ("binaryData", _base64)}
    return _object("ConfigMap", maps, data, {}, {4: "immutable"})


def _delete_options(data: bytes) -> dict[str, Any]:
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    for number, value in _fields(data):
        if number == 1:
            options["gracePeriodSeconds"] = value
        elif number == 3:
            options["orphanDependents"] = bool(value)
        elif number == 4 and value:
            options["propagationPolicy"] = _text(value)
        elif number == 5:
            options.setdefault("dryRun", []).append(_text(value))
    return options


_KINDS: Final = {
    ("v1", "Secret"): _secret,
    ("v1", "ConfigMap"): _config_map,
    ("v1", "DeleteOptions"): _delete_options,
}


def decode(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body holds; ValueError if it is not one we know."""
    if not body.startswith(_MAGIC):
        raise ValueError("no protobuf envelope")
    envelope = {number: value for number, value in _fields(body[len(_MAGIC) :])}
    type_meta = envelope.get(1, b"")
    raw = envelope.get(2, b"")
    if not isinstance(type_meta, bytes) or not isinstance(raw, bytes):
        raise ValueError("a malformed protobuf envelope")
    names = {number: _text(value) for number, value in _fields(type_meta)}
    key = (names.get(1, ""), names.get(2, ""))
    if key not in _KINDS:
        raise ValueError(f"protobuf is not served for {key[0]} {key[1]}")
    return _KINDS[key](raw)
