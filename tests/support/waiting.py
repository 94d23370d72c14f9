"""Bounded waits for what the servers under test will do (register, route, dispatch, call
back), shared by the suites: ``pyproject.toml`` puts this folder on pytest's path, since
test modules imported by ``--import-mode=importlib`` cannot import each other.

The bound is generous (CI machines stall for seconds at a time); a wait ends as soon as its
condition holds, so a passing test never waits longer for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["WAIT_SECONDS", "wait_for_value", "wait_until"]

T = TypeVar("T")

#: How long a test waits for something the servers will do.
WAIT_SECONDS = 30.0


async def wait_until(condition: Callable[[], object], what: str) -> None:
    """Return once ``condition()`` is true; AssertionError naming ``what`` after
    :data:`WAIT_SECONDS`."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not in {WAIT_SECONDS} s: {what}")
        await asyncio.sleep(0.02)


async def wait_for_value(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    """Await ``probe()`` until it gives something other than None, and return that."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        value = await probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not in {WAIT_SECONDS} s: {what}")
        await asyncio.sleep(0.05)
