"""The broker's message store: pure storage, no networking (RocketMQ's store design).

One commit log holds every message; consume queues (per topic and queue) and a key index
are derived from it by the dispatcher; a checkpoint says how far all of it is on disk.

Modules (private layers under this public surface):

- ``message_store``  :class:`MessageStore`, the facade the broker calls
- ``settings``       :class:`StoreConfig`, :class:`FlushDiskType`, store paths
- ``model``          :class:`InnerMessage` in; put/get/query results and statuses out
- ``commitlog``      segments, the append path, raw reads
- ``reads``          a queue read: consume queue range -> zero-copy record views
- ``mapped_file``    mapped segment files and their queue
- ``consume_queue``  20-byte entries per (topic, queueId)
- ``index``          the key index files
- ``dispatch``       commit log records -> consume queues, index, arrival listeners
- ``flush``          group commit, async flush, consume queue/index/checkpoint flush
- ``checkpoint``     the checkpoint file
- ``recovery``       clean and crash recovery
- ``replica``        a slave's intake of its master's commit log
- ``records``        messages -> record bytes, consume queue and index entries (compiled
  when built: ``_records.pyx``)
- ``retention``      deleting old segments and what is derived from them
- ``disk_guard``     whether appends are taken: a full disk refuses them, never crashes
- ``errors``         :class:`StoreError` and subclasses

The store imports nothing from the broker's app or processors.
"""

from __future__ import annotations

from rocketkube.broker.store.errors import (
    ReplicaMismatchError,
    StoreCorruptedError,
    StoreError,
    StoreLockedError,
)
from rocketkube.broker.store.message_store import MessageStore
from rocketkube.broker.store.model import (
    AppendResult,
    ArrivalListener,
    DispatchHints,
    FlushTicket,
    GetResult,
    GetStatus,
    InnerMessage,
    PutResult,
    PutStatus,
    QueryResult,
    RecordFilter,
    TagFilter,
)
from rocketkube.broker.store.recovery import RecoveryReport
from rocketkube.broker.store.settings import FlushDiskType, StoreConfig

__all__ = [
    "AppendResult",
    "ArrivalListener",
    "DispatchHints",
    "FlushDiskType",
    "FlushTicket",
    "GetResult",
    "GetStatus",
    "InnerMessage",
    "MessageStore",
    "PutResult",
    "PutStatus",
    "QueryResult",
    "RecordFilter",
    "RecoveryReport",
    "ReplicaMismatchError",
    "StoreConfig",
    "StoreCorruptedError",
    "StoreError",
    "StoreLockedError",
    "TagFilter",
]
