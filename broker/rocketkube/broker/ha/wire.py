"""The replication streams, big-endian, without remoting framing:

- slave -> master: int64 values, each the slave's commit log end; the first one says
  where the slave wants the stream to start, the later ones acknowledge what it wrote;
- master -> slave: ``int64 masterPhyOffset | int32 bodySize | body``, the body being raw
  commit log bytes from that offset (never crossing a segment); ``bodySize`` 0 is a
  heartbeat naming the next offset the master will send from.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["OFFSET", "TRANSFER_HEADER", "last_offset", "transfer_start"]

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


def transfer_start(requested: int, master_end: int, segment_size: int) -> int:
    """Where the master starts streaming: where the slave asked, or for an empty slave
    (0) the start of the master's last segment, as RocketMQ does (an empty slave does not
    copy the whole history)."""
    if requested > 0:
        return requested
    return master_end - master_end % segment_size
