"""What ``rocketkube bench flood`` checks besides speed: that the well-behaved producer lost
nothing, and how much memory the servers held.

A :class:`Ledger` keeps each acknowledged send's queue, offset and body (each body unique);
:meth:`Ledger.verify` pulls every queue over the acknowledged offsets afterwards and counts
the messages found there with their body, and the ones lost. :class:`RssWatch` samples the
anonymous resident memory of the server processes (``RssAnon`` in ``/proc``: the heap and
buffers, what a flood could grow; not the store's mapped files, which grow with what the
producer stores) before, during and after the flood.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.consumer.pull import PullStatus
from rocketkube.client.producer.send_result import SendResult
from rocketkube.common.protocol.admin_bodies import MessageQueue

__all__ = ["Ledger", "Memory", "RssWatch", "Verdict", "rss_mib", "unique_body"]

_PULL_BATCH: Final = 32
_SAMPLE_EVERY: Final = 0.5


def unique_body(number: int, size: int) -> bytes:
    """A body of ``size`` bytes (at least 12) that says which send it was."""
    head = b"%012d" % number
    return head + b"f" * max(size - len(head), 0)


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    acknowledged: int
    found: int

    @property
    def lost(self) -> int:
        return self.acknowledged - self.found

    def as_dict(self) -> dict[str, int]:
        return {"acknowledged": self.acknowledged, "found": self.found, "lost": self.lost}


class Ledger:
    """The producer's acknowledged sends: queue -> offset -> body."""

    def __init__(self) -> None:
        self._acked: dict[MessageQueue, dict[int, bytes]] = {}

    def add(self, result: SendResult, body: bytes) -> None:
        self._acked.setdefault(result.queue, {})[result.queue_offset] = body

    async def verify(self, admin: AdminClient) -> Verdict:
        """Pull every queue over its acknowledged offsets: how many are there, intact."""
        found = 0
        for queue, bodies in self._acked.items():
            found += await _found(admin, queue, bodies)
        return Verdict(sum(map(len, self._acked.values())), found)


async def _found(admin: AdminClient, queue: MessageQueue, bodies: dict[int, bytes]) -> int:
    found = 0
    offset, end = min(bodies), max(bodies) + 1
    while offset < end:
        result = await admin.pull(queue, offset, _PULL_BATCH)
        if result.status is not PullStatus.FOUND:
            break
        for message in result.messages:
            if bodies.get(message.queue_offset) == message.body:
                found += 1
        offset = result.next_begin_offset
    return found


def rss_mib(pid: int | None) -> float | None:
    """Anonymous resident memory of process ``pid`` in MiB (``RssAnon``), None when
    unreadable."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError):
        return None
    return None


@dataclasses.dataclass(slots=True)
class Memory:
    """One process's anonymous resident memory in MiB: before the flood, its peak, after."""

    before: float | None = None
    peak: float | None = None
    after: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class RssWatch:
    """The anonymous resident memory of named processes, sampled while :meth:`watching`."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self._pids = pids
        self.memory = {name: Memory(before=rss_mib(pid)) for name, pid in pids.items()}

    def _sample(self) -> None:
        for name, pid in self._pids.items():
            now = rss_mib(pid)
            memory = self.memory[name]
            if now is not None:
                memory.peak = max(memory.peak or 0.0, now)
                memory.after = now

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self._run())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._sample()

    async def _run(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(_SAMPLE_EVERY)

    def as_dict(self) -> dict[str, Any]:
        return {name: memory.as_dict() for name, memory in self.memory.items()}

    def lines(self) -> Sequence[str]:
        out = []
        for name, m in self.memory.items():
            if m.before is not None:
                out.append(f"{name} RssAnon: {m.before:.1f} MiB before, {m.peak or 0:.1f} MiB at "
                           f"most during, {m.after or 0:.1f} MiB after")  # fmt: skip
        return out
