"""Ports for the servers tests start: chosen below the kernel's ephemeral range.

A port the kernel hands out for ``bind(0)`` comes from the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``), which every outgoing connection of every test
running in parallel draws from too: between the choice and the server's own bind, a client
socket elsewhere may take it (seen as "address already in use" under a loaded suite). Ports
below that range are never given to outgoing connections, so a port found free there stays
free unless another test picks the same one. Each pytest-xdist worker draws from its own
slice of the range (``PYTEST_XDIST_WORKER`` of ``PYTEST_XDIST_WORKER_COUNT``), so tests
running at once never pick the same port; within a worker, tests run one after another
and the bind check skips what an earlier test's process still holds.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

__all__ = ["ephemeral_start", "free_port", "free_ports"]

_FLOOR = 10_000
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _bindable(port: int) -> bool:
    for host in ("0.0.0.0", "127.0.0.1"):
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                return False
    return True


def _slice(low: int, high: int) -> tuple[int, int]:
    """This pytest-xdist worker's part of ``[low, high)``: all of it outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return low, high
    index = int(worker[2:]) % count
    size = (high - low) // count
    return low + index * size, low + (index + 1) * size


def free_ports(offsets: tuple[int, ...] = (0,)) -> int:
    """A port ``p`` below the ephemeral range with ``p + o`` bindable for every offset (a
    server's port layout, e.g. a broker's remoting, HA and HTTP ports)."""
    chooser = random.Random()
    low, high = _slice(_FLOOR, ephemeral_start() - max(offsets) - 1)
    while True:
        port = chooser.randrange(low, high)
        if all(_bindable(port + offset) for offset in offsets):
            return port


def free_port() -> int:
    """One port below the ephemeral range that nothing listens on."""
    return free_ports()
