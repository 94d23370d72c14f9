"""Background tasks and futures: stopping tasks the one way servers and clients do it,
and passing a task's outcome on to a future."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

__all__ = ["cancel_and_wait", "copy_outcome"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


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


def copy_outcome(future: asyncio.Future[_T], done: asyncio.Future[_T]) -> None:
    """Give ``future`` the outcome of ``done``, unless it was cancelled meanwhile."""
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif (exc := done.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(done.result())
