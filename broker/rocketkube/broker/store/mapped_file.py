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
last close of a deleted file frees its blocks, which took 0.8-1.2 s for a full 1 GiB
segment on this project's VMs, so with an event loop running a deleted file is unmapped
and closed in a worker thread. Measured there, the loop's longest stall while a segment
went fell from 1.5-1.7 s to 0.7-1.2 s; the rest is the kernel freeing the blocks, which
slowed the whole process on those 2 vCPUs.

:class:`MappedFileQueue` keeps the files of one directory in offset order: find by
offset, roll to the next, truncate at an offset, delete the oldest.
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

    __slots__ = ("_closed", "_deleted", "_doomed", "_pins", "fd", "flushed", "mm", "path",
                 "populated", "size", "start", "view", "wrote")  # fmt: skip

    def __init__(self, path: Path, start: int, size: int, *, preallocate: bool = False) -> None:
        """Open (creating it at ``size`` bytes if absent) and map the file."""
        self.path = path
        self.start = start
        self.size = size
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            actual = os.fstat(fd).st_size
            if actual == 0:
                if preallocate and hasattr(os, "posix_fallocate"):
                    os.posix_fallocate(fd, 0, size)
                else:
                    os.ftruncate(fd, size)
            elif actual != size:
                raise errors.StoreCorruptedError(f"{path}: {actual} bytes, expected {size}")
            self.mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self.view = memoryview(self.mm)
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

    def populate(self, end: int) -> None:
        """Map the pages up to ``end`` for writing now, in one system call.

        ``madvise(MADV_POPULATE_WRITE)`` (Linux 5.14+) does for a whole range what the
        first write to each page would do through a page fault, which is far dearer per
        page (measured 57 vs 1.9 us a page on this project's VMs). It also allocates the
        blocks of a sparse file up front, so a full disk is an ``OSError`` here instead of
        a SIGBUS in a later write. Raises ``OSError``; EINVAL means unsupported.

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

    def zero_from(self, pos: int, *, preallocate: bool = False) -> None:
        """Discard bytes ``[pos, size)`` so they read as zeros (recovery truncation).

        Shrinking and re-growing the file drops the tail pages (the partial page is zeroed
        by the kernel) without writing the rest of a large segment. No view of the tail
        may be in use.
        """
        os.ftruncate(self.fd, pos)
        os.ftruncate(self.fd, self.size)
        if preallocate and hasattr(os, "posix_fallocate"):
            os.posix_fallocate(self.fd, pos, self.size - pos)
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
    """The files of one directory, contiguous and in offset order."""

    __slots__ = ("directory", "file_size", "files", "preallocate")

    def __init__(self, directory: Path, file_size: int, *, preallocate: bool = False) -> None:
        self.directory = directory
        self.file_size = file_size
        self.preallocate = preallocate
        self.files: list[MappedFile] = []

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
        """Create the next file (at ``start`` when the queue is empty) and return it."""
        if self.files:
            start = self.files[-1].end
        elif start is None:
            start = 0
        self.directory.mkdir(parents=True, exist_ok=True)
        mapped = MappedFile(
            self.directory / settings.file_name(start),
            start,
            self.file_size,
            preallocate=self.preallocate,
        )
        self.files.append(mapped)
        return mapped

    def truncate(self, offset: int) -> None:
        """Drop every byte at or after ``offset``: later files go, the holder is zeroed."""
        keep: list[MappedFile] = []
        for mapped in self.files:
            if mapped.start >= offset and not (mapped.start == offset and not keep):
                mapped.destroy()
                continue
            if mapped.start <= offset < mapped.end:
                mapped.zero_from(offset - mapped.start, preallocate=self.preallocate)
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
        for mapped in self.files:
            mapped.destroy()
        self.files = []

    def dirty(self) -> list[tuple[MappedFile, int]]:
        """Files with unflushed bytes, each with its current write position."""
        return [(m, m.wrote) for m in self.files if m.wrote > m.flushed and not m.closed]

    def close(self) -> None:
        for mapped in self.files:
            mapped.close()
        self.files = []
