"""Message ids and the packed host addresses they (and the stored record) are built from.

Packed host (``pack_host`` / ``unpack_host``), as in the store record's BORNHOST/STOREHOST::

    IPv4:  +--------------+------------+
           | addr (4)     | port int32 |        8 bytes
           +--------------+------------+
    IPv6:  +--------------+------------+
           | addr (16)    | port int32 |       20 bytes
           +--------------+------------+

An IPv4-mapped IPv6 address (``::ffff:1.2.3.4``) packs as IPv4, because the C++ and
ali-ons decoders read only 8-byte hosts.

Offset message id (the broker's ``msgId``), uppercase hex of::

    +-----------------+------------+---------------------------+
    | store addr 4|16 | port int32 | commit log offset int64   |   32 or 56 hex chars
    +-----------------+------------+---------------------------+

Client unique id (the ``UNIQ_KEY`` property, Java ``MessageClientIDSetter``), uppercase hex of::

    +-------------+-----------+-----------------+----------------------+---------------+
    | ip 4|16     | pid int16 | salt int32      | ms since month int32 | counter int16 |
    +-------------+-----------+-----------------+----------------------+---------------+
      fixed per generator (the "prefix")          per id

Both ids are opaque strings to everyone but their maker; the offset id is decoded by
clients to find the broker (END_TRANSACTION, VIEW_MESSAGE_BY_ID).
"""

from __future__ import annotations

import functools
import os
import re
import socket
import struct
import time
from collections.abc import Callable
from datetime import datetime, tzinfo

from rocketkube.common import errors

__all__ = [
    "UniqueIdGenerator",
    "decode_offset_msg_id",
    "encode_offset_msg_id",
    "join_host_port",
    "pack_host",
    "pack_ip",
    "split_host_port",
    "unpack_host",
]

_PORT = struct.Struct(">i")
_OFFSET = struct.Struct(">q")
_V4_MAPPED_PREFIX = b"\x00" * 10 + b"\xff\xff"
_OFFSET_ID_RE = re.compile(r"[0-9A-Fa-f]{32}|[0-9A-Fa-f]{56}")
_INT64_MAX = (1 << 63) - 1


@functools.lru_cache(maxsize=1024)
def pack_ip(host: str) -> bytes:
    """Pack an IP literal into 4 bytes (IPv4 or IPv4-mapped IPv6) or 16 bytes (IPv6).

    Raises :class:`~rocketkube.common.errors.MessageFormatError` for anything that is not
    an IP literal (host names are not resolved here).
    """
    try:
        if ":" not in host:
            return socket.inet_pton(socket.AF_INET, host)
        packed = socket.inet_pton(socket.AF_INET6, host.strip("[]"))
    except (OSError, ValueError) as exc:
        raise errors.MessageFormatError(f"not an IP address: {host!r}") from exc
    if packed.startswith(_V4_MAPPED_PREFIX):
        return packed[12:]
    return packed


@functools.lru_cache(maxsize=1024)
def pack_host(host: str, port: int) -> bytes:
    """Pack ``host:port`` as the store record does: address then int32 port (8 or 20 bytes)."""
    if not 0 <= port <= 0xFFFF:
        raise errors.MessageFormatError(f"port out of range: {port}")
    return pack_ip(host) + _PORT.pack(port)


def unpack_host(b: bytes | memoryview) -> tuple[str, int]:
    """Unpack 8 (IPv4) or 20 (IPv6) bytes into ``(host, port)``."""
    size = len(b)
    if size == 8:
        family = socket.AF_INET
    elif size == 20:
        family = socket.AF_INET6
    else:
        raise errors.MessageFormatError(f"packed host must be 8 or 20 bytes, got {size}")
    addr = bytes(b[: size - 4])
    (port,) = _PORT.unpack_from(b, size - 4)
    return socket.inet_ntop(family, addr), port


def join_host_port(host: str, port: int) -> str:
    """Format ``host:port``; IPv6 hosts get brackets (``[::1]:10911``)."""
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"


def split_host_port(address: str) -> tuple[str, int]:
    """Split ``ip:port``, ``[v6]:port`` or ``v6:port`` (last colon) into ``(host, port)``.

    A leading ``/`` (Java's ``InetSocketAddress.toString``) is ignored.
    """
    text = address.removeprefix("/")
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise errors.MessageFormatError(f"not a host:port address: {address!r}")
    port = int(port_text)
    if port > 0xFFFF:
        raise errors.MessageFormatError(f"port out of range in {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def encode_offset_msg_id(host: str, port: int, offset: int) -> str:
    """The broker's offset message id: hex of store host, port and commit log offset."""
    if not 0 <= offset <= _INT64_MAX:
        raise errors.MessageFormatError(f"commit log offset out of range: {offset}")
    return (pack_host(host, port) + _OFFSET.pack(offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """Decode an offset message id into ``(host, port, commit_log_offset)``.

    32 hex characters hold an IPv4 host, 56 an IPv6 host; case is ignored.
    """
    if not _OFFSET_ID_RE.fullmatch(msg_id):
        raise errors.MessageFormatError(f"not an offset message id: {msg_id!r}")
    raw = bytes.fromhex(msg_id)
    host, port = unpack_host(raw[:-8])
    (offset,) = _OFFSET.unpack_from(raw, len(raw) - 8)
    if offset < 0:
        raise errors.MessageFormatError(f"negative commit log offset in {msg_id!r}")
    return host, port, offset


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _month_bounds(now_ms: int, tz: tzinfo | None) -> tuple[int, int]:
    """Start of the month holding ``now_ms`` and start of the next one, in epoch ms."""
    moment = datetime.fromtimestamp(now_ms / 1000, tz)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if start.month == 12:
        following = start.replace(year=start.year + 1, month=1)
    else:
        following = start.replace(month=start.month + 1)
    return round(start.timestamp() * 1000), round(following.timestamp() * 1000)


class UniqueIdGenerator:
    """Makes ``UNIQ_KEY`` ids in the layout of Java's ``MessageClientIDSetter``.

    The prefix (ip, pid, salt) is fixed per instance; each id adds the milliseconds since
    the start of the current month (in ``tz``, local time when ``None``, as Java) and a
    16-bit counter. ``clock`` returns epoch milliseconds and is injectable for tests.
    """

    __slots__ = ("_clock", "_counter", "_next_start", "_prefix", "_start", "_tz")

    def __init__(
        self,
        host: str = "127.0.0.1",
        *,
        pid: int | None = None,
        salt: int | None = None,
        clock: Callable[[], int] = _now_ms,
        tz: tzinfo | None = None,
    ) -> None:
        pid_value = os.getpid() if pid is None else pid
        salt_value = int.from_bytes(os.urandom(4)) if salt is None else salt
        fixed = pack_ip(host) + struct.pack(">HI", pid_value & 0xFFFF, salt_value & 0xFFFFFFFF)
        self._prefix = fixed.hex().upper()
        self._clock = clock
        self._tz = tz
        self._counter = 0
        self._start, self._next_start = _month_bounds(clock(), tz)

    @property
    def prefix(self) -> str:
        """The fixed hex head of every id from this generator (ip, pid, salt)."""
        return self._prefix

    def next_id(self) -> str:
        """A new id: the prefix, then 8 hex chars of time and 4 of counter."""
        now = self._clock()
        if now >= self._next_start:
            self._start, self._next_start = _month_bounds(now, self._tz)
        diff = (now - self._start) & 0xFFFFFFFF
        if diff >= 0x80000000 and diff - 0x100000000 > -1_000_000:
            diff = 0  # a small step back of the clock (NTP), as Java does
        counter = self._counter
        self._counter = (counter + 1) & 0xFFFF
        return f"{self._prefix}{diff:08X}{counter:04X}"
