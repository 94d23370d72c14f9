"""Start-up recovery: find the end of the commit log and make the derived files agree.

Two paths, chosen by the ``abort`` marker (present while a store runs, removed by a
clean shutdown) and the checkpoint::

    clean restart (no abort, checkpoint has cleanMaxOffset >= 0, zeros there):
        log end := cleanMaxOffset; each consume queue's end found by binary search; no
        record is read.

    after a crash (abort present, or anything doubtful):
        start := checkpoint safeOffset (everything below was on disk and dispatched), or
                 the oldest record when unknown
        drop consume queue and index entries pointing at or past start
        re-read the log from start record by record (size, magic, lengths, physical
        offset, body CRC), re-dispatching each valid record
        truncate the log at the first record that fails (a torn tail)

Both end by rebuilding the ``(topic, queueId) -> next offset`` table from the consume
queues' max offsets and moving each queue's min offset past deleted log segments.

What holds after recovery, whatever was found on disk:

- the commit log ends at its last valid record (or at the end of a segment closed by its
  blank filler); nothing after it is read as a record;
- every consume queue entry points below that end, and no never-written entry is
  counted; a queue's next offset is its last entry's plus one;
- a queue's readable start is its first real entry at or past the log's oldest record:
  blank entries (a back-filled start, or a hole an older version left for a send it
  failed) count as the real entry after them, so no hole moves the start or the end of
  a queue past the acknowledged messages around it (``ConsumeQueue._search``).
"""

from __future__ import annotations

import dataclasses
import logging

from rocketkube.broker.store import checkpoint, commitlog, consume_queue, dispatch, index
from rocketkube.common.message import record

__all__ = ["RecoveryReport", "recover"]

_log = logging.getLogger(__name__)

_REPLAY_BATCH = 1024  # records re-dispatched at once (index entries are added per batch)


@dataclasses.dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What recovery did."""

    clean: bool
    """True when the clean-restart path was taken (nothing scanned)."""
    start: int
    """Commit log offset the scan started from (the end itself on a clean restart)."""
    end: int
    """The commit log end after recovery."""
    replayed: int
    """Records re-read and re-dispatched."""


def _clean_end(log: commitlog.CommitLog, point: checkpoint.Checkpoint) -> int | None:
    """The checkpoint's clean end when it is plausible, else ``None``."""
    if not point.has_extension or point.clean_max_offset < 0:
        return None
    end = point.clean_max_offset
    if not len(log.files):
        return end if end == 0 else None
    last = log.files.last
    assert last is not None
    if end < log.min_offset or end > last.end:
        return None
    holder = log.files.find(end)
    if holder is None:  # exactly at the end of the last segment
        return end
    if record.check(holder.view, end - holder.start, holder.size) != record.CHECK_END:
        return None
    return end


def _scan_start(log: commitlog.CommitLog, point: checkpoint.Checkpoint) -> int:
    """Where the crash scan begins: the safe offset when it is usable, else the start."""
    oldest = log.min_offset
    if not point.has_extension or not len(log.files):
        return oldest
    start = point.safe_offset
    holder = log.files.find(start)
    if start < oldest or holder is None:
        return oldest
    if record.check(holder.view, start - holder.start, holder.size) == record.CHECK_INVALID:
        _log.warning("checkpoint safe offset %d is not a record; scanning everything", start)
        return oldest
    return start


def recover(
    log: commitlog.CommitLog,
    queues: consume_queue.ConsumeQueueTable,
    index_service: index.IndexService | None,
    dispatcher: dispatch.Dispatcher,
    point: checkpoint.Checkpoint,
    *,
    abnormal: bool,
) -> RecoveryReport:
    """Recover loaded files in place (see the module docstring)."""
    clean_end = None if abnormal else _clean_end(log, point)
    if clean_end is not None:
        log.set_end(clean_end)
        for queue in queues:
            queue.truncate_from(clean_end)
        report = RecoveryReport(True, clean_end, clean_end, 0)
    else:
        start = _scan_start(log, point)
        if len(log.files):
            _log.warning("store was not shut down cleanly: checking the commit log from %d", start)
        for queue in queues:
            queue.truncate_from(start)
        if index_service is not None:
            index_service.truncate_from(start)
        scan = log.scan(start)
        metas: list[record.RecordMeta] = []
        for mapped, pos, _size in scan:
            metas.append(record.read_meta(mapped.view, pos))
            if len(metas) >= _REPLAY_BATCH:
                dispatcher.dispatch_records(metas)
                metas.clear()
        dispatcher.dispatch_records(metas)
        dispatcher.finish_replay()
        if len(log.files):
            log.truncate(scan.end)
        report = RecoveryReport(False, start, log.max_offset, scan.records)
        if len(log.files):
            _log.warning("recovered: %d records re-dispatched, commit log ends at %d",
                         scan.records, report.end)  # fmt: skip
    table = log.queue_offsets
    table.clear()
    oldest = log.min_offset
    for queue in queues:
        queue.correct_min_offset(oldest)
        if queue.max_offset > 0:
            table[(queue.topic, queue.queue_id)] = queue.max_offset
    return report
