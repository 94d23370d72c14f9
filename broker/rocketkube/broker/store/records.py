"""Store records: messages in; commit log records, consume queue entries and index
entries out. The byte work of the append path, in one module with a compiled sibling.

Seven functions, each over plain data (the store's own ``InnerMessage`` and
``AppendResult``, bytes, ints, tuples, dicts and lists) and each writing only into the
buffers it is given:

- :func:`records_size`: the size of a run's records when every message is plainly
  storable, else -1 (``CommitLog`` then says what is wrong);
- :func:`encode_records`: a run's records written into a segment's mapping (the layout
  is drawn in ``rocketkube.common.message.record``), its queue offsets taken;
- :func:`queue_keys`: the consume queues a run gets entries in;
- :func:`queue_entries`: a just-appended run's consume queue entries (20 bytes each,
  ``consume_queue.ENTRY``), by queue, and its index entries;
- :func:`put_index_entries`: index entries written into an index file's hash slots and
  entries (the layout is drawn in ``index``);
- :func:`prepare_plain` and :func:`prepare_run`: a plain send's store message (and a run's),
  laid out from the request's header values, properties and body; None for any other send,
  which the send path decides in Python. What a send may do is decided by the caller, once
  per topic (:class:`PlainTopic`) and once per broker (:class:`PlainRules`).

What a record may hold and what the tags code or the index keys of a message are is
decided by the callers (``CommitLog``, ``Dispatcher``, ``IndexFile``); the functions here
take those decisions as data (topic bytes, caches) or as callbacks for anything unusual.
``_records.pyx`` is the same API compiled; :func:`implementation` picks it when it was
built and ``ROCKETKUBE_NO_EXTENSIONS`` is not set, and ``tests/broker/store/
test_records_compiled.py`` holds the two to the same bytes and results.
"""

from __future__ import annotations

import struct
import sys
import typing
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeAlias

from rocketkube.broker.store import consume_queue, model
from rocketkube.broker.store.plain_sends import (
    Check,
    PlainRules,
    PlainTopic,
    PreparedSend,
    prepare_plain,
    prepare_run,
)
from rocketkube.common import compiled
from rocketkube.common.message import record, sysflag
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "INDEX_ENTRY",
    "INDEX_PAGE_SHIFT",
    "INDEX_SLOT",
    "Check",
    "Implementation",
    "IndexKeys",
    "Keyed",
    "PlainRules",
    "PlainTopic",
    "PreparedSend",
    "QueueRun",
    "TagsCode",
    "compiled_module",
    "encode_records",
    "implementation",
    "prepare_plain",
    "prepare_run",
    "put_index_entries",
    "queue_entries",
    "queue_keys",
    "records_size",
]

INDEX_SLOT: Final = struct.Struct(">i")
"""An index hash slot: the number of the newest entry with that hash."""
INDEX_ENTRY: Final = struct.Struct(">iqii")
"""An index entry: keyHash, phyOffset, timeDiff, prevIndex."""
INDEX_PAGE_SHIFT: Final = 12
"""Changed hash slots are tracked by 4 KiB page (``slot position >> 12``)."""

_PREPARED: Final = sysflag.TRANSACTION_PREPARED_TYPE
_ROLLBACK: Final = sysflag.TRANSACTION_ROLLBACK_TYPE
_TX_MASK: Final = sysflag.TRANSACTION_MASK
_INT_MAX: Final = 0x7FFFFFFF
_INT_MIN, _LONG_MIN, _LONG_MAX = -(1 << 31), -(1 << 63), (1 << 63) - 1

QueueRun: TypeAlias = tuple[int, bytearray, list[int]]
"""A queue's part of a run: its first queue offset, its entries back to back, and their
tags codes (for the arrival listeners)."""
Keyed: TypeAlias = list[tuple[int, int, int]]
"""Index entries: ``(keyHash, phyOffset, storeTimestamp)``."""
TagsCode: TypeAlias = Callable[[str, bytes, int, "model.DispatchHints | None"], int]
IndexKeys: TypeAlias = Callable[[str, bytes, int, int, Keyed, "model.DispatchHints | None"], None]


class Implementation(Protocol):
    """This module's functions: what :func:`implementation` returns."""

    def records_size(
        self, messages: Sequence[model.InnerMessage], topics: dict[str, bytes], fixed: int,
        max_body: int,
    ) -> int: ...  # fmt: skip

    def encode_records(
        self, messages: Sequence[model.InnerMessage], buffer: record.WritableBuffer, pos: int,
        base: int, *, topics: dict[str, bytes], queue_offsets: dict[tuple[str, int], int],
        store_host: bytes, now: int,
    ) -> tuple[int, list[model.AppendResult]]: ...  # fmt: skip

    def queue_keys(self, messages: Sequence[model.InnerMessage]) -> list[tuple[str, int]]: ...

    def queue_entries(
        self, messages: Sequence[model.InnerMessage], appended: Sequence[model.AppendResult],
        keyed: Keyed | None, *, tag_codes: dict[str, int], seeds: dict[str, int],
        timed_topic: str, tags_code: TagsCode, index_keys: IndexKeys,
    ) -> dict[tuple[str, int], QueueRun]: ...  # fmt: skip

    def put_index_entries(
        self, entries: Keyed, start: int, *, slots: record.WritableBuffer, slot_base: int,
        slot_num: int, file: record.WritableBuffer, entries_at: int, count: int, limit: int,
        begin_ts: int, dirty: set[int] | None,
    ) -> tuple[int, int, int]: ...  # fmt: skip

    def prepare_plain(
        self, request: RemotingCommand, v2: bool, topics: dict[str, PlainTopic],
        configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes,
    ) -> PreparedSend | None: ...  # fmt: skip

    def prepare_run(
        self, requests: Sequence[RemotingCommand], check: Check, topics: dict[str, PlainTopic],
        configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes,
        replies: list[Any], ready: list[tuple[int, PreparedSend]],
        messages: list[model.InnerMessage],
    ) -> None: ...  # fmt: skip


def compiled_module() -> Implementation | None:
    """The compiled module (``_records.pyx``), or None: not built, or turned off."""
    found = compiled.load("rocketkube.broker.store._records", "put_index_entries")
    if found is None:
        return None
    return typing.cast("Implementation", sys.modules["rocketkube.broker.store._records"])


def implementation() -> Implementation:
    """The compiled module when there is one, else this one."""
    return compiled_module() or typing.cast("Implementation", sys.modules[__name__])


# -- commit log records -------------------------------------------------------------------


def _storable(message: model.InnerMessage) -> bool:
    """Whether a record's fixed fields can hold the message's integers."""
    return (
        all(type(value) is int and _INT_MIN <= value <= _INT_MAX for value in (
            message.queue_id, message.flag, message.sys_flag, message.reconsume_times))
        and all(type(value) is int and _LONG_MIN <= value <= _LONG_MAX for value in (
            message.born_timestamp, message.prepared_transaction_offset))
    )  # fmt: skip


def records_size(
    messages: Sequence[model.InnerMessage], topics: dict[str, bytes], fixed: int, max_body: int
) -> int:
    """The total size of the messages' records, each ``fixed`` bytes plus its born host,
    body, topic and properties; -1 unless every message is an ``InnerMessage`` whose topic's
    UTF-8 is in ``topics``, whose body is at most ``max_body`` bytes and properties at most
    32767, and whose integers fit their record fields."""
    total = 0
    for message in messages:
        if type(message) is not model.InnerMessage or not _storable(message):
            return -1
        topic = topics.get(message.topic)
        body_len = len(message.body)
        props_len = len(message.properties)
        if topic is None or body_len > max_body or props_len > record.MAX_PROPERTIES_SIZE:
            return -1
        total += fixed + len(message.born_host) + body_len + len(topic) + props_len
    return total


def encode_records(
    messages: Sequence[model.InnerMessage],
    buffer: record.WritableBuffer,
    pos: int,
    base: int,
    *,
    topics: dict[str, bytes],
    queue_offsets: dict[tuple[str, int], int],
    store_host: bytes,
    now: int,
) -> tuple[int, list[model.AppendResult]]:
    """Write the messages as records from ``buffer[pos]`` (log offset ``base + pos``),
    stamped with store time ``now``: the end position and each one's result. ``topics``
    holds each topic's UTF-8; each ``(topic, queueId)`` gets and advances its next queue
    offset in ``queue_offsets`` (PREPARED and ROLLBACK transaction parts get 0 and do not
    advance it).

    All or nothing for ``queue_offsets``: a message that cannot be encoded raises
    (``struct.error``, ``OverflowError``, ...) with the table as it was before the run;
    the bytes already written are the caller's to discard."""
    host_hex = store_host.hex().upper()
    appended: list[model.AppendResult] = []
    taken: dict[tuple[str, int], int] = {}
    """Next queue offsets of the run, into ``queue_offsets`` once every record is written."""
    for message in messages:
        sys_flag = message.sys_flag
        tx = sys_flag & _TX_MASK
        if tx in (_PREPARED, _ROLLBACK):
            queue_offset = 0
        else:
            key = (message.topic, message.queue_id)
            queue_offset = taken.get(key, -1)
            if queue_offset < 0:
                queue_offset = queue_offsets.get(key, 0)
            taken[key] = queue_offset + 1
        phys = base + pos
        size = record.encode_into(
            buffer,
            pos,
            topic=topics[message.topic],
            queue_id=message.queue_id,
            flag=message.flag,
            queue_offset=queue_offset,
            physical_offset=phys,
            sys_flag=sys_flag,
            born_timestamp=message.born_timestamp,
            born_host=message.born_host,
            store_timestamp=now,
            store_host=store_host,
            reconsume_times=message.reconsume_times,
            prepared_transaction_offset=message.prepared_transaction_offset,
            body=message.body,
            properties=message.properties,
        )
        appended.append(model.AppendResult(phys, size, queue_offset, f"{host_hex}{phys:016X}", now))
        pos += size
    queue_offsets.update(taken)
    return pos, appended


# -- consume queue and index entries ------------------------------------------------------


def queue_keys(messages: Sequence[model.InnerMessage]) -> list[tuple[str, int]]:
    """The ``(topic, queueId)`` of each consume queue the messages get an entry in (not
    PREPARED or ROLLBACK transaction parts), once each, in order of first appearance."""
    keys: dict[tuple[str, int], None] = {}
    for message in messages:
        tx = message.sys_flag & _TX_MASK
        if tx != _PREPARED and tx != _ROLLBACK:
            keys[(message.topic, message.queue_id)] = None
    return list(keys)


def queue_entries(
    messages: Sequence[model.InnerMessage],
    appended: Sequence[model.AppendResult],
    keyed: Keyed | None,
    *,
    tag_codes: dict[str, int],
    seeds: dict[str, int],
    timed_topic: str,
    tags_code: TagsCode,
    index_keys: IndexKeys,
) -> dict[tuple[str, int], QueueRun]:
    """The consume queue entries of a just-appended run (``appended`` its results), by
    queue in order of first appearance; its index entries appended to ``keyed`` (None: no
    index). A queue's entries in a run follow each other (as :func:`encode_records` gives
    their queue offsets); ValueError otherwise.

    ``tags_code(topic, properties, store timestamp, hints)`` gives a message's tags code
    and ``index_keys(topic, properties, phys, store timestamp, keyed, hints)`` appends its
    index entries. The compiled module reads them from the caller's caches instead where
    it can: ``tag_codes`` (tags -> code) for a message with hints on a topic other than
    ``timed_topic``, ``seeds`` (topic -> running crc32 of ``topic#``) for the index keys
    of a message with hints (UNIQ_KEY, then each KEYS token)."""
    runs: dict[tuple[str, int], QueueRun] = {}
    pack = consume_queue.ENTRY.pack
    for message, result in zip(messages, appended, strict=True):
        topic = message.topic
        tx = message.sys_flag & _TX_MASK
        phys, size, queue_offset, _msg_id, store_ts = result
        if tx != _PREPARED and tx != _ROLLBACK:
            key = (topic, message.queue_id)
            run = runs.get(key)
            if run is None:
                run = runs[key] = (queue_offset, bytearray(), [])
            elif run[0] + len(run[2]) != queue_offset:
                raise ValueError(f"{key}: queue offset {queue_offset} does not follow the run")
            code = tags_code(topic, message.properties, store_ts, message.hints)
            run[1].extend(pack(phys, size, code))
            run[2].append(code)
        if keyed is not None and tx != _ROLLBACK:
            index_keys(topic, message.properties, phys, store_ts, keyed, message.hints)
    return runs


def put_index_entries(
    entries: Keyed,
    start: int,
    *,
    slots: record.WritableBuffer,
    slot_base: int,
    slot_num: int,
    file: record.WritableBuffer,
    entries_at: int,
    count: int,
    limit: int,
    begin_ts: int,
    dirty: set[int] | None,
) -> tuple[int, int, int]:
    """Write ``(keyHash, phyOffset, storeTimestamp)`` entries from ``entries[start]`` on
    into an index file, numbering them from ``count`` until the number ``limit``: each
    entry at ``file[entries_at + 20 x number]``, chained to the one its slot held, its slot
    (``slots[slot_base + 4 x (keyHash % slot_num)]``) set to it, the slot's page added to
    ``dirty`` (None: not tracked). Times are kept as seconds since ``begin_ts``. Returns
    the position of the first entry not written, the next number and how many slots were
    empty before."""
    used = 0
    at = start
    stop = len(entries)
    unpack_slot = INDEX_SLOT.unpack_from
    pack_slot = INDEX_SLOT.pack_into
    pack_entry = INDEX_ENTRY.pack_into
    while at < stop and count < limit:
        key_hash, phys, store_ts = entries[at]
        slot_pos = (key_hash % slot_num) * 4
        (head,) = unpack_slot(slots, slot_base + slot_pos)
        if head <= 0 or head >= count:
            head = 0
            used += 1
        diff = (store_ts - begin_ts) // 1000 if begin_ts > 0 else 0
        diff = 0 if diff < 0 else _INT_MAX if diff > _INT_MAX else diff
        pack_entry(file, entries_at + count * INDEX_ENTRY.size, key_hash, phys, diff, head)
        pack_slot(slots, slot_base + slot_pos, count)
        if dirty is not None:
            dirty.add(slot_pos >> INDEX_PAGE_SHIFT)
        count += 1
        at += 1
    return at, count, used
