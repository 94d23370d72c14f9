"""Addresses as the remoting layer writes and reads them: ``host:port``, ``[v6]:port``."""

from __future__ import annotations

__all__ = ["format_address", "split_address"]


def format_address(peer: object) -> str:
    """A socket address tuple as ``host:port`` (``[host]:port`` for IPv6); ``?`` else."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return "?"


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (or ``[v6]:port``) into its parts; ValueError when malformed."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"not a host:port address: {address!r}")
    return host.strip("[]"), int(port)
