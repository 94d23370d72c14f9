"""The lite pull consumer: the application polls, the consumer pulls (Java DefaultLitePullConsumer).

Queues come either from :meth:`LitePullConsumer.subscribe` (every readable queue of the
topic's route, re-read every 30 s) or from :meth:`LitePullConsumer.assign`. :meth:`poll`
sends PULL_MESSAGE (11, remoting-protocol.md §3.4) with FLAG_SUBSCRIPTION and
FLAG_LITE_PULL_MESSAGE to every assigned queue, first without and then with FLAG_SUSPEND
(a short long-poll), decodes the records, re-filters tags client-side and advances each
queue's next offset to ``nextBeginOffset`` (also on 19/20/21: an offset the broker moved).

A queue's first offset is the group's committed one (QUERY_CONSUMER_OFFSET, 14); on
QUERY_NOT_FOUND (22) it follows ``consume_from_where`` (§3.5): ``"last"`` the max offset,
``"first"`` 0, ``"timestamp"`` SEARCH_OFFSET_BY_TIMESTAMP. Note the broker answers 14 with
offset 0 for a never-committed group while the queue's min offset is 0, so a brand-new group
starts at 0 with ``"last"`` too, as with Apache RocketMQ 4.9.8.

:meth:`commit` stores every queue's position with UPDATE_CONSUMER_OFFSET (15); with
``auto_commit`` it also runs every ``auto_commit_interval`` seconds and on :meth:`close`.
A HEART_BEAT (34) declaring a CONSUME_ACTIVELY consumer goes to every broker at start and
every 30 s, so admin tools see the group; :meth:`close` sends UNREGISTER_CLIENT (35).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
import uuid
from collections.abc import Iterable
from typing import Final, Literal

from rocketkube.client import errors as client_errors
from rocketkube.client import routing
from rocketkube.client.lifecycle import AsyncLifecycle
from rocketkube.client.routing import MessageQueue
from rocketkube.common import errors
from rocketkube.common.message import sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.record import iter_records
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.admin_headers import UnregisterClientRequestHeader
from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
    parse_subscription,
)
from rocketkube.common.protocol.pull_headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketkube.common.protocol.route import TopicRouteData
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["ConsumeFrom", "LitePullConsumer"]

log = logging.getLogger(__name__)

ConsumeFrom = Literal["last", "first", "timestamp"]
"""Where a group without a committed offset starts (Java ``ConsumeFromWhere``)."""

_FROM_WHERE: Final[dict[str, ConsumeFromWhere]] = {
    "last": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    "first": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    "timestamp": ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
}
_HEARTBEAT_INTERVAL: Final = 30.0
_RPC_MARGIN: Final = 5.0
_SUSPEND_GRACE: Final = 0.1


@dataclasses.dataclass(slots=True)
class _QueueState:
    """Progress of one assigned queue: where the next pull starts, what was committed."""

    next_offset: int | None = None
    committed: int | None = None
    epoch: int = 0


class LitePullConsumer(AsyncLifecycle):
    """A RocketMQ lite pull consumer of group ``group`` (clustering offsets on the broker).

    ``namesrv_addr`` lists name servers separated by ``;``. ``pull_batch_size`` is the
    ``maxMsgNums`` of each pull; ``poll_timeout`` the default of :meth:`poll` (seconds);
    ``suspend_timeout`` the longest long-poll the broker is asked to hold (seconds);
    ``request_timeout`` bounds every other request. ``consume_timestamp_ms`` (epoch ms) is
    required with ``consume_from_where="timestamp"``.

    Use ``async with LitePullConsumer(...) as consumer:`` or :meth:`start` and
    :meth:`close`. :meth:`poll` is not meant to be called concurrently with itself.
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "127.0.0.1:9876",
        *,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        pull_batch_size: int = 32,
        consume_from_where: ConsumeFrom = "last",
        consume_timestamp_ms: int | None = None,
        poll_timeout: float = 5.0,
        suspend_timeout: float = 1.0,
        request_timeout: float = 3.0,
        client_ip: str = "127.0.0.1",
    ) -> None:
        if consume_from_where not in _FROM_WHERE:
            raise ValueError(f"consume_from_where must be one of {sorted(_FROM_WHERE)}")
        if consume_from_where == "timestamp" and consume_timestamp_ms is None:
            raise ValueError('consume_from_where="timestamp" needs consume_timestamp_ms')
        if pull_batch_size < 1:
            raise ValueError("pull_batch_size must be positive")
        self.group = group
        self.namesrv_addrs = [a.strip() for a in namesrv_addr.split(";") if a.strip()]
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.pull_batch_size = pull_batch_size
        self.consume_from_where: ConsumeFrom = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.poll_timeout = poll_timeout
        self.suspend_timeout = suspend_timeout
        self.request_timeout = request_timeout
        self.client_id = f"{client_ip}@{os.getpid()}#{uuid.uuid4().hex[:12]}"
        self._client: RemotingClient | None = None
        self._closed = False
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._assigned = False
        self._queues: dict[MessageQueue, _QueueState] = {}
        self._brokers: dict[str, str] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._poll_lock = asyncio.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the client, resolve subscribed topics, heartbeat, start background tasks.

        Raises :class:`ClientStateError` once closed; a second call does nothing.
        """
        if self._closed:
            raise client_errors.ClientStateError("the consumer is closed")
        if self._client is not None:
            return
        self._client = RemotingClient(
            connect_timeout=self.request_timeout, timeout=self.request_timeout
        )
        for topic in list(self._subscriptions):
            await self._refresh_topic(topic)
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
        client = self._client
        if client is None:
            return
        try:
            if self.auto_commit:
                try:
                    await self.commit()
                except (client_errors.MQClientError, errors.RemotingError) as exc:
                    log.warning("final commit of %s failed: %s", self.group, exc)
            await self._unregister(client)
        finally:
            self._client = None
            await client.close()

    def _started(self) -> RemotingClient:
        if self._client is None:
            state = "closed" if self._closed else "not started"
            raise client_errors.ClientStateError(f"the consumer is {state}")
        return self._client

    # -- queues ------------------------------------------------------------------------------

    async def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume every readable queue of ``topic`` whose messages match the tag ``expression``.

        ``expression`` is ``"*"`` or ``"TagA || TagB"``. Before :meth:`start` it is only
        recorded; once started the route is read at once (:class:`RouteNotFoundError` when
        no name server knows the topic) and the brokers get a heartbeat. Not allowed after
        :meth:`assign`.
        """
        if self._assigned:
            raise client_errors.ClientStateError("subscribe() after assign() is not allowed")
        self._subscriptions[topic] = parse_subscription(topic, expression, _now_ms())
        if self._client is not None:
            await self._refresh_topic(topic)
            await self._heartbeat()

    async def assign(self, queues: Iterable[MessageQueue], expression: str = "*") -> None:
        """Consume exactly ``queues`` (replacing any earlier assignment), filtered by tags.

        Needs a started consumer (the routes give the brokers' addresses). Not allowed after
        :meth:`subscribe`.
        """
        client = self._started()
        if self._subscriptions and not self._assigned:
            raise client_errors.ClientStateError("assign() after subscribe() is not allowed")
        wanted = list(queues)
        for topic in sorted({q.topic for q in wanted}):
            route = await routing.fetch_route(
                client, self.namesrv_addrs, topic, self.request_timeout
            )
            if route is None:
                raise client_errors.RouteNotFoundError(f"no route for topic {topic!r}")
            self._learn_brokers(route)
        self._assigned = True
        stamp = _now_ms()
        self._subscriptions = {
            t: parse_subscription(t, expression, stamp) for t in {q.topic for q in wanted}
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
        header = GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
        response = await self._call(queue, RequestCode.GET_MIN_OFFSET, header.encode())
        self.seek(queue, GetMinOffsetResponseHeader.decode(response.ext_fields).offset)

    async def seek_to_end(self, queue: MessageQueue) -> None:
        """:meth:`seek` to the queue's max offset (GET_MAX_OFFSET, 30): only new messages."""
        self._state(queue)
        self.seek(queue, await self._max_offset(queue))

    async def committed(self, queue: MessageQueue) -> int | None:
        """The group's offset of ``queue`` as the broker stores it; ``None`` when none is."""
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=self.group, topic=queue.topic, queue_id=queue.queue_id
        )
        response = await self._call(
            queue, RequestCode.QUERY_CONSUMER_OFFSET, header.encode(), accept={22}
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return QueryConsumerOffsetResponseHeader.decode(response.ext_fields).offset

    async def commit(self) -> None:
        """Store the position of every queue that moved since its last commit (code 15).

        Every queue is tried; the first failure is raised afterwards.
        """
        self._started()
        failure: Exception | None = None
        for queue, state in list(self._queues.items()):
            offset = state.next_offset
            if offset is None or offset == state.committed:
                continue
            header = UpdateConsumerOffsetRequestHeader(
                consumer_group=self.group,
                topic=queue.topic,
                queue_id=queue.queue_id,
                commit_offset=offset,
            )
            try:
                await self._call(queue, RequestCode.UPDATE_CONSUMER_OFFSET, header.encode())
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
            found = await self._pull_round(0.0)
            while not found:
                remaining = deadline - time.monotonic()
                if remaining <= 0.05:
                    break
                if not self._queues:
                    await asyncio.sleep(min(remaining, 0.1))
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
        subscription = self._subscriptions.get(queue.topic) or parse_subscription(queue.topic, "*")
        flag = sysflag.build_pull_sys_flag(
            commit_offset=False, suspend=suspend > 0, subscription=True, lite_pull=True
        )
        header = PullMessageRequestHeader(
            consumer_group=self.group,
            topic=queue.topic,
            queue_id=queue.queue_id,
            queue_offset=offset,
            max_msg_nums=self.pull_batch_size,
            sys_flag=flag,
            commit_offset=0,
            suspend_timeout_millis=int(suspend * 1000),
            sub_version=subscription.sub_version,
            subscription=subscription.sub_string,
            expression_type=subscription.expression_type,
        )
        response = await self._call(
            queue,
            RequestCode.PULL_MESSAGE,
            header.encode(),
            accept={
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.PULL_RETRY_IMMEDIATELY,
                ResponseCode.PULL_OFFSET_MOVED,
            },
            timeout=suspend + self.request_timeout + (_RPC_MARGIN if suspend > 0 else 0.0),
        )
        result = PullMessageResponseHeader.decode(response.ext_fields)
        if self._queues.get(queue) is not state or state.epoch != epoch:
            return []  # reassigned or sought while the pull was in flight
        if response.code == ResponseCode.PULL_OFFSET_MOVED:
            log.info("%s: offset %d moved to %d", queue, offset, result.next_begin_offset)
        state.next_offset = result.next_begin_offset
        if response.code != ResponseCode.SUCCESS:
            return []
        messages = list(iter_records(response.body_bytes()))
        if subscription.tags_set:
            tags = set(subscription.tags_set)
            messages = [m for m in messages if m.tags in tags]
        return messages

    async def _first_offset(self, queue: MessageQueue) -> int:
        """The §3.5 first-offset logic: the committed offset, else by consume_from_where."""
        committed = await self.committed(queue)
        if committed is not None and committed >= 0:
            return committed
        if self.consume_from_where == "first":
            return 0
        if self.consume_from_where == "timestamp" and not queue.topic.startswith("%RETRY%"):
            assert self.consume_timestamp_ms is not None
            header = SearchOffsetRequestHeader(
                topic=queue.topic, queue_id=queue.queue_id, timestamp=self.consume_timestamp_ms
            )
            response = await self._call(
                queue, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.encode()
            )
            return SearchOffsetResponseHeader.decode(response.ext_fields).offset
        if queue.topic.startswith("%RETRY%") and self.consume_from_where == "last":
            return 0
        return await self._max_offset(queue)

    async def _max_offset(self, queue: MessageQueue) -> int:
        header = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
        response = await self._call(queue, RequestCode.GET_MAX_OFFSET, header.encode())
        return GetMaxOffsetResponseHeader.decode(response.ext_fields).offset

    # -- plumbing ----------------------------------------------------------------------------

    def _state(self, queue: MessageQueue) -> _QueueState:
        state = self._queues.get(queue)
        if state is None:
            raise ValueError(f"{queue} is not assigned to this consumer")
        return state

    async def _call(
        self,
        queue: MessageQueue,
        code: int,
        header: dict[str, str],
        *,
        accept: set[int] | None = None,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send a request to the master of ``queue``'s broker; MQBrokerError on other codes."""
        client = self._started()
        addr = self._brokers.get(queue.broker_name)
        if addr is None:
            route = await routing.fetch_route(
                client, self.namesrv_addrs, queue.topic, self.request_timeout
            )
            if route is not None:
                self._learn_brokers(route)
            addr = self._brokers.get(queue.broker_name)
            if addr is None:
                raise client_errors.RouteNotFoundError(f"no master for {queue.broker_name!r}")
        request = RemotingCommand.request(code, header)
        response = await client.invoke(addr, request, timeout or self.request_timeout)
        if response.code != ResponseCode.SUCCESS and response.code not in (accept or set()):
            raise client_errors.for_code(response.code, response.remark, queue.broker_name)
        return response

    def _learn_brokers(self, route: TopicRouteData) -> None:
        for broker in route.broker_datas:
            if broker.master_addr:
                self._brokers[broker.broker_name] = broker.master_addr

    async def _refresh_topic(self, topic: str) -> None:
        """Re-read a subscribed topic's route; its readable queues become the assignment."""
        client = self._started()
        route = await routing.fetch_route(client, self.namesrv_addrs, topic, self.request_timeout)
        if route is None:
            raise client_errors.RouteNotFoundError(f"no route for topic {topic!r}")
        self._learn_brokers(route)
        masters = {b.broker_name for b in route.broker_datas if b.master_addr}
        wanted = {
            MessageQueue(topic, data.broker_name, i)
            for data in route.queue_datas
            if permission.is_readable(data.perm) and data.broker_name in masters
            for i in range(data.read_queue_nums)
        }
        for queue in [q for q in self._queues if q.topic == topic and q not in wanted]:
            del self._queues[queue]
        for queue in sorted(wanted):
            self._queues.setdefault(queue, _QueueState())

    async def _heartbeat(self) -> None:
        """HEART_BEAT (34) with this CONSUME_ACTIVELY consumer to every known broker."""
        client = self._started()
        data = HeartbeatData(
            client_id=self.client_id,
            consumers=[
                ConsumerData(
                    group_name=self.group,
                    consume_type=ConsumeType.CONSUME_ACTIVELY,
                    message_model=MessageModel.CLUSTERING,
                    consume_from_where=_FROM_WHERE[self.consume_from_where],
                    subscriptions=list(self._subscriptions.values()),
                )
            ],
        )
        body = data.encode()
        for name, addr in sorted(self._brokers.items()):
            try:
                request = RemotingCommand.request(RequestCode.HEART_BEAT, body=body)
                response = await client.invoke(addr, request, self.request_timeout)
                if response.code != ResponseCode.SUCCESS:
                    log.warning("heartbeat to %s: %s %s", name, response.code, response.remark)
            except errors.RemotingError as exc:
                log.warning("heartbeat to %s failed: %s", name, exc)

    async def _unregister(self, client: RemotingClient) -> None:
        """UNREGISTER_CLIENT (35) of this consumer from every known broker, best effort."""
        header = UnregisterClientRequestHeader(client_id=self.client_id, consumer_group=self.group)
        for name, addr in sorted(self._brokers.items()):
            request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.encode())
            try:
                await client.invoke(addr, request, self.request_timeout)
            except errors.RemotingError as exc:
                log.debug("unregister from %s failed: %s", name, exc)

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
