"""Ports for the servers tests start: chosen below the kernel's ephemeral range.

A port the kernel hands out for ``bind(0)`` comes from the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``), which every outgoing connection of every test
running in parallel draws from too: between the choice and the server's own bind, a client
socket elsewhere may take it (seen as "address already in use" under a loaded suite). Ports
below that range are never given to outgoing connections, so a port found free there stays
free unless another test picks the same one at random, which the bind check makes rare.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port", "free_ports"]

_FLOOR = 10_000
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ceiling() -> int:
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


def free_ports(offsets: tuple[int, ...] = (0,)) -> int:
    """A port ``p`` below the ephemeral range with ``p + o`` bindable for every offset (a
    server's port layout, e.g. a broker's remoting, HA and HTTP ports)."""
    chooser = random.Random()
    top = _ceiling() - max(offsets) - 1
    while True:
        port = chooser.randrange(_FLOOR, top)
        if all(_bindable(port + offset) for offset in offsets):
            return port


def free_port() -> int:
    """One port below the ephemeral range that nothing listens on."""
    return free_ports()
