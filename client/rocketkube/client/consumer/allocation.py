"""Queue allocation strategies of a clustering consumer group, as pure functions.

Every member of a group runs the same strategy over the same sorted inputs (the topic's
readable queues, the group's client ids from GET_CONSUMER_LIST_BY_GROUP) and takes its own
share, so the shares add up to every queue exactly once without any coordination. Results
match Java's ``AllocateMessageQueueAveragely``, ``...AveragelyByCircle``,
``...ConsistentHash`` (MD5 ring, 10 virtual nodes per client) and ``...ByConfig``, so
Python and Java members of one group agree.

A strategy is ``(group, current_cid, all_queues, all_cids) -> list[MessageQueue]``; a
``current_cid`` missing from ``all_cids`` gets nothing (the group list is stale).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

from rocketkube.client.routing import MessageQueue

__all__ = [
    "AllocateByConfig",
    "AllocateStrategy",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "allocate_by_consistent_hash",
]

DEFAULT_VIRTUAL_NODES: Final = 10
"""Virtual nodes per client on the consistent-hash ring (Java's default)."""


class AllocateStrategy(Protocol):
    """Picks the queues ``current_cid`` consumes among ``all_queues``."""

    def __call__(
        self,
        group: str,
        current_cid: str,
        all_queues: Sequence[MessageQueue],
        all_cids: Sequence[str],
    ) -> list[MessageQueue]: ...


def _inputs(
    current_cid: str, all_queues: Sequence[MessageQueue], all_cids: Sequence[str]
) -> tuple[list[MessageQueue], list[str], int] | None:
    """Both lists sorted and de-duplicated, and the current client's index (or ``None``)."""
    cids = sorted(set(all_cids))
    if current_cid not in cids or not all_queues:
        return None
    return sorted(set(all_queues)), cids, cids.index(current_cid)


def allocate_averagely(
    group: str, current_cid: str, all_queues: Sequence[MessageQueue], all_cids: Sequence[str]
) -> list[MessageQueue]:
    """Consecutive blocks: with 8 queues and 3 clients, ``[0,1,2] [3,4,5] [6,7]``."""
    inputs = _inputs(current_cid, all_queues, all_cids)
    if inputs is None:
        return []
    queues, cids, index = inputs
    n, m = len(queues), len(cids)
    mod = n % m
    if n <= m:
        size = 1
    elif mod > 0 and index < mod:
        size = n // m + 1
    else:
        size = n // m
    start = index * size if mod > 0 and index < mod else index * size + mod
    count = min(size, n - start)
    return [queues[(start + i) % n] for i in range(count)]


def allocate_averagely_by_circle(
    group: str, current_cid: str, all_queues: Sequence[MessageQueue], all_cids: Sequence[str]
) -> list[MessageQueue]:
    """Dealt like cards: with 8 queues and 3 clients, ``[0,3,6] [1,4,7] [2,5]``."""
    inputs = _inputs(current_cid, all_queues, all_cids)
    if inputs is None:
        return []
    queues, cids, index = inputs
    return queues[index :: len(cids)]


def _md5_hash(key: str) -> int:
    """Java ``ConsistentHashRouter.MD5Hash``: the first 4 digest bytes, big-endian."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def _java_queue_string(queue: MessageQueue) -> str:
    """Java ``MessageQueue.toString()``, the key a queue is hashed by."""
    return (
        f"MessageQueue [topic={queue.topic}, brokerName={queue.broker_name}, "
        f"queueId={queue.queue_id}]"
    )


def allocate_by_consistent_hash(
    group: str,
    current_cid: str,
    all_queues: Sequence[MessageQueue],
    all_cids: Sequence[str],
    *,
    virtual_nodes: int = DEFAULT_VIRTUAL_NODES,
) -> list[MessageQueue]:
    """Each queue goes to the next virtual node clockwise on an MD5 ring.

    Client ``c`` has nodes ``"c-0"``..``"c-{virtual_nodes-1}"``. When a client joins or
    leaves, only the queues next to its nodes move: the others keep their consumer.
    """
    if virtual_nodes < 1:
        raise ValueError("virtual_nodes must be positive")
    inputs = _inputs(current_cid, all_queues, all_cids)
    if inputs is None:
        return []
    queues, cids, _ = inputs
    ring: dict[int, str] = {}
    for cid in cids:
        for i in range(virtual_nodes):
            # A later node with the same hash replaces an earlier one, as in Java's TreeMap.
            ring[_md5_hash(f"{cid}-{i}")] = cid
    points = sorted(ring)
    out: list[MessageQueue] = []
    for queue in queues:
        at = bisect.bisect_left(points, _md5_hash(_java_queue_string(queue)))
        if ring[points[at % len(points)]] == current_cid:
            out.append(queue)
    return out


class AllocateByConfig:
    """Always the configured queues, whoever else is in the group (``AllocateByConfig``).

    Only safe when the members' configurations are disjoint and cover the topic.
    """

    def __init__(self, queues: Iterable[MessageQueue]) -> None:
        self.queues = sorted(set(queues))

    def __call__(
        self,
        group: str,
        current_cid: str,
        all_queues: Sequence[MessageQueue],
        all_cids: Sequence[str],
    ) -> list[MessageQueue]:
        """The configured queues."""
        return list(self.queues)
