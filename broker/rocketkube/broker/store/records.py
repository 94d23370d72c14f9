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

import re
import struct
import sys
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, Protocol, TypeAlias

from rocketkube.broker.store import consume_queue, model
from rocketkube.common import compiled
from rocketkube.common.message import record, sysflag
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "INDEX_ENTRY",
    "INDEX_PAGE_SHIFT",
    "INDEX_SLOT",
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


class PlainTopic(NamedTuple):
    """A topic that a plain send may go to with no check but its queue: writable, not a
    retry topic. Trusted while the topic's config is ``config``."""

    config: TopicConfig
    queue_limit: int
    """Queue ids below it are valid."""
    sys_flag: int
    """Bits added to every message's sys flag (MULTI_TAGS)."""


class PlainRules(NamedTuple):
    """What a plain send's preparation is told of the broker, once."""

    forced: tuple[bytes, ...]
    """Property names whose sends the caller decides (DELAY, TRAN_MSG, CLUSTER)."""
    dropped: bytes
    """The property not stored (WAIT): its value says whether to wait for the flush."""
    cluster_entry: bytes
    """``CLUSTER\x01<cluster>`` in UTF-8, appended to every stored message's properties."""
    v1_code: int
    """The request code whose header has the long (V1) field names; the others' are a..m."""


class PreparedSend(NamedTuple):
    """A checked send, its store messages built, waiting for ``put_messages``."""

    messages: Sequence[model.InnerMessage]
    topic: str
    """The topic its stats are counted under."""
    queue_id: int
    """The queue the response names."""
    body_bytes: int
    wait_flush: bool
    started: float


Check: TypeAlias = Callable[[RemotingCommand, bool], "PreparedSend | object"]
"""The caller's preparation of a send that is not plain: a :class:`PreparedSend` or its
refusal (any other object, kept as the reply)."""


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


# -- a plain send's store message ---------------------------------------------------------

_V1_KEYS: Final = (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
    "batch",
)  # fmt: skip
_FIELDS: Final = len(_V1_KEYS)
_MAX_ENTRIES: Final = 64
_PLAIN_INT: Final = re.compile(r"-?[0-9]{1,18}")


def _plain_int(text: object) -> int | None:
    """The value of ``text`` when it is a str of ``-?[0-9]{1,18}``, else None."""
    if type(text) is not str or _PLAIN_INT.fullmatch(text) is None:
        return None
    return int(text)


def _int32(value: int | None) -> bool:
    return value is not None and _INT_MIN <= value <= _INT_MAX


def _header_values(request: RemotingCommand, v2: bool) -> list[object] | None:
    """The 13 send header values by position (None where absent), or None when the
    header is not one this preparation reads."""
    found: list[object] = [None] * _FIELDS
    values = request.header_values if v2 else None
    if values is not None:
        names = request.header_names
        if type(names) is not str or type(values) is not list or len(names) != len(values):
            return None
        for name, value in zip(names, values, strict=True):
            letter = ord(name) - 97
            if 0 <= letter < _FIELDS:
                found[letter] = value
        return found
    ext = request.ext_fields
    if type(ext) is not dict:
        return None
    if not v2:
        return [ext.get(key) for key in _V1_KEYS]
    for name, value in ext.items():
        if type(name) is not str:
            return None
        if len(name) == 1 and 0 <= ord(name) - 97 < _FIELDS:
            found[ord(name) - 97] = value
    return found


def _properties(
    props: str, rules: PlainRules
) -> tuple[bytes, str | None, str | None, str | None, bool] | None:
    """A plain send's stored properties (as they came but the dropped one, then the CLUSTER
    entry), its TAGS, KEYS and UNIQ_KEY and whether it waits for the flush; None when a
    property leaves the send to the caller (a forced name, a repeated name, too many)."""
    kept: list[bytes] = []
    seen: set[bytes] = set()
    tags = keys = uniq = None
    wait_flush = True
    for entry in props.encode().split(b"\x02"):
        name, sep, value = entry.partition(b"\x01")
        if not (name and sep and value):
            continue  # no name, no separator or no value: not stored
        if len(seen) == _MAX_ENTRIES or name in seen or name in rules.forced:
            return None
        seen.add(name)
        if name == rules.dropped:
            wait_flush = value.lower() == b"true"
            continue
        if name == b"TAGS":
            tags = value.decode()
        elif name == b"KEYS":
            keys = value.decode()
        elif name == b"UNIQ_KEY":
            uniq = value.decode()
        kept.append(entry)
        kept.append(b"\x02")
    kept.append(rules.cluster_entry)
    return b"".join(kept), tags, keys, uniq, wait_flush


def _plain(
    request: RemotingCommand, v2: bool, topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes, started: float,
) -> PreparedSend | None:  # fmt: skip
    found = _header_values(request, v2)
    if found is None:
        return None
    topic = found[1]
    if type(topic) is not str or found[0] is None or found[2] is None:
        return None
    integers = [_plain_int(found[i]) for i in (3, 4, 5, 6, 7)]
    if None in integers:
        return None
    queue_nums, queue_id, sys_flag, born_timestamp, flag = typing.cast("list[int]", integers)
    if not (_int32(queue_nums) and _int32(queue_id) and _int32(sys_flag) and _int32(flag)):
        return None
    reconsume = 0
    if found[9]:
        parsed = _plain_int(found[9])
        if not _int32(parsed):
            return None
        reconsume = typing.cast("int", parsed)
    if found[11] and not _int32(_plain_int(found[11])):
        return None
    batch = found[12]
    if batch:
        if type(batch) is not str:
            return None
        if batch == "1" or batch.encode().lower() == b"true":
            return None
    entry = topics.get(topic)
    if not isinstance(entry, tuple) or len(entry) != 3:
        return None
    if entry[0] is not configs.get(topic) or not 0 <= queue_id < entry[1]:
        return None
    props = found[8]
    if props and type(props) is not str:
        return None
    layout = _properties(typing.cast("str", props) if props else "", rules)
    if layout is None:
        return None
    stored, tags, keys, uniq, wait_flush = layout
    body = request.body
    message = model.InnerMessage(
        topic, queue_id, body, stored, flag, sys_flag | entry[2], born_timestamp, born_host,
        reconsume, 0, model.DispatchHints(tags, keys, uniq),
    )  # fmt: skip
    return PreparedSend((message,), topic, queue_id, len(body), wait_flush, started)


def prepare_plain(
    request: RemotingCommand, v2: bool, topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes,
) -> PreparedSend | None:  # fmt: skip
    """The :class:`PreparedSend` of a plain send, or None: a send whose header integers are
    each a plain decimal within its Java type, not a batch, to a topic of ``topics`` whose
    config is still the one in ``configs``, to a queue below its limit, with no property
    of ``rules.forced`` and no property name twice. (The caller checked that the broker is
    a writable master.) ``rules.dropped`` is not stored; the CLUSTER entry is appended."""
    try:
        return _plain(request, v2, topics, configs, rules, born_host, time.perf_counter())
    except UnicodeEncodeError:
        return None  # lone surrogates: the caller decides


def prepare_run(
    requests: Sequence[RemotingCommand], check: Check, topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes,
    replies: list[Any], ready: list[tuple[int, PreparedSend]],
    messages: list[model.InnerMessage],
) -> None:  # fmt: skip
    """A run's preparation: each request prepared as by :func:`prepare_plain` or, when not
    plain, by ``check(request, v2)``; a prepared send's place and itself go to ``ready``,
    its messages to ``messages`` and None to ``replies``, a refusal to ``replies``. The
    plain sends of a run share one start time (the run came in at once)."""
    started = time.perf_counter()
    for request in requests:
        v2 = request.code != rules.v1_code
        try:
            prepared: object = _plain(request, v2, topics, configs, rules, born_host, started)
        except UnicodeEncodeError:
            prepared = None
        if prepared is None:
            prepared = check(request, v2)
        if isinstance(prepared, PreparedSend):
            ready.append((len(replies), prepared))
            messages.extend(prepared.messages)
            replies.append(None)
        else:
            replies.append(prepared)
