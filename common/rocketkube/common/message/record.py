"""The v1 stored message record: commit log, pull bodies, VIEW/QUERY bodies, HA stream.

One record (all integers big-endian, signed as in Java)::

    offset      size   field
    0           4      TOTALSIZE       int32, whole record including this field
    4           4      MAGICCODE       int32 0xDAA320A7 (v1; 4.x clients read only v1)
    8           4      BODYCRC         int32 zlib.crc32(body) & 0x7FFFFFFF
    12          4      QUEUEID         int32
    16          4      FLAG            int32 user flag
    20          8      QUEUEOFFSET     int64 logical offset in the consume queue
    28          8      PHYSICALOFFSET  int64 commit log offset of this record
    36          4      SYSFLAG         int32 (bit 0x10: BORNHOST is v6, 0x20: STOREHOST is v6)
    40          8      BORNTIMESTAMP   int64 ms
    48          b      BORNHOST        addr(4) + port int32 = 8, or addr(16) + port = 20
    48+b        8      STORETIMESTAMP  int64 ms
    56+b        s      STOREHOST       8 or 20, as BORNHOST
    56+b+s      4      RECONSUMETIMES  int32
    60+b+s      8      PREPARED TX OFF int64
    68+b+s      4      BODYLEN         int32
    72+b+s      n      BODY
    ..          1      TOPICLEN        int8 (so a topic has at most 127 bytes)
    ..          t      TOPIC           UTF-8
    ..          2      PROPLEN         int16 (so at most 32767 bytes)
    ..          p      PROPERTIES      UTF-8 ``name\\x01value\\x02...``

    TOTALSIZE = 75 + b + s + n + t + p     (91 + n + t + p with IPv4 hosts)

At the end of a commit log segment the writer leaves an 8-byte filler instead::

    0  4  TOTALSIZE  int32 = bytes left in the segment
    4  4  MAGICCODE  int32 0xCBD43194 (blank)

The functions here are pure: they read and write a caller's buffer (``bytes``, ``bytearray``,
``mmap``, ``memoryview``) at a position. :func:`encode_into` packs straight into that buffer
so the body is copied exactly once, TOTALSIZE and MAGICCODE last so that a writer killed
midway leaves no valid-looking record; :func:`check` validates a record for recovery without
building anything; :func:`decode` builds a :class:`~rocketkube.common.message.model.MessageExt`.
Malformed input raises :class:`~rocketkube.common.errors.MessageFormatError` (a
``ProtocolError``) and nothing else.
"""

from __future__ import annotations

import functools
import mmap
import struct
import zlib
from collections.abc import Iterator
from typing import Final, NamedTuple, TypeAlias

from rocketkube.common import errors
from rocketkube.common.message import ids, model
from rocketkube.common.message import properties as props

__all__ = [
    "BLANK_MAGIC",
    "CHECK_BLANK",
    "CHECK_END",
    "CHECK_INVALID",
    "MAGIC",
    "MAX_PROPERTIES_SIZE",
    "MAX_TOPIC_SIZE",
    "ReadableBuffer",
    "RecordMeta",
    "WritableBuffer",
    "blank_into",
    "body_crc",
    "check",
    "decode",
    "decode_all",
    "encode",
    "encode_into",
    "iter_records",
    "read_meta",
    "record_size",
    "store_timestamp_at",
]

WritableBuffer: TypeAlias = bytearray | memoryview | mmap.mmap
"""Where records are written: a mapped segment, or a bytearray in tests."""
ReadableBuffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
"""Where records are read from."""

MAGIC: Final = -626843481  # 0xDAA320A7 as a Java int
BLANK_MAGIC: Final = -875286124  # 0xCBD43194 as a Java int
MAX_TOPIC_SIZE: Final = 127
MAX_PROPERTIES_SIZE: Final = 32767

CHECK_BLANK: Final = 0
""":func:`check`: a blank filler; the segment ends here and the log goes on in the next."""
CHECK_END: Final = -1
""":func:`check`: zeros (nothing was ever written here): the end of the data."""
CHECK_INVALID: Final = -2
""":func:`check`: a torn or corrupt record (size, magic, lengths or body CRC are wrong)."""

_BORN_V6: Final = 0x10
_STORE_V6: Final = 0x20
_HOST_BITS: Final = _BORN_V6 | _STORE_V6
_V4: Final = 8
_V6: Final = 20

_PREFIX = struct.Struct(">iiiiiqqiq")  # TOTALSIZE .. BORNTIMESTAMP: 48 bytes
_SIZE_MAGIC = struct.Struct(">ii")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_BYTE = struct.Struct(">b")
_FIXED_NO_HOSTS: Final = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 1 + 2  # 75


def _header_struct(born: int, store: int) -> struct.Struct:
    # TOTALSIZE..BORNTIMESTAMP, BORNHOST, STORETIMESTAMP, STOREHOST, RECONSUMETIMES,
    # PREPARED TX OFFSET, BODYLEN
    return struct.Struct(f">iiiiiqqiq{born}sq{store}siqi")


# Indexed by the two host bits of SYSFLAG >> 4: (born v6, store v6).
_HEADERS: Final = (
    _header_struct(_V4, _V4),
    _header_struct(_V6, _V4),
    _header_struct(_V4, _V6),
    _header_struct(_V6, _V6),
)


class RecordMeta(NamedTuple):
    """The fields of a record the store needs to dispatch it, without the body."""

    size: int
    queue_id: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    store_timestamp: int
    topic: str
    properties: bytes


def record_size(
    body_len: int, topic_len: int, props_len: int, born_host_len: int = 8, store_host_len: int = 8
) -> int:
    """TOTALSIZE of a record with those lengths (host lengths 8 for IPv4, 20 for IPv6)."""
    return _FIXED_NO_HOSTS + born_host_len + store_host_len + body_len + topic_len + props_len


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """BODYCRC: Java's ``CRC32`` of the body masked to a non-negative int32."""
    return zlib.crc32(body) & 0x7FFFFFFF


def encode_into(
    buf: WritableBuffer,
    pos: int,
    *,
    topic: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes | bytearray | memoryview,
    properties: bytes,
) -> int:
    """Write one record at ``buf[pos:]`` and return its TOTALSIZE.

    ``topic`` and ``properties`` are UTF-8 bytes, hosts are packed
    (:func:`~rocketkube.common.message.ids.pack_host`); the v6 bits of ``sys_flag`` are set
    from the host lengths. The caller checks the limits (topic <= 127, properties <= 32767
    bytes) and that the record fits; ``buf`` is any writable buffer (mmap, bytearray).
    """
    born_len = len(born_host)
    store_len = len(store_host)
    body_len = len(body)
    topic_len = len(topic)
    props_len = len(properties)
    sys_flag &= ~_HOST_BITS
    if born_len != _V4:
        sys_flag |= _BORN_V6
    if store_len != _V4:
        sys_flag |= _STORE_V6
    size = _FIXED_NO_HOSTS + born_len + store_len + body_len + topic_len + props_len
    head = _HEADERS[sys_flag >> 4 & 3]
    head.pack_into(
        buf,
        pos,
        0,  # TOTALSIZE and MAGICCODE are written last, see below
        0,
        zlib.crc32(body) & 0x7FFFFFFF,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body_len,
    )
    p = pos + head.size
    end = p + body_len
    buf[p:end] = body
    buf[end] = topic_len
    p = end + 1
    end = p + topic_len
    buf[p:end] = topic
    _SHORT.pack_into(buf, end, props_len)
    p = end + 2
    buf[p : p + props_len] = properties
    # Last: a process killed anywhere above leaves zeros at ``pos`` (the end of the data
    # for recovery), never a record whose unchecked parts (the CRC covers only the body)
    # are half written.
    _SIZE_MAGIC.pack_into(buf, pos, size, MAGIC)
    return size


def encode(
    *,
    topic: str,
    body: bytes,
    properties: str = "",
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: str = "127.0.0.1:0",
    store_timestamp: int = 0,
    store_host: str = "127.0.0.1:0",
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
) -> bytes:
    """One record as new bytes, from readable values (tests, CHECK_TRANSACTION bodies)."""
    topic_b = topic.encode()
    props_b = properties.encode()
    if len(topic_b) > MAX_TOPIC_SIZE:
        raise errors.MessageFormatError(f"topic of {len(topic_b)} bytes exceeds 127")
    if len(props_b) > MAX_PROPERTIES_SIZE:
        raise errors.MessageFormatError(f"properties of {len(props_b)} bytes exceed 32767")
    born = ids.pack_host(*ids.split_host_port(born_host))
    store = ids.pack_host(*ids.split_host_port(store_host))
    out = bytearray(record_size(len(body), len(topic_b), len(props_b), len(born), len(store)))
    encode_into(
        out,
        0,
        topic=topic_b,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        born_host=born,
        store_timestamp=store_timestamp,
        store_host=store,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
        body=body,
        properties=props_b,
    )
    return bytes(out)


def blank_into(buf: WritableBuffer, pos: int, remaining: int) -> None:
    """Write the end-of-segment filler: TOTALSIZE = ``remaining``, blank magic."""
    _SIZE_MAGIC.pack_into(buf, pos, remaining, BLANK_MAGIC)


def _lengths(view: memoryview, pos: int, limit: int) -> tuple[int, int, int, int, int]:
    """Validate the framing of the record at ``pos``; return its parts' positions.

    Returns (size, body_pos, body_len, topic_pos, topic_len); properties follow the topic.
    Raises ``MessageFormatError`` when the lengths disagree or run past ``limit``.
    """
    if pos < 0 or limit - pos < 8:
        raise errors.MessageFormatError(f"record at {pos}: {limit - pos} bytes left")
    size, magic = _SIZE_MAGIC.unpack_from(view, pos)
    if magic != MAGIC:
        raise errors.MessageFormatError(f"record at {pos}: bad magic {magic & 0xFFFFFFFF:#x}")
    if size < _FIXED_NO_HOSTS + 2 * _V4 or size > limit - pos:
        raise errors.MessageFormatError(f"record at {pos}: TOTALSIZE {size} out of range")
    (sys_flag,) = _INT.unpack_from(view, pos + 36)
    born = _V6 if sys_flag & _BORN_V6 else _V4
    store = _V6 if sys_flag & _STORE_V6 else _V4
    end = pos + size
    p = pos + 68 + born + store
    if p + 4 > end:
        raise errors.MessageFormatError(f"record at {pos}: TOTALSIZE {size} too small")
    (body_len,) = _INT.unpack_from(view, p)
    body_pos = p + 4
    topic_len_pos = body_pos + body_len
    if body_len < 0 or topic_len_pos + 1 > end:
        raise errors.MessageFormatError(f"record at {pos}: BODYLEN {body_len} out of range")
    topic_len = view[topic_len_pos]
    topic_pos = topic_len_pos + 1
    props_len_pos = topic_pos + topic_len
    if topic_len > MAX_TOPIC_SIZE or props_len_pos + 2 > end:
        raise errors.MessageFormatError(f"record at {pos}: TOPICLEN {topic_len} out of range")
    (props_len,) = _SHORT.unpack_from(view, props_len_pos)
    if props_len < 0 or props_len_pos + 2 + props_len != end:
        raise errors.MessageFormatError(
            f"record at {pos}: TOTALSIZE {size} disagrees with PROPLEN {props_len}"
        )
    return size, body_pos, body_len, topic_pos, topic_len


def _as_view(buf: ReadableBuffer) -> memoryview:
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def check(
    buf: ReadableBuffer,
    pos: int,
    limit: int | None = None,
    *,
    expected_offset: int | None = None,
    verify_crc: bool = True,
) -> int:
    """Validate the record at ``pos`` for recovery, reading no further than ``limit``.

    Returns its TOTALSIZE (> 0); :data:`CHECK_BLANK` for a blank filler whose TOTALSIZE
    reaches ``limit`` exactly (when ``limit`` is given) or stays inside the buffer;
    :data:`CHECK_END` for never-written zeros; :data:`CHECK_INVALID` for anything else: bad
    magic, lengths that disagree, a PHYSICALOFFSET other than ``expected_offset``, or a
    body whose CRC differs. Never raises on malformed input.
    """
    view = _as_view(buf)
    exact_blank = limit is not None and limit <= len(view)
    if limit is None or limit > len(view):
        limit = len(view)
    if pos < 0 or limit - pos < 8:
        return CHECK_INVALID if pos < 0 or any(view[pos:limit]) else CHECK_END
    size, magic = _SIZE_MAGIC.unpack_from(view, pos)
    if magic == BLANK_MAGIC:
        fits = size == limit - pos if exact_blank else 8 <= size <= limit - pos
        return CHECK_BLANK if fits else CHECK_INVALID
    if size == 0 and magic == 0:
        return CHECK_END
    try:
        size, body_pos, body_len, _topic_pos, _topic_len = _lengths(view, pos, limit)
    except errors.MessageFormatError:
        return CHECK_INVALID
    if expected_offset is not None and _LONG.unpack_from(view, pos + 28)[0] != expected_offset:
        return CHECK_INVALID
    if verify_crc:
        (crc,) = _INT.unpack_from(view, pos + 8)
        if zlib.crc32(view[body_pos : body_pos + body_len]) & 0x7FFFFFFF != crc:
            return CHECK_INVALID
    return size


def read_meta(buf: ReadableBuffer, pos: int) -> RecordMeta:
    """The dispatch fields of the record at ``pos`` (no body copy, no CRC check)."""
    view = _as_view(buf)
    size, _body_pos, _body_len, topic_pos, topic_len = _lengths(view, pos, len(view))
    _size, _magic, _crc, queue_id, _flag, queue_offset, phys, sys_flag, _born_ts = (
        _PREFIX.unpack_from(view, pos)
    )
    born = _V6 if sys_flag & _BORN_V6 else _V4
    (store_ts,) = _LONG.unpack_from(view, pos + 48 + born)
    topic = str(view[topic_pos : topic_pos + topic_len], "utf-8", "replace")
    properties = bytes(view[topic_pos + topic_len + 2 : pos + size])
    return RecordMeta(size, queue_id, queue_offset, phys, sys_flag, store_ts, topic, properties)


def store_timestamp_at(buf: ReadableBuffer, pos: int) -> int:
    """STORETIMESTAMP of the record at ``pos`` (its position depends on the born host)."""
    view = _as_view(buf)
    try:
        (sys_flag,) = _INT.unpack_from(view, pos + 36)
        born = _V6 if sys_flag & _BORN_V6 else _V4
        (store_ts,) = _LONG.unpack_from(view, pos + 48 + born)
    except struct.error as exc:
        raise errors.MessageFormatError(f"record at {pos}: truncated") from exc
    return int(store_ts)


def _host(raw: memoryview) -> str:
    return _host_text(bytes(raw))


@functools.lru_cache(maxsize=1024)
def _host_text(raw: bytes) -> str:
    """``ip:port`` of a packed host; cached, as a pull's records repeat a few hosts."""
    return ids.join_host_port(*ids.unpack_host(raw))


def decode(buf: ReadableBuffer, pos: int = 0) -> model.MessageExt:
    """Decode the record at ``pos`` into a ``MessageExt`` (the body is copied).

    The body CRC is not verified (use :func:`check`); ``body_crc`` carries the stored value.
    """
    view = _as_view(buf)
    if pos < 0:
        raise errors.MessageFormatError(f"negative record position {pos}")
    size, body_pos, body_len, topic_pos, topic_len = _lengths(view, pos, len(view))
    (_size, _magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = (
        _PREFIX.unpack_from(view, pos)
    )
    born = _V6 if sys_flag & _BORN_V6 else _V4
    store = _V6 if sys_flag & _STORE_V6 else _V4
    p = pos + 48
    born_host = _host(view[p : p + born])
    p += born
    (store_ts,) = _LONG.unpack_from(view, p)
    p += 8
    store_host = _host(view[p : p + store])
    p += store
    (reconsume_times,) = _INT.unpack_from(view, p)
    (prepared,) = _LONG.unpack_from(view, p + 4)
    props_pos = topic_pos + topic_len + 2
    return model.MessageExt(
        topic=str(view[topic_pos : topic_pos + topic_len], "utf-8", "replace"),
        body=bytes(view[body_pos : body_pos + body_len]),
        flag=flag,
        properties=props.decode_properties(view[props_pos : pos + size]),
        queue_id=queue_id,
        queue_offset=queue_offset,
        commit_log_offset=phys,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_timestamp=store_ts,
        store_host=store_host,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared,
        body_crc=crc,
        store_size=size,
    )


def iter_records(buf: ReadableBuffer) -> Iterator[model.MessageExt]:
    """Decode concatenated records (a pull or QUERY_MESSAGE body) one by one."""
    view = _as_view(buf)
    pos = 0
    end = len(view)
    while pos < end:
        message = decode(view, pos)
        pos += message.store_size
        yield message


def decode_all(buf: ReadableBuffer) -> list[model.MessageExt]:
    """All the records of a concatenated body, as a list."""
    return list(iter_records(buf))
