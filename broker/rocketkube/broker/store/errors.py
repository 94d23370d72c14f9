"""The store's exceptions: failures to open a store, never per-message outcomes.

    RocketKubeError                (rocketkube.common.errors)
    └── StoreError                 the store cannot be opened or used as asked
        ├── StoreLockedError       another process holds the store's ``lock`` file
        ├── StoreCorruptedError    files that recovery cannot make sense of
        └── ReplicaMismatchError   a master's bytes do not continue this (slave) log

Appends and reads report their outcome as a status in their result (``PutStatus``,
``GetStatus``), as RocketMQ's store does; only these conditions raise.
"""

from __future__ import annotations

from rocketkube.common import errors

__all__ = ["ReplicaMismatchError", "StoreCorruptedError", "StoreError", "StoreLockedError"]


class StoreError(errors.RocketKubeError):
    """The message store cannot do what was asked."""


class StoreLockedError(StoreError):
    """The store directory is locked by another process (or another store object)."""


class StoreCorruptedError(StoreError):
    """A store file has an impossible name or size."""


class ReplicaMismatchError(StoreError):
    """Replicated bytes that do not start at this commit log's end, or cross a segment."""
