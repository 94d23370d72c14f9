"""``async with`` for the SDK's clients: start on entry, close on exit."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self


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
