"""Store settings and the names of every file under the store root.

:class:`StoreConfig` is the frozen set of knobs (Java ``MessageStoreConfig``); each field's
doc names the RocketMQ property it mirrors. :class:`StorePaths` derives every path from
the root, so no other module spells a file name::

    <storePathRootDir>/
        commitlog/<20-digit start offset>
        consumequeue/<topic>/<queueId>/<20-digit start byte>
        index/<yyyyMMddHHmmssSSS>
        checkpoint     abort     lock     config/
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "CQ_ENTRY_SIZE",
    "FlushDiskType",
    "StoreConfig",
    "StorePaths",
    "file_name",
]

CQ_ENTRY_SIZE: Final = 20
"""Bytes of one consume queue entry."""

_DEFAULT_DELAY_LEVELS: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class FlushDiskType(enum.StrEnum):
    """When an append counts as stored (``flushDiskType``)."""

    ASYNC_FLUSH = "ASYNC_FLUSH"
    """Flushed by a background task every ``flushIntervalCommitLog`` ms."""
    SYNC_FLUSH = "SYNC_FLUSH"
    """The sender waits for the group-commit flush that covers its record."""


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Settings of one message store. Durations are ms unless the name says otherwise."""

    store_path_root_dir: Path
    """``storePathRootDir``: the root of all store files."""
    store_host: str = "127.0.0.1:10911"
    """``brokerIP1:listenPort``: STOREHOST of every record, and the offset msgId's host."""
    mapped_file_size_commit_log: int = 1 << 30
    """``mappedFileSizeCommitLog``: bytes per commit log segment (1 GiB)."""
    mapped_file_size_consume_queue: int = 300_000 * CQ_ENTRY_SIZE
    """``mappedFileSizeConsumeQueue``: bytes per consume queue file (300000 entries)."""
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    """``flushDiskType``."""
    sync_flush_timeout: int = 5000
    """``syncFlushTimeout``: how long a SYNC_FLUSH send waits before FLUSH_DISK_TIMEOUT."""
    flush_interval_commit_log: int = 500
    """``flushIntervalCommitLog``: the ASYNC_FLUSH period."""
    flush_interval_consume_queue: int = 1000
    """``flushIntervalConsumeQueue``: the period of the consume queue and checkpoint
    flush."""
    flush_interval_index: int = 10_000
    """rocketkube's own: the period of the index flush (at a consume queue flush). Each
    writes the active file's whole 20 MB slot table once keys are spread over it, so it
    runs less often; after a crash the scan starts where the index was last flushed.
    (Java flushes an index file only when it is full.)"""
    file_reserved_time: int = 72
    """``fileReservedTime``: hours a commit log segment is kept."""
    delete_when: str = "04"
    """``deleteWhen``: hours of the day (``;``-separated) when expired segments go."""
    disk_max_used_space_ratio: int = 75
    """``diskMaxUsedSpaceRatio``: percent of disk use above which expired segments go at
    once, whatever the hour. It refuses no append (RocketMQ's meaning): that is
    ``diskSpaceWarningLevelRatio``."""
    disk_space_clean_forcibly_ratio: float = 0.85
    """``diskSpaceCleanForciblyRatio`` as a fraction: above it the oldest segments go
    even unexpired."""
    disk_space_warning_level_ratio: float = 0.90
    """``diskSpaceWarningLevelRatio`` as a fraction: at or above it appends are refused
    (SERVICE_NOT_AVAILABLE), checked before appends, not only by retention
    (:mod:`.disk_guard`)."""
    clean_resource_interval: int = 10_000
    """``cleanResourceInterval``: how often retention and the disk check run."""
    delete_files_batch_max: int = 10
    """``deleteFileBatchMax``: segments deleted per retention round at most."""
    max_message_size: int = 4 * 1024 * 1024
    """``maxMessageSize``: the largest body; larger gives MESSAGE_ILLEGAL."""
    max_hash_slot_num: int = 5_000_000
    """``maxHashSlotNum``: hash slots per index file."""
    max_index_num: int = 20_000_000
    """``maxIndexNum``: entries per index file."""
    message_index_enable: bool = True
    """``messageIndexEnable``: build the key index."""
    max_msgs_num_batch: int = 64
    """``maxMsgsNumBatch``: most messages one key query returns."""
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    """``maxTransferBytesOnMessageInMemory``: pull result byte cap (first message exempt)."""
    max_transfer_count_on_message_in_memory: int = 32
    """``maxTransferCountOnMessageInMemory``: pull result message cap."""
    access_message_in_memory_max_ratio: int = 40
    """``accessMessageInMemoryMaxRatio``: percent of the memory (:mod:`.memory`). A pull
    reading further than that behind the log's end is "on disk": its result suggests
    reading from a slave (``slaveReadEnable``)."""
    message_delay_level: str = _DEFAULT_DELAY_LEVELS
    """``messageDelayLevel``: the schedule topic's consume queue tags code is the delivery
    time, store time plus the level's delay."""

    def delay_levels_ms(self) -> tuple[int, ...]:
        """The delay of each level in ms; index 0 is level 1."""
        levels: list[int] = []
        for token in self.message_delay_level.split():
            levels.append(int(token[:-1]) * _UNIT_MS[token[-1]])
        return tuple(levels)

    def delete_hours(self) -> frozenset[int]:
        """The hours of ``deleteWhen``."""
        return frozenset(int(h) for h in self.delete_when.split(";") if h.strip())


def file_name(offset: int) -> str:
    """A segment file name: the start offset as 20 zero-padded decimal digits."""
    return f"{offset:020d}"


@dataclass(frozen=True, slots=True)
class StorePaths:
    """Every path under a store root."""

    root: Path

    @property
    def commit_log(self) -> Path:
        return self.root / "commitlog"

    @property
    def consume_queue(self) -> Path:
        return self.root / "consumequeue"

    def queue_dir(self, topic: str, queue_id: int) -> Path:
        return self.root / "consumequeue" / topic / str(queue_id)

    @property
    def index(self) -> Path:
        return self.root / "index"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def abort(self) -> Path:
        return self.root / "abort"

    @property
    def lock(self) -> Path:
        return self.root / "lock"

    @property
    def config(self) -> Path:
        return self.root / "config"
