"""The end-to-end scenario's applications: the SDK's producer and push consumer on the host,
talking to the pods' IPs as an application outside the cluster does through a routable
pod network.

Every message's body is its key (``<step>-<n>``), so what a consumer receives is checked
against what producers had acknowledged, whatever ids the brokers gave.

- :func:`send_all` pipelines a batch of sends (``in_flight`` at a time); every one must be
  acknowledged.
- :class:`SteadyProducer` sends one message after another with SYNC sends while a test
  changes the cluster under it, and retries a failed send as an application would (the
  same key again, after a pause): a message counts only once acknowledged, and a retry
  may store it twice (at-least-once). It reaches the name servers through a function
  that resolves their DNS names: when the answer changes (a name server pod came back
  with another IP) it starts a new producer on the new addresses, as a client that
  resolves the names anew on reconnecting would follow.
- :func:`consume` runs a push consumer of a group until every given key has arrived,
  recording which broker group each message came from.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rocketkube.client.consumer.listener import ConsumeContext, ConsumeStatus
from rocketkube.client.consumer.push import PushConsumer
from rocketkube.client.producer.producer import Producer
from rocketkube.client.producer.send_result import SendResult, SendStatus
from rocketkube.common.errors import RocketKubeError
from rocketkube.common.message.model import Message, MessageExt

__all__ = ["Received", "SteadyProducer", "consume", "message", "send_all"]

SEND_ERRORS = (RocketKubeError, OSError, asyncio.TimeoutError)
ROUTE_POLL_SECONDS = 1.0
"""How often the scenario's producers read routes again (the SDK's default is 30 s)."""


def message(topic: str, key: str) -> Message:
    sent = Message(topic, key.encode())
    sent.keys = [key]
    return sent


async def send_all(
    namesrv: str, group: str, topic: str, keys: Iterable[str], *, in_flight: int = 256
) -> dict[str, SendResult]:
    """Send one message per key; each key's result (every one acknowledged SEND_OK)."""
    results: dict[str, SendResult] = {}
    listed = list(keys)
    producer = Producer(group, namesrv, poll_name_server_interval=ROUTE_POLL_SECONDS)
    async with producer:
        for start in range(0, len(listed), in_flight):
            chunk = listed[start : start + in_flight]
            futures = [producer.send_async(message(topic, key)) for key in chunk]
            results.update(zip(chunk, await asyncio.gather(*futures), strict=True))
    refused = {k: r.status for k, r in results.items() if r.status is not SendStatus.SEND_OK}
    assert not refused, f"sends not stored as asked: {refused}"
    return results


@dataclass
class SteadyProducer:
    """SYNC sends of keys ``<prefix>-0``, ``-1``, ... until stopped (see the module)."""

    namesrv: Callable[[], str]
    """The name servers' addresses now (their DNS names resolved)."""
    group: str
    topic: str
    prefix: str
    pause: float = 0.02
    """Between two sends: a steady trickle, not a flood."""
    retry_pause: float = 0.2
    acked: dict[str, SendResult] = field(default_factory=dict)
    acked_at: list[float] = field(default_factory=list)
    """When each send was acknowledged (``time.monotonic()``)."""
    failures: list[str] = field(default_factory=list)
    producers: int = 0
    """How many producers it started (one more each time the name servers moved)."""

    async def run(self, stop: asyncio.Event) -> None:
        producer: Producer | None = None
        address = ""
        try:
            for n in itertools.count():
                key = f"{self.prefix}-{n}"
                while not stop.is_set():
                    if producer is None or self.namesrv() != address:
                        producer, address = await self._renew(producer)
                    if await self._send(producer, key):
                        break
                if stop.is_set():
                    return
                await asyncio.sleep(self.pause)
        finally:
            if producer is not None:
                await producer.close()

    async def _renew(self, old: Producer | None) -> tuple[Producer, str]:
        if old is not None:
            await old.close()
        address = self.namesrv()
        producer = Producer(self.group, address, poll_name_server_interval=ROUTE_POLL_SECONDS)
        await producer.start()
        self.producers += 1
        return producer, address

    async def _send(self, producer: Producer, key: str) -> bool:
        """One attempt: whether ``key`` was acknowledged (a failure is noted, then a pause)."""
        try:
            result = await producer.send(message(self.topic, key))
        except SEND_ERRORS as exc:
            self.failures.append(f"{key}: {type(exc).__name__}: {exc}")
        else:
            if result.status is SendStatus.SEND_OK:
                self.acked[key] = result
                self.acked_at.append(time.monotonic())
                return True
            self.failures.append(f"{key}: {result.status}")
        await asyncio.sleep(self.retry_pause)
        return False


@dataclass
class Received:
    """What a consumer was given: how many times each key, and from which broker groups."""

    times: Counter[str] = field(default_factory=Counter)
    brokers: dict[str, set[str]] = field(default_factory=dict)

    def note(self, messages: Iterable[MessageExt], context: ConsumeContext) -> None:
        for got in messages:
            key = got.body.decode()
            self.times[key] += 1
            self.brokers.setdefault(key, set()).add(context.queue.broker_name)

    @property
    def duplicates(self) -> int:
        return sum(n - 1 for n in self.times.values())


async def consume(
    namesrv: str,
    group: str,
    topic: str,
    keys: Iterable[str],
    offsets: Path,
    timeout: float = 60.0,
) -> Received:
    """Run a push consumer of ``group`` on ``topic`` until every one of ``keys`` arrived
    (AssertionError naming how many are missing after ``timeout`` s), then stop it (its
    offsets committed)."""
    wanted = set(keys)
    received = Received()

    def listener(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        received.note(messages, context)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group, namesrv, consume_from="first", rebalance_interval=1.0, persist_interval=1.0,
        suspend_timeout=1.0, pull_error_delay=0.2, offset_store_dir=offsets,
    )  # fmt: skip
    consumer.register_listener(listener)
    await consumer.subscribe(topic)
    async with consumer:
        deadline = time.monotonic() + timeout
        while missing := wanted - received.times.keys():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(missing)} of {len(wanted)} messages not consumed in {timeout:g} s,"
                    f" e.g. {sorted(missing)[:5]}"
                )
            await asyncio.sleep(0.05)
    return received
