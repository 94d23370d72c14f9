"""The commit log: every message of every topic, appended back to back in segment files.

A record (``rocketkube.common.message.record``) lives at a global physical offset =
segment start + position. A segment ends with an 8-byte blank filler when the next record
(or batch) does not fit with 8 bytes to spare; a batch is never split across segments::

    segment N                                              segment N+1
    +--------+--------+-----+--------+--------------------+ +--------+-----
    | rec    | rec    | ... | rec    | size|BLANK  (junk) | | rec    | ...
    +--------+--------+-----+--------+--------------------+ +--------+-----
                                     ^ filler: size = bytes left in the segment

Appending assigns each message its queue offset from the ``(topic, queueId) -> next
offset`` table (PREPARED and ROLLBACK transaction parts get 0 and do not advance it), stamps
the store time, and packs the record straight into the mapping. A run is all or
nothing: a message whose fields a record cannot hold is refused before any offset is
taken, and a run that still fails to encode takes no queue offset and leaves zeros, not
records, where it was written. Nothing here flushes
(``flush``), dispatches (``dispatch``) or recovers (``recovery``); this module only knows
bytes and offsets.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator, Sequence

from rocketkube.broker.store import errors, mapped_file, model, populate, records, settings
from rocketkube.common.message import record

__all__ = ["CommitLog", "Scan"]

_log = logging.getLogger(__name__)

_BLANK_RESERVE = 8  # a record must leave room for the end-of-segment filler
ALLOCATION_UNIT = 4 << 20
"""A segment's blocks are allocated 4 MiB at a time ahead of the writer (then doubling),
not 1 GiB at once: the disk in use grows with the data, as with a sparse file."""

_INT_FIELDS = ("queue_id", "flag", "sys_flag", "reconsume_times")
_LONG_FIELDS = ("born_timestamp", "prepared_transaction_offset")
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _out_of_range(message: model.InnerMessage) -> str:
    """Why a record cannot hold ``message``'s integers (a record's int32 and int64
    fields), or "" when it can; checked before a run takes any queue offset."""
    for name in _INT_FIELDS:
        value = getattr(message, name)
        if not isinstance(value, int) or not _INT_MIN <= value <= _INT_MAX:
            return f"{name} {value!r} is not a 32-bit integer"
    for name in _LONG_FIELDS:
        value = getattr(message, name)
        if not isinstance(value, int) or not _LONG_MIN <= value <= _LONG_MAX:
            return f"{name} {value!r} is not a 64-bit integer"
    return ""


class Scan:
    """Iterates the valid records from an offset; ``end`` is where validity stopped.

    Each item is ``(file, position, size)``. Iteration stops at the first torn or corrupt
    record, at never-written bytes, or at the end of the last segment; blank fillers move
    to the next segment.
    """

    __slots__ = ("_log", "_start", "end", "records")

    def __init__(self, log: CommitLog, start: int) -> None:
        self._log = log
        self._start = start
        self.end = start
        self.records = 0

    def __iter__(self) -> Iterator[tuple[mapped_file.MappedFile, int, int]]:
        files = self._log.files
        mapped = files.find(self._start)
        if mapped is None:
            return
        pos = self._start - mapped.start
        while True:
            result = record.check(mapped.view, pos, mapped.size, expected_offset=mapped.start + pos)
            if result > 0:
                self.records += 1
                yield mapped, pos, result
                pos += result
                self.end = mapped.start + pos
                continue
            if result == record.CHECK_BLANK:
                following = files.find(mapped.end)
                self.end = mapped.end
                if following is None:
                    return
                mapped, pos = following, 0
                continue
            self.end = mapped.start + pos
            return


class CommitLog:
    """The segments of the commit log, the append path and raw reads."""

    def __init__(self, paths: settings.StorePaths, config: settings.StoreConfig,
                 store_host: bytes) -> None:  # fmt: skip
        self.files = mapped_file.MappedFileQueue(
            paths.commit_log, config.mapped_file_size_commit_log, unit=ALLOCATION_UNIT
        )
        self.file_size = config.mapped_file_size_commit_log
        self.max_body_size = config.max_message_size
        self.store_host = store_host
        self._fixed_size = record.record_size(0, 0, 0, 0, len(store_host))
        """A record's size without its born host, body, topic and properties."""
        self.queue_offsets: dict[tuple[str, int], int] = {}
        """Next queue offset of each (topic, queueId)."""
        self.flushed_offset = 0
        """Everything below this offset is on disk."""
        self.last_store_timestamp = 0
        """Store time of the last appended record."""
        self._topics: dict[str, bytes] = {}
        self._populator = populate.AheadPopulator()
        """Maps the pages ahead of the writer, in a worker thread."""
        self._records = records.implementation()
        """Sizes and writes runs of records (compiled when built)."""

    # -- offsets ---------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """Offset of the oldest record still stored."""
        return self.files.min_offset

    @property
    def max_offset(self) -> int:
        """Offset where the next record goes."""
        return self.files.max_offset

    # -- append ----------------------------------------------------------------------------

    def _topic_bytes(self, topic: str) -> bytes | None:
        """The topic's UTF-8 (cached), or ``None`` when it cannot be stored: empty, over
        127 bytes, or unusable as a consume queue directory name."""
        encoded = topic.encode("utf-8", "replace")
        if not 0 < len(encoded) <= record.MAX_TOPIC_SIZE or topic in (".", ".."):
            return None
        if "/" in topic or "\\" in topic or "\x00" in topic:
            return None
        if len(self._topics) > 100_000:
            self._topics.clear()
        self._topics[topic] = encoded
        return encoded

    def _validate(self, messages: Sequence[model.InnerMessage]) -> tuple[int, str]:
        """Total size of the records, or ``(-status-code, error)`` when one is illegal."""
        total = self._records.records_size(messages, self._topics, self._fixed_size,
                                           self.max_body_size)  # fmt: skip
        if 0 <= total <= self.file_size - _BLANK_RESERVE:
            return total, ""
        topics = self._topics
        max_body = self.max_body_size
        fixed = self._fixed_size
        total = 0
        for message in messages:
            topic = topics.get(message.topic) or self._topic_bytes(message.topic)
            if topic is None:
                return -1, f"topic {message.topic[:40]!r}: 1 to 127 bytes, no / or NUL"
            body_len = len(message.body)
            if body_len > max_body:
                return -1, f"body of {body_len} bytes exceeds maxMessageSize {max_body}"
            props_len = len(message.properties)
            if props_len > record.MAX_PROPERTIES_SIZE:
                return -2, f"properties of {props_len} bytes exceed 32767"
            problem = _out_of_range(message)
            if problem:
                return -1, problem
            total += fixed + len(message.born_host) + body_len + len(topic) + props_len
        if total + _BLANK_RESERVE > self.file_size:
            return -1, f"{total} bytes of records do not fit a {self.file_size}-byte segment"
        return total, ""

    def _writable(self, total: int) -> mapped_file.MappedFile:
        """The segment to write ``total`` bytes into, closing the current one if needed,
        their blocks allocated. Raises ``OSError`` when blocks cannot be allocated, having
        written at most the closing filler."""
        mapped = self.files.last
        if mapped is None:
            mapped = self.files.roll(0)
        elif total + _BLANK_RESERVE > mapped.remaining:
            filler = mapped.remaining >= _BLANK_RESERVE
            if filler:
                mapped.allocate(mapped.wrote + _BLANK_RESERVE)
            following = self.files.roll()
            if filler:
                record.blank_into(mapped.mm, mapped.wrote, mapped.remaining)
            mapped.wrote = mapped.size
            mapped = following
        if mapped.wrote + total > mapped.allocated:  # a run longer than the reservation
            self.files.reserve(mapped.start + mapped.wrote + total)
        return mapped

    def reserve(self) -> None:
        """Before an append: the blocks of the next ``ALLOCATION_UNIT`` bytes of the
        current segment allocated, and once it is half written the next segment created
        ahead (as RocketMQ's ``AllocateMappedFileService`` does), so that an append of a
        run up to that long needs no new block. Raises ``OSError``."""
        mapped = self.files.last
        if mapped is None:
            return
        ahead = mapped.wrote + ALLOCATION_UNIT
        if mapped.allocated < min(ahead, mapped.size):
            self.files.reserve(mapped.start + ahead)
        if mapped.wrote >= mapped.size // 2 and not self.files.ahead:
            self.files.prepare()

    def append(
        self, messages: Sequence[model.InnerMessage], now: int
    ) -> tuple[model.PutStatus, str, list[model.AppendResult]]:
        """Append ``messages`` contiguously in one segment, stamped with store time ``now``."""
        total, error = self._validate(messages)
        if total < 0:
            status = (
                model.PutStatus.PROPERTIES_SIZE_EXCEEDED
                if total == -2
                else model.PutStatus.MESSAGE_ILLEGAL
            )
            return status, error, []
        try:
            mapped = self._writable(total)
        except OSError as exc:
            _log.error("cannot create a commit log segment: %s", exc)
            return model.PutStatus.CREATE_MAPPED_FILE_FAILED, str(exc), []
        try:
            self._populator.ensure(mapped, mapped.wrote + total)
        except OSError as exc:
            _log.error("cannot reserve commit log pages: %s", exc)
            return model.PutStatus.SERVICE_NOT_AVAILABLE, f"disk: {exc}", []
        try:
            pos, appended = self._records.encode_records(
                messages, mapped.mm, mapped.wrote, mapped.start, topics=self._topics,
                queue_offsets=self.queue_offsets, store_host=self.store_host, now=now,
            )  # fmt: skip
        except (struct.error, OverflowError, ValueError, TypeError, KeyError) as exc:
            # _validate lets nothing through that cannot be encoded; should a message still
            # fail, the run is not stored: no queue offset taken (the table is left
            # as it was), and the records already written are zeroed, so that no recovery
            # can find them.
            mapped.mm[mapped.wrote : mapped.wrote + total] = bytes(total)
            _log.error("a run of %d messages could not be encoded: %r", len(messages), exc)
            return model.PutStatus.MESSAGE_ILLEGAL, f"message not encodable: {exc}", []
        mapped.wrote = pos
        self.last_store_timestamp = now
        return model.PutStatus.PUT_OK, "", appended

    def append_replica(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        """Write bytes copied from a master's commit log (a slave's append).

        They must start at this log's end (an empty log starts at a segment boundary) and
        stay within one segment, as a master sends them; no record is parsed here."""
        mapped = self.files.last
        if mapped is None:
            if offset % self.file_size:
                raise errors.ReplicaMismatchError(
                    f"replica data at {offset}: an empty log starts at a segment boundary"
                )
            mapped = self.files.roll(offset)
        elif offset != mapped.write_offset:
            raise errors.ReplicaMismatchError(
                f"replica data at {offset}, but this commit log ends at {mapped.write_offset}"
            )
        elif mapped.is_full:
            mapped = self.files.roll()
        size = len(data)
        if size > mapped.remaining:
            raise errors.ReplicaMismatchError(
                f"{size} replica bytes at {offset} cross the segment end {mapped.end}"
            )
        if mapped.wrote + size > mapped.allocated:  # OSError on a full disk: nothing written
            self.files.reserve(mapped.start + mapped.wrote + size)
        mapped.mm[mapped.wrote : mapped.wrote + size] = data
        mapped.wrote += size

    # -- reads -----------------------------------------------------------------------------

    def read(self, offset: int, size: int) -> memoryview | None:
        """A zero-copy view of ``size`` written bytes at ``offset``, within one segment."""
        mapped = self.files.find(offset)
        if mapped is None:
            return None
        pos = offset - mapped.start
        if pos + size > mapped.wrote or size <= 0:
            return None
        return mapped.view[pos : pos + size]

    def read_from(self, offset: int, max_bytes: int) -> memoryview | None:
        """Written bytes from ``offset`` to the end of its segment, at most ``max_bytes``."""
        mapped = self.files.find(offset)
        if mapped is None:
            return None
        pos = offset - mapped.start
        end = min(mapped.wrote, pos + max_bytes)
        if pos >= end:
            return None
        return mapped.view[pos:end]

    def record_at(self, offset: int) -> memoryview | None:
        """The whole record starting at ``offset``, or ``None`` when no record starts there."""
        mapped = self.files.find(offset)
        if mapped is None:
            return None
        pos = offset - mapped.start
        size = record.check(mapped.view, pos, mapped.wrote, expected_offset=offset,
                            verify_crc=False)  # fmt: skip
        if size <= 0:
            return None
        return mapped.view[pos : pos + size]

    def store_timestamp_at(self, offset: int) -> int:
        """Store time of the record at ``offset``; -1 when it cannot be read."""
        mapped = self.files.find(offset)
        if mapped is None or offset - mapped.start + 76 > mapped.wrote:
            return -1
        return record.store_timestamp_at(mapped.view, offset - mapped.start)

    # -- recovery and retention ------------------------------------------------------------

    def scan(self, start: int) -> Scan:
        """Valid records from ``start`` (see :class:`Scan`)."""
        return Scan(self, start)

    def truncate(self, offset: int) -> None:
        """Drop everything at or after ``offset`` (zeroed, later segments deleted)."""
        self._populator.settle()
        self.files.truncate(offset)
        self.flushed_offset = min(self.flushed_offset, offset)

    def set_end(self, offset: int) -> None:
        """Trust ``offset`` as the end of the data (clean restart): later segments go."""
        self._populator.settle()
        self.files.truncate(offset)
        self.flushed_offset = offset

    def close(self) -> None:
        self._populator.close()
        self.files.close()
