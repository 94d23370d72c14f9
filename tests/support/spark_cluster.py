"""A name server and one broker as child processes for the Spark tests, which share them
for the whole session (``tests/spark/conftest.py``); importable by test modules for its types.
:func:`secured_cluster` starts another pair that takes TLS and checks an ACL.

``pyproject.toml`` puts this folder on pytest's path (see ``waiting.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rocketkube.bench.local_cluster import local_broker, local_namesrv
from rocketkube.client import Message, sync
from rocketkube.client.routing import MessageQueue
from rocketkube.common.acl import Credentials

__all__ = ["Cluster", "CreateTopic", "TlsFiles", "child_cluster", "fill", "secured_cluster"]

#: ``create_topic(queues=4) -> name``: a fresh routed topic on the session's broker.
CreateTopic = Callable[..., str]


@dataclass(frozen=True)
class Cluster:
    namesrv: str
    broker_name: str


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files a server shows: its certificate and key."""

    cert: Path
    key: Path


@contextlib.contextmanager
def child_cluster(root: Path) -> Iterator[Cluster]:
    """A name server and one broker as child processes, stopped on exit."""
    with _cluster(root, [], []) as running:
        yield running


@contextlib.contextmanager
def secured_cluster(
    root: Path, server: TlsFiles, acl_file: Path, admin: Credentials
) -> Iterator[Cluster]:
    """A name server and a broker that take TLS and plain TCP (``permissive``), the broker
    checking the accounts of ``acl_file`` (``admin`` must be an admin account of it)."""
    tls = {
        "tls.server.mode": "permissive",
        "tls.server.certPath": str(server.cert),
        "tls.server.keyPath": str(server.key),
    }
    properties = root / "namesrv.properties"
    properties.write_text("".join(f"{key}={value}\n" for key, value in tls.items()))
    settings = {**tls, "aclEnable": "true", "rocketmq.acl.plain.file": str(acl_file)}
    broker = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    with _cluster(root, ["-c", str(properties)], broker, admin) as running:
        yield running


@contextlib.contextmanager
def _cluster(
    root: Path, namesrv_args: list[str], broker_args: list[str], admin: Credentials | None = None
) -> Iterator[Cluster]:
    with asyncio.Runner() as runner:
        stack = contextlib.AsyncExitStack()

        async def start() -> str:
            namesrv = await stack.enter_async_context(local_namesrv(root, namesrv_args))
            await stack.enter_async_context(
                local_broker(root, namesrv, "ASYNC_FLUSH", broker_args, admin)
            )
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
