"""A name server and one broker as child processes for the Spark tests, which share them
for the whole session (``tests/spark/conftest.py``); importable by test modules for its types.

``pyproject.toml`` puts this folder on pytest's path (see ``waiting.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rocketkube.client import Message, sync
from rocketkube.client.bench.local_cluster import local_broker, local_namesrv
from rocketkube.client.routing import MessageQueue

__all__ = ["Cluster", "CreateTopic", "child_cluster", "fill"]

#: ``create_topic(queues=4) -> name``: a fresh routed topic on the session's broker.
CreateTopic = Callable[..., str]


@dataclass(frozen=True)
class Cluster:
    namesrv: str
    broker_name: str


@contextlib.contextmanager
def child_cluster(root: Path) -> Iterator[Cluster]:
    """A name server and one broker as child processes, stopped on exit."""
    with asyncio.Runner() as runner:
        stack = contextlib.AsyncExitStack()

        async def start() -> str:
            namesrv = await stack.enter_async_context(local_namesrv(root))
            await stack.enter_async_context(local_broker(root, namesrv, "ASYNC_FLUSH"))
            return namesrv

        try:
            namesrv = runner.run(start())
            yield Cluster(namesrv, "bench-async")
        finally:
            runner.run(stack.aclose())


def fill(cluster: Cluster, topic: str, queues: range, per_queue: int, tag: str) -> list[bytes]:
    """Send ``per_queue`` messages to each of ``queues`` (one batch each), bodies
    ``<tag>-<queue>-<n>`` with the tag as their tags; returns the bodies sent."""
    bodies: list[bytes] = []
    with sync.Producer("SparkTestFiller", cluster.namesrv) as producer:
        for queue_id in queues:
            batch = [Message(topic, f"{tag}-{queue_id}-{n}".encode()) for n in range(per_queue)]
            for message in batch:
                message.tags = tag
            producer.send_batch(batch, queue=MessageQueue(topic, cluster.broker_name, queue_id))
            bodies += [message.body for message in batch]
    return bodies
