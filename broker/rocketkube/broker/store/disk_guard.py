"""The disk guard: whether the store takes appends, decided before each one.

Two conditions refuse appends (``SERVICE_NOT_AVAILABLE``, :attr:`DiskGuard.refusal` as the
reason); reads, pulls and everything else go on::

    over the warning level   disk use >= diskSpaceWarningLevelRatio (90 %); disk use is
                             measured before an append once CHECK_MS of store time passed
                             or CHECK_BYTES were appended since the last measurement, and
                             at every retention round
    out of blocks            a store file could not get its blocks (ENOSPC, EDQUOT): the
                             append that needed them was refused before anything was
                             written, and so is every later one until a measurement finds
                             less disk in use than at the failure (space was freed) or a
                             retention round comes; the next append then tries again, and
                             the first one that goes through ends the condition

Appends are taken again without a restart once neither holds. Entering and leaving the
refused state is logged once each, never per refused append.

``diskMaxUsedSpaceRatio`` (75 %) refuses nothing, as in RocketMQ: above it retention
deletes expired segments whatever the hour (and above ``diskSpaceCleanForciblyRatio``,
85 %, unexpired ones too). A measurement before an append that finds the disk has passed
one of these asks for a retention round now rather than at the next timer tick.
"""

from __future__ import annotations

import errno
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rocketkube.broker.store import settings

__all__ = ["CHECK_BYTES", "CHECK_MS", "DiskGuard", "DiskUsage", "disk_usage_ratio"]

_log = logging.getLogger(__name__)

CHECK_MS: Final = 100
"""Store time (ms) after which an append measures the disk use again."""
CHECK_BYTES: Final = 1 << 20
"""Commit log bytes appended after which an append measures the disk use again."""

_NO_SPACE: Final = (errno.ENOSPC, errno.EDQUOT)

DiskUsage = Callable[[Path], float]
"""The used fraction (0..1) of the disk holding a path."""


def disk_usage_ratio(path: Path) -> float:
    """``(total - free) / total`` of the file system holding ``path``, as Java computes it."""
    usage = shutil.disk_usage(path)
    return (usage.total - usage.free) / usage.total if usage.total else 0.0


class DiskGuard:
    """Tracks the disk use of the store root and whether appends are taken."""

    __slots__ = ("_cleanup", "_config", "_disk_usage", "_due_ms", "_due_offset", "_failure",
                 "_failure_ratio", "_over", "_retry", "ratio", "refusal")  # fmt: skip

    def __init__(
        self, config: settings.StoreConfig, disk_usage: DiskUsage, cleanup: Callable[[], None]
    ) -> None:
        """``cleanup`` asks for a retention round now."""
        self._config = config
        self._disk_usage = disk_usage
        self._cleanup = cleanup
        self.ratio = 0.0
        """The last measured disk use (0..1)."""
        self.refusal: str | None = None
        """Why appends are refused; None while they are taken."""
        self._over = False
        self._failure: str | None = None
        self._failure_ratio = 0.0
        self._retry = False
        self._due_ms = 0
        self._due_offset = 0

    @property
    def full(self) -> bool:
        """Whether appends are refused."""
        return self.refusal is not None

    def admit(self, now: int, log_end: int) -> str | None:
        """Before an append at store time ``now``, the commit log ending at ``log_end``:
        None when it may go ahead, else why not (measures the disk when due)."""
        if now >= self._due_ms or log_end >= self._due_offset:
            self._due_ms = now + CHECK_MS
            self._due_offset = log_end + CHECK_BYTES
            before = self.ratio
            after = self.measure()
            config = self._config
            for level in (config.disk_max_used_space_ratio / 100,
                          config.disk_space_clean_forcibly_ratio):  # fmt: skip
                if before <= level < after:
                    self._cleanup()
                    break
        if self._retry and not self._over:
            return None
        return self.refusal

    def measure(self) -> float:
        """Measure the disk use now and update the state; return the ratio."""
        try:
            ratio = self._disk_usage(self._config.store_path_root_dir)
        except OSError as exc:
            _log.error("cannot measure disk use: %s", exc)
            return self.ratio
        self.ratio = ratio
        self._over = ratio >= self._config.disk_space_warning_level_ratio
        if self._failure is not None and ratio < self._failure_ratio:
            self._retry = True
        self._update()
        return ratio

    def retention_round(self) -> float:
        """The retention timer's measurement: also lets the next append retry blocks."""
        self._retry = self._failure is not None
        return self.measure()

    def failed(self, exc: OSError | str) -> bool:
        """Store files could not be created or allocated (``exc``, or its text). For want
        of space (ENOSPC, EDQUOT) appends are refused from now on (:attr:`refusal` says
        why) and True is returned; any other error concerns only the append that met it."""
        if isinstance(exc, OSError):
            no_space = exc.errno in _NO_SPACE
        else:
            no_space = any(f"[Errno {code}]" in exc for code in _NO_SPACE)
        if no_space:
            self._failure = f"disk full, store files cannot be allocated: {exc}"
            self._failure_ratio = -1.0  # no retry for the measurement of the failure
            self._failure_ratio = self.measure()
            self._retry = False
        return no_space

    def succeeded(self) -> None:
        """An append went through: no block failure holds any longer."""
        if self._failure is not None:
            self._failure = None
            self._retry = False
            self._update()

    def _update(self) -> None:
        if self._over:
            warning = self._config.disk_space_warning_level_ratio
            refusal: str | None = (
                f"disk full: {self.ratio:.1%} used, diskSpaceWarningLevelRatio is {warning:.0%}"
            )
        else:
            refusal = self._failure
        if (refusal is None) != (self.refusal is None):
            if refusal is None:
                _log.warning("store writes accepted again: disk use %.1f%%", self.ratio * 100)
            else:
                _log.error("store writes refused, reads go on: %s", refusal)
        self.refusal = refusal
