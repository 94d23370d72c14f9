"""A slave's intake of its master's commit log: the bytes copied at the log's end, and the
dispatch of every record they complete (Java ``HAService``'s slave side writes them with
``appendToCommitLog`` and its reput service dispatches them).

The bytes come in chunks that need not end at a record boundary: a record cut by the end
of a chunk waits for the next one, and so do records whose dispatch failed (a full disk:
retried at the next chunk). :attr:`ReplicaIntake.dispatched` is the end of the last whole
record dispatched: how far consume queues and index are built on the slave.
"""

from __future__ import annotations

import logging

from rocketkube.broker.store import commitlog, dispatch
from rocketkube.common.message import record, sysflag

__all__ = ["ReplicaIntake"]

_log = logging.getLogger(__name__)

_NOT_QUEUED = (sysflag.TRANSACTION_PREPARED_TYPE, sysflag.TRANSACTION_ROLLBACK_TYPE)


class ReplicaIntake:
    """Writes a master's commit log bytes into the slave's and dispatches whole records."""

    def __init__(self, log: commitlog.CommitLog, dispatcher: dispatch.Dispatcher) -> None:
        self._log = log
        self._dispatcher = dispatcher
        self.dispatched: int | None = None
        """The end of the last whole record dispatched; None until the first chunk (a
        master's store has none)."""
        self._stuck_at = -1
        """Where dispatch last stopped on an error (logged once per place)."""

    def append(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``offset`` (the log's end) and dispatch what it completes.
        Raises :class:`~.errors.ReplicaMismatchError` when the bytes do not continue the
        log, ``OSError`` when they cannot be written (nothing was)."""
        if self.dispatched is None:
            self.dispatched = self._log.max_offset
        self._log.append_replica(offset, data)
        self._dispatch()

    def drop_unfinished(self) -> None:
        """Before a clean shutdown, cut the log after its last whole record: a clean
        restart trusts the end, and the master sends the rest again from there."""
        end = self.dispatched
        if end is not None and end < self._log.max_offset:
            self._log.truncate(end)

    def _dispatch(self) -> None:
        """Dispatch every whole record from where the last call stopped."""
        assert self.dispatched is not None
        at = max(self.dispatched, self._log.min_offset)  # an empty log starts late
        files = self._log.files
        mapped = files.find(at)
        metas: list[record.RecordMeta] = []
        while mapped is not None:
            pos = at - mapped.start
            if pos + 8 > mapped.wrote:
                if not mapped.is_full:
                    break
                at = mapped.end  # a tail too short for a blank filler
                mapped = files.find(at)
                continue
            total = int.from_bytes(mapped.view[pos : pos + 4], "big")
            if 8 <= total <= mapped.size - pos and pos + total > mapped.wrote:
                break  # the rest of this record has not arrived yet
            size = record.check(mapped.view, pos, mapped.wrote, expected_offset=at)
            if size > 0:
                metas.append(record.read_meta(mapped.view, pos))
                at += size
            elif size == record.CHECK_BLANK:
                at = mapped.end
                mapped = files.find(at)
            else:
                if self._stuck_at != at:
                    self._stuck_at = at
                    _log.error("replicated commit log data at %d is not a valid record: "
                               "consume queues stop there", at)  # fmt: skip
                break
        if metas:
            try:
                self._dispatcher.dispatch_records(metas)
            except OSError as exc:
                if self._stuck_at != metas[0].physical_offset:
                    self._stuck_at = metas[0].physical_offset
                    _log.error("replicated records from %d not dispatched yet: %s",
                               metas[0].physical_offset, exc)  # fmt: skip
                return
            table = self._log.queue_offsets
            for meta in metas:
                if meta.sys_flag & sysflag.TRANSACTION_MASK not in _NOT_QUEUED:
                    table[(meta.topic, meta.queue_id)] = meta.queue_offset + 1
            self._log.last_store_timestamp = metas[-1].store_timestamp
        self.dispatched = at
