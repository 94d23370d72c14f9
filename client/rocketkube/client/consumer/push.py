"""The push consumer: the SDK pulls, your listener is called (Java DefaultMQPushConsumer).

Per queue this consumer owns, a pull loop long-polls PULL_MESSAGE (11, docs/protocol.md §5)
and puts the messages into the queue's
:class:`~rocketkube.client.consumer.process_queue.ProcessQueue`, from which a consume service
(:mod:`.consume_service`) calls the listener. The pieces:

- **Rebalance** (:mod:`.rebalance`, docs/protocol.md §13.3) every ``rebalance_interval``
  seconds and at once when a broker sends NOTIFY_CONSUMER_IDS_CHANGED (40): the consumer
  takes its share of each topic's queues through the ``allocate`` strategy
  (:mod:`.allocation`), or every queue in broadcasting. Clustering also consumes
  ``%RETRY%<group>``, handing listeners the original topic (``RETRY_TOPIC``).
- **Flow control**: a queue holding ``pull_threshold_for_queue`` messages (or
  ``pull_threshold_size_for_queue_mib``) is not pulled until the listener catches up
  (re-checked every 50 ms); a pull never asks for more than the room left, so a queue
  never holds more than the threshold.
- **Offsets**: the smallest offset still held, or one past the last consumed
  (:mod:`.offset_store`): on the brokers in clustering (every ``persist_interval``, also
  piggy-backed on pulls), in a local file in broadcasting (``offset_store_dir``).
- **Orderly** listeners (clustering) consume a queue only while this client holds its
  broker lock: LOCK_BATCH_MQ (41) when a queue is gained and every ``lock_interval``,
  UNLOCK_BATCH_MQ (42) when it is dropped (:mod:`.queue_locks`; a broker that does not
  know code 41 is treated as granting every lock: order then holds within one consumer).
- **Broker requests**: NOTIFY_CONSUMER_IDS_CHANGED (40), RESET_CONSUMER_CLIENT_OFFSET
  (220: the listed queues restart from the given offsets) and GET_CONSUMER_RUNNING_INFO
  (307: :meth:`PushConsumer.running_info`, with the pull and consume figures of
  :mod:`.consume_stats` measured around every pull and listener call).
- HEART_BEAT (34) to every broker of the subscribed topics every ``heartbeat_interval``;
  :meth:`PushConsumer.close` stops pulling, waits up to ``shutdown_timeout`` for running
  listeners, persists offsets, unlocks, and sends UNREGISTER_CLIENT (35).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from rocketkube.client import errors as client_errors
from rocketkube.client.constructors import pick_settings
from rocketkube.client.consumer import queue_locks, selector
from rocketkube.client.consumer import running_info as ri
from rocketkube.client.consumer.allocation import AllocateStrategy, allocate_averagely
from rocketkube.client.consumer.consume_service import (
    ConcurrentConsumeService,
    OrderlyConsumeService,
)
from rocketkube.client.consumer.consume_stats import ConsumeStatsRecorder
from rocketkube.client.consumer.core import (
    FROM_WHERE,
    ConsumeFrom,
    ConsumerCore,
    make_client_id,
    retry_topic,
)
from rocketkube.client.consumer.listener import (
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageListener,
    OrderlyMessageListener,
    measured_listener,
)
from rocketkube.client.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteOffsetStore,
)
from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.client.consumer.push_running_info import push_running_info
from rocketkube.client.consumer.rebalance import Membership, OwnedQueue, Rebalancer
from rocketkube.client.consumer.send_back import restore_topics, send_back
from rocketkube.client.consumer.settings import ConsumerSettings
from rocketkube.client.lifecycle import AsyncLifecycle
from rocketkube.client.routing import MessageQueue
from rocketkube.common import acl, errors
from rocketkube.common.message.model import MessageExt
from rocketkube.common.names import GroupName, TopicName
from rocketkube.common.protocol import running_info as rip
from rocketkube.common.protocol.consumer_headers import (
    ResetOffsetBody,
    ResetOffsetRequestHeader,
)
from rocketkube.common.protocol.heartbeat import (
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
    parse_subscription,
)
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import not_supported
from rocketkube.common.remoting.tls import TlsConfig, client_config
from rocketkube.common.tasks import cancel_and_wait

__all__ = ["MessageModel", "PushConsumer"]

log = logging.getLogger(__name__)

DEFAULT_OFFSET_STORE_DIR: Final = Path("~/.rocketkube_offsets")
_FLOW_CONTROL_DELAY: Final = 0.05
_LOCK_RETRY_DELAY: Final = 0.5
_MIB: Final = 1024 * 1024
_DEFAULT_SETTINGS: Final = ConsumerSettings(group="")
"""What the keyword form builds when given no shared option (:func:`pick_settings`)."""


class PushConsumer(AsyncLifecycle):
    """A RocketMQ push consumer of group ``group`` (see the module docstring).

    ``namesrv_addr`` lists name servers separated by ``;``. Register one listener with
    :meth:`register_listener` (or :meth:`register_orderly_listener`) and
    :meth:`subscribe` before :meth:`start`; then ``async with PushConsumer(...)`` runs it.
    Times are seconds. ``instance_name`` names this client (``ip@instance``); by default
    every consumer object is its own group member. Broadcasting offsets go to
    ``offset_store_dir/<ip>@<instance or DEFAULT>/<group>/offsets.json``. A compressed
    body is inflated up to ``max_inflated_body_size`` bytes; one that inflates further
    reaches the listener as stored (see :mod:`rocketkube.client.consumer.pull`). ``tls``: ``True``
    or a :class:`~rocketkube.common.remoting.tls.TlsConfig` connects with TLS.
    ``credentials``: ``(access_key, secret_key)`` or a
    :class:`~rocketkube.common.acl.Credentials` signs every request. The options both
    consumers share come as one :class:`~rocketkube.client.consumer.settings.ConsumerSettings`
    with ``settings=`` instead (then neither ``group`` nor a shared option is given).
    """

    def __init__(
        self,
        group: str | None = None,
        namesrv_addr: str = ConsumerSettings.namesrv_addr,
        *,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from: ConsumeFrom = ConsumerSettings.consume_from,
        consume_timestamp_ms: int | None = ConsumerSettings.consume_timestamp_ms,
        allocate: AllocateStrategy = allocate_averagely,
        consume_concurrency: int = 20,
        consume_batch_size: int = 1,
        pull_batch_size: int = ConsumerSettings.pull_batch_size,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue_mib: int = 100,
        rebalance_interval: float = 20.0,
        persist_interval: float = 5.0,
        heartbeat_interval: float = 30.0,
        lock_interval: float = 20.0,
        max_reconsume_times: int = 16,
        reconsume_delay: float = 5.0,
        suspend_current_queue_time: float = 1.0,
        suspend_timeout: float = 15.0,
        pull_error_delay: float = 1.0,
        shutdown_timeout: float = 5.0,
        request_timeout: float = ConsumerSettings.request_timeout,
        client_ip: str = ConsumerSettings.client_ip,
        instance_name: str | None = None,
        offset_store_dir: Path | str | None = None,
        max_inflated_body_size: int = ConsumerSettings.max_inflated_body_size,
        tls: TlsConfig | bool | None = ConsumerSettings.tls,
        credentials: acl.CredentialsLike | None = ConsumerSettings.credentials,
        settings: ConsumerSettings | None = None,
    ) -> None:
        settings = pick_settings(
            settings,
            group,
            ConsumerSettings(
                group=group or "",
                namesrv_addr=namesrv_addr,
                consume_from=consume_from,
                consume_timestamp_ms=consume_timestamp_ms,
                pull_batch_size=pull_batch_size,
                request_timeout=request_timeout,
                client_ip=client_ip,
                max_inflated_body_size=max_inflated_body_size,
                tls=tls,
                credentials=credentials,
            ),
            _DEFAULT_SETTINGS,
        )
        for name, value in (
            ("consume_concurrency", consume_concurrency),
            ("consume_batch_size", consume_batch_size),
            ("pull_threshold_for_queue", pull_threshold_for_queue),
        ):
            if value < 1:
                raise ValueError(f"{name} must be positive")
        self.settings = settings
        self.group = GroupName(settings.group)
        self.namesrv_addrs = [a.strip() for a in settings.namesrv_addr.split(";") if a.strip()]
        self.tls = client_config(settings.tls)
        self.credentials = acl.credentials_of(settings.credentials)
        self.message_model = MessageModel(message_model)
        self.consume_from: ConsumeFrom = settings.consume_from
        self.consume_timestamp_ms = settings.consume_timestamp_ms
        self.allocate = allocate
        self.consume_concurrency = consume_concurrency
        self.consume_batch_size = consume_batch_size
        self.pull_batch_size = settings.pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue_mib = pull_threshold_size_for_queue_mib
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.heartbeat_interval = heartbeat_interval
        self.lock_interval = lock_interval
        self.max_reconsume_times = max_reconsume_times
        self.reconsume_delay = reconsume_delay
        self.suspend_current_queue_time = suspend_current_queue_time
        self.suspend_timeout = suspend_timeout
        self.pull_error_delay = pull_error_delay
        self.shutdown_timeout = shutdown_timeout
        self.request_timeout = settings.request_timeout
        self.max_inflated_body_size = settings.max_inflated_body_size
        self.client_id = make_client_id(settings.client_ip, instance_name)
        base = Path(offset_store_dir) if offset_store_dir else DEFAULT_OFFSET_STORE_DIR
        self.offset_file = (
            base.expanduser()
            / f"{settings.client_ip}@{instance_name or 'DEFAULT'}"
            / settings.group
            / "offsets.json"
        )
        self._listener: MessageListener | None = None
        self._orderly_listener: OrderlyMessageListener | None = None
        self._subscriptions: dict[TopicName, SubscriptionData] = {}
        self._core: ConsumerCore | None = None
        self._store: OffsetStore | None = None
        self._service: ConcurrentConsumeService | OrderlyConsumeService | None = None
        self._rebalancer: Rebalancer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._stats = ConsumeStatsRecorder()
        self._start_ms = 0

    # -- configuration -----------------------------------------------------------------------

    @property
    def clustering(self) -> bool:
        """Whether the group shares the queues (offsets on the brokers), not broadcasting."""
        return self.message_model == MessageModel.CLUSTERING

    @property
    def orderly(self) -> bool:
        """Whether an orderly listener is registered (queues consumed serially, locked)."""
        return self._orderly_listener is not None

    def register_listener(self, listener: MessageListener) -> None:
        """Consume concurrently with ``listener(messages, context) -> ConsumeStatus``."""
        self._before_start()
        self._listener, self._orderly_listener = listener, None

    def register_orderly_listener(self, listener: OrderlyMessageListener) -> None:
        """Consume each queue in offset order with ``listener -> ConsumeOrderlyStatus``."""
        self._before_start()
        self._listener, self._orderly_listener = None, listener

    async def subscribe(self, topic: str, expression: selector.Selector = "*") -> None:
        """Consume ``topic``'s messages whose tag matches ``expression`` (``"TagA || TagB"``,
        ``"*"``), or that a :class:`~rocketkube.client.consumer.selector.MessageSelector` selects.
        After :meth:`start` the brokers hear of it and a rebalance follows."""
        self._subscriptions[TopicName(topic)] = selector.subscription(topic, expression, _now_ms())
        if self._rebalancer is not None:
            await self._refresh_routes()
            await self._heartbeat()
            self._rebalancer.request()

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer currently owns (retry queues included)."""
        return set(self._owned)

    @property
    def _owned(self) -> dict[MessageQueue, OwnedQueue]:
        return self._rebalancer.owned if self._rebalancer is not None else {}

    def _before_start(self) -> None:
        if self._core is not None or self._closed:
            raise client_errors.ClientStateError("listeners are registered before start()")

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, heartbeat, and start rebalancing, pulling and consuming.

        Raises :class:`ClientStateError` without a listener or once closed; a second call
        does nothing. Unknown topics are retried at every rebalance.
        """
        if self._closed:
            raise client_errors.ClientStateError("the consumer is closed")
        if self._core is not None:
            return
        if self._listener is None and self._orderly_listener is None:
            raise client_errors.ClientStateError("register a listener before start()")
        if self.clustering:
            topic = retry_topic(self.group)
            self._subscriptions[topic] = parse_subscription(topic, "*", _now_ms())
        self._start_ms = _now_ms()
        core = self._core = ConsumerCore(
            self.group,
            self.namesrv_addrs,
            self.client_id,
            request_timeout=self.request_timeout,
            handler=self,
            max_inflated_body_size=self.max_inflated_body_size,
            tls=self.tls,
            credentials=self.credentials,
        )
        store: OffsetStore = (
            RemoteOffsetStore(core) if self.clustering else LocalFileOffsetStore(self.offset_file)
        )
        await store.load()
        self._store = store
        self._service = self._make_service(store)
        self._service.start()
        rebalancer = self._rebalancer = self._make_rebalancer(core, store)
        await self._refresh_routes()
        await self._heartbeat()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(
                rebalancer.run(
                    lambda: self._subscriptions, self.rebalance_interval, lambda: self._closed
                )
            ),
            loop.create_task(self._every(self.persist_interval, self._persist)),
            loop.create_task(self._every(self.heartbeat_interval, self._maintain)),
        ]
        if self.orderly and self.clustering:
            self._tasks.append(loop.create_task(self._every(self.lock_interval, self._lock_all)))

    def _make_rebalancer(self, core: ConsumerCore, store: OffsetStore) -> Rebalancer:
        membership = Membership(
            group=self.group,
            client_id=self.client_id,
            clustering=self.clustering,
            locking=self.orderly and self.clustering,
            allocate=self.allocate,
            consume_from=self.consume_from,
            consume_timestamp_ms=self.consume_timestamp_ms,
        )

        def start_pull(queue: MessageQueue, pq: ProcessQueue, offset: int) -> asyncio.Task[None]:
            return asyncio.get_running_loop().create_task(self._pull_loop(queue, pq, offset))

        return Rebalancer(core, store, membership, start_pull=start_pull, release=self._release)

    async def _release(self, queue: MessageQueue) -> None:
        """A dropped queue's pull loop has stopped: an orderly service lets go of it."""
        if isinstance(self._service, OrderlyConsumeService):
            await self._service.stop_queue(queue, self.shutdown_timeout)

    def _make_service(self, store: OffsetStore) -> ConcurrentConsumeService | OrderlyConsumeService:
        if self._orderly_listener is not None:
            return OrderlyConsumeService(
                measured_listener(
                    self._orderly_listener,
                    ConsumeOrderlyStatus.SUCCESS,
                    ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT,
                    self._consuming,
                    self._stats,
                ),
                store,
                self._send_back,
                self._may_consume_orderly,
                clustering=self.clustering,
                concurrency=self.consume_concurrency,
                batch_size=self.consume_batch_size,
                suspend_seconds=self.suspend_current_queue_time,
                max_reconsume_times=self.max_reconsume_times,
            )
        assert self._listener is not None
        return ConcurrentConsumeService(
            measured_listener(
                self._listener,
                ConsumeStatus.CONSUME_SUCCESS,
                ConsumeStatus.RECONSUME_LATER,
                self._consuming,
                self._stats,
            ),
            store,
            self._send_back,
            clustering=self.clustering,
            concurrency=self.consume_concurrency,
            batch_size=self.consume_batch_size,
            reconsume_delay=self.reconsume_delay,
        )

    async def close(self) -> None:
        """Stop pulling, let running listeners finish (up to ``shutdown_timeout``), persist
        offsets, unlock queues, unregister, and close every connection."""
        if self._closed:
            return
        self._closed = True
        core, store, service = self._core, self._store, self._service
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks, *self._side_tasks)
        await cancel_and_wait(*(owned.pull_task for owned in self._owned.values()))
        if core is None or store is None or service is None:
            return
        try:
            await service.close(self.shutdown_timeout)
            try:
                await store.persist(self._owned)
            except errors.RocketKubeError as exc:
                log.warning("final persist of %s offsets failed: %s", self.group, exc)
            for owned in self._owned.values():
                owned.process_queue.dropped = True
            if self.orderly and self.clustering:
                await queue_locks.unlock(core, list(self._owned))
            await core.unregister()
        finally:
            self._rebalancer = None
            self._core = None
            await core.close()

    def _started(self) -> tuple[ConsumerCore, OffsetStore]:
        if self._core is None or self._store is None:
            raise client_errors.ClientStateError("the consumer is not running")
        return self._core, self._store

    # -- background --------------------------------------------------------------------------

    async def _every(self, interval: float, job: Callable[[], Awaitable[None]]) -> None:
        # Loops test ``_closed`` too: Python 3.11's wait_for can swallow a cancellation.
        while not self._closed:
            await asyncio.sleep(interval)
            try:
                await job()
            except errors.RocketKubeError as exc:
                log.warning("%s: %s", getattr(job, "__name__", job), exc)

    async def _persist(self) -> None:
        _, store = self._started()
        await store.persist(self._owned)

    async def _maintain(self) -> None:
        await self._refresh_routes()
        await self._heartbeat()

    async def _refresh_routes(self) -> None:
        core, _ = self._started()
        for topic in list(self._subscriptions):
            try:
                await core.fetch_route(topic)
            except errors.RocketKubeError as exc:
                log.warning("route of %s: %s", topic, exc)

    async def _heartbeat(self) -> None:
        core, _ = self._started()
        await core.heartbeat(
            ConsumerData(
                group_name=self.group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=self.message_model,
                consume_from_where=FROM_WHERE[self.consume_from],
                subscriptions=list(self._subscriptions.values()),
            )
        )

    # -- pulling -----------------------------------------------------------------------------

    async def _pull_loop(self, queue: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        core, store = self._started()
        service = self._service
        assert service is not None
        subscription = self._subscriptions.get(TopicName(queue.topic)) or parse_subscription(
            queue.topic, "*"
        )
        size_limit = self.pull_threshold_size_for_queue_mib * _MIB
        while not pq.dropped and not self._closed:
            room = self.pull_threshold_for_queue - pq.count
            if room <= 0 or pq.size_bytes >= size_limit:
                await asyncio.sleep(_FLOW_CONTROL_DELAY)
                continue
            if self.orderly and self.clustering and not pq.locked:
                await asyncio.sleep(_LOCK_RETRY_DELAY)
                continue
            committed = store.read(queue) if self.clustering else None
            started = time.monotonic()
            try:
                result = await core.pull(
                    queue,
                    offset,
                    subscription,
                    max_nums=min(self.pull_batch_size, room),
                    suspend=self.suspend_timeout,
                    commit_offset=committed if committed else None,
                )
            except errors.RocketKubeError as exc:
                log.warning("pull of %s failed: %s", queue, exc)
                await asyncio.sleep(self.pull_error_delay)
                continue
            if pq.dropped or self._closed:
                return
            pq.last_pull_timestamp = _now_ms()
            rt_ms = (time.monotonic() - started) * 1000
            self._stats.pulled(queue.topic, rt_ms, len(result.messages))
            if result.code == ResponseCode.PULL_OFFSET_MOVED:
                log.warning("%s: offset %d moved to %d", queue, offset, result.next_begin_offset)
                store.update(queue, result.next_begin_offset)
            offset = result.next_begin_offset
            added = pq.add(restore_topics(self.group, result.messages))
            if added:
                service.submit(queue, pq, added)
            elif pq.count == 0:
                # Nothing held and the broker skipped filtered messages: move past them.
                store.update(queue, offset, increase_only=True)

    def _consuming(self, queue: MessageQueue) -> None:
        """A listener is called on ``queue``'s messages (for the running info)."""
        owned = self._owned.get(queue)
        if owned is not None:
            owned.process_queue.last_consume_timestamp = _now_ms()

    async def _send_back(self, message: MessageExt, queue: MessageQueue, delay_level: int) -> bool:
        core, _ = self._started()
        return await send_back(
            core,
            message,
            queue,
            delay_level=delay_level,
            max_reconsume_times=self.max_reconsume_times,
        )

    # -- orderly locks -----------------------------------------------------------------------

    def _may_consume_orderly(self, pq: ProcessQueue) -> bool:
        return not self.clustering or queue_locks.holds(pq, self.lock_interval)

    async def _lock_all(self) -> None:
        core, _ = self._started()
        await queue_locks.renew(core, {q: owned.process_queue for q, owned in self._owned.items()})

    # -- requests from brokers ---------------------------------------------------------------

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        """Serve what brokers ask this consumer on its own connections."""
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            if self._rebalancer is not None:
                self._rebalancer.request()
            return None
        if request.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            header = ResetOffsetRequestHeader.decode(request.ext_fields)
            table = ResetOffsetBody.decode(request.body_bytes()).offset_table
            rebalancer = self._rebalancer
            if header.group == self.group and rebalancer is not None and not self._closed:
                offsets = {
                    MessageQueue(q.topic, q.broker_name, q.queue_id): offset
                    for q, offset in table.items()
                }
                task = asyncio.get_running_loop().create_task(rebalancer.reset(offsets))
                self._side_tasks.add(task)
                task.add_done_callback(self._side_tasks.discard)
            return RemotingCommand.response()
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            running = self._core is not None and not self._closed
            return ri.respond(request, self.group, self.running_info if running else None)
        return not_supported(request.code)

    def running_info(self) -> rip.ConsumerRunningInfo:
        """What this consumer reports to GET_CONSUMER_RUNNING_INFO (:mod:`.push_running_info`)."""
        _, store = self._started()
        return push_running_info(
            self,
            start_ms=self._start_ms,
            subscriptions=self._subscriptions.values(),
            owned={queue: owned.process_queue for queue, owned in self._owned.items()},
            committed=store.read,
            stats=self._stats,
        )


def _now_ms() -> int:
    return int(time.time() * 1000)
