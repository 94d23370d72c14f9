"""The key index: which commit log offsets hold messages with a given key.

Keys are ``topic#UNIQ_KEY`` and ``topic#k`` for each space-separated token of KEYS. Each
index file (``index/<yyyyMMddHHmmssSSS>``, creation time) is a hash table with chaining::

    0                   40                   40 + 4 x slots          40 + 4 x slots + 20 x n
    +-------------------+--------------------+------------------------+
    | header            | hash slots         | entries                |
    +-------------------+--------------------+------------------------+

    header:  beginTimestamp int64 | endTimestamp int64 | beginPhyOffset int64 |
             endPhyOffset int64 | hashSlotCount int32 (slots in use) | indexCount int32
    slot:    int32 number of the newest entry with that hash, 0 = empty
    entry:   keyHash int32 | phyOffset int64 | timeDiff int32 (s since beginTimestamp) |
             prevIndex int32 (older entry of the same slot, 0 = end of chain)

Entry numbers start at 1 (``indexCount`` starts at 1). A lookup walks the chain from
``slot = keyHash % slots``, keeping entries whose hash matches and whose time is in range;
files are searched newest first. The hash may collide, so callers verify each record.

One deviation from Java: ``keyHash`` is ``crc32(utf8(key)) & 0x7FFFFFFF`` rather than
``abs(String.hashCode(key))``. It is computed once per message on the append path, where
crc32 runs in C while a Java-compatible hash would be a Python loop per character; only
this store reads these files, and the layout is otherwise Java's.

A file is created with the blocks of its header, its slots (written anywhere) and a first
step of its entries allocated, and entries are allocated in steps ahead of the writer
(doubling): nothing is written through the mapping where blocks are not (a full disk
would fault), and a file takes disk as it fills, as a sparse one did. The key index is
a lookup aid: an append is refused when the index file it may need cannot be created
(:meth:`IndexService.reserve`, before the commit log is written), but when dispatch still
needs one that cannot be had (a run with more keys than reserved, a recovery or a slave on
a full disk), the keys that do not fit are left out of the index and the messages are
stored all the same (found by queue and offset id, not by key), with a warning once.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rocketkube.broker.store import mapped_file, records, settings

__all__ = ["IndexFile", "IndexService", "key_hash"]

_log = logging.getLogger(__name__)

_HEADER: Final = struct.Struct(">qqqqii")
_HEADER_SIZE: Final = 40
_SLOT: Final = records.INDEX_SLOT
_ENTRY: Final = records.INDEX_ENTRY
_ENTRY_SIZE: Final = 20
_INT_MAX: Final = 0x7FFFFFFF
_ZERO_ENTRY: Final = bytes(_ENTRY_SIZE)
_PAGE_SHIFT: Final = records.INDEX_PAGE_SHIFT
ALLOCATION_UNIT: Final = 1 << 20
"""Entries are allocated 1 MiB (52,428 entries) at a time, then doubling."""


def topic_seed(topic: str) -> int:
    """The running crc32 of ``topic#``, to continue with a key's bytes."""
    return zlib.crc32(topic.encode() + b"#")


def key_hash(topic: str, key: str | bytes) -> int:
    """``keyHash`` of ``topic#key``."""
    raw = key.encode() if isinstance(key, str) else key
    return zlib.crc32(raw, topic_seed(topic)) & _INT_MAX


class IndexFile:
    """One index file.

    The active (newest) file keeps its hash slots in a ``bytearray`` shadow and writes the
    changed 4 KiB pages to the file when flushed: slot writes land at random, and through
    the mapping each would cost a page fault after every flush, as writeback
    write-protects the pages again. Entries are appended through the mapping (sequential).
    """

    __slots__ = ("_dirty", "_slot_base", "_slots", "_snapshot", "_whole_flush_pages",
                 "begin_phys", "begin_ts", "count", "end_phys", "end_ts", "entries_at",
                 "flushed_count", "index_num", "mapped", "slot_num", "slots_used",
                 "writable_num")  # fmt: skip

    def __init__(self, path: Path, slot_num: int, index_num: int) -> None:
        """Open the file, creating it (``OSError`` when it cannot be allocated)."""
        size = _HEADER_SIZE + slot_num * 4 + index_num * _ENTRY_SIZE
        self.entries_at = _HEADER_SIZE + slot_num * 4
        self.mapped = mapped_file.MappedFile(
            path, 0, size, allocate=self.entries_at + ALLOCATION_UNIT
        )
        self.mapped.wrote = size
        self.slot_num = slot_num
        self.index_num = index_num
        self.writable_num = 0
        """Entry numbers below it have their blocks (at most ``index_num``): the writer
        stops there, :meth:`grow` moves it."""
        self._set_writable()
        header: tuple[int, int, int, int, int, int] = _HEADER.unpack_from(self.mapped.mm, 0)
        self.begin_ts, self.end_ts, self.begin_phys, self.end_phys = header[:4]
        self.slots_used: int = header[4]
        self.count: int = max(header[5], 1)
        self.flushed_count = self.count
        self._slots: bytearray | mmap.mmap = self.mapped.mm
        self._slot_base = _HEADER_SIZE
        self._dirty: set[int] = set()
        self._whole_flush_pages = (slot_num * 4 >> _PAGE_SHIFT) // 4
        """Past this many changed slot pages, a flush writes the whole table."""
        self._snapshot: bytearray | None = None

    def __repr__(self) -> str:
        return f"IndexFile({self.mapped.path.name}, {self.count - 1} entries)"

    @property
    def is_full(self) -> bool:
        return self.count >= self.index_num

    def _set_writable(self) -> None:
        allocated = self.mapped.allocated
        self.writable_num = min(self.index_num, max(0, allocated - self.entries_at) // 20)

    def grow(self, number: int) -> None:
        """Allocate the entries below ``number`` (at most the file). Raises ``OSError``."""
        if number > self.writable_num:
            self.mapped.grow(self.entries_at + number * _ENTRY_SIZE, ALLOCATION_UNIT)
            self._set_writable()

    @property
    def is_empty(self) -> bool:
        return self.count <= 1

    @property
    def is_dirty(self) -> bool:
        return self.count != self.flushed_count or bool(self._dirty)

    def activate(self) -> None:
        """Load the slots into the shadow (the file becomes the one written to)."""
        if isinstance(self._slots, bytearray):
            return
        size = self.slot_num * 4
        shadow = bytearray(size)  # calloc: untouched pages cost nothing
        if not self.is_empty:
            shadow[:] = os.pread(self.mapped.fd, size, _HEADER_SIZE).ljust(size, b"\0")
        self._slots = shadow
        self._slot_base = 0

    def deactivate(self) -> None:
        """Write the shadow's changed pages back and read slots through the mapping again."""
        self.write_slot_pages(self.slot_pages())
        self._slots = self.mapped.mm
        self._slot_base = _HEADER_SIZE
        self._snapshot = None

    def _slot_at(self, slot_pos: int) -> int:
        value: int = _SLOT.unpack_from(self._slots, self._slot_base + slot_pos)[0]
        return value

    def _set_slot(self, slot_pos: int, number: int) -> None:
        _SLOT.pack_into(self._slots, self._slot_base + slot_pos, number)
        if self._slot_base == 0:
            self._dirty.add(slot_pos >> _PAGE_SHIFT)

    def put_many(
        self, entries: list[tuple[int, int, int]], start: int, writer: records.Implementation
    ) -> int:
        """Add ``(keyHash, phyOffset, storeTimestamp)`` entries from ``entries[start]`` on
        until the file's allocated entries are used up (:attr:`writable_num`), written by
        ``writer.put_index_entries``; returns the position of the first entry not added."""
        if start >= len(entries) or self.count >= self.writable_num:
            return start
        if self.count <= 1:
            _key, self.begin_phys, self.begin_ts = entries[start]
        # Pages changed are tracked in the shadow only, and only until the next flush is
        # going to copy the whole table anyway.
        tracked = self._slot_base == 0 and len(self._dirty) <= self._whole_flush_pages
        at, self.count, used = writer.put_index_entries(
            entries, start, slots=self._slots, slot_base=self._slot_base,
            slot_num=self.slot_num, file=self.mapped.mm, entries_at=self.entries_at,
            count=self.count, limit=self.writable_num, begin_ts=self.begin_ts,
            dirty=self._dirty if tracked else None,
        )  # fmt: skip
        self.slots_used += used
        _key, self.end_phys, self.end_ts = entries[at - 1]
        return at

    def write_header(self) -> None:
        _HEADER.pack_into(self.mapped.mm, 0, self.begin_ts, self.end_ts, self.begin_phys,
                          self.end_phys, self.slots_used, self.count)  # fmt: skip

    def _header(self) -> bytes:
        return _HEADER.pack(self.begin_ts, self.end_ts, self.begin_phys, self.end_phys,
                            self.slots_used, self.count)  # fmt: skip

    def slot_pages(self) -> list[tuple[int, bytes | bytearray]]:
        """Copies of the shadow pages changed since the last call, with their file offsets
        (taken on the event loop: one consistent snapshot).

        When a quarter or more changed, the whole table is copied into a second buffer kept
        for the purpose (fresh memory for each copy would cost a page fault per page);
        it must not be reused before the previous flush finished writing it.
        """
        if not self._dirty or not isinstance(self._slots, bytearray):
            return []
        shadow = self._slots
        size = 1 << _PAGE_SHIFT
        if len(self._dirty) > self._whole_flush_pages:
            self._dirty.clear()
            if self._snapshot is None:
                self._snapshot = bytearray(len(shadow))
            self._snapshot[:] = shadow
            return [(_HEADER_SIZE, self._snapshot)]
        pages: list[tuple[int, bytes | bytearray]] = [
            (_HEADER_SIZE + start, bytes(shadow[start : start + size]))
            for start in (page << _PAGE_SHIFT for page in sorted(self._dirty))
        ]
        self._dirty.clear()
        return pages

    def unflushed(self, pages: list[tuple[int, bytes | bytearray]]) -> None:
        """Mark pages of a failed flush as changed again."""
        if isinstance(self._slots, bytearray):
            for offset, data in pages:
                first = (offset - _HEADER_SIZE) >> _PAGE_SHIFT
                self._dirty.update(range(first, first + (len(data) + 4095) // 4096))

    def write_slot_pages(self, pages: list[tuple[int, bytes | bytearray]]) -> None:
        """Write :meth:`slot_pages` output to the file (blocking; a worker thread)."""
        fd = self.mapped.fd
        for offset, data in pages:
            os.pwrite(fd, data, offset)

    def select(self, key_hash: int, begin: int, end: int, max_num: int, out: list[int]) -> None:
        """Append to ``out`` the offsets of entries for ``key_hash`` stored in [begin, end]."""
        mm = self.mapped.mm
        number = self._slot_at((key_hash % self.slot_num) * 4)
        if number <= 0 or number >= self.count:
            return
        while len(out) < max_num:
            found, phys, diff, prev = _ENTRY.unpack_from(mm, self.entries_at + number * 20)
            time_read = self.begin_ts + diff * 1000
            if found == key_hash and begin <= time_read <= end:
                out.append(phys)
            if prev <= 0 or prev >= number or time_read < begin:
                return
            number = prev

    def matches_time(self, begin: int, end: int) -> bool:
        return not self.is_empty and begin <= self.end_ts and end >= self.begin_ts

    def _entry(self, number: int) -> tuple[int, int, int, int]:
        found: tuple[int, int, int, int] = _ENTRY.unpack_from(
            self.mapped.mm, self.entries_at + number * _ENTRY_SIZE
        )
        return found

    def truncate_from(self, limit: int) -> None:
        """Remove entries of commit log offset >= ``limit`` (recovery after a crash).

        Entries past the header's count (written just before the crash) are considered
        too; each removed entry's slot is walked back to its first surviving entry.
        """
        mm = self.mapped.mm
        at = self.entries_at
        physical_end = self.count
        while (
            physical_end < self.index_num
            and mm[at + physical_end * 20 : at + physical_end * 20 + 20] != _ZERO_ENTRY
        ):
            physical_end += 1
        low, high = 1, physical_end
        while low < high:
            middle = (low + high) // 2
            found, phys, _diff, _prev = self._entry(middle)
            if phys >= limit or (found == 0 and phys == 0):
                high = middle
            else:
                low = middle + 1
        keep = low
        # Only bytes that change are written: they hold data, so their blocks exist even
        # in a file that is not allocated (recovery on a full disk never faults).
        for number in range(keep, physical_end):
            found, _phys, _diff, _prev = self._entry(number)
            slot_pos = (found % self.slot_num) * 4
            head = first = self._slot_at(slot_pos)
            while head >= keep:
                _f, _p, _d, prev = self._entry(head)
                head = prev if 0 < prev < head else 0
            if head != first:
                self._set_slot(slot_pos, head)
        if physical_end > keep:
            mm[at + keep * 20 : at + physical_end * 20] = bytes((physical_end - keep) * 20)
        self.count = keep
        if keep <= 1:
            self.begin_ts = self.end_ts = self.begin_phys = self.end_phys = 0
        else:
            _found, phys, diff, _prev = self._entry(keep - 1)
            self.end_phys = phys
            self.end_ts = self.begin_ts + diff * 1000
        if self._header() != mm[:_HEADER_SIZE]:
            self.mapped.allocate(_HEADER_SIZE)
            self.write_header()


class IndexService:
    """The index files, newest last; builds entries and answers key queries."""

    def __init__(self, paths: settings.StorePaths, config: settings.StoreConfig,
                 clock: Callable[[], int]) -> None:  # fmt: skip
        self._records = records.implementation()
        """Writes index entries (compiled when built)."""
        self._directory = paths.index
        self.slot_num = config.max_hash_slot_num
        self.index_num = config.max_index_num
        self._clock = clock
        self.files: list[IndexFile] = []
        self._spare: IndexFile | None = None
        """The next file, created by :meth:`reserve` before the active one fills up."""
        self.dropped_keys = 0
        """Keys left out of the index because no file could be had for them."""
        self._dropping = False

    def load(self) -> None:
        if not self._directory.is_dir():
            return
        for path in sorted(self._directory.iterdir()):
            if path.is_file() and path.name.isdigit():
                self.files.append(IndexFile(path, self.slot_num, self.index_num))
        self.files.sort(key=lambda f: (f.is_empty, f.begin_phys))
        if self.files:
            self.files[-1].activate()

    def _create(self) -> IndexFile:
        """A new file, named by the clock (``OSError`` when it cannot be allocated)."""
        self._directory.mkdir(parents=True, exist_ok=True)
        now = self._clock()
        while True:
            stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now / 1000))
            path = self._directory / f"{stamp}{now % 1000:03d}"
            if not path.exists():
                break
            now += 1
        return IndexFile(path, self.slot_num, self.index_num)

    def _new_file(self) -> IndexFile:
        created, self._spare = self._spare or self._create(), None
        created.activate()
        self.files.append(created)
        return created

    def reserve(self, keys: int) -> None:
        """Before an append whose messages may bring ``keys`` keys: the active file's
        blocks allocated, and the next file created when these may fill the active one,
        so dispatch has no index file to create. Raises ``OSError``."""
        files = self.files
        active = files[-1] if files else self._new_file()
        wanted = active.count + keys
        if wanted < active.writable_num:
            return
        active.grow(min(wanted, active.index_num))
        if wanted >= active.index_num and self._spare is None:
            self._spare = self._create()

    def add_many(self, entries: list[tuple[int, int, int]]) -> None:
        """Index ``(keyHash, phyOffset, storeTimestamp)`` entries in order, rolling to a new
        file when one fills up, and publish the active file's header once at the end.
        Entries no file can be had for are left out (see the module docstring)."""
        files = self.files
        current = files[-1] if files else None
        at = 0
        try:
            while True:
                if current is None or current.is_full:
                    if current is not None:
                        current.write_header()
                        current.deactivate()
                    current = self._new_file()
                elif current.count >= current.writable_num:
                    current.grow(current.count + len(entries) - at)
                at = current.put_many(entries, at, self._records)
                if at >= len(entries):
                    break
        except OSError as exc:
            self.dropped_keys += len(entries) - at
            if not self._dropping:
                _log.warning("keys left out of the index from commit log offset %d on: %s",
                             entries[at][1], exc)  # fmt: skip
            self._dropping = True
        else:
            if self._dropping:
                _log.warning("keys indexed again from commit log offset %d on", entries[0][1])
            self._dropping = False
        if current is not None:
            current.write_header()

    def write_header(self) -> None:
        """Publish the active file's header (once per dispatch batch)."""
        if self.files:
            self.files[-1].write_header()

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """Commit log offsets of candidates for ``topic#key`` (newest file first)."""
        wanted = key_hash(topic, key)
        out: list[int] = []
        for index_file in reversed(self.files):
            if len(out) >= max_num:
                break
            if index_file.matches_time(begin, end):
                index_file.select(wanted, begin, end, max_num, out)
        return out

    @property
    def last_update_timestamp(self) -> int:
        return self.files[-1].end_ts if self.files else 0

    @property
    def last_update_phys(self) -> int:
        return self.files[-1].end_phys if self.files else 0

    def truncate_from(self, limit: int) -> None:
        """Remove entries of commit log offset >= ``limit`` (abnormal recovery)."""
        keep: list[IndexFile] = []
        for index_file in self.files:
            if not index_file.is_empty and index_file.begin_phys >= limit:
                index_file.mapped.destroy()
                continue
            index_file.truncate_from(limit)
            keep.append(index_file)
        self.files = keep
        if keep:
            keep[-1].activate()

    def delete_below(self, min_phys: int) -> int:
        """Delete files whose entries all point below ``min_phys``; keep the newest."""
        count = 0
        while len(self.files) > 1 and self.files[0].end_phys < min_phys:
            self.files.pop(0).mapped.destroy()
            count += 1
        return count

    def prepare_flush(self) -> list[tuple[IndexFile, int, list[tuple[int, bytes | bytearray]]]]:
        """On the event loop: each changed file with its entry count and slot pages."""
        prepared = []
        for index_file in self.files:
            if index_file.is_dirty:
                index_file.write_header()
                prepared.append((index_file, index_file.count, index_file.slot_pages()))
        return prepared

    @staticmethod
    def finish_flush(
        prepared: list[tuple[IndexFile, int, list[tuple[int, bytes | bytearray]]]],
    ) -> None:
        """On the event loop, after the files were synced: record what is on disk."""
        for index_file, count, _pages in prepared:
            index_file.flushed_count = count

    def flush_blocking(self, fsync: Callable[[int], None]) -> None:
        """Write and sync every changed file now, on this thread."""
        prepared = self.prepare_flush()
        for index_file, _count, pages in prepared:
            index_file.write_slot_pages(pages)
            fsync(index_file.mapped.fd)
        self.finish_flush(prepared)

    def close(self) -> None:
        """Close the files as they are (a clean shutdown flushes first)."""
        for index_file in self.files:
            index_file.mapped.close()
        if self._spare is not None:
            self._spare.mapped.close()
            self._spare = None
        self.files = []
