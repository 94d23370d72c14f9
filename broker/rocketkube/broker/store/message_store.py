"""The message store facade: what the broker's processors call.

Owns the parts and their life cycle::

    open()          lock, load files, recover (crash or clean path), mark running (abort)
    await start()   open() if needed, then background tasks: commit log flush, consume
                    queue / index / checkpoint flush, retention
    put_messages()  disk guard -> reserve (the commit log segment ahead, queue files and
                    index room: a full disk refuses here, nothing written) -> append
                    (commitlog) -> dispatch (consume queues, index, listeners)
                    -> SYNC_FLUSH ticket (flush)
    append_replica() a slave's raw copy of its master's log -> dispatch of whole
                    records (replica)
    get_messages()  consume queue range -> tag filter -> zero-copy commit log views
                    (reads)
    await shutdown() flush everything, write a clean checkpoint, remove abort, unlock

Appends and reads run on the event loop thread and never block on disk: writes go into
mapped memory, the syncs run in worker threads. Injectable: ``clock`` (epoch ms, store
timestamps and retention), ``disk_usage`` (retention and the disk guard), ``fsync``
(consume queues, index) and ``log_sync`` (the commit log's unflushed range).

A full disk is a state, not a crash: appends are refused with SERVICE_NOT_AVAILABLE and
the reason (:attr:`MessageStore.write_refusal`) while reads go on, a store opens on a full
disk in that state, and appends are taken again once space returns (:mod:`.disk_guard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Callable, Sequence

from rocketkube.broker.store import (
    checkpoint,
    commitlog,
    consume_queue,
    disk_guard,
    dispatch,
    errors,
    flush,
    index,
    mapped_file,
    memory,
    model,
    reads,
    recovery,
    replica,
    retention,
    settings,
)
from rocketkube.common import atomic_file
from rocketkube.common.message import ids, record
from rocketkube.common.message import model as message_model

__all__ = ["MessageStore"]

_log = logging.getLogger(__name__)

_UNIQ_KEY = b"UNIQ_KEY\x01"
_KEYS = b"KEYS\x01"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageStore:
    """One store directory: commit log, consume queues, index, checkpoint."""

    def __init__(
        self,
        config: settings.StoreConfig,
        *,
        clock: Callable[[], int] = _now_ms,
        disk_usage: disk_guard.DiskUsage = disk_guard.disk_usage_ratio,
        fsync: flush.FsyncFunction = os.fdatasync,
        log_sync: flush.RangeSyncFunction = mapped_file.MappedFile.sync_range,
        memory_bytes: Callable[[], int] = memory.total_memory_bytes,
    ) -> None:
        self.config = config
        self.paths = settings.StorePaths(config.store_path_root_dir)
        self._clock = clock
        self._fsync = fsync
        self._sync_mode = config.flush_disk_type is settings.FlushDiskType.SYNC_FLUSH
        self._log = commitlog.CommitLog(
            self.paths, config, ids.pack_host(*ids.split_host_port(config.store_host))
        )
        self._queues = consume_queue.ConsumeQueueTable(
            self.paths, config.mapped_file_size_consume_queue
        )
        self._index = (
            index.IndexService(self.paths, config, clock) if config.message_index_enable else None
        )
        self._checkpoint = checkpoint.Checkpoint(self.paths.checkpoint)
        self._reads = reads.QueueReads(self._log, self._queues, config, memory_bytes())
        self._dispatcher = dispatch.Dispatcher(self._queues, self._index, config)
        self._log_flusher = flush.CommitLogFlusher(self._log, config, log_sync)
        self._logics_flusher = flush.LogicsFlusher(
            self._log, self._log_flusher, self._queues, self._index, self._checkpoint,
            config, fsync,
        )  # fmt: skip
        self._guard = disk_guard.DiskGuard(config, disk_usage, self._clean_now)
        self._retention = retention.Retention(
            self._log, self._queues, self._index, config, clock, self._guard
        )
        self._retention_task: asyncio.Task[None] | None = None
        self._cleanup: asyncio.Event | None = None
        """Set to run a retention round before its time (while started)."""
        self._lock_fd: int | None = None
        self._open = False
        self._started = False
        self._append_listeners: list[Callable[[int], None]] = []
        self._replica = replica.ReplicaIntake(self._log, self._dispatcher)
        self.recovery: recovery.RecoveryReport | None = None
        """What the last :meth:`open` found."""

    # -- life cycle ------------------------------------------------------------------------

    def _acquire_lock(self) -> None:
        self.paths.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.paths.lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise errors.StoreLockedError(f"{self.paths.root} is in use: {exc}") from exc
        if os.pread(fd, 8, 0) != b"lock":
            try:  # what it holds says nothing: the flock is the lock (a full disk is fine)
                os.ftruncate(fd, 0)
                os.pwrite(fd, b"lock", 0)
            except OSError as exc:
                _log.warning("%s not written: %s", self.paths.lock, exc)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def open(self) -> recovery.RecoveryReport:
        """Lock the directory, load and recover the files (blocking; once)."""
        if self._open:
            assert self.recovery is not None
            return self.recovery
        self._acquire_lock()
        try:
            abnormal = self.paths.abort.exists()
            self._checkpoint.load()
            self._log.files.load()
            self._queues.load()
            if self._index is not None:
                self._index.load()
            report = recovery.recover(self._log, self._queues, self._index, self._dispatcher,
                                      self._checkpoint, abnormal=abnormal)  # fmt: skip
            self._mark_running(report.end)
            self._guard.measure()
        except BaseException:
            self._close_files()
            self._release_lock()
            raise
        self.recovery = report
        self._open = True
        return report

    def _mark_running(self, end: int) -> None:
        """After recovery: everything synced, the checkpoint saying so (and that the store
        runs), and ``abort`` created. On a full disk a failed sync or checkpoint is logged
        and the older checkpoint stays (a crash recovers from further back); only
        ``abort``, an empty file, must be created, else a crash would pass for a clean
        shutdown."""
        point = self._checkpoint
        try:
            self._sync_all_blocking()
            point.safe_offset = end
        except OSError as exc:
            _log.error("store files not synced at start-up, the checkpoint keeps its safe "
                       "offset %d: %s", point.safe_offset, exc)  # fmt: skip
        point.clean_max_offset = -1
        try:
            point.flush()
        except OSError as exc:
            _log.error("checkpoint not written at start-up: %s", exc)
        self.paths.abort.touch()
        atomic_file.fsync_dir(self.paths.root)

    def _sync_all_blocking(self) -> None:
        """Flush the log, consume queues and index on this thread (start-up, close)."""
        self._log_flusher.flush_blocking()
        for mapped, position in self._queues.dirty():
            self._fsync(mapped.fd)
            mapped.flushed = position
        if self._index is not None:
            self._index.flush_blocking(self._fsync)

    async def start(self) -> None:
        """Open (in a worker thread) if needed, then start the background tasks."""
        if not self._open:
            await asyncio.to_thread(self.open)
        if self._started:
            return
        self._started = True
        self._log_flusher.start()
        self._logics_flusher.start()
        self._cleanup = asyncio.Event()
        self._retention_task = asyncio.get_running_loop().create_task(
            self._retention_loop(self._cleanup), name="store-retention"
        )

    def _clean_now(self) -> None:
        if self._cleanup is not None:
            self._cleanup.set()

    async def _retention_loop(self, cleanup: asyncio.Event) -> None:
        interval = self.config.clean_resource_interval / 1000
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cleanup.wait(), interval)
            cleanup.clear()
            try:
                self._retention.run_once()
            except OSError:
                _log.exception("retention round failed")

    async def shutdown(self) -> None:
        """Flush everything, write a clean checkpoint, remove ``abort``, unlock."""
        if not self._open:
            return
        self._open = False
        if self._retention_task is not None:
            self._retention_task.cancel()
            await asyncio.gather(self._retention_task, return_exceptions=True)
            self._retention_task = None
        await self._log_flusher.stop()
        await self._logics_flusher.stop()
        self._replica.drop_unfinished()
        end = self._log.max_offset
        try:
            await self._logics_flusher.flush(clean_max_offset=end)
        except OSError as exc:
            _log.error("store not flushed at shutdown, the next start recovers it: %s", exc)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.paths.abort.unlink()
            await asyncio.to_thread(atomic_file.fsync_dir, self.paths.root)
        self._close_files()
        self._release_lock()
        self._started = False

    def close(self) -> None:
        """:meth:`shutdown` for a store used without an event loop (scripts, tools)."""
        if not self._open:
            return
        if self._started:
            raise RuntimeError("the store was started on an event loop: await shutdown()")
        self._open = False
        self._replica.drop_unfinished()
        try:
            self._sync_all_blocking()
            point = self._checkpoint
            point.safe_offset = point.clean_max_offset = self._log.max_offset
            point.physic_msg_timestamp = self._log.last_store_timestamp
            point.logics_msg_timestamp = self._log.last_store_timestamp
            point.index_msg_timestamp = self._log.last_store_timestamp
            point.flush()
        except OSError as exc:
            _log.error("store not flushed at close, the next open recovers it: %s", exc)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.paths.abort.unlink()
            atomic_file.fsync_dir(self.paths.root)
        self._close_files()
        self._release_lock()

    def close_abruptly(self) -> None:
        """Drop everything without flushing, leaving ``abort`` (simulates a crash)."""
        self._open = False
        self._started = False
        if self._retention_task is not None:
            self._retention_task.cancel()
            self._retention_task = None
        self._log_flusher.abandon()
        self._logics_flusher.abandon()
        self._close_files()
        self._release_lock()

    def _close_files(self) -> None:
        if self._index is not None:
            self._index.close()
        self._queues.close()
        self._log.close()

    # -- append ----------------------------------------------------------------------------

    def put_message(self, message: model.InnerMessage) -> model.PutResult:
        """Append one message (see :meth:`put_messages`)."""
        return self.put_messages((message,))

    def put_messages(self, messages: Sequence[model.InnerMessage]) -> model.PutResult:
        """Append messages back to back in one segment and dispatch them.

        Synchronous: on return the messages are readable by :meth:`get_messages`. With
        SYNC_FLUSH the result carries a :class:`~.model.FlushTicket`; ``await
        result.wait()`` for PUT_OK or FLUSH_DISK_TIMEOUT (concurrent appends share one
        flush). Refusals (size limits, disk full, closed store) are statuses, not raises;
        on a full disk (SERVICE_NOT_AVAILABLE) nothing was written and no queue offset
        taken.
        """
        if not self._open:
            return model.PutResult(model.PutStatus.SERVICE_NOT_AVAILABLE, error="store closed")
        log = self._log
        guard = self._guard
        now = self._clock()
        refusal = guard.admit(now, log.max_offset)
        if refusal is not None:
            return model.PutResult(model.PutStatus.SERVICE_NOT_AVAILABLE, error=refusal)
        if not messages:
            return model.PutResult(model.PutStatus.PUT_OK)
        try:
            log.reserve()
            self._dispatcher.reserve(messages, log.queue_offsets)
        except OSError as exc:
            guard.failed(exc)
            refusal = guard.refusal or f"store files cannot be allocated: {exc}"
            return model.PutResult(model.PutStatus.SERVICE_NOT_AVAILABLE, error=refusal)
        status, error, appended = log.append(messages, now)
        if status is not model.PutStatus.PUT_OK:
            if status is model.PutStatus.CREATE_MAPPED_FILE_FAILED and guard.failed(error):
                status, error = model.PutStatus.SERVICE_NOT_AVAILABLE, guard.refusal or error
            return model.PutResult(status, error=error)
        if guard.refusal is not None:
            guard.succeeded()  # the first append through after blocks were refused
        try:
            self._dispatcher.dispatch_appended(messages, appended)
        except OSError as exc:
            _log.exception("dispatch failed after append")
            return model.PutResult(model.PutStatus.UNKNOWN_ERROR, appended, error=str(exc))
        ticket = self._log_flusher.ticket() if self._sync_mode else None
        for listener in self._append_listeners:
            listener(self._log.max_offset)
        return model.PutResult(model.PutStatus.PUT_OK, appended, ticket)

    def append_replica(self, offset: int, data: bytes | bytearray | memoryview) -> int:
        """A slave's append: write bytes copied from the master's commit log at ``offset``
        (this log's end) and dispatch every record they complete; a record cut by the end
        of ``data`` waits for the next bytes, and so do records whose dispatch failed (a
        full disk: retried at the next append). Returns the new commit log end, the offset
        the slave reports back. Raises :class:`~.errors.ReplicaMismatchError` when the
        bytes do not continue this log, :class:`~.errors.StoreError` when it is closed,
        ``OSError`` when they cannot be written (nothing was)."""
        if not self._open:
            raise errors.StoreError("store closed")
        self._replica.append(offset, data)
        if self._sync_mode:
            self._log_flusher.ticket()  # a slave does not wait, but SYNC_FLUSH flushes now
        return self._log.max_offset

    def add_arrival_listener(self, listener: model.ArrivalListener) -> None:
        """Call ``listener(topic, queue_id, max_offset, tags_codes)`` once per append batch
        and queue (long polling wakes from here)."""
        self._dispatcher.listeners.append(listener)

    def add_append_listener(self, listener: Callable[[int], None]) -> None:
        """Call ``listener(commit_log_end)`` after each append batch (replication wakes
        from here). It must not raise."""
        self._append_listeners.append(listener)

    def add_flush_listener(self, listener: Callable[[float], None]) -> None:
        """Call ``listener(seconds)`` after each commit log flush round of the started
        store, with the time it took (metrics). It must not raise."""
        self._log_flusher.listeners.append(listener)

    # -- consume queue reads ---------------------------------------------------------------

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int,
        tag_filter: model.TagFilter | None = None,
        record_filter: model.RecordFilter | None = None,
    ) -> model.GetResult:
        """Read up to ``max_nums`` messages of a queue from ``offset`` (docs/store.md §10);
        ``record_filter`` sees each record the tag filter kept."""
        return self._reads.get_messages(topic, queue_id, offset, max_nums, tag_filter,
                                        record_filter)  # fmt: skip

    def max_offset(self, topic: str, queue_id: int) -> int:
        """The queue's next offset (GET_MAX_OFFSET); 0 when the queue does not exist."""
        queue = self._queues.find(topic, queue_id)
        return queue.max_offset if queue is not None else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        """The queue's first available offset (GET_MIN_OFFSET); 0 when it does not exist."""
        queue = self._queues.find(topic, queue_id)
        return queue.min_offset if queue is not None else 0

    def offset_by_timestamp(self, topic: str, queue_id: int, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: exact store time, else the closer neighbour; 0."""
        queue = self._queues.find(topic, queue_id)
        if queue is None:
            return 0
        return queue.offset_by_time(timestamp, self._log.store_timestamp_at)

    def store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """Store time of the message at a queue offset; -1 when unavailable."""
        queue = self._queues.find(topic, queue_id)
        found = queue.entry(offset) if queue is not None else None
        if found is None or found[1] == consume_queue.BLANK_SIZE:
            return -1
        return self._log.store_timestamp_at(found[0])

    def earliest_message_time(self, topic: str, queue_id: int) -> int:
        """GET_EARLIEST_MSG_STORETIME: store time at the min offset; -1 when none."""
        return self.store_timestamp(topic, queue_id, self.min_offset(topic, queue_id))

    def queue_ids(self, topic: str) -> list[int]:
        """Queue ids of ``topic`` that have a consume queue."""
        return sorted(q.queue_id for q in self._queues.topic_queues(topic))

    def delete_topic(self, topic: str) -> int:
        """Delete the topic's consume queues and offsets; returns how many queues went."""
        for key in [k for k in self._log.queue_offsets if k[0] == topic]:
            del self._log.queue_offsets[key]
        return self._queues.delete_topic(topic)

    # -- commit log reads ------------------------------------------------------------------

    def lookup_message(self, phys_offset: int) -> memoryview | None:
        """The stored record at a commit log offset (VIEW_MESSAGE_BY_ID), or ``None``."""
        return self._log.record_at(phys_offset)

    def lookup_message_ext(self, phys_offset: int) -> message_model.MessageExt | None:
        """:meth:`lookup_message` decoded."""
        view = self._log.record_at(phys_offset)
        return record.decode(view) if view is not None else None

    def read_commit_log(self, phys_offset: int, max_bytes: int) -> memoryview | None:
        """Raw commit log bytes from an offset to the end of its segment (replication)."""
        return self._log.read_from(phys_offset, max_bytes)

    def query_by_key(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int
    ) -> model.QueryResult:
        """QUERY_MESSAGE: records of ``topic`` whose UNIQ_KEY or a KEYS token is ``key``,
        stored within [begin_ms, end_ms], newest first, at most ``maxMsgsNumBatch``."""
        result = model.QueryResult()
        if self._index is None:
            return result
        result.index_last_update_timestamp = self._index.last_update_timestamp
        result.index_last_update_phy_offset = self._index.last_update_phys
        limit = max(0, min(max_num, self.config.max_msgs_num_batch))
        wanted = key.encode()
        seen: set[int] = set()
        for phys in self._index.query(topic, key, limit * 4 + 16, begin_ms, end_ms):
            if len(result.buffers) >= limit:
                break
            if phys in seen:
                continue
            seen.add(phys)
            view = self._log.record_at(phys)
            if view is None:
                continue
            meta = record.read_meta(view, 0)
            if meta.topic != topic:
                continue
            uniq = dispatch.property_value(meta.properties, _UNIQ_KEY)
            keys = dispatch.property_value(meta.properties, _KEYS)
            if uniq == wanted or (keys is not None and wanted in keys.split(b" ")):
                result.buffers.append(view)
                result.physical_offsets.append(phys)
        return result

    # -- state -----------------------------------------------------------------------------

    @property
    def commit_log_min_offset(self) -> int:
        return self._log.min_offset

    @property
    def commit_log_max_offset(self) -> int:
        return self._log.max_offset

    @property
    def flushed_offset(self) -> int:
        """Commit log offset below which everything is on disk."""
        return self._log.flushed_offset

    @property
    def dispatch_offset(self) -> int:
        """Commit log offset up to which consume queues and index are built: the commit
        log end (dispatch is synchronous), but on a slave the end of the last whole
        record copied from the master."""
        dispatched = self._replica.dispatched
        return self._log.max_offset if dispatched is None else dispatched

    @property
    def flush_count(self) -> int:
        """Commit log flush rounds so far (group commit makes this far below sends)."""
        return self._log_flusher.flushes

    def mapped(self) -> tuple[int, int]:
        """(files, bytes) mapped into memory now: commit log, consume queue and index
        files; the page cache holds what of them was touched lately."""
        files = [*self._log.files, *(m for q in self._queues for m in q.files)]
        if self._index is not None:
            files += [f.mapped for f in self._index.files]
        return len(files), sum(m.size for m in files)

    def disk_use_ratio(self) -> float:
        """The last measured disk use of the store root (0..1)."""
        return self._guard.ratio

    @property
    def writable(self) -> bool:
        """False while appends are refused: the disk is full (:mod:`.disk_guard`)."""
        return self._guard.refusal is None

    @property
    def write_refusal(self) -> str | None:
        """Why appends are refused (the disk is full), or None while they are taken."""
        return self._guard.refusal

    @property
    def index_dropped_keys(self) -> int:
        """Keys left out of the index because no index file could be had for them."""
        return self._index.dropped_keys if self._index is not None else 0

    def clean_expired_files(self, *, manual: bool = False) -> int:
        """Run one retention round now; returns commit log segments deleted."""
        return self._retention.run_once(manual=manual)

    def topics(self) -> list[str]:
        """Topics that have at least one consume queue."""
        return sorted({q.topic for q in self._queues})
