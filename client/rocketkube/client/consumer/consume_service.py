"""Running a push consumer's listener over pulled messages, concurrently or in order.

- :class:`ConcurrentConsumeService` (Java ``ConsumeMessageConcurrentlyService``):
  ``consume_concurrency`` worker tasks take batches of ``consume_batch_size`` messages from
  one FIFO. A batch's RECONSUME_LATER hands each message back through ``send_back``
  (clustering); a message that cannot be handed back is consumed again here after
  ``reconsume_delay`` seconds. Broadcasting drops failed messages, as Java does.
- :class:`OrderlyConsumeService` (Java ``ConsumeMessageOrderlyService``): one task per
  queue consumes its messages strictly in offset order, a batch at a time, while the queue
  is locked (clustering); SUSPEND_CURRENT_QUEUE_A_MOMENT retries the same batch after a
  pause, and a clustering batch that reached ``max_reconsume_times`` goes to the DLQ.

Either way the consumed messages leave the :class:`ProcessQueue` and its committable offset
goes to the offset store; results for a queue this consumer lost meanwhile are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from rocketkube.client.consumer.listener import (
    ConsumeContext,
    MessageListener,
    OrderlyMessageListener,
    call_listener,
)
from rocketkube.client.consumer.offset_store import OffsetStore
from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message.model import MessageExt

__all__ = ["ConcurrentConsumeService", "OrderlyConsumeService", "SendBack"]

log = logging.getLogger(__name__)

SendBack = Callable[[MessageExt, MessageQueue, int], Awaitable[bool]]
"""``send_back(message, queue, delay_level) -> handed back?``"""

#: A delay level that sends a message straight to the DLQ.
_DLQ_LEVEL: Final = -1


@dataclasses.dataclass(slots=True)
class _Request:
    queue: MessageQueue
    process_queue: ProcessQueue
    messages: list[MessageExt]


class ConcurrentConsumeService:
    """Worker tasks running a concurrent listener (see the module docstring)."""

    def __init__(
        self,
        listener: MessageListener,
        offset_store: OffsetStore,
        send_back: SendBack,
        *,
        clustering: bool,
        concurrency: int,
        batch_size: int,
        reconsume_delay: float,
    ) -> None:
        self._listener = listener
        self._store = offset_store
        self._send_back = send_back
        self._clustering = clustering
        self._concurrency = concurrency
        self._batch_size = batch_size
        self._reconsume_delay = reconsume_delay
        self._requests: asyncio.Queue[_Request] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Task[None]] = set()
        self._later: set[asyncio.Task[None]] = set()
        self._closing = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._workers = [loop.create_task(self._work()) for _ in range(self._concurrency)]

    def submit(self, queue: MessageQueue, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        """Queue ``messages`` (already held by ``pq``) for the listener, in batches."""
        for i in range(0, len(messages), self._batch_size):
            self._requests.put_nowait(_Request(queue, pq, messages[i : i + self._batch_size]))

    async def close(self, timeout: float) -> None:
        """Stop taking batches; wait up to ``timeout`` s for running ones, cancel the rest.

        Unfinished messages stay in their process queues, below the committable offset,
        so the group consumes them again.
        """
        self._closing = True
        for task in self._later:
            task.cancel()
        idle = [w for w in self._workers if w not in self._busy]
        for worker in idle:
            worker.cancel()
        if self._busy:
            await asyncio.wait(set(self._busy), timeout=timeout)
        for worker in self._workers:
            worker.cancel()
        for task in [*self._workers, *self._later]:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers = []

    async def _work(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        while not self._closing:
            request = await self._requests.get()
            self._busy.add(task)
            try:
                await self._consume(request)
            except Exception:
                log.exception("consuming %s failed", request.queue)
            finally:
                self._busy.discard(task)

    async def _consume(self, request: _Request) -> None:
        pq = request.process_queue
        if pq.dropped:
            return
        context = ConsumeContext(request.queue)
        ok = await call_listener(self._listener, request.messages, context)
        if pq.dropped:
            return
        done = request.messages
        if not ok and self._clustering:
            failed = [
                m
                for m in request.messages
                if not await self._send_back(m, request.queue, context.delay_level)
            ]
            if failed:
                for message in failed:
                    message.reconsume_times += 1
                self._consume_later(_Request(request.queue, pq, failed))
                done = [m for m in request.messages if m not in failed]
        elif not ok:
            log.warning(
                "broadcasting: dropping %d failed message(s) of %s",
                len(request.messages),
                request.queue,
            )
        offset = pq.remove(done)
        if offset is not None and not pq.dropped:
            self._store.update(request.queue, offset, increase_only=True)

    def _consume_later(self, request: _Request) -> None:
        async def later() -> None:
            await asyncio.sleep(self._reconsume_delay)
            if not request.process_queue.dropped:
                self._requests.put_nowait(request)

        task = asyncio.get_running_loop().create_task(later())
        self._later.add(task)
        task.add_done_callback(self._later.discard)


class OrderlyConsumeService:
    """One serial consume task per queue (see the module docstring).

    ``may_consume(pq)`` says whether the queue may be consumed now (its broker lock is
    held and fresh, or locks are not needed).
    """

    def __init__(
        self,
        listener: OrderlyMessageListener,
        offset_store: OffsetStore,
        send_back: SendBack,
        may_consume: Callable[[ProcessQueue], bool],
        *,
        clustering: bool,
        concurrency: int,
        batch_size: int,
        suspend_seconds: float,
        max_reconsume_times: int,
    ) -> None:
        self._listener = listener
        self._store = offset_store
        self._send_back = send_back
        self._may_consume = may_consume
        self._clustering = clustering
        self._slots = asyncio.Semaphore(concurrency)
        self._batch_size = batch_size
        self._suspend = suspend_seconds
        self._max_reconsume_times = max_reconsume_times
        self._tasks: dict[MessageQueue, tuple[ProcessQueue, asyncio.Task[None]]] = {}
        self._wakeups: dict[MessageQueue, asyncio.Event] = {}

    def start(self) -> None:
        """Nothing to start: tasks are made per queue on first :meth:`submit`."""

    def submit(self, queue: MessageQueue, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        """Wake the queue's task (the messages are already in ``pq``)."""
        entry = self._tasks.get(queue)
        if entry is None or entry[0] is not pq or entry[1].done():
            wakeup = asyncio.Event()
            task = asyncio.get_running_loop().create_task(self._run(queue, pq, wakeup))
            self._tasks[queue] = (pq, task)
            self._wakeups[queue] = wakeup
        self._wakeups[queue].set()

    async def stop_queue(self, queue: MessageQueue, timeout: float) -> None:
        """Let the queue's running batch finish (up to ``timeout`` s), then stop its task."""
        entry = self._tasks.pop(queue, None)
        self._wakeups.pop(queue, None)
        if entry is None:
            return
        pq, task = entry
        pq.dropped = True
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), timeout)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def close(self, timeout: float) -> None:
        """:meth:`stop_queue` every queue, sharing ``timeout``."""
        queues = list(self._tasks)
        await asyncio.gather(*(self.stop_queue(q, timeout) for q in queues))

    async def _run(self, queue: MessageQueue, pq: ProcessQueue, wakeup: asyncio.Event) -> None:
        while not pq.dropped:
            if not self._may_consume(pq):
                await asyncio.sleep(0.1)
                continue
            messages = pq.take(self._batch_size)
            if not messages:
                wakeup.clear()
                await wakeup.wait()
                continue
            context = ConsumeContext(queue)
            async with self._slots:
                ok = await call_listener(self._listener, messages, context)
            if pq.dropped:
                return
            if not ok and self._clustering and await self._dead_letter(messages, queue):
                ok = True
            if ok:
                self._store.update(queue, pq.commit())
                continue
            pq.rollback()
            for message in messages:
                message.reconsume_times += 1
            await asyncio.sleep(
                self._suspend if context.suspend_seconds is None else context.suspend_seconds
            )

    async def _dead_letter(self, messages: list[MessageExt], queue: MessageQueue) -> bool:
        """Send the batch to the DLQ if every message used up its reconsume times."""
        if any(m.reconsume_times < self._max_reconsume_times for m in messages):
            return False
        for message in messages:
            if not await self._send_back(message, queue, _DLQ_LEVEL):
                return False
        return True
