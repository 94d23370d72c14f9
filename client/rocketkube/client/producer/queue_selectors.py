"""Queue selectors for ordered sends: ``producer.send(message, selector=..., arg=...)``.

A selector picks one of a topic's writable queues for each message; messages that go to
one queue are stored, and delivered to orderly listeners, in send order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rocketkube.common.message import hashing
from rocketkube.common.message.model import Message
from rocketkube.common.protocol.admin_bodies import MessageQueue

__all__ = ["MessageQueueSelector", "RoundRobinSelector", "select_by_hash"]


class MessageQueueSelector(Protocol):
    """Chooses the queue of a message among a topic's writable queues (ordered sends)."""

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue:
        """The queue for ``message``; ``arg`` is what the caller passed to ``send``."""
        ...


def select_by_hash(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    """Selector: ``queues[abs(hash(str(arg))) % n]`` with Java's ``String.hashCode``.

    Messages sharing an ``arg`` (an order id, say) land on one queue, in send order, and
    a Java producer using ``SelectMessageQueueByHash`` with the same string key agrees.
    """
    return queues[abs(hashing.java_string_hash(str(arg))) % len(queues)]


class RoundRobinSelector:
    """Selector: the next queue on each call, ignoring message and ``arg``."""

    def __init__(self) -> None:
        self._counter = 0

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue:
        """The queue after the one chosen last time."""
        queue = queues[self._counter % len(queues)]
        self._counter += 1
        return queue
