"""Answers shared by the servers' processors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand


async def ok_once_saved(saved: Callable[[], Awaitable[None]], what: str) -> RemotingCommand:
    """SUCCESS once ``saved()`` returns (a change is on disk); SYSTEM_ERROR naming ``what``
    when the write failed: the change holds in memory and is tried again with the next."""
    try:
        await saved()
    except OSError as exc:
        return RemotingCommand.response(
            ResponseCode.SYSTEM_ERROR, f"{what} changed, but not saved to disk: {exc}"
        )
    return RemotingCommand.response()
