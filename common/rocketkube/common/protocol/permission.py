"""Topic permission bits and topic system flags (``PermName``, ``TopicSysFlag``)."""

from __future__ import annotations

PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1

FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def perm_to_string(perm: int) -> str:
    """``RW-`` style, as mqadmin prints it."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )
