"""Does a live object already hold what the operator wants? (pure)

The API server adds to what it is given (defaults inside containers, ``status``,
metadata), so a live object equal to the desired one is rare. The operator owns only the
fields it writes: an object is up to date when every value the desired object states is
there, lists item by item at the same positions, whatever else the server added.
"""

from __future__ import annotations

from typing import Any

__all__ = ["holds"]


def holds(live: Any, desired: Any) -> bool:
    """``live`` has every value ``desired`` states (dicts by key, lists by position and
    length, scalars equal). Integers and their decimal strings are not equal."""
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return False
        return all(key in live and holds(live[key], value) for key, value in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(holds(have, want) for have, want in zip(live, desired, strict=True))
    return type(live) is type(desired) and bool(live == desired)
