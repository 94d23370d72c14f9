"""Java's ``String.hashCode`` and the tags hash code stored in each consume queue entry.

``h = 31 * h + c`` over the string's UTF-16 code units (a character outside the BMP counts
as its two surrogates), wrapped to a signed int32. The consume queue stores it as int64
(sign-extended) and subscriptions carry it in ``codeSet``. "TagA" -> 2598919.
"""

from __future__ import annotations

import functools
import sys

__all__ = ["java_string_hash", "tags_code"]

_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()`` of ``s``, as a signed 32-bit int."""
    h = 0
    if s.isascii():
        for c in s.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        for c in memoryview(s.encode(_UTF16_NATIVE, "surrogatepass")).cast("H"):
            h = (31 * h + c) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


@functools.lru_cache(maxsize=4096)
def tags_code(tags: str | None) -> int:
    """The tags hash code: 0 when the message has no tag, else :func:`java_string_hash`."""
    if not tags:
        return 0
    return java_string_hash(tags)
