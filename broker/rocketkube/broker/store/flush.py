"""Getting appended bytes to disk: commit log flush (async or group commit) and the
periodic flush of consume queues, index and checkpoint.

Commit log, ``SYNC_FLUSH`` (group commit)::

    appender 1 ─ append ─ ticket() ──┐          (all appends so far share one future)
    appender 2 ─ append ─ ticket() ──┤
                                     ▼
    flusher:  target = log end ─ sync the range appended, in a worker thread ─ resolve future
                 while it runs, new appenders join the *next* future, and so on

One flush covers every append made before it started, so N concurrent senders cost one
sync, not N. Each future has one timer: if the flush is not done
``syncFlushTimeout`` ms after the first waiter joined, it resolves to FLUSH_DISK_TIMEOUT
(the data stays appended and is flushed later). ``ASYNC_FLUSH`` instead flushes every
``flushIntervalCommitLog`` ms.

Consume queues and then the checkpoint are flushed every ``flushIntervalConsumeQueue`` ms,
index files with them every ``flush_interval_index`` ms; the checkpoint's safe offset is
only advanced after the files it vouches for are on disk, so it never passes the last
index flush. No sync runs on the event loop; files handed
to the worker thread are pinned so nothing closes them meanwhile, and the thread is
shielded from cancellation so shutdown never closes a descriptor under it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence

from rocketkube.broker.store import (
    checkpoint,
    commitlog,
    consume_queue,
    index,
    mapped_file,
    model,
    settings,
)

__all__ = ["CommitLogFlusher", "FsyncFunction", "LogicsFlusher", "RangeSyncFunction", "sync_pinned"]

_log = logging.getLogger(__name__)

FsyncFunction = Callable[[int], None]
"""Makes a file descriptor's data durable (``os.fdatasync``; tests inject counters)."""

RangeSyncFunction = Callable[[mapped_file.MappedFile, int, int], None]
"""Makes file bytes ``[start, end)`` of a mapped file durable
(:meth:`~.mapped_file.MappedFile.sync_range`; tests inject slow disks)."""


async def sync_pinned(
    files: Sequence[mapped_file.MappedFile],
    fsync: FsyncFunction,
    before: Callable[[], None] | None = None,
) -> None:
    """``fsync`` each file's descriptor in a worker thread, the files pinned meanwhile;
    ``before`` runs first in the same thread (writes to make durable)."""

    def work() -> None:
        if before is not None:
            before()
        for mapped in files:
            fsync(mapped.fd)

    await _pinned(files, work)


async def _pinned(files: Sequence[mapped_file.MappedFile], work: Callable[[], None]) -> None:
    """Run ``work`` in a worker thread, ``files`` pinned meanwhile and the thread shielded
    from cancellation."""
    if not files:
        return
    for mapped in files:
        mapped.pin()

    def unpin(_: object) -> None:
        for mapped in files:
            mapped.unpin()

    inner = asyncio.ensure_future(asyncio.to_thread(work))
    inner.add_done_callback(unpin)
    await asyncio.shield(inner)


class CommitLogFlusher:
    """Flushes the commit log: group commit for SYNC_FLUSH, periodic for ASYNC_FLUSH."""

    def __init__(
        self,
        log: commitlog.CommitLog,
        config: settings.StoreConfig,
        sync: RangeSyncFunction = mapped_file.MappedFile.sync_range,
    ) -> None:
        self._log = log
        self._sync_mode = config.flush_disk_type is settings.FlushDiskType.SYNC_FLUSH
        self._timeout = config.sync_flush_timeout / 1000
        self._interval = config.flush_interval_commit_log / 1000
        self._sync = sync
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()
        self._pending: asyncio.Future[model.PutStatus] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()
        self.flushed_timestamp = 0
        """Store time of the last record known flushed."""
        self.flushes = 0
        """Flush rounds done (each one range sync per segment touched)."""
        self.listeners: list[Callable[[float], None]] = []
        """Called with the seconds each flush round of the running flusher took."""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        run = self._run_sync if self._sync_mode else self._run_async
        self._task = self._loop.create_task(run(), name="commitlog-flush")

    async def stop(self) -> None:
        """Stop the background task, then flush everything appended."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        ok = await self.flush(self._log.max_offset, self._log.last_store_timestamp)
        self._resolve(model.PutStatus.PUT_OK if ok else model.PutStatus.FLUSH_DISK_TIMEOUT)

    def abandon(self) -> None:
        """Forget the task and waiters without flushing (a simulated crash)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._resolve(model.PutStatus.FLUSH_DISK_TIMEOUT)

    def ticket(self) -> model.FlushTicket | None:
        """A ticket for the flush covering everything appended so far (SYNC_FLUSH).

        Without a running flusher (no event loop yet), the log is flushed here, blocking,
        and ``None`` is returned.
        """
        if not self.running or self._loop is None:
            self.flush_blocking()
            return None
        future = self._pending
        if future is None:
            future = self._pending = self._loop.create_future()
            self._timer = self._loop.call_later(self._timeout, self._expire, future)
            self._wakeup.set()
        return model.FlushTicket(future)

    def _expire(self, future: asyncio.Future[model.PutStatus]) -> None:
        if not future.done():
            _log.warning("commit log flush exceeded syncFlushTimeout")
            future.set_result(model.PutStatus.FLUSH_DISK_TIMEOUT)

    def _resolve(self, status: model.PutStatus) -> None:
        future, timer = self._pending, self._timer
        self._pending = self._timer = None
        if timer is not None:
            timer.cancel()
        if future is not None and not future.done():
            future.set_result(status)

    async def _run_sync(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            future, timer = self._pending, self._timer
            self._pending = self._timer = None
            ok = await self.flush(self._log.max_offset, self._log.last_store_timestamp)
            if timer is not None:
                timer.cancel()
            if future is not None and not future.done():
                future.set_result(
                    model.PutStatus.PUT_OK if ok else model.PutStatus.FLUSH_DISK_TIMEOUT
                )

    async def _run_async(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            if self._log.max_offset > self._log.flushed_offset:
                await self.flush(self._log.max_offset, self._log.last_store_timestamp)

    def _ranges_to(self, target: int) -> list[tuple[mapped_file.MappedFile, int, int]]:
        """The unflushed bytes below ``target``: (file, start, end), file-relative."""
        start = self._log.flushed_offset
        return [
            (m, max(start, m.start) - m.start, min(target, m.end) - m.start)
            for m in self._log.files
            if m.end > start and m.start < target and not m.closed
        ]

    def _sync_ranges(self, ranges: list[tuple[mapped_file.MappedFile, int, int]]) -> None:
        for mapped, start, end in ranges:
            self._sync(mapped, start, end)

    def _advance(self, target: int, timestamp: int) -> None:
        log = self._log
        if target > log.flushed_offset:
            log.flushed_offset = target
            self.flushed_timestamp = timestamp
        for mapped in log.files:
            if mapped.start < target:
                mapped.flushed = max(mapped.flushed, min(mapped.size, target - mapped.start))
        self.flushes += 1

    async def flush(self, target: int, timestamp: int) -> bool:
        """Flush the log up to ``target``; ``timestamp`` is the store time there."""
        if target <= self._log.flushed_offset:
            return True
        async with self._lock:
            if target <= self._log.flushed_offset:
                return True
            ranges = self._ranges_to(target)
            started = time.perf_counter()
            try:
                await _pinned([m for m, _, _ in ranges], lambda: self._sync_ranges(ranges))
            except OSError:
                _log.exception("commit log flush failed")
                return False
            self._advance(target, timestamp)
            seconds = time.perf_counter() - started
            for listener in self.listeners:
                listener(seconds)
            return True

    def flush_blocking(self) -> None:
        """Flush everything now, on this thread (startup, shutdown without a loop)."""
        target = self._log.max_offset
        if target <= self._log.flushed_offset:
            return
        self._sync_ranges(self._ranges_to(target))
        self._advance(target, self._log.last_store_timestamp)


class LogicsFlusher:
    """Flushes consume queues and index files, then advances and writes the checkpoint."""

    def __init__(
        self,
        log: commitlog.CommitLog,
        log_flusher: CommitLogFlusher,
        queues: consume_queue.ConsumeQueueTable,
        index_service: index.IndexService | None,
        point: checkpoint.Checkpoint,
        config: settings.StoreConfig,
        fsync: FsyncFunction = os.fdatasync,
    ) -> None:
        self._log = log
        self._log_flusher = log_flusher
        self._queues = queues
        self._index = index_service
        self._checkpoint = point
        self._interval = config.flush_interval_consume_queue / 1000
        self._index_interval = config.flush_interval_index / 1000
        self._index_due = 0.0
        """Loop time of the next periodic index flush (the first round does one)."""
        self._index_safe = 0
        """Commit log offset dispatched when the index was last flushed."""
        self._fsync = fsync
        self._task: asyncio.Task[None] | None = None
        self._written = b""

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="logics-flush")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def abandon(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self._interval)
            with_index = loop.time() >= self._index_due
            try:
                await self.flush(with_index=with_index)
            except OSError:
                _log.exception("consume queue / checkpoint flush failed")
            else:
                if with_index:
                    self._index_due = loop.time() + self._index_interval

    async def flush(self, *, clean_max_offset: int = -1, with_index: bool = True) -> None:
        """One round: queue files and (``with_index``) index files, then the checkpoint
        (if it changed)."""
        dispatched = self._log.max_offset
        dispatched_ts = self._log.last_store_timestamp
        queue_files = self._queues.dirty()
        index_service = self._index if with_index else None
        prepared = index_service.prepare_flush() if index_service is not None else []
        files = [m for m, _ in queue_files] + [f.mapped for f, _, _ in prepared]

        def write_slots() -> None:
            for index_file, _count, pages in prepared:
                index_file.write_slot_pages(pages)

        try:
            await sync_pinned(files, self._fsync, write_slots)
        except BaseException:
            for index_file, _count, pages in prepared:
                index_file.unflushed(pages)
            raise
        for mapped, position in queue_files:
            mapped.flushed = max(mapped.flushed, position)
        index.IndexService.finish_flush(prepared)
        point = self._checkpoint
        if with_index or self._index is None:
            self._index_safe = dispatched
            point.index_msg_timestamp = dispatched_ts
        point.safe_offset = min(self._log.flushed_offset, dispatched, self._index_safe)
        point.physic_msg_timestamp = self._log_flusher.flushed_timestamp
        point.logics_msg_timestamp = dispatched_ts
        point.clean_max_offset = clean_max_offset
        page = point.encode()
        if page != self._written:
            await asyncio.to_thread(point.flush, page)
            self._written = page
