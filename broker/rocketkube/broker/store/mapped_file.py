"""Fixed-size memory-mapped segment files and the ordered queue of them.

A log (the commit log, one consume queue) is a directory of equal-size files, each named
by the 20-digit decimal offset of its first byte in the log's byte space::

    commitlog/00000000000000000000   bytes [0, S)
    commitlog/00000000000001073741824   bytes [S, 2S)       S = segment size
    ...

:class:`MappedFile` owns one file: its descriptor, its ``mmap``, a write position
``wrote`` and a flushed position ``flushed`` (both relative to the file start). Writers pack
straight into ``mm``; readers take slices of ``view`` (zero-copy). Durability is
``os.fdatasync`` on the descriptor, which covers pages dirtied through the mapping, or
:meth:`MappedFile.sync_range` for just the bytes appended (the commit log); either is
called from a worker thread, so a file handed to that thread is *pinned* and its closing
deferred until it is unpinned. A mapping with live exported views cannot be closed: the
file is unlinked and the mapping dropped, to be unmapped when the last view goes. The
last close of a deleted file frees its blocks, which takes up to a second or so for a
full 1 GiB segment, so with an event loop running a deleted file is unmapped and closed
in a worker thread (docs/performance.md, 2026-11-23).

Blocks before writes: a write through a mapping into a page the file system cannot supply
(a full disk) is a SIGBUS that kills the process, so no mapping is ever written where
blocks are not allocated. A file gets them from ``posix_fallocate`` when created (all of
it, or a first part), and :meth:`MappedFile.allocate` extends that before writers pass
``allocated``; either fails with an ``OSError`` (ENOSPC) the caller handles. A file found
on disk counts as allocated when its block count covers it (else from 0, and the first
``allocate`` fills its holes). Allocating is cheap, and pages of an allocated file are no
dearer to write than those of a sparse one (docs/performance.md, 2026-11-26).

:class:`MappedFileQueue` keeps the files of one directory in offset order: find by
offset, roll to the next, truncate at an offset, delete the oldest, and reserve: have
the blocks up to an offset allocated, files past the last created ahead, so writers that
must not fail (the dispatch of an appended message) find them ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import mmap
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from rocketkube.broker.store import errors, settings

__all__ = ["MappedFile", "MappedFileQueue"]

_log = logging.getLogger(__name__)

_PAGE = mmap.PAGESIZE
_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux value
_MS_SYNC = 4  # Linux
_libc = ctypes.CDLL(None, use_errno=True)
_msync = _libc.msync
_msync.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_msync.restype = ctypes.c_int
_madvise = _libc.madvise
_madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_madvise.restype = ctypes.c_int


class MappedFile:
    """One mapped segment file."""

    __slots__ = ("_closed", "_deleted", "_doomed", "_pins", "allocated", "fd", "flushed", "mm",
                 "path", "populated", "size", "start", "view", "wrote")  # fmt: skip

    def __init__(self, path: Path, start: int, size: int, *, allocate: int | None = None) -> None:
        """Open and map the file. One that does not exist (or is empty) is created at
        ``size`` bytes with the blocks of its first ``allocate`` bytes (default: all)
        allocated; when that fails (``OSError``, ENOSPC on a full disk) no file is left."""
        self.path = path
        self.start = start
        self.size = size
        fresh = False
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            fresh = True
        try:
            found = os.fstat(fd)
            fresh = fresh or found.st_size == 0
            if fresh:
                allocated = size if allocate is None else min(allocate, size)
                if allocated:
                    os.posix_fallocate(fd, 0, allocated)
                os.ftruncate(fd, size)
            elif found.st_size != size:
                raise errors.StoreCorruptedError(f"{path}: {found.st_size} bytes, expected {size}")
            else:
                allocated = size if found.st_blocks * 512 >= size else 0
            self.mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            if fresh:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            raise
        self.fd = fd
        self.view = memoryview(self.mm)
        self.allocated = allocated
        """Bytes from the start whose blocks are allocated: writes through the mapping stay
        below it (:meth:`allocate` moves it)."""
        self.wrote = 0
        self.flushed = 0
        self.populated = 0
        """Bytes from the start whose pages were populated for writing (:meth:`populate`)."""
        self._pins = 0
        self._doomed = False
        self._deleted = False
        self._closed = False

    def __repr__(self) -> str:
        return f"MappedFile({self.path.name}, wrote={self.wrote}, flushed={self.flushed})"

    @property
    def end(self) -> int:
        """The log offset just past this file."""
        return self.start + self.size

    @property
    def write_offset(self) -> int:
        """The log offset of the next write."""
        return self.start + self.wrote

    @property
    def remaining(self) -> int:
        return self.size - self.wrote

    @property
    def is_full(self) -> bool:
        return self.wrote >= self.size

    @property
    def closed(self) -> bool:
        return self._closed

    def slice(self, pos: int, end: int) -> memoryview:
        """A zero-copy view of bytes ``[pos, end)`` (file-relative)."""
        return self.view[pos:end]

    def allocate(self, end: int) -> None:
        """Have the blocks of bytes ``[0, end)`` (capped at the size) allocated, so writes
        there cannot fault. Raises ``OSError`` (ENOSPC, EDQUOT) and then changes nothing
        :attr:`allocated` vouches for."""
        end = min(end, self.size)
        if end > self.allocated:
            os.posix_fallocate(self.fd, self.allocated, end - self.allocated)
            self.allocated = end

    def grow(self, need: int, unit: int) -> None:
        """:meth:`allocate` at least ``need`` bytes, in whole ``unit``: double what the file
        has when the disk allows (fewer, larger calls for a busy file; little for an idle
        one), else just enough. Raises ``OSError``."""
        if need > self.allocated:
            wanted = -(-need // unit) * unit
            doubled = -(-2 * self.allocated // unit) * unit
            if doubled > wanted:
                with contextlib.suppress(OSError):
                    self.allocate(doubled)
                    return
            self.allocate(wanted)

    def populate(self, end: int) -> None:
        """Map the pages up to ``end`` for writing now, in one system call.

        ``madvise(MADV_POPULATE_WRITE)`` (Linux 5.14+) does for a whole range what the first
        write to each page would do through a page fault, which is far dearer per page
        (docs/performance.md). Raises ``OSError`` (EFAULT where a page has no block); EINVAL
        means unsupported.

        The call releases the interpreter lock (``mmap.madvise`` keeps it), so a worker
        thread can populate ahead of the writer (:mod:`.populate`) on another core.
        """
        end = min(self.size, (end + _PAGE - 1) & ~(_PAGE - 1))
        start = max(self.populated, self.wrote & ~(_PAGE - 1))  # written pages are mapped
        if end > start:
            self._call_on_pages(_madvise, start, end, _MADV_POPULATE_WRITE, "madvise")
            self.populated = end

    def pin(self) -> None:
        """Keep the descriptor open while a worker thread uses it."""
        self._pins += 1

    def unpin(self) -> None:
        self._pins -= 1
        if self._pins == 0 and self._doomed:
            self._close()

    def sync_range(self, start: int, end: int) -> None:
        """Make file bytes ``[start, end)`` durable: ``msync(MS_SYNC)`` of their pages.

        Blocking: call it from a worker thread, the file pinned. On Linux this is
        ``fdatasync`` limited to the range (the same ``vfs_fsync_range``), so the pages
        :meth:`populate` mapped ahead of the writer stay dirty and writable: ``fdatasync``
        of the whole file wrote them out as zeros and made every one fault again when
        written (a page fault per page under SYNC_FLUSH, and the log written twice).
        ``mmap.flush`` keeps the interpreter lock during the call; this releases it.
        """
        begin = start & ~(_PAGE - 1)
        end = min(end, self.size)
        if end > begin:
            self._call_on_pages(_msync, begin, end, _MS_SYNC, "msync")

    def _call_on_pages(
        self, call: Callable[[int, int, int], int], begin: int, end: int, flag: int, name: str
    ) -> None:
        """``call(address of [begin, end), end - begin, flag)`` through ctypes, which
        releases the interpreter lock meanwhile; a nonzero result raises ``OSError``."""
        pages = (ctypes.c_char * (end - begin)).from_buffer(self.mm, begin)
        try:
            if call(ctypes.addressof(pages), end - begin, flag) != 0:
                code = ctypes.get_errno()
                raise OSError(code, f"{name} {self.path}: {os.strerror(code)}")
        finally:
            del pages  # the mapping's buffer export

    def zero_from(self, pos: int) -> None:
        """Discard bytes ``[pos, size)`` so they read as zeros (recovery truncation).

        Shrinking and re-growing the file drops the tail pages (the partial page is zeroed
        by the kernel) without writing the rest of a large segment. That frees the tail's
        blocks: they are allocated again at once, and if another writer took them
        meanwhile the file stays allocated only to ``pos`` (a later :meth:`allocate` says
        whether there is room). No view of the tail may be in use.
        """
        os.ftruncate(self.fd, pos)
        os.ftruncate(self.fd, self.size)
        kept, self.allocated = self.allocated, min(self.allocated, pos)
        try:
            self.allocate(kept)
        except OSError as exc:
            _log.warning("%s: blocks past %d not allocated again: %s", self.path, pos, exc)
        self.wrote = min(self.wrote, pos)
        self.flushed = min(self.flushed, pos)
        self.populated = min(self.populated, pos)  # the tail's pages were dropped

    def close(self) -> None:
        """Close the mapping and descriptor (deferred while pinned)."""
        self._doomed = True
        if self._pins == 0:
            self._close()

    def destroy(self) -> None:
        """Delete the file and close it (deferred while pinned; in a worker thread when an
        event loop runs)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._deleted = True
        self.close()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(BufferError):  # in use: the mapping outlives it (see below)
            self.view.release()  # slices taken from it stay valid: they hold the mapping
        if self._deleted:
            with contextlib.suppress(RuntimeError):  # no running loop: close here
                loop = asyncio.get_running_loop()
                loop.run_in_executor(None, _unmap_and_close, self.mm, self.fd, self.path)
                return
        _unmap_and_close(self.mm, self.fd, self.path)


def _unmap_and_close(mm: mmap.mmap, fd: int, path: Path) -> None:
    try:
        mm.close()
    except BufferError:
        # Pull results still hold views: the mapping goes when the last one is dropped.
        _log.debug("%s: mapping still exported, left to the garbage collector", path)
    try:
        os.close(fd)
    except OSError as exc:
        _log.warning("%s: closing failed: %s", path, exc)


class MappedFileQueue:
    """The files of one directory, contiguous and in offset order, and the files created
    ahead of the last one (:meth:`reserve`), which :meth:`roll` takes in turn."""

    __slots__ = ("ahead", "directory", "file_size", "files", "unit")

    def __init__(self, directory: Path, file_size: int, *, unit: int | None = None) -> None:
        """``unit``: a new file gets the blocks of its first ``unit`` bytes, and
        :meth:`reserve` allocates more in multiples of it, doubling what a file has where
        it can (default: the whole file at once)."""
        self.directory = directory
        self.file_size = file_size
        self.unit = file_size if unit is None else min(unit, file_size)
        self.files: list[MappedFile] = []
        self.ahead: list[MappedFile] = []
        """Files created past the last one, no byte written yet."""

    def load(self) -> None:
        """Open the existing files; each is taken as full until recovery says otherwise."""
        if not self.directory.is_dir():
            return
        names = sorted(p for p in self.directory.iterdir() if p.is_file())
        for path in names:
            if len(path.name) != 20 or not path.name.isdigit():
                _log.warning("ignoring stray file %s", path)
                continue
            start = int(path.name)
            if start % self.file_size:
                raise errors.StoreCorruptedError(f"{path}: offset not a multiple of the size")
            if self.files and start != self.files[-1].end:
                raise errors.StoreCorruptedError(f"{path}: gap after {self.files[-1].path}")
            mapped = MappedFile(path, start, self.file_size)
            mapped.wrote = mapped.flushed = self.file_size
            self.files.append(mapped)

    def __iter__(self) -> Iterator[MappedFile]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    @property
    def first(self) -> MappedFile | None:
        return self.files[0] if self.files else None

    @property
    def last(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    @property
    def min_offset(self) -> int:
        """Offset of the first byte of the first file (0 when empty)."""
        return self.files[0].start if self.files else 0

    @property
    def max_offset(self) -> int:
        """Offset just past the last written byte (0 when empty)."""
        return self.files[-1].write_offset if self.files else 0

    def find(self, offset: int) -> MappedFile | None:
        """The file holding ``offset``, if any."""
        files = self.files
        if not files:
            return None
        index = (offset - files[0].start) // self.file_size
        if 0 <= index < len(files):
            return files[index]
        return None

    def roll(self, start: int | None = None) -> MappedFile:
        """Start the next file (at ``start`` when the queue is empty) and return it: the
        first one created ahead, else a new one (``OSError`` when it cannot be created)."""
        if self.files:
            start = self.files[-1].end
        elif start is None:
            start = 0
        if self.ahead and self.ahead[0].start == start:
            mapped = self.ahead.pop(0)
        else:
            self._drop_ahead()
            mapped = self._create(start)
        self.files.append(mapped)
        return mapped

    def _create(self, start: int) -> MappedFile:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / settings.file_name(start)
        return MappedFile(path, start, self.file_size, allocate=self.unit)

    def reserve(self, end: int) -> None:
        """Have the blocks of every byte from the last file's write position up to offset
        ``end`` allocated, creating the files past the last one that it reaches (kept
        ahead), so that writes up to ``end`` need no new block. Raises ``OSError``, having
        kept what it did allocate."""
        last = self.files[-1]
        last.grow(end - last.start, self.unit)
        at = last.end
        for mapped in self.ahead:
            if end <= at:
                return
            mapped.grow(end - at, self.unit)
            at = mapped.end
        while end > at:
            mapped = self._create(at)
            self.ahead.append(mapped)
            mapped.grow(end - at, self.unit)
            at = mapped.end

    def prepare(self) -> None:
        """Create the file after the last one ahead of time, unless it is (``OSError``)."""
        if not self.ahead:
            self.ahead.append(self._create(self.files[-1].end))

    def _drop_ahead(self) -> None:
        for mapped in self.ahead:
            mapped.destroy()
        self.ahead = []

    def truncate(self, offset: int) -> None:
        """Drop every byte at or after ``offset``: later files go, the holder is zeroed."""
        self._drop_ahead()
        keep: list[MappedFile] = []
        for mapped in self.files:
            if mapped.start >= offset and not (mapped.start == offset and not keep):
                mapped.destroy()
                continue
            if mapped.start <= offset < mapped.end:
                mapped.zero_from(offset - mapped.start)
                mapped.wrote = offset - mapped.start
            keep.append(mapped)
        self.files = keep

    def delete_first(self, count: int) -> list[MappedFile]:
        """Delete the ``count`` oldest files; return them."""
        gone, self.files = self.files[:count], self.files[count:]
        for mapped in gone:
            mapped.destroy()
        return gone

    def delete_all(self) -> None:
        self._drop_ahead()
        for mapped in self.files:
            mapped.destroy()
        self.files = []

    def dirty(self) -> list[tuple[MappedFile, int]]:
        """Files with unflushed bytes, each with its current write position."""
        return [(m, m.wrote) for m in self.files if m.wrote > m.flushed and not m.closed]

    def close(self) -> None:
        for mapped in self.files + self.ahead:
            mapped.close()
        self.files = []
        self.ahead = []
