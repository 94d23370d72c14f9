"""What a push consumer's listener is given and returns (Java ``MessageListener*``).

A concurrent listener returns :attr:`ConsumeStatus.CONSUME_SUCCESS` or
:attr:`ConsumeStatus.RECONSUME_LATER`; an orderly one :attr:`ConsumeOrderlyStatus.SUCCESS`
or :attr:`ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT`. Returning ``None`` counts as
success and raising as failure, so a plain ``async def on_messages(messages, context)``
that returns nothing acknowledges what it got. Listeners may be sync or async; a sync one
runs on the event loop, so it must not block.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rocketkube.client.consumer.consume_stats import ConsumeStatsRecorder
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message.model import MessageExt

__all__ = [
    "ConsumeContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "MessageListener",
    "OrderlyMessageListener",
    "call_listener",
    "measured_listener",
]

log = logging.getLogger(__name__)


class ConsumeStatus(enum.StrEnum):
    """A concurrent listener's verdict on its batch."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.StrEnum):
    """An orderly listener's verdict; SUSPEND retries the same batch after a pause."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclasses.dataclass(slots=True)
class ConsumeContext:
    """Where the batch comes from, and what the listener may ask for.

    ``delay_level`` (concurrent, clustering) is the delay level the broker gives failed
    messages: 0 lets the broker choose (3 + reconsume times), < 0 sends them to the DLQ.
    ``suspend_seconds`` (orderly) overrides the pause before a suspended batch is retried.
    """

    queue: MessageQueue
    delay_level: int = 0
    suspend_seconds: float | None = None


MessageListener = Callable[
    [list[MessageExt], ConsumeContext],
    "ConsumeStatus | Awaitable[ConsumeStatus | None] | None",
]
"""``listener(messages, context) -> ConsumeStatus``, sync or async."""

OrderlyMessageListener = Callable[
    [list[MessageExt], ConsumeContext],
    "ConsumeOrderlyStatus | Awaitable[ConsumeOrderlyStatus | None] | None",
]
"""``listener(messages, context) -> ConsumeOrderlyStatus``, sync or async."""


async def call_listener(
    listener: Callable[[list[MessageExt], ConsumeContext], object],
    messages: list[MessageExt],
    context: ConsumeContext,
) -> bool:
    """Run ``listener``; whether it succeeded (``None`` or a SUCCESS status, no exception)."""
    try:
        result = listener(messages, context)
        if inspect.isawaitable(result):
            result = await result
    except Exception:
        log.warning(
            "listener failed on %d message(s) of %s", len(messages), context.queue, exc_info=True
        )
        return False
    return result is None or result in (ConsumeStatus.CONSUME_SUCCESS, ConsumeOrderlyStatus.SUCCESS)


_Status = TypeVar("_Status", ConsumeStatus, ConsumeOrderlyStatus)


def measured_listener(
    listener: Callable[[list[MessageExt], ConsumeContext], object],
    ok_status: _Status,
    failed_status: _Status,
    on_call: Callable[[MessageQueue], None],
    stats: ConsumeStatsRecorder,
) -> Callable[[list[MessageExt], ConsumeContext], Awaitable[_Status]]:
    """``listener`` answering ``ok_status`` or ``failed_status`` (an exception is a
    failure), each call timed and counted into ``stats`` for the running info, and its
    queue given to ``on_call`` first."""

    async def measured(messages: list[MessageExt], context: ConsumeContext) -> _Status:
        on_call(context.queue)
        started = time.monotonic()
        ok = await call_listener(listener, messages, context)
        rt_ms = (time.monotonic() - started) * 1000
        stats.consumed(context.queue.topic, rt_ms, len(messages), ok=ok)
        return ok_status if ok else failed_status

    return measured
