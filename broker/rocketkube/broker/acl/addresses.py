"""White-listed remote addresses: RocketMQ's ``RemoteAddressStrategyFactory`` forms, pure.

    ""  (or none)            matches nothing
    *   *.*.*.*              matches every address
    192.168.0.1              that address
    192.168.0.1,10.0.0.2     any of a list
    192.168.1.{1,2,30}       the listed last parts
    192.168.*   192.168.*.*  a prefix: every value of the first ``*`` part (0-255)
    192.168.1.1-100          a range of one part; the parts after it must be ``*``
    192.168.1-10.*

IPv6 patterns are matched as exact addresses only. A pattern that is none of these raises
:class:`AddressPatternError` (the file is refused, as RocketMQ refuses it).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Final

__all__ = ["AddressMatcher", "AddressPatternError", "matcher"]

#: True when the remote host (an address without its port) is white-listed.
AddressMatcher = Callable[[str], bool]

_ANYWHERE: Final = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})


class AddressPatternError(ValueError):
    """A white address pattern RocketMQ would refuse."""


def matcher(pattern: str | None) -> AddressMatcher:
    """The matcher of one pattern (see the module docstring)."""
    text = (pattern or "").strip()
    if not text:
        return _nothing
    if text in _ANYWHERE:
        return _everything
    if text.endswith("}"):
        return _one_of(_braced(text))
    if "," in text:
        return _one_of(part.strip() for part in text.split(",") if part.strip())
    if ":" not in text and ("*" in text or "-" in text):
        return _range(text)
    _literal(text)
    return text.__eq__


def _nothing(host: str) -> bool:
    return False


def _everything(host: str) -> bool:
    return True


def _one_of(addresses: Iterable[str]) -> AddressMatcher:
    allowed = frozenset(addresses)
    for address in allowed:
        _literal(address)
    return allowed.__contains__


def _literal(address: str) -> None:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise AddressPatternError(f"not an IP address: {address!r}") from None


def _braced(text: str) -> list[str]:
    """``a.b.c.{x,y}`` -> ``[a.b.c.x, a.b.c.y]`` (``AclUtils.getAddresses``)."""
    head, sep, tail = text.rpartition(".{")
    if not sep or head.count(".") != 2:
        raise AddressPatternError(f"braces must hold the last part of an IPv4 address: {text!r}")
    return [f"{head}.{part.strip()}" for part in tail[:-1].split(",") if part.strip()]


def _range(text: str) -> AddressMatcher:
    """A prefix of literal parts, one ``*`` or ``n-m`` part, then only ``*`` parts."""
    parts = [part.strip() for part in text.split(".")]
    at = next(i for i, part in enumerate(parts) if part == "*" or "-" in part)
    if not 1 <= at <= 3 or len(parts) > 4 or any(p != "*" for p in parts[at + 1 :]):
        raise AddressPatternError(f"not a RocketMQ address range: {text!r}")
    if not all(_octet(part) is not None for part in parts[:at]):
        raise AddressPatternError(f"not a RocketMQ address range: {text!r}")
    low, high = _bounds(parts[at], text)
    head = ".".join(parts[:at]) + "."

    def match(host: str) -> bool:
        if not host.startswith(head):
            return False
        value = _octet(host[len(head) :].split(".", 1)[0])
        return value is not None and low <= value <= high

    return match


def _bounds(part: str, text: str) -> tuple[int, int]:
    if part == "*":
        return 0, 255
    first, _, last = part.partition("-")
    low, high = _octet(first), _octet(last)
    if low is None or high is None or low > high:
        raise AddressPatternError(f"not a range of 0-255: {part!r} in {text!r}")
    return low, high


def _octet(text: str) -> int | None:
    if not text.isdigit() or len(text) > 3:
        return None
    value = int(text)
    return value if value <= 255 else None
