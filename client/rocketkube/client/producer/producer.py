"""The asyncio producer: sends messages to the brokers a topic's route names.

A send (docs/protocol.md §4) resolves the topic's route (:mod:`.routing`), picks a queue
round robin, and sends SEND_MESSAGE_V2 (310) with the short header keys to that queue's
master; a batch goes as SEND_BATCH_MESSAGE (320) with ``m=true`` and a batch body
(docs/protocol.md §9.7). Every message gets a ``UNIQ_KEY`` (the id :attr:`SendResult.msg_id`
reports); bodies of ``compress_over`` bytes or more are zlib-compressed and flagged with
sysFlag 0x1. A transport error or a retriable broker error (see :mod:`.errors`) is retried
on another broker, up to ``retry_times_when_send_failed`` more times, within
``send_timeout`` seconds overall; sends to a chosen queue (``queue=`` or a selector) are
tried once. With ``send_latency_fault_enable`` the queue is chosen by :mod:`.latency_fault`
instead, which avoids brokers that failed or answered slowly.

Before the first send to a broker, and every ``heartbeat_interval`` seconds to every master
of the routes in use, the producer sends HEART_BEAT (34) declaring its group
(docs/protocol.md §7.1, §13.2): brokers then list it (GET_PRODUCER_CONNECTION_LIST) and can
reach it on that connection for CHECK_TRANSACTION_STATE (see :mod:`.transaction`).
:meth:`Producer.close` sends UNREGISTER_CLIENT (35). A message with ``TRAN_MSG=true`` gets
the PREPARED sysFlag, as Java's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NamedTuple, TypeVar

from rocketkube.client import errors as client_errors
from rocketkube.client import routing
from rocketkube.client.constructors import pick_settings
from rocketkube.client.lifecycle import AsyncLifecycle
from rocketkube.client.producer import latency_fault
from rocketkube.client.producer.auto_batch import AutoBatcher
from rocketkube.client.producer.links import ProducerLinks
from rocketkube.client.producer.outgoing import (
    Outgoing,
    prepare,
    prepare_batch,
    send_request,
    validate,
)
from rocketkube.client.producer.queue_selectors import (
    MessageQueueSelector,
    RoundRobinSelector,
    select_by_hash,
)
from rocketkube.client.producer.send_result import (
    SendResult,
    SendStatus,
    read_send_result,
)
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.common import acl, errors
from rocketkube.common.message import ids
from rocketkube.common.message.model import Message
from rocketkube.common.names import ClientId, GroupName
from rocketkube.common.protocol.send_headers import SendHeaderTemplate
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import not_supported
from rocketkube.common.remoting.tls import TlsConfig, client_config
from rocketkube.common.tasks import copy_outcome

__all__ = [
    "MessageQueueSelector",
    "Producer",
    "RoundRobinSelector",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "select_by_hash",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_DEFAULT_SETTINGS = ProducerSettings(group="")
"""What the keyword form builds when given no keyword (:func:`pick_settings`)."""


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


SendCallback = Callable[["asyncio.Future[SendResult]"], object]
"""Called with the finished future of :meth:`Producer.send_async` (result or exception)."""


class _Attempt(NamedTuple):
    """One try of a send: the queue it went to and when, and how it failed (if it did)."""

    info: routing.TopicPublishInfo
    target: routing.MessageQueue
    addr: str
    started: float
    deadline: float
    """Of the whole send, retries included (``time.monotonic()``)."""
    error: errors.RocketKubeError | None = None


class Producer(AsyncLifecycle):
    """An asyncio RocketMQ producer of group ``group``.

    ``namesrv_addr`` lists name servers separated by ``;``. ``send_timeout`` bounds a
    whole send, retries included (seconds); ``retry_times_when_send_failed`` is how many
    more brokers a failed send may try; bodies of ``compress_over`` bytes or more are
    compressed; larger than ``max_message_size`` bytes are refused. Routes are re-read
    every ``poll_name_server_interval`` seconds and brokers get a heartbeat every
    ``heartbeat_interval`` seconds. ``client_ip`` goes into every ``UNIQ_KEY`` and into
    :attr:`client_id`. ``send_latency_fault_enable`` turns on broker fault avoidance.
    ``tls``: ``True`` or a :class:`~rocketkube.common.remoting.tls.TlsConfig` connects
    to name servers and brokers with TLS. ``credentials``: ``(access_key, secret_key)``
    or a :class:`~rocketkube.common.acl.Credentials` signs every request (a broker with
    ``aclEnable=true``). The same options come as one
    :class:`~rocketkube.client.producer.settings.ProducerSettings` with ``settings=``
    (then neither ``group`` nor another option is given); :attr:`settings` holds them.

    ``auto_batch`` (Java's ``setAutoBatch``, off by default) gathers the messages that
    :meth:`send` and :meth:`send_async` are given for one topic (and one queue, when the
    caller chose it) for up to ``batch_max_delay_ms`` milliseconds or ``batch_max_bytes``
    of batch body, and sends them as one SEND_BATCH_MESSAGE: far fewer requests for many
    small messages, at the price of up to that delay per send. Each send still gets its own
    :class:`SendResult` (its own ``msg_id`` and ``queue_offset``); a failed batch fails
    every send in it with the batch's error, after the usual retries. Delayed, transactional
    and compressed (``compress_over``) messages and ``%RETRY%`` topics are sent alone, as
    are all messages while ``total_batch_max_bytes`` are waiting for an answer.

    Use ``async with Producer(...) as producer:`` or :meth:`start` and :meth:`close`.

    A process keeping thousands of sends in flight should settle its heap once started
    (:func:`rocketkube.common.runtime.settle_heap`): CPython's default collector walks
    every send in flight each 700 allocations, a cost that grows with the sends in flight.
    The producer never changes that process-wide setting itself.
    """

    def __init__(
        self,
        group: str | None = None,
        namesrv_addr: str = ProducerSettings.namesrv_addr,
        *,
        send_timeout: float = ProducerSettings.send_timeout,
        retry_times_when_send_failed: int = ProducerSettings.retry_times_when_send_failed,
        compress_over: int = ProducerSettings.compress_over,
        max_message_size: int = ProducerSettings.max_message_size,
        default_topic_queue_nums: int = ProducerSettings.default_topic_queue_nums,
        poll_name_server_interval: float = ProducerSettings.poll_name_server_interval,
        heartbeat_interval: float = ProducerSettings.heartbeat_interval,
        send_latency_fault_enable: bool = ProducerSettings.send_latency_fault_enable,
        client_ip: str = ProducerSettings.client_ip,
        auto_batch: bool = ProducerSettings.auto_batch,
        batch_max_delay_ms: int = ProducerSettings.batch_max_delay_ms,
        batch_max_bytes: int = ProducerSettings.batch_max_bytes,
        total_batch_max_bytes: int = ProducerSettings.total_batch_max_bytes,
        tls: TlsConfig | bool | None = ProducerSettings.tls,
        credentials: acl.CredentialsLike | None = ProducerSettings.credentials,
        settings: ProducerSettings | None = None,
    ) -> None:
        settings = pick_settings(
            settings,
            group,
            ProducerSettings(
                group=group or "",
                namesrv_addr=namesrv_addr,
                send_timeout=send_timeout,
                retry_times_when_send_failed=retry_times_when_send_failed,
                compress_over=compress_over,
                max_message_size=max_message_size,
                default_topic_queue_nums=default_topic_queue_nums,
                poll_name_server_interval=poll_name_server_interval,
                heartbeat_interval=heartbeat_interval,
                send_latency_fault_enable=send_latency_fault_enable,
                client_ip=client_ip,
                auto_batch=auto_batch,
                batch_max_delay_ms=batch_max_delay_ms,
                batch_max_bytes=batch_max_bytes,
                total_batch_max_bytes=total_batch_max_bytes,
                tls=tls,
                credentials=credentials,
            ),
            _DEFAULT_SETTINGS,
        )
        self.settings = settings
        self.group = GroupName(settings.group)
        self.namesrv_addrs = [a.strip() for a in settings.namesrv_addr.split(";") if a.strip()]
        self.tls = client_config(settings.tls)
        self.credentials = acl.credentials_of(settings.credentials)
        self.send_timeout = settings.send_timeout
        self.retry_times_when_send_failed = settings.retry_times_when_send_failed
        self.compress_over = settings.compress_over
        self.max_message_size = settings.max_message_size
        self.default_topic_queue_nums = settings.default_topic_queue_nums
        self._poll_interval = settings.poll_name_server_interval
        self.heartbeat_interval = settings.heartbeat_interval
        self.client_id = ClientId(f"{settings.client_ip}@{os.getpid()}#{uuid.uuid4().hex[:12]}")
        self._ids = ids.UniqueIdGenerator(settings.client_ip)
        self._faults = (
            latency_fault.LatencyFaultTolerance(_monotonic_ms)
            if settings.send_latency_fault_enable
            else None
        )
        self._client: RemotingClient | None = None
        self._routes: routing.RouteCache | None = None
        self._pending: set[asyncio.Future[Any]] = set()
        self._links = ProducerLinks(self.client_id, self.group, self.send_timeout)
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._closed = False
        self.auto_batch = settings.auto_batch
        self.batch_max_delay_ms = settings.batch_max_delay_ms
        self.batch_max_bytes = settings.batch_max_bytes
        self.total_batch_max_bytes = settings.total_batch_max_bytes
        self._batcher: AutoBatcher | None = None
        self._headers = self._header_template()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the client and start refreshing routes; ClientStateError once closed."""
        if self._closed:
            raise client_errors.ClientStateError("the producer is closed")
        if self._client is not None:
            return
        # group, queue nums and timeout may be set until now
        self._headers = self._header_template()
        self._links = ProducerLinks(self.client_id, self.group, self.send_timeout)
        self._client = RemotingClient(
            self,
            connect_timeout=self.send_timeout,
            timeout=self.send_timeout,
            tls=self.tls,
            credentials=self.credentials,
        )
        self._routes = routing.RouteCache(
            self._client,
            self.namesrv_addrs,
            timeout=self.send_timeout,
            poll_interval=self._poll_interval,
            default_topic_queue_nums=self.default_topic_queue_nums,
        )
        self._routes.start()
        self._heartbeat_task = asyncio.get_running_loop().create_task(
            self._links.heartbeat_forever(self.heartbeat_interval, self._started)
        )
        if self.auto_batch:
            self._batcher = AutoBatcher(
                self._send,
                self._spawn,
                max_delay=self.batch_max_delay_ms / 1000,
                max_bytes=self.batch_max_bytes,
                total_max_bytes=self.total_batch_max_bytes,
            )

    async def close(self) -> None:
        """Wait for pending :meth:`send_async` sends, unregister from the brokers, then close
        every connection."""
        self._closed = True
        if self._batcher is not None:
            self._batcher.flush_all()
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        routes, self._routes = self._routes, None
        client, self._client = self._client, None
        if routes is not None:
            await routes.close()
        if client is not None:
            await self._links.unregister()
            await client.close()

    def _started(self) -> tuple[RemotingClient, routing.RouteCache]:
        if self._client is None or self._routes is None:
            state = "closed" if self._closed else "not started"
            raise client_errors.ClientStateError(f"the producer is {state}")
        return self._client, self._routes

    # -- public sends --------------------------------------------------------------------

    async def fetch_publish_queues(self, topic: str) -> list[routing.MessageQueue]:
        """The writable queues of ``topic`` (``TBW102``'s, clamped, for a new topic)."""
        _, routes = self._started()
        return list((await routes.get(topic)).queues)

    async def send(
        self,
        message: Message,
        *,
        queue: routing.MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> SendResult:
        """Send ``message`` and wait for the broker's answer.

        With ``queue`` (or a ``selector``, called with the writable queues, the message and
        ``arg``) the message goes to that queue and is tried once; otherwise failures are
        retried on another broker. Raises :class:`MQBrokerError` for an error code, a
        :class:`~rocketkube.common.errors.RemotingError` for transport failures (a
        :class:`~rocketkube.common.errors.RemotingTimeoutError` when ``send_timeout``
        runs out) and :class:`MessageValidationError` for a message it will not send.
        """
        self._started()
        outgoing = self._prepare(message)
        if selector is not None and queue is None:
            queues = await self.fetch_publish_queues(message.topic)
            queue = selector(queues, message, arg)
        batched = None if self._batcher is None else self._batcher.add(message, outgoing, queue)
        if batched is not None:
            return await batched
        first = self._start(outgoing, queue)
        if first is None:
            return await self._send(outgoing, queue)
        attempt, reply = first
        if reply is None:
            return await self._send(outgoing, queue, attempt)
        try:
            return self._finish(outgoing, queue, attempt, await reply)
        except (errors.RemotingError, client_errors.MQClientError) as exc:
            if not self._note_failure(queue, attempt, exc):
                raise
            failed = attempt._replace(error=exc)
        return await self._send(outgoing, queue, failed)

    async def send_oneway(
        self, message: Message, *, queue: routing.MessageQueue | None = None
    ) -> None:
        """Send ``message`` without waiting for an answer (one attempt, no result)."""
        client, routes = self._started()
        outgoing = self._prepare(message)
        info = await routes.get(outgoing.topic)
        if queue is None:
            queue = routing.select_queue(info.queues, None, info.next_index())
        conn = await self._links.connection(client, self._master(info, queue))
        conn.invoke_oneway(send_request(outgoing, self._headers, queue.queue_id, oneway=True))

    def send_async(
        self, message: Message, callback: SendCallback | None = None
    ) -> asyncio.Future[SendResult]:
        """Start sending ``message``; the future gives the :class:`SendResult` or the error.

        ``callback``, if given, is called with the finished future. :meth:`close` waits for
        the sends still running. Validation errors are raised here, not in the future.
        """
        self._started()
        outgoing = self._prepare(message)
        future = None if self._batcher is None else self._batcher.add(message, outgoing, None)
        if future is None:
            future = self._send_without_task(outgoing)
        if callback is not None:
            future.add_done_callback(callback)
        return future

    async def send_batch(
        self, messages: Sequence[Message], *, queue: routing.MessageQueue | None = None
    ) -> SendResult:
        """Send messages of one topic as one batch (docs/protocol.md §9.7); one result for
        all of them.

        Batches are never compressed; DELAY and ``%RETRY%`` topics are refused, as in Java.
        """
        self._started()
        outgoing = prepare_batch(messages, self.max_message_size, self._set_unique_key)
        return await self._send(outgoing, queue)

    # -- internals -----------------------------------------------------------------------

    def _spawn(self, send: Coroutine[object, object, _T]) -> asyncio.Task[_T]:
        """Run ``send`` as a task :meth:`close` waits for."""
        task = asyncio.get_running_loop().create_task(send)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    def _send_without_task(self, outgoing: Outgoing) -> asyncio.Future[SendResult]:
        """:meth:`send_async`'s future: the first attempt's answer settles it from a
        callback, so only a retry (or a first send to a broker) costs a task."""
        first = self._start(outgoing, None)
        if first is None:
            return self._spawn(self._send(outgoing, None))
        attempt, reply = first
        if reply is None:
            return self._spawn(self._send(outgoing, None, attempt))
        future: asyncio.Future[SendResult] = asyncio.get_running_loop().create_future()
        self._pending.add(future)
        reply.add_done_callback(functools.partial(self._settle, outgoing, attempt, future))
        return future

    def _settle(
        self,
        outgoing: Outgoing,
        attempt: _Attempt,
        future: asyncio.Future[SendResult],
        reply: asyncio.Future[RemotingCommand],
    ) -> None:
        """Complete ``future`` from the first attempt's ``reply``, or retry in a task."""
        self._pending.discard(future)
        if future.done():  # cancelled by the caller
            return
        try:
            result = self._finish(outgoing, None, attempt, reply.result())
        except (errors.RemotingError, client_errors.MQClientError) as exc:
            if self._note_failure(None, attempt, exc):
                retry = self._spawn(self._send(outgoing, None, attempt._replace(error=exc)))
                retry.add_done_callback(functools.partial(copy_outcome, future))
            else:
                future.set_exception(exc)
        except Exception as exc:  # a bug: the caller's future still gets it
            future.set_exception(exc)
        else:
            future.set_result(result)

    def _prepare(self, message: Message) -> Outgoing:
        """Validate, set ``UNIQ_KEY`` and compress: the request minus its queue."""
        validate(message, self.max_message_size)
        return prepare(message, self._set_unique_key(message), self.compress_over)

    def _set_unique_key(self, message: Message) -> str:
        unique = message.unique_key
        if unique is None:
            unique = self._ids.next_id()
            message.unique_key = unique
        return unique

    def _header_template(self) -> SendHeaderTemplate:
        return SendHeaderTemplate(self.group, routing.DEFAULT_TOPIC, self.default_topic_queue_nums)

    @staticmethod
    def _master(info: routing.TopicPublishInfo, queue: routing.MessageQueue) -> str:
        addr = info.master_addr(queue.broker_name)
        if addr is None:
            raise client_errors.RouteNotFoundError(
                f"no master address for broker {queue.broker_name!r}"
            )
        return addr

    def _start(
        self, outgoing: Outgoing, queue: routing.MessageQueue | None
    ) -> tuple[_Attempt, asyncio.Future[RemotingCommand] | None] | None:
        """The first attempt of a send, made without a coroutine: ``None`` when the route
        is not cached, else the attempt and the broker's reply to come, or ``None`` for
        the reply when the chosen broker has no open connection yet (:meth:`_send` goes
        on from there). In the common case a coroutine per step costs more than the step.
        """
        routes = self._routes
        info = None if routes is None else routes.cached(outgoing.topic)
        if not info:
            return None
        self._links.topics.add(info.topic)
        started = time.monotonic()
        target = queue or self._select(info, None)
        addr = info.master_addr(target.broker_name)
        attempt = _Attempt(info, target, addr or "", started, started + self.send_timeout)
        conn = self._links.registered.get(addr) if addr is not None else None
        if conn is None or not conn.is_open:
            return attempt, None
        request = send_request(outgoing, self._headers, target.queue_id, oneway=False)
        try:
            return attempt, conn.invoke_future(request, self.send_timeout)
        except errors.RemotingError:  # not sent: the retry loop tries again and handles it
            return attempt, None

    def _finish(
        self,
        outgoing: Outgoing,
        queue: routing.MessageQueue | None,
        attempt: _Attempt,
        response: RemotingCommand,
    ) -> SendResult:
        """The result of an attempt's answer (the broker's error raised)."""
        result = read_send_result(outgoing.msg_id, attempt.target, response)
        if queue is None:
            self._record_latency(attempt.target, attempt.started, failed=False)
        return result

    def _note_failure(
        self, queue: routing.MessageQueue | None, attempt: _Attempt, exc: errors.RocketKubeError
    ) -> bool:
        """Record a failed attempt; whether it may be retried elsewhere."""
        if queue is None:
            self._record_latency(attempt.target, attempt.started, failed=True)
        if not exc.retriable:
            return False
        log.info("send to %s failed, retrying elsewhere: %s", attempt.target.broker_name, exc)
        return True

    async def _send(
        self,
        outgoing: Outgoing,
        queue: routing.MessageQueue | None,
        first: _Attempt | None = None,
    ) -> SendResult:
        """Send with retries on other brokers, within ``send_timeout`` overall; from the
        ``first`` attempt :meth:`_start` chose (and, with its ``error``, made) if given."""
        client, routes = self._started()
        attempts = 1 if queue is not None else 1 + max(0, self.retry_times_when_send_failed)
        last_broker: str | None = None
        last_error: errors.RocketKubeError | None = None
        target: routing.MessageQueue | None = None
        addr: str | None = None
        if first is None:
            deadline = time.monotonic() + self.send_timeout
            info = routes.cached(outgoing.topic) or await routes.get(outgoing.topic)
            self._links.topics.add(info.topic)
        elif first.error is None:
            deadline, info, target = first.deadline, first.info, first.target
        else:
            deadline, info, last_error = first.deadline, first.info, first.error
            last_broker, addr, attempts = first.target.broker_name, first.addr, attempts - 1
            info = await self._after_failure(client, routes, info, addr, last_error, deadline)
        for _ in range(attempts):
            started = time.monotonic()
            if started >= deadline:
                break
            target = target or queue or self._select(info, last_broker)
            attempt = _Attempt(info, target, "", started, deadline)
            try:
                addr = self._master(info, target)
                conn = self._links.registered.get(addr)
                if conn is None or not conn.is_open:
                    conn = await self._links.connection(client, addr)
                request = send_request(outgoing, self._headers, target.queue_id, oneway=False)
                response = await conn.invoke(request, deadline - time.monotonic())
                return self._finish(outgoing, queue, attempt, response)
            except (errors.RemotingError, client_errors.MQClientError) as exc:
                if not self._note_failure(queue, attempt, exc):
                    raise
                last_error, last_broker, target = exc, target.broker_name, None
            info = await self._after_failure(client, routes, info, addr, last_error, deadline)
        if last_error is None or time.monotonic() >= deadline:
            raise errors.RemotingTimeoutError(
                f"send to {outgoing.topic!r} took over {self.send_timeout} s"
            ) from last_error
        raise last_error

    async def _after_failure(
        self,
        client: RemotingClient,
        routes: routing.RouteCache,
        info: routing.TopicPublishInfo,
        addr: str | None,
        error: errors.RocketKubeError,
        deadline: float,
    ) -> routing.TopicPublishInfo:
        """Drop a broken connection and re-read the route before the next attempt."""
        if (
            addr is not None
            and isinstance(error, errors.RemotingError)
            and not isinstance(error, errors.RemotingTimeoutError)
        ):
            # A broken connection is dropped; a slow answer is not (Java's default,
            # clientCloseSocketIfTimeout=false): closing would fail every other send
            # in flight on it, and a loaded broker would see a storm of reconnects.
            client.close_connection(addr)
        return await self._refresh_quietly(routes, info, deadline)

    def _select(
        self, info: routing.TopicPublishInfo, last_broker: str | None
    ) -> routing.MessageQueue:
        if self._faults is not None:
            return latency_fault.select_queue(info.queues, self._faults, info.next_index())
        return routing.select_queue(info.queues, last_broker, info.next_index())

    def _record_latency(self, queue: routing.MessageQueue, started: float, *, failed: bool) -> None:
        if self._faults is not None:
            latency = int((time.monotonic() - started) * 1000)
            self._faults.update(queue.broker_name, latency, isolation=failed)

    # -- broker requests -------------------------------------------------------------------

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        """Serve what brokers send on this producer's connections. A plain producer has no
        transaction listener: CHECK_TRANSACTION_STATE is logged and left unanswered."""
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            log.warning("transaction check from %s ignored: %s is not a TransactionProducer",
                        conn.remote_address, self.group)  # fmt: skip
            return None
        return not_supported(request.code)

    @staticmethod
    async def _refresh_quietly(
        routes: routing.RouteCache, info: routing.TopicPublishInfo, deadline: float
    ) -> routing.TopicPublishInfo:
        """The route re-read after a failure (before ``deadline``), else the old one."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return info
        try:
            return await asyncio.wait_for(routes.refresh(info.topic), remaining)
        except (TimeoutError, errors.RemotingError, client_errors.MQClientError):
            return info
