"""How a consumer answers GET_CONSUMER_RUNNING_INFO (307), shared by the push and the lite
pull consumer (Java ``ClientRemotingProcessor.getConsumerRunningInfo``).

A broker forwards an admin's request to the consumer's connection; the consumer answers
SUCCESS with its :class:`~rocketkube.common.protocol.running_info.ConsumerRunningInfo`, or
SYSTEM_ERROR when the group asked for is not its own. ``jstackEnable`` adds a text dump of
where the process is: every asyncio task's stack and every thread's (Python's ``jstack``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import sys
import threading
import traceback
from collections.abc import Callable, Mapping

from rocketkube.common.protocol.running_info import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
)
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "CLIENT_VERSION",
    "base_properties",
    "respond",
    "settings_properties",
    "stack_dump",
]

#: The version this SDK reports (the RocketMQ release whose protocol it speaks).
CLIENT_VERSION = "V4_9_8"


def base_properties(
    *, consume_type: str, namesrv_addrs: list[str], start_ms: int
) -> dict[str, str]:
    """The ``PROP_*`` entries every consumer reports (Java ``MQClientInstance``)."""
    return {
        PROP_CLIENT_VERSION: CLIENT_VERSION,
        PROP_CONSUME_TYPE: consume_type,
        PROP_CONSUMER_START_TIMESTAMP: str(start_ms),
        PROP_NAMESERVER_ADDR: "".join(f"{addr};" for addr in namesrv_addrs),
    }


def settings_properties(settings: Mapping[str, object]) -> dict[str, str]:
    """Settings as Java's ``Properties`` holds them: text, booleans lower case."""
    out: dict[str, str] = {}
    for name, value in settings.items():
        if value is None:
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def stack_dump() -> str:
    """Every asyncio task's stack (of the running loop) and every thread's, as text."""
    out = io.StringIO()
    try:
        tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    except RuntimeError:  # no running loop
        tasks = []
    for task in tasks:
        out.write(f'"{task.get_name()}" asyncio task: {task.get_coro()!r}\n')
        for frame in task.get_stack():
            out.write("".join(traceback.format_stack(frame, limit=1)))
        out.write("\n")
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        out.write(f'"{names.get(ident, ident)}" thread {ident}\n')
        out.write("".join(traceback.format_stack(frame)))
        out.write("\n")
    return out.getvalue()


def respond(
    request: RemotingCommand, group: str, build: Callable[[], ConsumerRunningInfo] | None
) -> RemotingCommand:
    """The answer to a 307 for a consumer of ``group`` (``build``: None when not running)."""
    header = GetConsumerRunningInfoRequestHeader.decode(request.ext_fields)
    if header.consumer_group != group or build is None:
        return RemotingCommand.response(
            ResponseCode.SYSTEM_ERROR,
            f"The Consumer Group <{header.consumer_group}> not exist in this consumer",
        )
    info = build()
    if header.jstack_enable:
        info = dataclasses.replace(info, jstack=stack_dump())
    return RemotingCommand.response(body=info.encode())
