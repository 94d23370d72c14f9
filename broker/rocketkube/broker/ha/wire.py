"""The replication streams, big-endian, without remoting framing:

- slave -> master: int64 values, each the slave's commit log end; the first one says
  where the slave wants the stream to start, the later ones acknowledge what it wrote;
- master -> slave: ``int64 masterPhyOffset | int32 bodySize | body``, the body being raw
  commit log bytes from that offset (never crossing a segment); ``bodySize`` 0 is a
  heartbeat naming the next offset the master will send from.

A transfer header is checked before its body is read (:func:`transfer_header`): a negative
offset or size, or a body larger than a commit log segment, is a :class:`ProtocolError`
(the slave drops the connection and tries again), never a read of gigabytes.
"""

from __future__ import annotations

import struct
from typing import Final

from rocketkube.common import errors

__all__ = ["OFFSET", "TRANSFER_HEADER", "last_offset", "transfer_header", "transfer_start"]

OFFSET: Final = struct.Struct(">q")
TRANSFER_HEADER: Final = struct.Struct(">qi")


def last_offset(buffer: bytearray) -> int | None:
    """The last whole offset report in ``buffer``, consuming every whole one (a partial
    one stays for the next read); ``None`` when there is none yet."""
    whole = len(buffer) // OFFSET.size * OFFSET.size
    if not whole:
        return None
    (value,) = OFFSET.unpack_from(buffer, whole - OFFSET.size)
    del buffer[:whole]
    return int(value)


def transfer_header(data: bytes | bytearray | memoryview, max_body: int) -> tuple[int, int]:
    """``(masterPhyOffset, bodySize)`` of a transfer header of :data:`TRANSFER_HEADER`'s
    size; ProtocolError for values no master sends (``max_body``: a segment's size)."""
    if len(data) != TRANSFER_HEADER.size:
        raise errors.ProtocolError(f"a transfer header is 12 bytes, not {len(data)}")
    offset, size = TRANSFER_HEADER.unpack(data)
    if offset < 0 or not 0 <= size <= max_body:
        raise errors.ProtocolError(
            f"transfer header of offset {offset} and body size {size} (at most {max_body})"
        )
    return int(offset), int(size)


def transfer_start(requested: int, master_end: int, segment_size: int) -> int:
    """Where the master starts streaming: where the slave asked, or for an empty slave
    (0) the start of the master's last segment, as RocketMQ does (an empty slave does not
    copy the whole history)."""
    if requested > 0:
        return requested
    return master_end - master_end % segment_size
