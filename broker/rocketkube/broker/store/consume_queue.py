"""Consume queues: per (topic, queueId), the list of that queue's records in the commit log.

Entry N (the message at queue offset N) sits at byte N x 20 of the queue's byte space,
split into files of ``mappedFileSizeConsumeQueue`` bytes named by their first byte::

    consumequeue/<topic>/<queueId>/00000000000000000000
    +---------------------------+-----------------+---------------------------+
    | commit log offset  int64  | size     int32  | tags code          int64  |  20 bytes
    +---------------------------+-----------------+---------------------------+

A queue whose first message has an offset above 0 (after retention, or rebuilt) starts
with a file back-filled with blank entries ``(0, 0x7FFFFFFF, 0)`` up to that offset.
Never-written entries are zeros: a real entry has size > 0, which finds the end of a file
by binary search. Entries are in commit log order, which makes "first entry at or past a
commit log offset" a binary search too (recovery truncation, retention).

The tags code is the Java hash of TAGS, or for the schedule topic the delivery time.

Blocks: a queue file gets its blocks in steps (``ALLOCATION_UNIT``, then doubling), not all
6 MB at creation, since every queue of every topic has one: a queue file is written
only below its allocated part, and :meth:`ConsumeQueue.reserve` moves that ahead of an
append (creating files as needed), so the dispatch of appended messages never faults on a
full disk; without a reservation (recovery, a slave) :meth:`ConsumeQueue.put` allocates
itself and raises ``OSError`` when it cannot.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from rocketkube.broker.store import mapped_file, settings

__all__ = ["BLANK_SIZE", "ENTRY", "ConsumeQueue", "ConsumeQueueTable"]

_log = logging.getLogger(__name__)

ENTRY: Final = struct.Struct(">qiq")
UNIT: Final = settings.CQ_ENTRY_SIZE
BLANK_SIZE: Final = 0x7FFFFFFF
_BLANK: Final = ENTRY.pack(0, BLANK_SIZE, 0)
ALLOCATION_UNIT: Final = 1024 * UNIT
"""Blocks a queue file is allocated in: 1,024 entries, 5 pages (a multiple of both)."""


def _first_real(view: mmap.mmap, index: int, end: int) -> int:
    """Index of the first entry in ``[index, end)`` that is not blank, else ``end``.

    Runs of blanks (a back-filled queue start holds up to a file of them) are compared a
    growing number of entries at a time, so a long run costs a few memory comparisons."""
    step = 16
    while index < end:
        count = min(step, end - index)
        if view[index * UNIT : (index + count) * UNIT] != _BLANK * count:
            for at in range(index, index + count):
                if view[at * UNIT : (at + 1) * UNIT] != _BLANK:
                    return at
        index += count
        step = min(step * 2, 1 << 14)
    return end


class ConsumeQueue:
    """The consume queue of one (topic, queueId)."""

    __slots__ = ("directory", "file_size", "files", "min_logic", "queue_id", "topic")

    def __init__(self, directory: Path, topic: str, queue_id: int, file_size: int) -> None:
        if file_size % UNIT:
            raise ValueError(f"consume queue file size {file_size} is not a multiple of 20")
        self.directory = directory
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.files = mapped_file.MappedFileQueue(directory, file_size, unit=ALLOCATION_UNIT)
        self.min_logic = 0
        """Byte position of the first real entry."""

    def __repr__(self) -> str:
        return f"ConsumeQueue({self.topic}-{self.queue_id}, {self.min_offset}..{self.max_offset})"

    @property
    def min_offset(self) -> int:
        """Queue offset of the first message still available."""
        return self.min_logic // UNIT

    @property
    def max_offset(self) -> int:
        """Queue offset the next message will get (the message count if none expired)."""
        return self.files.max_offset // UNIT

    # -- writing ---------------------------------------------------------------------------

    def put(self, queue_offset: int, phys: int, size: int, tags_code: int) -> None:
        """Record the message at ``queue_offset``; a duplicate (already there) is ignored.
        Raises ``OSError`` when blocks a :meth:`reserve` did not provide cannot be had."""
        pos = queue_offset * UNIT
        last = self.files.last
        if last is not None and pos == last.start + last.wrote and last.wrote < last.allocated:
            ENTRY.pack_into(last.mm, last.wrote, phys, size, tags_code)
            last.wrote += UNIT
            return
        last = self._writable_at(pos)
        if last is not None:
            ENTRY.pack_into(last.mm, last.wrote, phys, size, tags_code)
            last.wrote += UNIT

    def put_entries(self, queue_offset: int, entries: bytes | bytearray) -> None:
        """:meth:`put` each of ``entries`` (20 bytes each, back to back) from
        ``queue_offset`` on; at once when they go right after the last one into the last
        file's allocated room, as they nearly always do."""
        pos = queue_offset * UNIT
        last = self.files.last
        size = len(entries)
        if (
            last is not None
            and pos == last.start + last.wrote
            and last.wrote + size <= last.allocated
        ):
            last.mm[last.wrote : last.wrote + size] = entries
            last.wrote += size
            return
        for at, (phys, length, tags_code) in enumerate(ENTRY.iter_unpack(entries)):
            self.put(queue_offset + at, phys, length, tags_code)

    def ready(self, queue_offset: int, count: int) -> bool:
        """Whether the ``count`` entries from ``queue_offset`` go right after the last one
        into the last file's allocated room (what :meth:`put` writes without more ado)."""
        last = self.files.last
        return (
            last is not None
            and queue_offset * UNIT == last.start + last.wrote
            and last.wrote + count * UNIT <= last.allocated
        )

    def reserve(self, queue_offset: int, count: int) -> None:
        """Make the ``count`` entries from ``queue_offset`` writable by :meth:`put` with no
        file to create and no block to allocate: the queue started (or a gap before them
        blanked) as ``put`` would, the blocks allocated. Raises ``OSError``, having written
        nothing but blanks."""
        pos = queue_offset * UNIT
        last = self.files.last
        if last is None or pos != last.start + last.wrote or last.wrote >= last.size:
            last = self._writable_at(pos)
            if last is None:
                return  # already there
        end = pos + count * UNIT
        if end > last.start + last.allocated:
            self.files.reserve(end)

    def _writable_at(self, pos: int) -> mapped_file.MappedFile | None:
        """The file whose next entry is byte ``pos``, with blocks for it: a gap before it
        filled with blanks, the queue started at it, or the next file rolled to. None when
        ``pos`` was written already (a replay)."""
        end = self.files.max_offset
        last = self.files.last
        if last is not None and pos < end:
            return None
        if last is not None and pos > end:
            if end > self.min_logic and pos - end <= self.file_size:
                _log.warning("%r: gap %d..%d filled with blanks", self, end // UNIT, pos // UNIT)
                self._fill_blanks(end, pos)
            else:
                self.files.delete_all()
                last = None
        if last is None:
            start = pos - pos % self.file_size
            self.files.roll(start)
            self._fill_blanks(start, pos)
            self.min_logic = pos
        last = self.files.last
        assert last is not None
        if last.wrote >= last.size:
            last = self.files.roll()
        if last.wrote >= last.allocated:
            self.files.reserve(pos + UNIT)
        return last

    def _fill_blanks(self, start: int, end: int) -> None:
        """Write blank entries over byte positions ``[start, end)``, rolling as needed."""
        while start < end:
            last = self.files.last
            if last is None or last.wrote >= last.size:
                last = self.files.roll()
            count = min(end - start, last.size - last.wrote) // UNIT
            self.files.reserve(start + count * UNIT)
            last.mm[last.wrote : last.wrote + count * UNIT] = _BLANK * count
            last.wrote += count * UNIT
            start += count * UNIT

    # -- reading ---------------------------------------------------------------------------

    def entries(self, offset: int, max_bytes: int) -> memoryview | None:
        """Entries from ``offset`` to the end of its file's written part, capped; ``None``
        when that file is gone."""
        pos = offset * UNIT
        mapped = self.files.find(pos)
        if mapped is None:
            return None
        rel = pos - mapped.start
        end = min(mapped.wrote, rel + max_bytes - max_bytes % UNIT)
        if rel >= end:
            return None
        return mapped.view[rel:end]

    def entry(self, offset: int) -> tuple[int, int, int] | None:
        """``(commit log offset, size, tags code)`` at ``offset``, if written."""
        pos = offset * UNIT
        mapped = self.files.find(pos)
        if mapped is None or pos - mapped.start + UNIT > mapped.wrote:
            return None
        phys, size, tags = ENTRY.unpack_from(mapped.mm, pos - mapped.start)
        return phys, size, tags

    def next_file_offset(self, offset: int) -> int:
        """Queue offset of the start of the file after the one holding ``offset``."""
        pos = offset * UNIT
        return (pos - pos % self.file_size + self.file_size) // UNIT

    def offset_by_time(self, timestamp: int, store_time: Callable[[int], int]) -> int:
        """Queue offset whose message's store time is ``timestamp``, else the closer
        neighbour (the earlier one on a tie); 0 when the queue is empty.

        ``store_time`` reads a store time from a commit log offset.
        """
        low, high = self.min_offset, self.max_offset
        if low >= high:
            return 0

        def at(offset: int) -> int:
            found = self.entry(offset)
            return store_time(found[0]) if found is not None else -1

        left, right = low, high
        while left < right:
            middle = (left + right) // 2
            if at(middle) < timestamp:
                left = middle + 1
            else:
                right = middle
        if left == high:
            return high - 1
        found = at(left)
        if found == timestamp or left == low:
            return left
        before = at(left - 1)
        return left if found - timestamp < timestamp - before else left - 1

    # -- recovery and retention ------------------------------------------------------------

    def _search(self, mapped: mapped_file.MappedFile, drop: Callable[[int, int], bool]) -> int:
        """First entry index in ``mapped`` from which ``drop(phys, size)`` holds.

        ``drop`` is monotone over the entries that are not blank (false, then true); a
        blank entry has no commit log offset of its own and counts as the first entry
        that is not blank after it (false when there is none). Blanks therefore never
        end a search early: a hole left in the middle of a queue cannot move its start
        or end past the real entries around it.
        """
        view = mapped.mm
        count = mapped.wrote // UNIT
        low, high = 0, count
        while low < high:
            middle = (low + high) // 2
            real = _first_real(view, middle, high)
            if real < high:
                phys, size, _tags = ENTRY.unpack_from(view, real * UNIT)
                if not drop(phys, size):
                    low = real + 1
                    continue
            elif high == count:  # only blanks up to the end: nothing to drop there
                low = high
                continue
            high = middle  # middle..high are blanks before, or at, an entry to drop
        return low

    def truncate_from(self, limit: int) -> None:
        """Drop never-written entries and entries of commit log offset >= ``limit``."""

        def drop(phys: int, size: int) -> bool:
            return size == 0 or phys >= limit

        files = self.files.files
        for index in range(len(files) - 1, -1, -1):
            mapped = files[index]
            first = self._search(mapped, drop)
            if first == 0 and index > 0:
                continue
            self.files.truncate(mapped.start + first * UNIT)
            break
        self.min_logic = min(self.min_logic, self.files.max_offset)

    def correct_min_offset(self, min_phys: int) -> None:
        """Set the min offset to the first real entry at or past commit log ``min_phys``."""

        def drop(phys: int, _size: int) -> bool:
            return phys >= min_phys

        for mapped in self.files:
            count = mapped.wrote // UNIT
            first = _first_real(mapped.mm, self._search(mapped, drop), count)
            if first < count:
                self.min_logic = mapped.start + first * UNIT
                return
        self.min_logic = self.files.max_offset

    def delete_expired(self, min_phys: int) -> int:
        """Delete leading files whose entries all point below ``min_phys``; keep the last."""
        count = 0
        for mapped in self.files.files[:-1]:
            phys, size, _ = ENTRY.unpack_from(mapped.mm, mapped.wrote - UNIT)
            if size == BLANK_SIZE or phys >= min_phys:
                break
            count += 1
        if count:
            self.files.delete_first(count)
        self.correct_min_offset(min_phys)
        return count

    def destroy(self) -> None:
        self.files.delete_all()
        shutil.rmtree(self.directory, ignore_errors=True)


class ConsumeQueueTable:
    """All consume queues of a store, by (topic, queueId)."""

    def __init__(self, paths: settings.StorePaths, file_size: int) -> None:
        self._paths = paths
        self.file_size = file_size
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}

    def load(self) -> None:
        """Open every queue found under ``consumequeue/``."""
        root = self._paths.consume_queue
        if not root.is_dir():
            return
        for topic_dir in sorted(root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if not queue_dir.is_dir() or not queue_dir.name.isdigit():
                    continue
                queue = ConsumeQueue(queue_dir, topic_dir.name, int(queue_dir.name),
                                     self.file_size)  # fmt: skip
                queue.files.load()
                self.queues[(queue.topic, queue.queue_id)] = queue

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self.queues.values()))

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        key = (topic, queue_id)
        queue = self.queues.get(key)
        if queue is None:
            directory = self._paths.queue_dir(topic, queue_id)
            queue = self.queues[key] = ConsumeQueue(directory, topic, queue_id, self.file_size)
        return queue

    def drop_empty(self, topic: str, queue_id: int) -> None:
        """Forget the queue if it has no file (starting it failed), with its directories
        if empty: no trace of a refused append."""
        queue = self.queues.get((topic, queue_id))
        if queue is not None and not len(queue.files):
            del self.queues[(topic, queue_id)]
            with contextlib.suppress(OSError):
                queue.directory.rmdir()
                queue.directory.parent.rmdir()

    def topic_queues(self, topic: str) -> list[ConsumeQueue]:
        return [q for (t, _), q in self.queues.items() if t == topic]

    def delete_topic(self, topic: str) -> int:
        """Delete every queue of ``topic``; return how many there were."""
        gone = self.topic_queues(topic)
        for queue in gone:
            del self.queues[(queue.topic, queue.queue_id)]
            queue.destroy()
        shutil.rmtree(self._paths.consume_queue / topic, ignore_errors=True)
        return len(gone)

    def dirty(self) -> list[tuple[mapped_file.MappedFile, int]]:
        """Files with unflushed entries, with their write positions."""
        out: list[tuple[mapped_file.MappedFile, int]] = []
        for queue in self.queues.values():
            out.extend(queue.files.dirty())
        return out

    def close(self) -> None:
        for queue in self.queues.values():
            queue.files.close()
        self.queues.clear()
