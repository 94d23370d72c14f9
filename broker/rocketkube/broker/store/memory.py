"""How much memory this broker has: what "the message is still in memory" is measured
against (``accessMessageInMemoryMaxRatio``), as Java's ``TOTAL_PHYSICAL_MEMORY_SIZE``.

Inside a container the cgroup's limit is the memory there is (Java 17 reports it too),
not the host's RAM.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["total_memory_bytes"]

#: cgroup v2, then v1: the memory limit of this process's group ("max": none).
_CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


def total_memory_bytes(cgroup_limits: tuple[Path, ...] = _CGROUP_LIMITS) -> int:
    """Physical memory, capped by the first readable cgroup limit."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in cgroup_limits:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return min(total, int(text))  # v1 says "no limit" with a huge number
        return total
    return total
