"""The lite pull consumer: the application polls, the consumer pulls (Java DefaultLitePullConsumer).

Queues come either from :meth:`LitePullConsumer.subscribe` (every readable queue of the
topic's route, re-read every 30 s) or from :meth:`LitePullConsumer.assign`. :meth:`poll`
sends PULL_MESSAGE (11, docs/protocol.md §5) with FLAG_SUBSCRIPTION and
FLAG_LITE_PULL_MESSAGE to every assigned queue, first without and then with FLAG_SUSPEND
(a short long-poll), decodes the records, re-filters tags client-side and advances each
queue's next offset to ``nextBeginOffset`` (also on 19/20/21: an offset the broker moved).

A queue's first offset is the group's committed one (QUERY_CONSUMER_OFFSET, 14); on
QUERY_NOT_FOUND (22) it follows ``consume_from_where`` (docs/protocol.md §6.2): ``"last"``
the max offset, ``"first"`` 0, ``"timestamp"`` SEARCH_OFFSET_BY_TIMESTAMP. Note the broker
answers 14 with offset 0 for a never-committed group while the queue's min offset is 0, so a
brand-new group starts at 0 with ``"last"`` too, as with Apache RocketMQ 4.9.8.

:meth:`commit` stores every queue's position with UPDATE_CONSUMER_OFFSET (15); with
``auto_commit`` it also runs every ``auto_commit_interval`` seconds and on :meth:`close`.
A HEART_BEAT (34) declaring a CONSUME_ACTIVELY consumer goes to every broker at start and
every 30 s, so admin tools see the group; :meth:`close` sends UNREGISTER_CLIENT (35).
It answers GET_CONSUMER_RUNNING_INFO (307) with :meth:`LitePullConsumer.running_info`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterable
from typing import Final

from rocketkube.client import errors as client_errors
from rocketkube.client.constructors import pick_settings
from rocketkube.client.consumer import running_info as ri
from rocketkube.client.consumer import selector
from rocketkube.client.consumer.consume_stats import ConsumeStatsRecorder
from rocketkube.client.consumer.core import (
    FROM_WHERE,
    ConsumeFrom,
    ConsumerCore,
    make_client_id,
)
from rocketkube.client.consumer.settings import ConsumerSettings
from rocketkube.client.lifecycle import AsyncLifecycle
from rocketkube.client.routing import MessageQueue
from rocketkube.common import acl, errors
from rocketkube.common.message.model import MessageExt
from rocketkube.common.names import GroupName, TopicName
from rocketkube.common.protocol import admin_bodies
from rocketkube.common.protocol import running_info as rip
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

__all__ = ["ConsumeFrom", "LitePullConsumer"]

log = logging.getLogger(__name__)

_HEARTBEAT_INTERVAL: Final = 30.0
_DEFAULT_SETTINGS: Final = ConsumerSettings(group="")
"""What the keyword form builds when given no option (:func:`pick_settings`)."""
_SUSPEND_GRACE: Final = 0.1
_UNROUTED_RETRY_SECONDS: Final = 1.0


@dataclasses.dataclass(slots=True)
class _QueueState:
    """Progress of one assigned queue: where the next pull starts, what was committed."""

    next_offset: int | None = None
    committed: int | None = None
    epoch: int = 0
    last_pull_ms: int = 0


class LitePullConsumer(AsyncLifecycle):
    """A RocketMQ lite pull consumer of group ``group`` (clustering offsets on the broker).

    ``namesrv_addr`` lists name servers separated by ``;``. ``pull_batch_size`` is the
    ``maxMsgNums`` of each pull; ``poll_timeout`` the default of :meth:`poll` (seconds);
    ``suspend_timeout`` the longest long-poll the broker is asked to hold (seconds);
    ``request_timeout`` bounds every other request. ``consume_timestamp_ms`` (epoch ms) is
    required with ``consume_from_where="timestamp"``. A compressed body is inflated up to
    ``max_inflated_body_size`` bytes; one that inflates further is returned as stored (see
    :mod:`rocketkube.client.consumer.pull`). ``tls``: ``True`` or a
    :class:`~rocketkube.common.remoting.tls.TlsConfig` connects with TLS.
    ``credentials``: ``(access_key, secret_key)`` or a
    :class:`~rocketkube.common.acl.Credentials` signs every request. The options both
    consumers share come as one :class:`~rocketkube.client.consumer.settings.ConsumerSettings`
    with ``settings=`` instead (then neither ``group`` nor a shared option is given).

    Use ``async with LitePullConsumer(...) as consumer:`` or :meth:`start` and
    :meth:`close`. :meth:`poll` is not meant to be called concurrently with itself.
    """

    def __init__(
        self,
        group: str | None = None,
        namesrv_addr: str = ConsumerSettings.namesrv_addr,
        *,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        pull_batch_size: int = ConsumerSettings.pull_batch_size,
        consume_from_where: ConsumeFrom = ConsumerSettings.consume_from,
        consume_timestamp_ms: int | None = ConsumerSettings.consume_timestamp_ms,
        poll_timeout: float = 5.0,
        suspend_timeout: float = 1.0,
        request_timeout: float = ConsumerSettings.request_timeout,
        client_ip: str = ConsumerSettings.client_ip,
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
                consume_from=consume_from_where,
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
        self.settings = settings
        self.group = GroupName(settings.group)
        self.namesrv_addrs = [a.strip() for a in settings.namesrv_addr.split(";") if a.strip()]
        self.tls = client_config(settings.tls)
        self.credentials = acl.credentials_of(settings.credentials)
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.pull_batch_size = settings.pull_batch_size
        self.consume_from_where: ConsumeFrom = settings.consume_from
        self.consume_timestamp_ms = settings.consume_timestamp_ms
        self.poll_timeout = poll_timeout
        self.suspend_timeout = suspend_timeout
        self.request_timeout = settings.request_timeout
        self.max_inflated_body_size = settings.max_inflated_body_size
        self.client_id = make_client_id(settings.client_ip)
        self._core: ConsumerCore | None = None
        self._closed = False
        self._subscriptions: dict[TopicName, SubscriptionData] = {}
        self._assigned = False
        self._queues: dict[MessageQueue, _QueueState] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._poll_lock = asyncio.Lock()
        self._stats = ConsumeStatsRecorder()
        self._start_ms = 0
        self._unrouted: dict[str, float] = {}
        """Subscribed topics without a route yet -> when to ask again (monotonic)."""

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the client, resolve subscribed topics, heartbeat, start background tasks.

        Raises :class:`ClientStateError` once closed; a second call does nothing.
        """
        if self._closed:
            raise client_errors.ClientStateError("the consumer is closed")
        if self._core is not None:
            return
        self._start_ms = _now_ms()
        self._core = ConsumerCore(
            self.group,
            self.namesrv_addrs,
            self.client_id,
            request_timeout=self.request_timeout,
            handler=self,
            max_inflated_body_size=self.max_inflated_body_size,
            tls=self.tls,
            credentials=self.credentials,
        )
        for topic in list(self._subscriptions):
            await self._route_or_wait(topic)
        await self._heartbeat()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._maintain()))
        if self.auto_commit:
            self._tasks.append(loop.create_task(self._auto_commit()))

    async def close(self) -> None:
        """Stop background tasks, commit (with ``auto_commit``) and close every connection."""
        if self._closed:
            return
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        core = self._core
        if core is None:
            return
        try:
            if self.auto_commit:
                try:
                    await self.commit()
                except (client_errors.MQClientError, errors.RemotingError) as exc:
                    log.warning("final commit of %s failed: %s", self.group, exc)
            await core.unregister()
        finally:
            self._core = None
            await core.close()

    def _started(self) -> ConsumerCore:
        if self._core is None:
            state = "closed" if self._closed else "not started"
            raise client_errors.ClientStateError(f"the consumer is {state}")
        return self._core

    # -- queues ------------------------------------------------------------------------------

    async def subscribe(self, topic: str, expression: selector.Selector = "*") -> None:
        """Consume every readable queue of ``topic`` whose messages match the tag ``expression``.

        ``expression`` is ``"*"`` or ``"TagA || TagB"``, or a
        :class:`~rocketkube.client.consumer.selector.MessageSelector` (``by_sql``). Before
        :meth:`start` it is only recorded; once started the route is read at once and the
        brokers get a heartbeat.
        A topic no name server routes yet (a producer is about to create it) is not an
        error, as in Java: :meth:`poll` asks for its route again, at most once a second,
        until it appears. Not allowed after :meth:`assign`.
        """
        if self._assigned:
            raise client_errors.ClientStateError("subscribe() after assign() is not allowed")
        self._subscriptions[TopicName(topic)] = selector.subscription(topic, expression, _now_ms())
        if self._core is not None:
            await self._route_or_wait(topic)
            await self._heartbeat()

    async def assign(
        self, queues: Iterable[MessageQueue], expression: selector.Selector = "*"
    ) -> None:
        """Consume exactly ``queues`` (replacing any earlier assignment), filtered by tags or
        by a :class:`~rocketkube.client.consumer.selector.MessageSelector`.

        Needs a started consumer (the routes give the brokers' addresses). Not allowed after
        :meth:`subscribe`.
        """
        core = self._started()
        if self._subscriptions and not self._assigned:
            raise client_errors.ClientStateError("assign() after subscribe() is not allowed")
        wanted = list(queues)
        await core.learn_routes(q.topic for q in wanted)
        self._assigned = True
        stamp = _now_ms()
        self._subscriptions = {
            TopicName(t): selector.subscription(t, expression, stamp)
            for t in {q.topic for q in wanted}
        }
        self._queues = {q: self._queues.get(q) or _QueueState() for q in wanted}
        await self._heartbeat()

    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer currently pulls from."""
        return set(self._queues)

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Make the next :meth:`poll` read ``queue`` from ``offset``.

        An offset out of the queue's range is corrected by the broker (PULL_OFFSET_MOVED) on
        the next pull. :class:`ValueError` when ``queue`` is not assigned.
        """
        state = self._state(queue)
        state.next_offset = offset
        state.epoch += 1

    async def seek_to_begin(self, queue: MessageQueue) -> None:
        """:meth:`seek` to the queue's min offset (GET_MIN_OFFSET, 31)."""
        self._state(queue)
        self.seek(queue, await self._started().min_offset(queue))

    async def seek_to_end(self, queue: MessageQueue) -> None:
        """:meth:`seek` to the queue's max offset (GET_MAX_OFFSET, 30): only new messages."""
        self._state(queue)
        self.seek(queue, await self._started().max_offset(queue))

    async def committed(self, queue: MessageQueue) -> int | None:
        """The group's offset of ``queue`` as the broker stores it; ``None`` when none is."""
        return await self._started().query_offset(queue)

    async def commit(self) -> None:
        """Store the position of every queue that moved since its last commit (code 15).

        Every queue is tried; the first failure is raised afterwards.
        """
        core = self._started()
        failure: Exception | None = None
        for queue, state in list(self._queues.items()):
            offset = state.next_offset
            if offset is None or offset == state.committed:
                continue
            try:
                await core.update_offset(queue, offset)
            except (client_errors.MQClientError, errors.RemotingError) as exc:
                failure = failure or exc
                continue
            state.committed = offset
        if failure is not None:
            raise failure

    # -- polling -----------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The next messages of the assigned queues, waiting up to ``timeout`` seconds.

        Returns an empty list when nothing arrived in time (or nothing is assigned). Every
        queue is pulled at once without suspending; when none had a message the pulls are
        repeated as long polls of at most ``suspend_timeout`` until the deadline.
        """
        self._started()
        wait = self.poll_timeout if timeout is None else timeout
        deadline = time.monotonic() + max(wait, 0.0)
        async with self._poll_lock:
            await self._retry_unrouted()
            found = await self._pull_round(0.0)
            while not found:
                remaining = deadline - time.monotonic()
                if remaining <= 0.05:
                    break
                if not self._queues:
                    await asyncio.sleep(min(remaining, 0.1))
                    await self._retry_unrouted()
                    continue
                found = await self._pull_round(min(remaining, self.suspend_timeout))
            return found

    async def _pull_round(self, suspend: float) -> list[MessageExt]:
        """Pull every queue once; with ``suspend`` > 0, return as soon as one has messages."""
        queues = list(self._queues)
        if not queues:
            return []
        tasks = [asyncio.ensure_future(self._pull(q, suspend)) for q in queues]
        out: list[MessageExt] = []
        pending: set[asyncio.Future[list[MessageExt]]] = set(tasks)
        # A held pull the broker answers late is abandoned (its offset is not advanced).
        deadline = time.monotonic() + suspend + _SUSPEND_GRACE if suspend > 0 else None
        try:
            while pending:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                done, pending = await asyncio.wait(
                    pending, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    break
                for task in done:
                    out.extend(task.result())
                if out and suspend > 0:
                    break
        finally:
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        return out

    async def _pull(self, queue: MessageQueue, suspend: float) -> list[MessageExt]:
        """One pull of ``queue``; errors are logged and give no message (tried next round)."""
        try:
            return await self._pull_once(queue, suspend)
        except (client_errors.MQClientError, errors.RemotingError) as exc:
            log.warning("pull of %s failed: %s", queue, exc)
            if suspend > 0:
                await asyncio.sleep(min(suspend, 0.2))
            return []

    async def _pull_once(self, queue: MessageQueue, suspend: float) -> list[MessageExt]:
        state = self._queues.get(queue)
        if state is None:
            return []
        if state.next_offset is None:
            epoch = state.epoch
            first = await self._first_offset(queue)
            if state.epoch == epoch and state.next_offset is None:
                state.next_offset = first
                state.committed = first
        offset = state.next_offset
        assert offset is not None
        epoch = state.epoch
        subscription = self._subscriptions.get(TopicName(queue.topic)) or parse_subscription(
            queue.topic, "*"
        )
        started = time.monotonic()
        result = await self._started().pull(
            queue,
            offset,
            subscription,
            max_nums=self.pull_batch_size,
            suspend=suspend,
            lite=True,
        )
        rt_ms = (time.monotonic() - started) * 1000
        self._stats.pulled(queue.topic, rt_ms, len(result.messages))
        state.last_pull_ms = _now_ms()
        if self._queues.get(queue) is not state or state.epoch != epoch:
            return []  # reassigned or sought while the pull was in flight
        if result.code == ResponseCode.PULL_OFFSET_MOVED:
            log.info("%s: offset %d moved to %d", queue, offset, result.next_begin_offset)
        state.next_offset = result.next_begin_offset
        return result.messages

    async def _first_offset(self, queue: MessageQueue) -> int:
        """The first-offset logic (docs/protocol.md §6.2): the committed offset, else by
        consume_from_where."""
        return await self._started().first_offset(
            queue,
            await self.committed(queue),
            self.consume_from_where,
            self.consume_timestamp_ms,
        )

    # -- plumbing ----------------------------------------------------------------------------

    def _state(self, queue: MessageQueue) -> _QueueState:
        state = self._queues.get(queue)
        if state is None:
            raise ValueError(f"{queue} is not assigned to this consumer")
        return state

    async def _route_or_wait(self, topic: str) -> None:
        """Read ``topic``'s route now, or note it for :meth:`_retry_unrouted`."""
        try:
            await self._refresh_topic(topic)
        except client_errors.RouteNotFoundError:
            log.info("topic %s has no route yet; asking again while polling", topic)
            self._unrouted[topic] = time.monotonic() + _UNROUTED_RETRY_SECONDS
        else:
            self._unrouted.pop(topic, None)

    async def _retry_unrouted(self) -> None:
        """Ask again for the routes of subscribed topics that had none, once they are due."""
        now = time.monotonic()
        due = [t for t, at in self._unrouted.items() if at <= now and t in self._subscriptions]
        for topic in due:
            await self._route_or_wait(topic)
        if any(topic not in self._unrouted for topic in due):
            await self._heartbeat()

    async def _refresh_topic(self, topic: str) -> None:
        """Re-read a subscribed topic's route; its readable queues become the assignment."""
        wanted = set(await self._started().readable_queues(topic))
        for queue in [q for q in self._queues if q.topic == topic and q not in wanted]:
            del self._queues[queue]
        for queue in sorted(wanted):
            self._queues.setdefault(queue, _QueueState())

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        """Serve what brokers ask this consumer: GET_CONSUMER_RUNNING_INFO only."""
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            running = self._core is not None and not self._closed
            return ri.respond(request, self.group, self.running_info if running else None)
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            return None  # queues are assigned by subscribe/assign, not by the group
        return not_supported(request.code)

    def running_info(self) -> rip.ConsumerRunningInfo:
        """What this consumer reports to GET_CONSUMER_RUNNING_INFO: CONSUME_ACTIVELY, its
        settings, subscriptions, assigned queues with their committed offsets (-1: none
        yet) and last pull, and per-topic pull figures (nothing is consumed here: the
        application polls, so the consume figures are zero)."""
        properties = ri.base_properties(
            consume_type=ConsumeType.CONSUME_ACTIVELY.name,
            namesrv_addrs=self.namesrv_addrs,
            start_ms=self._start_ms,
        )
        properties.update(
            ri.settings_properties(
                {
                    "consumerGroup": self.group,
                    "namesrvAddr": ";".join(self.namesrv_addrs),
                    "clientId": self.client_id,
                    "messageModel": MessageModel.CLUSTERING.name,
                    "consumeFromWhere": FROM_WHERE[self.consume_from_where].name,
                    "consumeTimestamp": self.consume_timestamp_ms,
                    "autoCommit": self.auto_commit,
                    "autoCommitIntervalMillis": int(self.auto_commit_interval * 1000),
                    "pullBatchSize": self.pull_batch_size,
                    "pollTimeoutMillis": int(self.poll_timeout * 1000),
                }
            )
        )
        mq_table = {
            admin_bodies.MessageQueue(q.topic, q.broker_name, q.queue_id): rip.ProcessQueueInfo(
                commit_offset=state.committed if state.committed is not None else -1,
                last_pull_timestamp=state.last_pull_ms,
            )
            for q, state in self._queues.items()
        }
        topics = {q.topic for q in self._queues} | set(self._subscriptions)
        return rip.ConsumerRunningInfo(
            properties=properties,
            subscriptions=tuple(self._subscriptions.values()),
            mq_table=mq_table,
            status_table={t: self._stats.status(t) for t in sorted(topics)},
        )

    async def _heartbeat(self) -> None:
        """HEART_BEAT (34) with this CONSUME_ACTIVELY consumer to every known broker."""
        await self._started().heartbeat(
            ConsumerData(
                group_name=self.group,
                consume_type=ConsumeType.CONSUME_ACTIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=FROM_WHERE[self.consume_from_where],
                subscriptions=list(self._subscriptions.values()),
            )
        )

    async def _maintain(self) -> None:
        """Every 30 s: re-read subscribed routes, then heartbeat."""
        while True:
            await asyncio.sleep(_HEARTBEAT_INTERVAL)
            for topic in list(self._subscriptions if not self._assigned else ()):
                try:
                    await self._refresh_topic(topic)
                except (client_errors.MQClientError, errors.RemotingError) as exc:
                    log.warning("route refresh of %s failed: %s", topic, exc)
            await self._heartbeat()

    async def _auto_commit(self) -> None:
        while True:
            await asyncio.sleep(self.auto_commit_interval)
            try:
                await self.commit()
            except (client_errors.MQClientError, errors.RemotingError) as exc:
                log.warning("auto commit of %s failed: %s", self.group, exc)


def _now_ms() -> int:
    return int(time.time() * 1000)
