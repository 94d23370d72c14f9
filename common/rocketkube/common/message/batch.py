"""The batch body of SEND_BATCH_MESSAGE (and SEND_MESSAGE_V2 with ``m=true``).

The body is the concatenation, per message (Java ``MessageDecoder.encodeMessage``), of::

    offset  size  field
    0       4     TOTALSIZE  int32 = 20 + BODYLEN + 2 + PROPLEN (includes itself)
    4       4     MAGICCODE  int32, written 0 by clients, not checked
    8       4     BODYCRC    int32, written 0 by clients; the broker recomputes it
    12      4     FLAG       int32 user flag
    16      4     BODYLEN    int32
    20      n     BODY
    20+n    2     PROPLEN    int16 (signed, so at most 32767)
    22+n    m     PROPERTIES UTF-8 properties string (that message's UNIQ_KEY, TAGS, ...)

Decoding slices the input with memoryviews: item bodies share the request's buffer.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

from rocketkube.common import errors

__all__ = ["BatchItem", "decode_batch", "encode_batch", "item_size"]

_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN
_PROPLEN = struct.Struct(">h")
_HEAD_SIZE = _HEAD.size  # 20
_MIN_SIZE = _HEAD_SIZE + _PROPLEN.size  # 22
_MAX_PROPLEN = 0x7FFF


class BatchItem(NamedTuple):
    """One message of a batch: user flag, body and properties string."""

    flag: int
    body: bytes | memoryview
    properties: str


def decode_batch(body: bytes | bytearray | memoryview) -> list[BatchItem]:
    """Split a batch body into its messages.

    Raises :class:`~rocketkube.common.errors.MessageFormatError` (a ``ProtocolError``) when
    an item is truncated or its TOTALSIZE disagrees with its BODYLEN and PROPLEN. Property
    bytes that are not UTF-8 get replacement characters, as Java's ``new String`` does.
    """
    view = body if isinstance(body, memoryview) else memoryview(body)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    size = len(view)
    items: list[BatchItem] = []
    pos = 0
    while pos < size:
        if size - pos < _MIN_SIZE:
            raise errors.MessageFormatError(
                f"batch item at {pos}: {size - pos} bytes left, a message needs {_MIN_SIZE}"
            )
        total, _magic, _crc, flag, body_len = _HEAD.unpack_from(view, pos)
        if total < _MIN_SIZE or total > size - pos:
            raise errors.MessageFormatError(
                f"batch item at {pos}: TOTALSIZE {total} outside 22..{size - pos}"
            )
        if body_len < 0 or body_len > total - _MIN_SIZE:
            raise errors.MessageFormatError(
                f"batch item at {pos}: BODYLEN {body_len} does not fit TOTALSIZE {total}"
            )
        body_start = pos + _HEAD_SIZE
        props_pos = body_start + body_len
        (props_len,) = _PROPLEN.unpack_from(view, props_pos)
        if props_len < 0 or _MIN_SIZE + body_len + props_len != total:
            raise errors.MessageFormatError(
                f"batch item at {pos}: TOTALSIZE {total} != 22 + BODYLEN {body_len}"
                f" + PROPLEN {props_len}"
            )
        props_start = props_pos + _PROPLEN.size
        end = pos + total
        properties = str(view[props_start:end], "utf-8", "replace")
        items.append(BatchItem(flag, view[body_start:props_pos], properties))
        pos = end
    return items


def item_size(item: BatchItem) -> int | None:
    """The bytes ``item`` takes in a batch body, or ``None`` when it cannot be in one (its
    properties exceed the 32767 bytes PROPLEN can say)."""
    props = item.properties
    props_len = len(props) if props.isascii() else len(props.encode("utf-8"))
    if props_len > _MAX_PROPLEN:
        return None
    return _MIN_SIZE + len(item.body) + props_len


def encode_batch(items: Iterable[BatchItem]) -> bytes:
    """Encode messages as a batch body, with MAGICCODE and BODYCRC written 0 as clients do."""
    parts: list[bytes | memoryview] = []
    for item in items:
        props = item.properties.encode("utf-8")
        if len(props) > _MAX_PROPLEN:
            raise errors.MessageFormatError(
                f"properties of {len(props)} bytes exceed the batch limit of {_MAX_PROPLEN}"
            )
        body_len = len(item.body)
        parts.append(_HEAD.pack(_MIN_SIZE + body_len + len(props), 0, 0, item.flag, body_len))
        parts.append(item.body)
        parts.append(_PROPLEN.pack(len(props)))
        parts.append(props)
    return b"".join(parts)
