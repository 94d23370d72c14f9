"""What every consumer does on the wire, shared by LitePullConsumer and PushConsumer.

:class:`ConsumerCore` owns one group's :class:`RemotingClient` and the master address of
every broker it learned from routes, and speaks the consumer requests:

- routes (GET_ROUTEINFO_BY_TOPIC, 105) and the readable queues they give
  (docs/protocol.md §13.3);
- PULL_MESSAGE (11, docs/protocol.md §5), header and answer from
  :mod:`rocketkube.client.consumer.pull`;
- offsets (docs/protocol.md §6): QUERY (14), UPDATE (15), GET_MAX/MIN (30/31),
  SEARCH_BY_TIMESTAMP (29), and the first offset of a queue a group never committed
  (:meth:`ConsumerCore.first_offset`);
- GET_CONSUMER_LIST_BY_GROUP (38), HEART_BEAT (34, docs/protocol.md §7.1),
  UNREGISTER_CLIENT (35); the last two to every broker of the routes, slaves included, as
  Java's client does.

Requests to a queue go to the master of its broker; an error code raises the matching
:class:`~rocketkube.client.errors.MQBrokerError` unless the caller accepts it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Iterable
from typing import Final, Literal

from rocketkube.client import errors as client_errors
from rocketkube.client import routing
from rocketkube.client.consumer.pull import (
    DEFAULT_MAX_INFLATED_BODY_SIZE,
    PULL_ANSWERS,
    PullResult,
    pull_header,
    pull_result,
)
from rocketkube.client.routing import MessageQueue
from rocketkube.common import acl, errors
from rocketkube.common.names import BrokerName, ClientId, GroupName, TopicName
from rocketkube.common.protocol import admin_bodies, permission
from rocketkube.common.protocol.admin_headers import (
    GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    HeartbeatData,
    SubscriptionData,
)
from rocketkube.common.protocol.pull_headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketkube.common.protocol.route import MASTER_ID, TopicRouteData
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import RequestHandler
from rocketkube.common.remoting.tls import TlsConfig

__all__ = [
    "FROM_WHERE",
    "RETRY_TOPIC_PREFIX",
    "ConsumeFrom",
    "ConsumerCore",
    "make_client_id",
    "readable_queues",
    "retry_topic",
]

log = logging.getLogger(__name__)

ConsumeFrom = Literal["last", "first", "timestamp"]
"""Where a group without a committed offset starts (Java ``ConsumeFromWhere``)."""

FROM_WHERE: Final[dict[str, ConsumeFromWhere]] = {
    "last": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    "first": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    "timestamp": ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
}
RETRY_TOPIC_PREFIX: Final = "%RETRY%"
#: Extra seconds a long-polling pull may take beyond its suspend time and request timeout.
_RPC_MARGIN: Final = 5.0


def retry_topic(group: str) -> TopicName:
    """``%RETRY%<group>``: where a clustering group's failed messages come back from."""
    return TopicName(RETRY_TOPIC_PREFIX + group)


def make_client_id(client_ip: str, instance_name: str | None = None) -> ClientId:
    """``ip@instance``; a unique instance (pid and random) when none is given, as the Java
    client's ``changeInstanceNameToPID`` makes every process its own group member."""
    instance = instance_name or f"{os.getpid()}#{uuid.uuid4().hex[:12]}"
    return ClientId(f"{client_ip}@{instance}")


def readable_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Every queue of ``topic`` a consumer may pull, sorted: READ perm and a live broker
    (its master, or a slave while the master is down, as Java's consumers read)."""
    live = {b.broker_name for b in route.broker_datas if b.broker_addrs}
    return sorted(
        MessageQueue(topic, data.broker_name, i)
        for data in route.queue_datas
        if permission.is_readable(data.perm) and data.broker_name in live
        for i in range(data.read_queue_nums)
    )


class ConsumerCore:
    """One consumer group's connections and wire calls (see the module docstring).

    ``handler`` serves the requests brokers send on the same connections (a push
    consumer's NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET). Pulled bodies
    are inflated up to ``max_inflated_body_size`` bytes (:mod:`rocketkube.client.consumer.pull`).
    """

    def __init__(
        self,
        group: str,
        namesrv_addrs: list[str],
        client_id: str,
        *,
        request_timeout: float,
        handler: RequestHandler | None = None,
        max_inflated_body_size: int = DEFAULT_MAX_INFLATED_BODY_SIZE,
        tls: TlsConfig | None = None,
        credentials: acl.Credentials | None = None,
    ) -> None:
        self.group = GroupName(group)
        self.namesrv_addrs = namesrv_addrs
        self.client_id = ClientId(client_id)
        self.request_timeout = request_timeout
        self.max_inflated_body_size = max_inflated_body_size
        self.client = RemotingClient(
            handler,
            connect_timeout=request_timeout,
            timeout=request_timeout,
            tls=tls,
            credentials=credentials,
        )
        #: Broker name -> {broker id: address}, as the last route naming any of its
        #: brokers had it (see :meth:`read_from`).
        self.broker_ids: dict[BrokerName, dict[int, str]] = {}
        #: Queue -> the broker id its last pull answer suggested, when not the master
        #: (a slave, for a consumer far behind on a ``slaveReadEnable`` broker).
        self.pull_from: dict[MessageQueue, int] = {}

    async def close(self) -> None:
        await self.client.close()

    # -- routes ------------------------------------------------------------------------------

    async def fetch_route(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic`` (its masters are remembered); ``None`` if unknown."""
        route = await routing.fetch_route(
            self.client, self.namesrv_addrs, topic, self.request_timeout
        )
        if route is not None:
            for broker in route.broker_datas:
                if not broker.broker_addrs:
                    continue
                name = broker.broker_name
                before = self.read_from(name)
                self.broker_ids[name] = dict(broker.broker_addrs)
                now = self.read_from(name)
                if now is not None and now[1] and now != before:
                    log.warning("broker %s has no master in the route: reading from its "
                                "slave %s", name, now[0])  # fmt: skip
        return route

    def read_from(self, name: str) -> tuple[str, bool] | None:
        """Where to read broker ``name`` from, and whether that is a slave: its master, or
        while the route has none (it is down), its lowest-id slave; ``None`` if unknown."""
        ids = self.broker_ids.get(BrokerName(name))
        if not ids:
            return None
        if MASTER_ID in ids:
            return ids[MASTER_ID], False
        return ids[min(ids)], True

    async def readable_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic``; :class:`RouteNotFoundError` when it has no route."""
        route = await self.fetch_route(topic)
        if route is None:
            raise client_errors.RouteNotFoundError(f"no route for topic {topic!r}")
        return readable_queues(topic, route)

    async def learn_routes(self, topics: Iterable[str]) -> None:
        """Read the routes of ``topics`` (for their brokers' addresses)."""
        for topic in sorted(set(topics)):
            if await self.fetch_route(topic) is None:
                raise client_errors.RouteNotFoundError(f"no route for topic {topic!r}")

    async def broker_addr(self, queue: MessageQueue) -> str:
        """The address of ``queue``'s broker (see :meth:`read_from`), re-reading the route
        when unknown."""
        return (await self._read_addr(queue))[0]

    async def _read_addr(self, queue: MessageQueue) -> tuple[str, bool]:
        """:meth:`read_from` for ``queue``'s broker, re-reading the route when unknown."""
        found = self.read_from(queue.broker_name)
        if found is None:
            await self.fetch_route(queue.topic)
            found = self.read_from(queue.broker_name)
            if found is None:
                raise client_errors.RouteNotFoundError(f"no master for {queue.broker_name!r}")
        return found

    # -- requests ----------------------------------------------------------------------------

    async def call(
        self,
        queue: MessageQueue,
        code: int,
        header: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        accept: Iterable[int] = (),
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send a request to ``queue``'s broker (:meth:`broker_addr`); MQBrokerError on
        other codes."""
        addr = await self.broker_addr(queue)
        return await self.call_addr(
            addr, queue.broker_name, code, header, body, accept=accept, timeout=timeout
        )

    async def call_addr(
        self,
        addr: str,
        name: str,
        code: int,
        header: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        accept: Iterable[int] = (),
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send a request to broker ``name`` at ``addr``; MQBrokerError on other codes."""
        request = RemotingCommand.request(code, header, body)
        response = await self.client.invoke(addr, request, timeout or self.request_timeout)
        if response.code != ResponseCode.SUCCESS and response.code not in set(accept):
            raise client_errors.for_code(response.code, response.remark, name)
        return response

    async def pull(
        self,
        queue: MessageQueue,
        offset: int,
        subscription: SubscriptionData,
        *,
        max_nums: int,
        suspend: float,
        commit_offset: int | None = None,
        lite: bool = False,
    ) -> PullResult:
        """PULL_MESSAGE from ``offset``, long-polling up to ``suspend`` seconds (0: none),
        as :func:`~rocketkube.client.consumer.pull.pull_header` describes.

        It goes to the broker id the queue's last answer suggested (``suggestWhichBrokerId``)
        when the route has it, else as :meth:`broker_addr`; a pull from a slave carries no
        offset to commit, as Java's client clears the flag there."""
        addr, from_slave = await self._pull_addr(queue)
        if from_slave:
            commit_offset = None
        response = await self.call_addr(
            addr,
            queue.broker_name,
            RequestCode.PULL_MESSAGE,
            pull_header(
                self.group,
                queue,
                offset,
                subscription,
                max_nums=max_nums,
                suspend=suspend,
                commit_offset=commit_offset,
                lite=lite,
            ),
            accept=PULL_ANSWERS,
            timeout=suspend + self.request_timeout + (_RPC_MARGIN if suspend > 0 else 0.0),
        )
        self._follow(queue, response.ext_fields.get("suggestWhichBrokerId"))
        return pull_result(response, subscription, self.max_inflated_body_size)

    async def _pull_addr(self, queue: MessageQueue) -> tuple[str, bool]:
        """Where to pull ``queue`` from, and whether that is a slave."""
        wanted = self.pull_from.get(queue)
        if wanted is not None:
            addr = self.broker_ids.get(BrokerName(queue.broker_name), {}).get(wanted)
            if addr is not None:
                return addr, True
        return await self._read_addr(queue)

    def _follow(self, queue: MessageQueue, suggested: str | None) -> None:
        """Remember the broker id a pull answer suggests for the queue's next pull."""
        try:
            broker_id = int(suggested) if suggested else MASTER_ID
        except ValueError:
            broker_id = MASTER_ID
        if broker_id == MASTER_ID:
            self.pull_from.pop(queue, None)
        elif self.pull_from.get(queue) != broker_id:
            log.info("pulling %s from broker id %d, as its broker suggests", queue, broker_id)
            self.pull_from[queue] = broker_id

    # -- offsets -----------------------------------------------------------------------------

    async def query_offset(self, queue: MessageQueue) -> int | None:
        """The group's offset of ``queue`` as the broker stores it; ``None`` when none is."""
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=self.group, topic=queue.topic, queue_id=queue.queue_id
        )
        response = await self.call(
            queue,
            RequestCode.QUERY_CONSUMER_OFFSET,
            header.encode(),
            accept={ResponseCode.QUERY_NOT_FOUND},
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return QueryConsumerOffsetResponseHeader.decode(response.ext_fields).offset

    async def update_offset(self, queue: MessageQueue, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET (15): the group's offset of ``queue`` on its broker."""
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=self.group,
            topic=queue.topic,
            queue_id=queue.queue_id,
            commit_offset=offset,
        )
        await self.call(queue, RequestCode.UPDATE_CONSUMER_OFFSET, header.encode())

    async def max_offset(self, queue: MessageQueue) -> int:
        """GET_MAX_OFFSET (30): the offset the next message of ``queue`` will get."""
        header = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
        response = await self.call(queue, RequestCode.GET_MAX_OFFSET, header.encode())
        return GetMaxOffsetResponseHeader.decode(response.ext_fields).offset

    async def min_offset(self, queue: MessageQueue) -> int:
        """GET_MIN_OFFSET (31): the oldest offset ``queue`` still holds."""
        header = GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
        response = await self.call(queue, RequestCode.GET_MIN_OFFSET, header.encode())
        return GetMinOffsetResponseHeader.decode(response.ext_fields).offset

    async def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the offset of the message stored nearest then."""
        header = SearchOffsetRequestHeader(
            topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
        )
        response = await self.call(queue, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.encode())
        return SearchOffsetResponseHeader.decode(response.ext_fields).offset

    async def first_offset(
        self,
        queue: MessageQueue,
        committed: int | None,
        consume_from: ConsumeFrom,
        timestamp_ms: int | None,
    ) -> int:
        """Where to start ``queue`` (docs/protocol.md §6.2): ``committed`` when there is one,
        else by ``consume_from``; ``%RETRY%`` topics start at 0 ("last") or the max
        ("timestamp")."""
        if committed is not None and committed >= 0:
            return committed
        retry = queue.topic.startswith(RETRY_TOPIC_PREFIX)
        if consume_from == "first" or (retry and consume_from == "last"):
            return 0
        if consume_from == "timestamp" and not retry:
            if timestamp_ms is None:
                raise ValueError('consume_from="timestamp" needs a timestamp')
            return await self.search_offset(queue, timestamp_ms)
        return await self.max_offset(queue)

    # -- group membership --------------------------------------------------------------------

    async def consumer_ids(self, topic: str) -> list[ClientId]:
        """GET_CONSUMER_LIST_BY_GROUP (38) from a broker of ``topic``, sorted; [] if none."""
        route = await self.fetch_route(topic)
        names = sorted({b.broker_name for b in route.broker_datas}) if route else []
        for name in names:
            found = self.read_from(name)
            if found is None:
                continue
            addr = found[0]
            header = GetConsumerListByGroupRequestHeader(consumer_group=self.group)
            try:
                response = await self.call_addr(
                    addr, name, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.encode()
                )
            except (client_errors.MQClientError, errors.RemotingError) as exc:
                log.debug("consumer list of %s from %s: %s", self.group, name, exc)
                continue
            return sorted(admin_bodies.decode_consumer_id_list(response.body_bytes()))
        return []

    async def heartbeat(self, consumer: ConsumerData) -> None:
        """HEART_BEAT (34) declaring ``consumer`` to every known broker, best effort."""
        body = HeartbeatData(client_id=self.client_id, consumers=[consumer]).encode()
        await self._to_every_broker(
            "heartbeat", RequestCode.HEART_BEAT, None, body, logging.WARNING
        )

    async def unregister(self) -> None:
        """UNREGISTER_CLIENT (35) of this consumer from every known broker, best effort."""
        header = UnregisterClientRequestHeader(client_id=self.client_id, consumer_group=self.group)
        await self._to_every_broker(
            "unregister", RequestCode.UNREGISTER_CLIENT, header.encode(), b"", logging.DEBUG
        )

    async def _to_every_broker(
        self, what: str, code: int, header: dict[str, str] | None, body: bytes, level: int
    ) -> None:
        """Request ``code`` (``what``, for the log) to every broker of the known routes,
        masters and slaves, at once.

        Slaves too, as Java's ``sendHeartbeatToAllBroker``: while a master is down, the
        group's consumers read and rebalance through its slave, which must already know
        them, not learn of them one heartbeat interval later. A broker that does not answer
        delays no other; its failure is logged at ``level``."""

        async def one(name: str, addr: str) -> None:
            try:
                await self.call_addr(addr, name, code, header, body)
            except (client_errors.MQClientError, errors.RemotingError) as exc:
                log.log(level, "%s to %s (%s) failed: %s", what, name, addr, exc)

        targets = [
            (name, addr)
            for name in sorted(self.broker_ids)
            for _, addr in sorted(self.broker_ids[name].items())
        ]
        await asyncio.gather(*(one(name, addr) for name, addr in targets))
