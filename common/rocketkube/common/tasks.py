"""Stopping background tasks: the one way servers and clients do it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["cancel_and_wait"]

log = logging.getLogger(__name__)


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None, timeout: float = 10.0) -> None:
    """Cancel ``tasks`` (``None`` entries are skipped) and wait for them, at most
    ``timeout`` seconds; a task that failed or outlasts the wait is logged, not raised, so a
    stop always goes on to its next step."""
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    if not running:
        return
    done, pending = await asyncio.wait(running, timeout=timeout)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            log.warning("task %s failed: %r", task.get_name(), task.exception())
    for task in pending:
        log.warning("task %s did not stop within %.0f s", task.get_name(), timeout)
