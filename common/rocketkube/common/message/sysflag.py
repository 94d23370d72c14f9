"""The two sysFlag bit sets: a message's (stored in the record) and a pull request's.

Message sysFlag (Java ``MessageSysFlag``)::

    bit  10 9 8 | 7     6      | 5        4       | 3 2         | 1          0
         compr. | INNER NEED_   | STOREHOST BORNHOST| transaction | MULTI_TAGS COMPRESSED
         type   | BATCH UNWRAP  | _V6       _V6     | type        |
    0x700 mask    0x80  0x40     0x20      0x10      0xC mask      0x2        0x1

Transaction type (bits 2-3): 0x0 NOT_TYPE, 0x4 PREPARED, 0x8 COMMIT, 0xC ROLLBACK. The same
numbers are END_TRANSACTION's ``commitOrRollback``. Compression type (bits 8-10): 0x100 LZ4,
0x200 ZSTD, 0x300 ZLIB, and 0 also means zlib (older clients set only COMPRESSED_FLAG).

Pull sysFlag (Java ``PullSysFlag``)::

    bit  4                  3                 2                  1            0
         LITE_PULL_MESSAGE  CLASS_FILTER      SUBSCRIPTION       SUSPEND      COMMIT_OFFSET

The constants are plain ints: they are tested on every message, where ``IntFlag``
arithmetic would cost an enum instance per operation.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "BORNHOST_V6_FLAG",
    "COMPRESSED_FLAG",
    "COMPRESSION_LZ4",
    "COMPRESSION_TYPE_MASK",
    "COMPRESSION_ZLIB",
    "COMPRESSION_ZSTD",
    "FLAG_CLASS_FILTER",
    "FLAG_COMMIT_OFFSET",
    "FLAG_LITE_PULL_MESSAGE",
    "FLAG_SUBSCRIPTION",
    "FLAG_SUSPEND",
    "INNER_BATCH_FLAG",
    "MULTI_TAGS_FLAG",
    "NEED_UNWRAP_FLAG",
    "STOREHOST_V6_FLAG",
    "TRANSACTION_COMMIT_TYPE",
    "TRANSACTION_MASK",
    "TRANSACTION_NOT_TYPE",
    "TRANSACTION_PREPARED_TYPE",
    "TRANSACTION_ROLLBACK_TYPE",
    "TransactionType",
    "build_pull_sys_flag",
    "clear_commit_offset_flag",
    "compression_type",
    "has_class_filter",
    "has_commit_offset",
    "has_subscription",
    "has_suspend",
    "is_born_host_v6",
    "is_compressed",
    "is_store_host_v6",
    "transaction_type",
    "with_transaction_type",
]

# -- message sysFlag ------------------------------------------------------------------------

COMPRESSED_FLAG: Final = 0x1
MULTI_TAGS_FLAG: Final = 0x2
TRANSACTION_NOT_TYPE: Final = 0x0
TRANSACTION_PREPARED_TYPE: Final = 0x4
TRANSACTION_COMMIT_TYPE: Final = 0x8
TRANSACTION_ROLLBACK_TYPE: Final = 0xC
TRANSACTION_MASK: Final = 0xC
BORNHOST_V6_FLAG: Final = 0x10
STOREHOST_V6_FLAG: Final = 0x20
NEED_UNWRAP_FLAG: Final = 0x40
INNER_BATCH_FLAG: Final = 0x80
COMPRESSION_TYPE_MASK: Final = 0x700
COMPRESSION_LZ4: Final = 0x100
COMPRESSION_ZSTD: Final = 0x200
COMPRESSION_ZLIB: Final = 0x300


class TransactionType(enum.IntEnum):
    """The transaction bits of a message sysFlag, also END_TRANSACTION's commitOrRollback."""

    NOT_TYPE = TRANSACTION_NOT_TYPE
    PREPARED = TRANSACTION_PREPARED_TYPE
    COMMIT = TRANSACTION_COMMIT_TYPE
    ROLLBACK = TRANSACTION_ROLLBACK_TYPE


_TRANSACTION_TYPES: Final = (
    TransactionType.NOT_TYPE,
    TransactionType.PREPARED,
    TransactionType.COMMIT,
    TransactionType.ROLLBACK,
)


def transaction_type(sys_flag: int) -> TransactionType:
    """The transaction type held in bits 2-3 of a message sysFlag."""
    return _TRANSACTION_TYPES[(sys_flag >> 2) & 0x3]


def with_transaction_type(sys_flag: int, kind: int) -> int:
    """``sys_flag`` with its transaction bits set to ``kind`` (Java ``resetTransactionValue``)."""
    return (sys_flag & ~TRANSACTION_MASK) | (kind & TRANSACTION_MASK)


def is_compressed(sys_flag: int) -> bool:
    """Whether the body is compressed (the broker never decompresses; consumers do)."""
    return bool(sys_flag & COMPRESSED_FLAG)


def compression_type(sys_flag: int) -> int:
    """The compression type bits; 0 (older clients) is returned as :data:`COMPRESSION_ZLIB`."""
    kind = sys_flag & COMPRESSION_TYPE_MASK
    return kind if kind else COMPRESSION_ZLIB


def is_born_host_v6(sys_flag: int) -> bool:
    """Whether the record's BORNHOST is 20 bytes (IPv6) rather than 8."""
    return bool(sys_flag & BORNHOST_V6_FLAG)


def is_store_host_v6(sys_flag: int) -> bool:
    """Whether the record's STOREHOST is 20 bytes (IPv6) rather than 8."""
    return bool(sys_flag & STOREHOST_V6_FLAG)


# -- pull sysFlag ---------------------------------------------------------------------------

FLAG_COMMIT_OFFSET: Final = 0x1
FLAG_SUSPEND: Final = 0x2
FLAG_SUBSCRIPTION: Final = 0x4
FLAG_CLASS_FILTER: Final = 0x8
FLAG_LITE_PULL_MESSAGE: Final = 0x10


def build_pull_sys_flag(
    *,
    commit_offset: bool = False,
    suspend: bool = False,
    subscription: bool = False,
    class_filter: bool = False,
    lite_pull: bool = False,
) -> int:
    """A pull request sysFlag from its parts (Java ``PullSysFlag.buildSysFlag``)."""
    flag = 0
    if commit_offset:
        flag |= FLAG_COMMIT_OFFSET
    if suspend:
        flag |= FLAG_SUSPEND
    if subscription:
        flag |= FLAG_SUBSCRIPTION
    if class_filter:
        flag |= FLAG_CLASS_FILTER
    if lite_pull:
        flag |= FLAG_LITE_PULL_MESSAGE
    return flag


def clear_commit_offset_flag(sys_flag: int) -> int:
    """``sys_flag`` without FLAG_COMMIT_OFFSET (clients clear it when pulling from a slave)."""
    return sys_flag & ~FLAG_COMMIT_OFFSET


def has_commit_offset(sys_flag: int) -> bool:
    """Whether the broker should store the request's ``commitOffset``."""
    return bool(sys_flag & FLAG_COMMIT_OFFSET)


def has_suspend(sys_flag: int) -> bool:
    """Whether the broker may hold the pull (long polling)."""
    return bool(sys_flag & FLAG_SUSPEND)


def has_subscription(sys_flag: int) -> bool:
    """Whether the request's own subscription replaces the one registered by heartbeat."""
    return bool(sys_flag & FLAG_SUBSCRIPTION)


def has_class_filter(sys_flag: int) -> bool:
    """Whether the legacy class filter is requested (treated as match-all)."""
    return bool(sys_flag & FLAG_CLASS_FILTER)
