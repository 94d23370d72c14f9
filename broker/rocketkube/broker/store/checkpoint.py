"""The checkpoint file: how far the commit log and what is derived from it are on disk.

One 4 KiB page (written whole, then ``fdatasync``), big-endian::

    offset  size  field
    0       8     physicMsgTimestamp  store time of the last flushed commit log record
    8       8     logicsMsgTimestamp  store time of the last record whose CQ entry is flushed
    16      8     indexMsgTimestamp   store time of the last record whose index entries are
                                      flushed
    --- the three Java fields above; rocketkube's below, valid when MAGIC is present ---
    24      8     safeOffset          commit log offset below which the log, the consume
                                      queues and the index are all on disk: recovery after
                                      a crash re-checks and re-dispatches from here
    32      8     cleanMaxOffset      end of the commit log at a clean shutdown; -1 while
                                      running (a clean restart trusts it and scans nothing)
    40      4     MAGIC               0x524B4350 ("RKCP")
    44      4052  zeros

A checkpoint written by a Java broker has no MAGIC: recovery then scans everything.

The page's block is allocated when the file is created and overwritten in place from then
on, so writing it needs no new block: on a full disk only a store's first checkpoint can
fail (an ``OSError``, ENOSPC).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Final

__all__ = ["Checkpoint"]

_LAYOUT: Final = struct.Struct(">qqqqqi")
_MAGIC: Final = 0x524B4350
_PAGE: Final = 4096


class Checkpoint:
    """The checkpoint values in memory, read from and written to the file."""

    __slots__ = ("_path", "clean_max_offset", "has_extension", "index_msg_timestamp",
                 "logics_msg_timestamp", "physic_msg_timestamp", "safe_offset")  # fmt: skip

    def __init__(self, path: Path) -> None:
        self._path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.safe_offset = 0
        self.clean_max_offset = -1
        self.has_extension = False
        """Whether the file held rocketkube's fields (else safe/clean offsets are unknown)."""

    def load(self) -> None:
        """Read the file if it exists; a short or missing file leaves the defaults."""
        try:
            data = self._path.read_bytes()
        except FileNotFoundError:
            return
        if len(data) < _LAYOUT.size:
            return
        physic, logics, index, safe, clean, magic = _LAYOUT.unpack_from(data)
        self.physic_msg_timestamp = physic
        self.logics_msg_timestamp = logics
        self.index_msg_timestamp = index
        self.has_extension = magic == _MAGIC
        if self.has_extension:
            self.safe_offset = safe
            self.clean_max_offset = clean

    def encode(self) -> bytes:
        """The whole page as it is written."""
        page = bytearray(_PAGE)
        _LAYOUT.pack_into(page, 0, self.physic_msg_timestamp, self.logics_msg_timestamp,
                          self.index_msg_timestamp, self.safe_offset, self.clean_max_offset,
                          _MAGIC)  # fmt: skip
        return bytes(page)

    def flush(self, page: bytes | None = None) -> None:
        """Write ``page`` (default: the current values) in place and ``fdatasync`` it.

        Blocking: call from a worker thread when the event loop runs. The page is encoded
        by the caller on the loop, so the values written are one consistent snapshot.
        """
        data = self.encode() if page is None else page
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < _PAGE:
                os.posix_fallocate(fd, 0, _PAGE)
            os.pwrite(fd, data, 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
