"""Retention: deleting old commit log segments and the derived entries below them.

Each round (every ``cleanResourceInterval`` ms, or on demand, or early when the disk
guard saw the disk above ``diskMaxUsedSpaceRatio`` before an append)::

    ratio = disk use of the store root, measured by the disk guard (:mod:`.disk_guard`,
            which also refuses appends above diskSpaceWarningLevelRatio)
    if the hour is in deleteWhen ("04")  or  ratio > diskMaxUsedSpaceRatio (75 %)
       or asked manually:
        delete segments, oldest first, never the active one, at most deleteFileBatchMax:
            expired: the segment was closed more than fileReservedTime (72 h) ago
            or, when ratio > diskSpaceCleanForciblyRatio (0.85), regardless of age
    then drop consume queue files and index files that only point below the new oldest
    commit log offset, and move each queue's min offset up to it

A segment's closing time is the store time of the first record of the next segment
(read with the injectable clock's timeline, so tests need no sleeping); the file's mtime
is the fallback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from rocketkube.broker.store import commitlog, consume_queue, disk_guard, index, settings

__all__ = ["Retention"]

_log = logging.getLogger(__name__)


class Retention:
    """Runs retention rounds."""

    def __init__(
        self,
        log: commitlog.CommitLog,
        queues: consume_queue.ConsumeQueueTable,
        index_service: index.IndexService | None,
        config: settings.StoreConfig,
        clock: Callable[[], int],
        guard: disk_guard.DiskGuard,
    ) -> None:
        self._log = log
        self._queues = queues
        self._index = index_service
        self._config = config
        self._clock = clock
        self._guard = guard
        self._hours = config.delete_hours()

    def _closed_at(self, position: int) -> int:
        """When segment ``position`` (not the last) stopped receiving records."""
        files = self._log.files.files
        following = files[position + 1]
        stamp = self._log.store_timestamp_at(following.start)
        if stamp > 0:
            return stamp
        try:
            return int(files[position].path.stat().st_mtime * 1000)
        except OSError:
            return 0

    def run_once(self, *, manual: bool = False) -> int:
        """One retention round; returns the number of commit log segments deleted."""
        config = self._config
        now = self._clock()
        ratio = self._guard.retention_round()
        hour = time.localtime(now / 1000).tm_hour
        over = ratio > config.disk_max_used_space_ratio / 100
        forcibly = ratio > config.disk_space_clean_forcibly_ratio
        if not (manual or over or hour in self._hours):
            return 0
        reserved = config.file_reserved_time * 3_600_000
        files = self._log.files.files
        count = 0
        while count < min(len(files) - 1, config.delete_files_batch_max):
            if not forcibly and self._closed_at(count) + reserved > now:
                break
            count += 1
        if count:
            gone = self._log.files.delete_first(count)
            _log.info("retention deleted %d commit log segments: %s", count,
                      ", ".join(m.path.name for m in gone))  # fmt: skip
        self.clean_derived()
        return count

    def clean_derived(self) -> None:
        """Drop consume queue and index files pointing only below the oldest log offset."""
        oldest = self._log.min_offset
        for queue in self._queues:
            queue.delete_expired(oldest)
        if self._index is not None:
            self._index.delete_below(oldest)
