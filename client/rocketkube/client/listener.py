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
from collections.abc import Awaitable, Callable

from rocketkube.client.routing import MessageQueue
from rocketkube.common.message.model import MessageExt

__all__ = [
    "ConsumeContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "MessageListener",
    "OrderlyMessageListener",
    "call_listener",
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
