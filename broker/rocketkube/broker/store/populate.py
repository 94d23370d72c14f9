"""Mapping commit log pages for writing ahead of the writer, in a worker thread.

Before a record is packed into the mapping, its pages are populated for writing
(:meth:`~.mapped_file.MappedFile.populate`): the kernel allocates and zero-fills them. On
the event loop's thread that is a noticeable share of the broker's CPU under pipelined sends
(docs/performance.md, 2026-11-26), so :class:`AheadPopulator` has a worker thread do it
instead, ``ahead`` bytes past the writer, started again whenever the writer comes within
``low_water`` bytes of the populated end; the system call releases the interpreter lock, so
the worker runs on another core meanwhile::

    file:  [ written | populated, not yet written ......... | not populated ]
                     ^ writer                               ^ populated
                                  worker runs when writer + low_water passes this

The writer populates in line only what the worker has not reached (its first pages, or
when it outruns the worker), so errors are the writer's: a full disk is an ``OSError`` of
that call, reported with the send that needed the pages, never lost in the thread. A
kernel without ``MADV_POPULATE_WRITE`` (before Linux 5.14) turns population off for
good: pages then fault in as they are first written.
"""

from __future__ import annotations

import concurrent.futures
import errno
import logging

from rocketkube.broker.store import mapped_file

__all__ = ["AheadPopulator"]

_log = logging.getLogger(__name__)

AHEAD = 4 << 20
"""Bytes the worker populates past the writer in one go (1,024 pages)."""
LOW_WATER = 2 << 20
"""The worker starts again when fewer populated bytes than this are left ahead."""


class AheadPopulator:
    """Keeps the file being appended to populated ahead of its writer (one file at a time).

    Not thread-safe: one writer thread calls :meth:`ensure`, :meth:`settle` and
    :meth:`close`. The file the worker populates is pinned until the writer collects the
    run, so nothing closes it under the thread.
    """

    __slots__ = ("_ahead", "_executor", "_file", "_future", "_low_water", "_supported")

    def __init__(self, ahead: int = AHEAD, low_water: int = LOW_WATER) -> None:
        if not 0 < low_water <= ahead:
            raise ValueError(f"need 0 < low_water ({low_water}) <= ahead ({ahead})")
        self._ahead = ahead
        self._low_water = low_water
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._future: concurrent.futures.Future[None] | None = None
        self._file: mapped_file.MappedFile | None = None
        self._supported = True
        """False once the kernel said EINVAL: nothing is populated from then on."""

    @property
    def busy(self) -> bool:
        """True while a worker run has not been collected."""
        return self._future is not None

    def ensure(self, mapped: mapped_file.MappedFile, end: int) -> None:
        """Have ``mapped``'s pages up to file position ``end`` populated before returning,
        and the worker started on the next stretch when due. Raises ``OSError`` of the
        in-line call, except EINVAL (the kernel lacks ``MADV_POPULATE_WRITE``), which
        turns population off."""
        if not self._supported:
            return
        if self._future is not None and (
            end > mapped.populated or self._file is not mapped or self._future.done()
        ):
            self.settle()
        if end > mapped.populated:
            try:
                mapped.populate(end)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                _log.info("the kernel lacks MADV_POPULATE_WRITE: pages fault in as written")
                self._supported = False
                return
        if (
            self._future is None
            and mapped.populated < mapped.size
            and mapped.populated - end < self._low_water
        ):
            self._start(mapped, mapped.populated + self._ahead)

    def _start(self, mapped: mapped_file.MappedFile, end: int) -> None:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="rocketkube-populate"
            )
        mapped.pin()
        self._file = mapped
        self._future = self._executor.submit(_populate, mapped, end)

    def settle(self) -> None:
        """Wait for the worker's run, if any, and unpin its file."""
        future, mapped = self._future, self._file
        if future is None or mapped is None:
            return
        self._future = self._file = None
        try:
            future.result()
        finally:
            mapped.unpin()

    def close(self) -> None:
        """Settle and stop the worker thread."""
        self.settle()
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None


def _populate(mapped: mapped_file.MappedFile, end: int) -> None:
    """The worker's run: errors are left to the writer's own in-line call."""
    try:
        mapped.populate(end)
    except OSError as exc:
        _log.debug("%s: populating ahead failed, left to the writer: %s", mapped.path, exc)
