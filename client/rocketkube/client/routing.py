"""Topic routes for producers: which queues of which brokers a topic may be sent to.

Two layers:

- pure: :func:`writable_queues` (queues of brokers whose perm has
  WRITE (2) and that have a master address), :func:`clamp_default_route` (the ``TBW102``
  fallback of docs/protocol.md §13.1) and :func:`select_queue` (round robin that
  avoids the broker of the last failure);
- async: :func:`fetch_route` asks the name servers in turn (GET_ROUTEINFO_BY_TOPIC, 105)
  and :class:`RouteCache` keeps one :class:`TopicPublishInfo` per topic, refreshed every
  30 s and whenever a send fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Sequence
from typing import Final

from rocketkube.client import errors as client_errors
from rocketkube.common import errors
from rocketkube.common.names import TopicName
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.namesrv_headers import GetRouteInfoRequestHeader
from rocketkube.common.protocol.route import QueueData, TopicRouteData
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "DEFAULT_TOPIC",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "MessageQueue",
    "RouteCache",
    "TopicPublishInfo",
    "clamp_default_route",
    "fetch_route",
    "select_queue",
    "writable_queues",
]

log = logging.getLogger(__name__)

DEFAULT_TOPIC: Final = "TBW102"
"""The topic whose route (and config) new topics inherit on the broker (``createTopicKey``)."""
DEFAULT_TOPIC_QUEUE_NUMS: Final = 4
"""Queues an auto-created topic gets per broker (Java ``defaultTopicQueueNums``)."""


@dataclasses.dataclass(slots=True)
class TopicPublishInfo:
    """What a producer knows of a topic: its route, writable queues and master addresses.

    ``from_default`` is true when the route is ``TBW102``'s (the topic does not exist yet).
    """

    topic: TopicName
    route: TopicRouteData
    queues: list[MessageQueue]
    from_default: bool = False
    counter: int = 0

    def master_addr(self, broker_name: str) -> str | None:
        """The master address of ``broker_name`` in this route, or ``None``."""
        for broker in self.route.broker_datas:
            if broker.broker_name == broker_name:
                return broker.master_addr
        return None

    def next_index(self) -> int:
        """The next value of this topic's round-robin counter."""
        index = self.counter
        self.counter = index + 1
        return index


def writable_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Every queue a producer may send to: brokers with WRITE perm and a master address.

    Sorted by broker name then queue id, as Java's ``topicRouteData2TopicPublishInfo``
    (which also sorts the QueueData by broker name).
    """
    masters = {b.broker_name for b in route.broker_datas if b.master_addr}
    out: list[MessageQueue] = []
    for data in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not permission.is_writeable(data.perm) or data.broker_name not in masters:
            continue
        out.extend(MessageQueue(topic, data.broker_name, i) for i in range(data.write_queue_nums))
    return out


def clamp_default_route(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """``TBW102``'s route with every read/write queue count clamped to ``queue_nums``."""
    return TopicRouteData(
        queue_datas=[
            QueueData(
                broker_name=q.broker_name,
                read_queue_nums=min(q.read_queue_nums, queue_nums),
                write_queue_nums=min(q.write_queue_nums, queue_nums),
                perm=q.perm,
                topic_sys_flag=q.topic_sys_flag,
            )
            for q in route.queue_datas
        ],
        broker_datas=list(route.broker_datas),
        filter_server_table=dict(route.filter_server_table),
        order_topic_conf=route.order_topic_conf,
    )


def select_queue(
    queues: Sequence[MessageQueue], last_broker: str | None, counter: int
) -> MessageQueue:
    """Pick ``queues[counter % n]``, skipping queues of ``last_broker`` (the last failure).

    Scans forward from ``counter`` for the first queue on another broker; when every queue
    is on ``last_broker`` it returns ``queues[counter % n]`` anyway. ``queues`` must not be
    empty (:class:`ValueError`).
    """
    if not queues:
        raise ValueError("no queue to select from")
    size = len(queues)
    if last_broker is not None:
        for step in range(size):
            queue = queues[(counter + step) % size]
            if queue.broker_name != last_broker:
                return queue
    return queues[counter % size]


async def fetch_route(
    client: RemotingClient, namesrv_addrs: Sequence[str], topic: str, timeout: float
) -> TopicRouteData | None:
    """The route of ``topic`` from the first name server that answers; ``None`` if unknown.

    Name servers are tried in order; a transport error moves on to the next one and is
    raised when none answers. Other error codes raise :class:`MQBrokerError`.
    """
    if not namesrv_addrs:
        raise client_errors.RouteNotFoundError("no name server address configured")
    last: errors.RemotingError | None = None
    for addr in namesrv_addrs:
        header = GetRouteInfoRequestHeader(topic=topic).encode()
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
        try:
            response = await client.invoke(addr, request, timeout)
        except errors.RemotingError as exc:
            log.debug("name server %s: %s", addr, exc)
            last = exc
            continue
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise client_errors.for_code(response.code, response.remark, addr)
        return TopicRouteData.decode(response.body_bytes())
    assert last is not None
    raise last


class RouteCache:
    """Per-topic :class:`TopicPublishInfo`, from the name servers, refreshed in background.

    :meth:`get` fetches a topic's route on first use; :meth:`refresh` re-reads it (after a
    failed send); :meth:`start` runs a task refreshing every known topic each
    ``poll_interval`` seconds until :meth:`close`.
    """

    def __init__(
        self,
        client: RemotingClient,
        namesrv_addrs: Sequence[str],
        *,
        timeout: float = 3.0,
        poll_interval: float = 30.0,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
    ) -> None:
        self._client = client
        self.namesrv_addrs = list(namesrv_addrs)
        self._timeout = timeout
        self._poll_interval = poll_interval
        self._queue_nums = default_topic_queue_nums
        self._topics: dict[TopicName, TopicPublishInfo] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic refresh task (idempotent)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._poll())

    async def close(self) -> None:
        """Stop the periodic refresh task."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def cached(self, topic: str) -> TopicPublishInfo | None:
        """The cached publish info of ``topic``, without asking anyone."""
        return self._topics.get(TopicName(topic))

    async def get(self, topic: str) -> TopicPublishInfo:
        """The publish info of ``topic``, fetched if not cached; RouteNotFoundError if none."""
        info = self._topics.get(TopicName(topic))
        if info is not None and info.queues:
            return info
        return await self.refresh(topic)

    async def refresh(self, topic: str) -> TopicPublishInfo:
        """Re-read the route of ``topic``, falling back to ``TBW102``'s when it is unknown.

        Raises :class:`RouteNotFoundError` when neither has a writable queue, or the
        transport error when no name server answers.
        """
        route = await fetch_route(self._client, self.namesrv_addrs, topic, self._timeout)
        from_default = route is None
        if route is None:
            default = await fetch_route(
                self._client, self.namesrv_addrs, DEFAULT_TOPIC, self._timeout
            )
            if default is not None:
                route = clamp_default_route(default, self._queue_nums)
        queues = writable_queues(topic, route) if route is not None else []
        if route is None or not queues:
            raise client_errors.RouteNotFoundError(f"no route to send to topic {topic!r}")
        name = TopicName(topic)
        old = self._topics.get(name)
        info = TopicPublishInfo(name, route, queues, from_default, old.counter if old else 0)
        self._topics[name] = info
        return info

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_interval)
            for topic in list(self._topics):
                try:
                    await self.refresh(topic)
                except (client_errors.MQClientError, errors.RemotingError) as exc:
                    log.warning("route refresh of %s failed: %s", topic, exc)
