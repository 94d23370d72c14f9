"""Send latency fault tolerance: brokers that answered slowly or failed are avoided for a
while (Java ``MQFaultStrategy`` and ``LatencyFaultToleranceImpl``). Pure: the clock (ms) is
passed in, and so is the random source of :meth:`LatencyFaultTolerance.pick_one_at_least`.

After every send attempt the producer reports the broker's latency; a failure counts as
:data:`ISOLATION_LATENCY_MS`. The latency maps to a time the broker is unavailable::

    latency >=  50   100   550    1000    2000    3000    15000  ms
    avoid for    0     0   30 s   60 s    120 s   180 s   600 s

:func:`select_queue` then picks round robin among the queues of available brokers; when
none is available it takes a queue of the least bad broker (available first, then lowest
latency, then soonest available, among the better half), and failing that the plain next
queue.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from rocketkube.client.routing import MessageQueue
from rocketkube.common.names import BrokerName

__all__ = [
    "ISOLATION_LATENCY_MS",
    "LATENCY_MAX_MS",
    "NOT_AVAILABLE_DURATION_MS",
    "FaultItem",
    "LatencyFaultTolerance",
    "not_available_duration",
    "select_queue",
]

LATENCY_MAX_MS: Final = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION_MS: Final = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY_MS: Final = 30000
"""The latency a failed send counts as (Java ``isolation ? 30000 : currentLatency``): past
the last row, so a broker that failed is avoided for 600 s."""


def not_available_duration(latency_ms: int) -> int:
    """How long (ms) a broker that answered in ``latency_ms`` is avoided."""
    for limit, duration in zip(
        reversed(LATENCY_MAX_MS), reversed(NOT_AVAILABLE_DURATION_MS), strict=True
    ):
        if latency_ms >= limit:
            return duration
    return 0


@dataclass(slots=True)
class FaultItem:
    """A broker's last latency and the time (ms) from which it is available again."""

    name: BrokerName
    latency_ms: int
    available_from_ms: int

    def is_available(self, now_ms: int) -> bool:
        return now_ms >= self.available_from_ms

    def rank(self, now_ms: int) -> tuple[bool, int, int]:
        """Sort key, best first: available, then lower latency, then sooner available."""
        return (not self.is_available(now_ms), self.latency_ms, self.available_from_ms)


class LatencyFaultTolerance:
    """The fault table of one producer, keyed by broker name."""

    def __init__(self, clock: Callable[[], int], rng: random.Random | None = None) -> None:
        self._clock = clock
        self._rng = rng or random.Random()
        self._items: dict[BrokerName, FaultItem] = {}
        self._worst = 0

    def update(self, name: str, latency_ms: int, *, isolation: bool = False) -> None:
        """Record a send attempt to ``name``: its latency, or a failure (``isolation``)."""
        latency = ISOLATION_LATENCY_MS if isolation else latency_ms
        until = self._clock() + not_available_duration(latency)
        broker = BrokerName(name)
        self._items[broker] = FaultItem(broker, latency_ms, until)

    def is_available(self, name: str) -> bool:
        item = self._items.get(BrokerName(name))
        return item is None or item.is_available(self._clock())

    def remove(self, name: str) -> None:
        self._items.pop(BrokerName(name), None)

    def pick_one_at_least(self) -> BrokerName | None:
        """A broker to try when none is available: one of the better half, in turn."""
        if not self._items:
            return None
        now = self._clock()
        items = list(self._items.values())
        self._rng.shuffle(items)
        items.sort(key=lambda item: item.rank(now))
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        self._worst += 1
        return items[self._worst % half].name


def select_queue(
    queues: Sequence[MessageQueue], faults: LatencyFaultTolerance, counter: int
) -> MessageQueue:
    """The queue of a send with fault avoidance (Java ``MQFaultStrategy.selectOneMessageQueue``).

    ``counter`` is the topic's round-robin counter value for this send; ``queues`` must not
    be empty (:class:`ValueError`).
    """
    if not queues:
        raise ValueError("no queue to select from")
    size = len(queues)
    for step in range(size):
        queue = queues[(counter + step) % size]
        if faults.is_available(queue.broker_name):
            return queue
    least_bad = faults.pick_one_at_least()
    if least_bad is not None:
        own = [q for q in queues if q.broker_name == least_bad]
        if own:
            return own[counter % len(own)]
        faults.remove(least_bad)
    return queues[counter % size]
