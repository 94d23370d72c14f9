"""The dispatcher: turns appended records into consume queue entries and index keys.

Called synchronously right after each append batch (so a pull sees a message as soon as
its send returns), by recovery for records re-read from the commit log, and on a slave for
records copied from its master. Per record:

- consume queue ``(topic, queueId)``: entry (offset, size, tags code) at its queue offset,
  unless the record is a PREPARED or ROLLBACK transaction part;
- index: ``topic#UNIQ_KEY`` and ``topic#k`` for each KEYS token, unless ROLLBACK.

After a batch, each arrival listener is called once per queue that grew, with the tags
codes of the new entries: the broker wakes long-polling pulls from there.

Before an append, :meth:`Dispatcher.reserve` makes ready what dispatching it will write
(queue files created, their blocks and the index's allocated), so that a full disk refuses
the append instead of failing its dispatch after the commit log has it.

The tags code is the Java hash of TAGS, except on ``SCHEDULE_TOPIC_XXXX`` where it is the
delivery time: store time plus the delay of the DELAY level. Properties are read straight
from the UTF-8 bytes (``name\\x01value\\x02``) without decoding the whole string, or, for
a message whose sender decoded them already, taken from its ``hints``.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from typing import Final, TypeAlias

from rocketkube.broker.store import consume_queue, index, model, records, settings
from rocketkube.common.message import hashing, record, sysflag

__all__ = ["SCHEDULE_TOPIC", "Dispatcher", "property_value"]

_log = logging.getLogger(__name__)

SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
_PREPARED: Final = sysflag.TRANSACTION_PREPARED_TYPE
_ROLLBACK: Final = sysflag.TRANSACTION_ROLLBACK_TYPE
_TX_MASK: Final = sysflag.TRANSACTION_MASK
_TAGS: Final = b"TAGS\x01"
_KEYS: Final = b"KEYS\x01"
_UNIQ_KEY: Final = b"UNIQ_KEY\x01"
_DELAY: Final = b"DELAY\x01"
_INT_MAX: Final = 0x7FFFFFFF
_KEYS_RESERVED: Final = 2
"""Index entries reserved per message (its UNIQ_KEY and one KEYS token)."""


def property_value(properties: bytes, name: bytes) -> bytes | None:
    """The value of property ``name`` (given as ``b"NAME\\x01"``); the last one wins.

    ``None`` when absent or empty, as Java's parser drops empty values.
    """
    end = len(properties)
    while True:
        at = properties.rfind(name, 0, end)
        if at < 0:
            return None
        if at == 0 or properties[at - 1] == 2:
            break
        end = at + len(name) - 1
    start = at + len(name)
    stop = properties.find(b"\x02", start)
    value = properties[start:] if stop < 0 else properties[start:stop]
    return value or None


Arrived: TypeAlias = dict[tuple[str, int], tuple[consume_queue.ConsumeQueue, list[int]]]
"""Each queue that grew in a batch, with the tags codes of its new entries."""


class Dispatcher:
    """Feeds the consume queues and the index; calls the arrival listeners."""

    def __init__(
        self,
        queues: consume_queue.ConsumeQueueTable,
        index_service: index.IndexService | None,
        config: settings.StoreConfig,
    ) -> None:
        self._queues = queues
        self._index = index_service
        self._delays = config.delay_levels_ms()
        self._tags: dict[str, int] = {}
        self._seeds: dict[str, int] = {}
        self.listeners: list[model.ArrivalListener] = []
        self._records = records.implementation()
        """Turns runs into consume queue and index entries (compiled when built)."""

    # -- codes -----------------------------------------------------------------------------

    def tags_code(
        self, topic: str, properties: bytes, store_ts: int, hints: model.DispatchHints | None = None
    ) -> int:
        """The consume queue tags code of a record."""
        if topic == SCHEDULE_TOPIC:
            level_text = property_value(properties, _DELAY)
            if level_text is not None:
                try:
                    level = min(int(level_text), len(self._delays))
                except ValueError:
                    level = 0
                if level > 0:
                    return store_ts + self._delays[level - 1]
        if hints is not None:
            tags = hints.tags
        else:
            found = property_value(properties, _TAGS)
            tags = None if found is None else found.decode("utf-8", "replace")
        if tags is None:
            return 0
        code = self._tags.get(tags)
        if code is None:
            if len(self._tags) > 65_536:
                self._tags.clear()
            code = self._tags[tags] = hashing.tags_code(tags)
        return code

    def _index_keys(self, topic: str, properties: bytes, phys: int, store_ts: int,
                    out: list[tuple[int, int, int]],
                    hints: model.DispatchHints | None = None) -> None:  # fmt: skip
        """Append the index entries of one record to ``out`` (added in bulk by the caller)."""
        uniq: bytes | None
        keys: bytes | None
        if hints is not None:
            uniq = None if hints.uniq_key is None else hints.uniq_key.encode()
            keys = None if hints.keys is None else hints.keys.encode()
        else:
            uniq = property_value(properties, _UNIQ_KEY)
            keys = property_value(properties, _KEYS) if _KEYS in properties else None
        if uniq is None and keys is None:
            return
        seed = self._seeds.get(topic)
        if seed is None:
            if len(self._seeds) > 100_000:
                self._seeds.clear()
            seed = self._seeds[topic] = index.topic_seed(topic)
        if uniq is not None:
            out.append((zlib.crc32(uniq, seed) & _INT_MAX, phys, store_ts))
        if keys is not None:
            for key in keys.split(b" "):
                if key:
                    out.append((zlib.crc32(key, seed) & _INT_MAX, phys, store_ts))

    # -- dispatch --------------------------------------------------------------------------

    def reserve(
        self, messages: Sequence[model.InnerMessage], queue_offsets: dict[tuple[str, int], int]
    ) -> None:
        """Before appending ``messages`` (their queue offsets to come from
        ``queue_offsets``): the entries their dispatch writes need no file created and no
        block allocated, so it cannot fail on a full disk. Raises ``OSError`` instead,
        having written nothing but blank entries."""
        count = len(messages)
        queues = self._queues
        for key in self.unready(messages, queue_offsets):
            queue = queues.find_or_create(*key)
            try:
                queue.reserve(queue_offsets.get(key, 0), count)
            except OSError:
                queues.drop_empty(*key)
                raise
        if self._index is not None:
            self._index.reserve(_KEYS_RESERVED * count)

    def unready(
        self, messages: Sequence[model.InnerMessage], queue_offsets: dict[tuple[str, int], int]
    ) -> list[tuple[str, int]]:
        """The ``(topic, queueId)`` of each consume queue the messages get an entry in
        (not PREPARED or ROLLBACK transaction parts) that is not ready for
        ``len(messages)`` entries from its next queue offset (``queue_offsets``; see
        :meth:`~.consume_queue.ConsumeQueue.ready`), in order of first appearance. Usually
        none: this runs before every append."""
        count = len(messages)
        queues = self._queues.queues
        out: list[tuple[str, int]] = []
        for key in self._records.queue_keys(messages):
            queue = queues.get(key)
            if queue is None or not queue.ready(queue_offsets.get(key, 0), count):
                out.append(key)
        return out

    def dispatch_appended(
        self, messages: Sequence[model.InnerMessage], results: Sequence[model.AppendResult]
    ) -> None:
        """Dispatch a just-appended batch, then notify the arrival listeners: its consume
        queue entries written queue by queue, its index entries added in one call (one
        header update per batch)."""
        keyed: list[tuple[int, int, int]] | None = [] if self._index is not None else None
        runs = self._records.queue_entries(
            messages, results, keyed, tag_codes=self._tags, seeds=self._seeds,
            timed_topic=SCHEDULE_TOPIC, tags_code=self.tags_code, index_keys=self._index_keys,
        )  # fmt: skip
        arrived: Arrived = {}
        queues = self._queues
        for key, (first, entries, codes) in runs.items():
            queue = queues.find_or_create(*key)
            queue.put_entries(first, entries)
            arrived[key] = (queue, codes)
        if keyed:
            assert self._index is not None
            self._index.add_many(keyed)
        if self.listeners and arrived:
            self._notify(arrived)

    def _notify(self, arrived: Arrived) -> None:
        for (topic, queue_id), (queue, codes) in arrived.items():
            max_offset = queue.max_offset
            for listener in self.listeners:
                try:
                    listener(topic, queue_id, max_offset, codes)
                except Exception:
                    _log.exception("arrival listener %r failed", listener)

    def dispatch_records(self, metas: Sequence[record.RecordMeta]) -> None:
        """Dispatch records read from the commit log rather than appended here: recovery
        (before any listener is added) and a slave's copy of its master's log."""
        keyed: list[tuple[int, int, int]] | None = [] if self._index is not None else None
        arrived: Arrived = {}
        for meta in metas:
            tx = meta.sys_flag & _TX_MASK
            if tx != _PREPARED and tx != _ROLLBACK:
                code = self.tags_code(meta.topic, meta.properties, meta.store_timestamp)
                key = (meta.topic, meta.queue_id)
                found = arrived.get(key)
                if found is None:
                    found = arrived[key] = (self._queues.find_or_create(*key), [])
                found[0].put(meta.queue_offset, meta.physical_offset, meta.size, code)
                found[1].append(code)
            if keyed is not None and tx != _ROLLBACK:
                self._index_keys(meta.topic, meta.properties, meta.physical_offset,
                                 meta.store_timestamp, keyed)  # fmt: skip
        if keyed:
            assert self._index is not None
            self._index.add_many(keyed)
        if self.listeners and arrived:
            self._notify(arrived)

    def finish_replay(self) -> None:
        """Publish index headers after a run of :meth:`dispatch_records`."""
        if self._index is not None:
            self._index.write_header()
