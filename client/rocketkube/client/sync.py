"""A thin synchronous facade over the asyncio SDK, for scripts and Spark executors.

Each facade object owns one background thread running an event loop (uvloop when
installed) and the asyncio client living on it; a call submits a coroutine to that loop and
blocks for its result. Nothing is shared between objects, so several may live in one process
and each is safe to use from any thread::

    from rocketkube.client import Message
    from rocketkube.client.sync import Producer

    with Producer("my-group", "127.0.0.1:9876") as producer:
        result = producer.send(Message("MyTopic", b"hello"))

:meth:`Producer.send_async` returns a :class:`concurrent.futures.Future`, so synchronous
code can keep many sends in flight. :class:`PushConsumer` calls plain blocking listeners on a
pool of threads, as Java's push consumer does, so they may write to a database or call a
service without stalling the pulls. Every facade has :meth:`SyncClient.run` for the rest of
the asyncio client's API: ``admin.run(lambda a: a.topic_route("MyTopic"))``, and
:meth:`SyncClient.submit` to start such a call without waiting for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from rocketkube.client.admin import client as aio_admin
from rocketkube.client.admin.settings import AdminSettings
from rocketkube.client.consumer import lite_pull as aio_lite_pull
from rocketkube.client.consumer import push as aio_push
from rocketkube.client.consumer.listener import ConsumeContext, ConsumeOrderlyStatus, ConsumeStatus
from rocketkube.client.consumer.selector import Selector
from rocketkube.client.consumer.settings import ConsumerSettings
from rocketkube.client.errors import ClientStateError
from rocketkube.client.lifecycle import AsyncLifecycle
from rocketkube.client.producer import producer as aio_producer
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.client.routing import MessageQueue
from rocketkube.common.message.model import Message, MessageExt

__all__ = ["AdminClient", "LitePullConsumer", "Producer", "PushConsumer", "SyncClient"]

C = TypeVar("C", bound=AsyncLifecycle)
T = TypeVar("T")
S = TypeVar("S", ConsumeStatus, ConsumeOrderlyStatus)
BlockingListener = Callable[[list[MessageExt], ConsumeContext], S | None]
"""A listener that may block: ``listener(messages, context) -> status`` (None: success)."""


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class SyncClient(Generic[C]):
    """Runs one asyncio client of type ``C`` on a private loop thread.

    ``factory`` builds the asyncio client; it runs on the loop thread, so clients that
    create asyncio objects in their constructor get the right loop. Use ``with`` or
    :meth:`start` and :meth:`close`; :meth:`close` also stops the thread.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        self._loop = _new_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"rocketkube-{type(self).__name__}", daemon=True
        )
        self._thread.start()
        self._closed = False

        async def build() -> C:
            return factory()

        try:
            self._client = self._submit(build()).result()
        except BaseException:
            self._stop_loop()
            raise

    @property
    def aio(self) -> C:
        """The asyncio client; only to be used through :meth:`run` or on its loop."""
        return self._client

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coro.close()
            raise ClientStateError(f"the {type(self).__name__} is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, call: Callable[[C], Awaitable[T]], timeout: float | None = None) -> T:
        """Run ``call(client)`` on the loop and wait for its result (or its exception).

        A ``timeout`` (seconds) that runs out raises :class:`TimeoutError` and cancels the
        call.
        """

        async def invoke() -> T:
            return await call(self._client)

        future = self._submit(invoke())
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result in {timeout} s") from None

    def submit(self, call: Callable[[C], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Start ``call(client)`` on the loop and return at once: the future gives its
        result or its exception, and cancelling it cancels the call. Lets a caller work
        while the loop fetches what it needs next."""

        async def invoke() -> T:
            return await call(self._client)

        return self._submit(invoke())

    def _on_loop(self, call: Callable[[C], T]) -> T:
        """Run a plain (not async) method of the client on its loop thread."""

        async def invoke() -> T:
            return call(self._client)

        return self._submit(invoke()).result()

    def _stop_loop(self) -> None:
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def start(self) -> None:
        """Start the asyncio client (``with`` does it for you)."""
        self.run(lambda client: client.start())

    def close(self) -> None:
        """Close the asyncio client, then stop and join the loop thread; idempotent."""
        if self._closed:
            return
        try:
            self.run(lambda client: client.close())
        finally:
            self._stop_loop()

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Producer(SyncClient[aio_producer.Producer]):
    """:class:`rocketkube.client.Producer`, blocking; the same arguments (``settings=`` a
    :class:`~rocketkube.client.producer.settings.ProducerSettings`, or keywords)."""

    def __init__(
        self,
        group: str | None = None,
        namesrv_addr: str = ProducerSettings.namesrv_addr,
        *,
        settings: ProducerSettings | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            lambda: aio_producer.Producer(group, namesrv_addr, settings=settings, **options)
        )

    def send(
        self,
        message: Message,
        *,
        queue: MessageQueue | None = None,
        selector: aio_producer.MessageQueueSelector | None = None,
        arg: object = None,
    ) -> aio_producer.SendResult:
        """Blocking :meth:`rocketkube.client.Producer.send`: the result, or its exception."""
        return self.run(lambda p: p.send(message, queue=queue, selector=selector, arg=arg))

    def send_async(self, message: Message) -> concurrent.futures.Future[aio_producer.SendResult]:
        """Start a send and return at once; the future gives the result or the error."""

        async def send() -> aio_producer.SendResult:
            return await self._client.send(message)

        return self._submit(send())

    def send_oneway(self, message: Message, *, queue: MessageQueue | None = None) -> None:
        """Blocking :meth:`rocketkube.client.Producer.send_oneway`."""
        self.run(lambda p: p.send_oneway(message, queue=queue))

    def send_batch(
        self, messages: Sequence[Message], *, queue: MessageQueue | None = None
    ) -> aio_producer.SendResult:
        """Blocking :meth:`rocketkube.client.Producer.send_batch`."""
        return self.run(lambda p: p.send_batch(messages, queue=queue))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The writable queues of ``topic``."""
        return self.run(lambda p: p.fetch_publish_queues(topic))


class LitePullConsumer(SyncClient[aio_lite_pull.LitePullConsumer]):
    """:class:`rocketkube.client.LitePullConsumer`, blocking; the same arguments (``settings=``
    a :class:`~rocketkube.client.consumer.settings.ConsumerSettings`, or keywords)."""

    def __init__(
        self,
        group: str | None = None,
        namesrv_addr: str = ConsumerSettings.namesrv_addr,
        *,
        settings: ConsumerSettings | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            lambda: aio_lite_pull.LitePullConsumer(
                group, namesrv_addr, settings=settings, **options
            )
        )

    def subscribe(self, topic: str, expression: Selector = "*") -> None:
        """Subscribe to ``topic`` with a tag expression (``TagA || TagB``, ``*``) or a
        ``MessageSelector``."""
        self.run(lambda c: c.subscribe(topic, expression))

    def assign(self, queues: Iterable[MessageQueue], expression: Selector = "*") -> None:
        """Consume exactly these queues (no rebalancing)."""
        self.run(lambda c: c.assign(list(queues), expression))

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer reads now."""
        return self._on_loop(lambda c: c.assignment())

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """Messages fetched since the last poll, waiting up to ``timeout`` seconds."""
        return self.run(lambda c: c.poll(timeout))

    def commit(self) -> None:
        """Commit the offsets of everything polled so far to the broker."""
        self.run(lambda c: c.commit())

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Read ``queue`` from ``offset`` on the next poll."""
        self._on_loop(lambda c: c.seek(queue, offset))

    def seek_to_begin(self, queue: MessageQueue) -> None:
        """Read ``queue`` from its first message."""
        self.run(lambda c: c.seek_to_begin(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        """Read only messages that arrive in ``queue`` from now on."""
        self.run(lambda c: c.seek_to_end(queue))

    def committed(self, queue: MessageQueue) -> int | None:
        """The group's committed offset of ``queue`` (None if none)."""
        return self.run(lambda c: c.committed(queue))


class AdminClient(SyncClient[aio_admin.AdminClient]):
    """:class:`rocketkube.client.AdminClient`, blocking: ``admin.run(lambda a: ...)`` calls
    any of its methods, e.g. ``admin.run(lambda a: a.topic_list())``. The same arguments
    (``settings=`` an :class:`~rocketkube.client.admin.settings.AdminSettings`, or
    keywords)."""

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        settings: AdminSettings | None = None,
        **options: Any,
    ) -> None:
        super().__init__(lambda: aio_admin.AdminClient(namesrv_addr, settings=settings, **options))


class PushConsumer(SyncClient[aio_push.PushConsumer]):
    """:class:`rocketkube.client.PushConsumer` with blocking listeners; the same arguments
    (``settings=`` a :class:`~rocketkube.client.consumer.settings.ConsumerSettings`, or keywords).

    Listeners run on a pool of ``consume_concurrency`` threads (default 20, Java's
    ``consumeThreadMax``), never on the event loop, so they may block. Register a listener
    and subscribe, then ``with`` (or :meth:`start`) consumes until :meth:`close`, which
    waits for running listeners up to ``shutdown_timeout`` and persists offsets.
    """

    def __init__(
        self,
        group: str | None = None,
        namesrv_addr: str = ConsumerSettings.namesrv_addr,
        *,
        settings: ConsumerSettings | None = None,
        **options: Any,
    ) -> None:
        name = group if group is not None else settings.group if settings is not None else ""
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=int(options.get("consume_concurrency", 20)),
            thread_name_prefix=f"rocketkube-consume-{name}",
        )
        try:
            super().__init__(
                lambda: aio_push.PushConsumer(group, namesrv_addr, settings=settings, **options)
            )
        except BaseException:
            self._pool.shutdown(wait=False)
            raise

    def subscribe(self, topic: str, expression: Selector = "*") -> None:
        """Subscribe to ``topic`` with a tag expression (``TagA || TagB``, ``*``) or a
        ``MessageSelector``."""
        self.run(lambda c: c.subscribe(topic, expression))

    def register_listener(self, listener: BlockingListener[ConsumeStatus]) -> None:
        """Consume concurrently: ``listener(messages, context) -> ConsumeStatus``."""
        threaded = self._threaded(listener)
        self._on_loop(lambda c: c.register_listener(threaded))

    def register_orderly_listener(self, listener: BlockingListener[ConsumeOrderlyStatus]) -> None:
        """Consume each queue in order: ``listener(messages, context) -> ConsumeOrderlyStatus``."""
        threaded = self._threaded(listener)
        self._on_loop(lambda c: c.register_orderly_listener(threaded))

    def assignment(self) -> set[MessageQueue]:
        """The queues this member consumes now (after the last rebalance)."""
        return self._on_loop(lambda c: c.assignment())

    def close(self) -> None:
        """Stop consuming (see the class docstring), then let go of the listener threads;
        a listener still blocked past ``shutdown_timeout`` finishes on its own."""
        try:
            super().close()
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _threaded(
        self, listener: BlockingListener[S]
    ) -> Callable[[list[MessageExt], ConsumeContext], Awaitable[S | None]]:
        pool = self._pool

        async def run_in_pool(messages: list[MessageExt], context: ConsumeContext) -> S | None:
            return await asyncio.get_running_loop().run_in_executor(
                pool, listener, messages, context
            )

        return run_in_pool
