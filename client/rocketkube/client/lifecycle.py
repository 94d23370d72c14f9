"""``async with`` for the SDK's clients (start on entry, close on exit), and stopping their
background tasks."""

from __future__ import annotations

import abc
import asyncio
import logging
from types import TracebackType
from typing import Self

log = logging.getLogger(__name__)


class AsyncLifecycle(abc.ABC):
    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


async def cancel_and_wait(*tasks: asyncio.Task[None], timeout: float = 10.0) -> None:
    """Cancel ``tasks`` and wait for them, at most ``timeout`` seconds; a task that failed
    or outlasts the wait is logged."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            log.warning("task %s failed: %r", task.get_name(), task.exception())
    for task in pending:
        log.warning("task %s did not stop within %.0f s", task.get_name(), timeout)
