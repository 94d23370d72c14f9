"""Reading a queue: a consume queue range, filtered, as zero-copy views of the commit log
records it points to (docs/store.md §10; Java ``DefaultMessageStore.getMessage``).

Contiguous records share one view; a read stops at ``maxTransferCountOnMessageInMemory``
messages or ``maxTransferBytesOnMessageInMemory`` bytes, skips entries that point below the
log's start or past its end (MESSAGE_WAS_REMOVING when nothing else is found), and says
when the last entry read lies further behind the log's end than the memory
``accessMessageInMemoryMaxRatio`` allows (a consumer better served by a slave).
"""

from __future__ import annotations

from rocketkube.broker.store import commitlog, consume_queue, model, settings

__all__ = ["QueueReads"]

_SCAN_MIN_BYTES = 16_000  # a pull reads at least this much of the consume queue


class QueueReads:
    """Answers ``get_messages`` from the consume queues and the commit log."""

    def __init__(
        self,
        log: commitlog.CommitLog,
        queues: consume_queue.ConsumeQueueTable,
        config: settings.StoreConfig,
        memory_bytes: int,
    ) -> None:
        self._log = log
        self._queues = queues
        self.config = config
        self._in_memory = memory_bytes * config.access_message_in_memory_max_ratio // 100
        """Bytes behind the log's end still "in memory" (accessMessageInMemoryMaxRatio)."""

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
        status = model.GetStatus
        queue = self._queues.find(topic, queue_id)
        if queue is None:
            return model.GetResult(status.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        low, high = queue.min_offset, queue.max_offset
        if high == 0:
            return model.GetResult(status.NO_MESSAGE_IN_QUEUE, 0, low, high)
        if offset < low:
            return model.GetResult(status.OFFSET_TOO_SMALL, low, low, high)
        if offset == high:
            return model.GetResult(status.OFFSET_OVERFLOW_ONE, offset, low, high)
        if offset > high:
            return model.GetResult(status.OFFSET_OVERFLOW_BADLY, high, low, high)
        entries = queue.entries(offset, max(_SCAN_MIN_BYTES, max_nums * 20))
        if entries is None:
            return model.GetResult(
                status.OFFSET_FOUND_NULL, queue.next_file_offset(offset), low, high
            )
        result = model.GetResult(status.NO_MATCHED_MESSAGE, offset, low, high)
        self._collect(result, entries, offset, max_nums, tag_filter, record_filter)
        return result

    def _collect(
        self,
        result: model.GetResult,
        entries: memoryview,
        offset: int,
        max_nums: int,
        tag_filter: model.TagFilter | None,
        record_filter: model.RecordFilter | None,
    ) -> None:
        log = self._log
        min_phys = log.min_offset
        max_bytes = self.config.max_transfer_bytes_on_message_in_memory
        max_count = min(max_nums, self.config.max_transfer_count_on_message_in_memory)
        spans: list[list[int]] = []  # [segment-relative start, end, segment index]
        files = log.files.files
        first_start = files[0].start if files else 0
        file_size = log.file_size
        offsets = result.queue_offsets
        total = 0
        scanned = 0
        removed = False
        phys = log_end = log.max_offset
        for phys, size, tags in consume_queue.ENTRY.iter_unpack(entries):
            if offsets and (len(offsets) >= max_count or total + size > max_bytes):
                break
            scanned += 1
            if size == consume_queue.BLANK_SIZE or size <= 0:
                continue
            if phys < min_phys:
                removed = True
                continue
            if tag_filter is not None and not tag_filter(tags):
                continue
            which = (phys - first_start) // file_size
            if which >= len(files) or phys - files[which].start + size > files[which].wrote:
                removed = True  # points past the log end: skip, as Java skips lost records
                continue
            pos = phys - files[which].start
            if record_filter is not None and not record_filter(files[which].view[pos : pos + size]):
                continue
            if spans and spans[-1][2] == which and spans[-1][1] == pos:
                spans[-1][1] = pos + size
            else:
                spans.append([pos, pos + size, which])
            offsets.append(offset + scanned - 1)
            total += size
        result.next_begin_offset = offset + scanned
        # Java's test: how far the last entry read (kept or not) lies behind the log's end
        result.suggest_pulling_from_slave = log_end - phys > self._in_memory
        result.buffers = [files[which].view[start:end] for start, end, which in spans]
        result.message_count = len(offsets)
        result.total_size = total
        if offsets:
            result.status = model.GetStatus.FOUND
        elif removed:
            result.status = model.GetStatus.MESSAGE_WAS_REMOVING
