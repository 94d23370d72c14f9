"""What a cluster's brokers say, through the SDK's admin API only, as the plans' observed
data (:mod:`rocketkube.operator.plans.observed`); and the writes the plans ask for.

Where each reading comes from::

    masters, slaves        GET_BROKER_CLUSTER_INFO: the brokers registered under the
                           cluster's brokerClusterName, by brokerName (so by group)
    Inventory              a master's GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG;
                           for a Topic's pass, its topic's entry of the first alone; for
                           a ConsumerGroup's, its group's entry of the second alone
    replication lag        GET_BROKER_RUNTIME_INFO's commitLogMaxOffset of the master less
                           its furthest slave's (unknown while a slave is not registered)
    write permission       the name servers' route of the topic named after the brokerName
                           (every broker serves one, ``brokerTopicEnable``): its queues lose
                           the write bit when WIPE_WRITE_PERM_OF_BROKER revoked it
    consumer lag           GET_CONSUME_STATS of every subscription group on the master,
                           the queues of that broker only
    routes                 GET_ROUTEINFO_BY_TOPIC: queue counts per brokerName

A reading that fails gives None (unknown): the plans wait or report instead of guessing.
Failures are kept in :attr:`Brokers.errors`, for the ``AdminUnreachable`` messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Final

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.errors import MQClientError, TopicNotExistError
from rocketkube.common.errors import RocketKubeError
from rocketkube.common.names import TopicName
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.route import BrokerData, ClusterInfo
from rocketkube.common.protocol.subscription_group import SubscriptionGroupConfig
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.operator.api import names
from rocketkube.operator.plans import consumer_groups, observed, topics

__all__ = ["ADMIN_ERRORS", "Brokers", "connect"]

ADMIN_ERRORS: Final = (RocketKubeError, OSError, asyncio.TimeoutError)
"""What an admin call raises when a name server or broker cannot do what was asked."""

MASTER_ID: Final = 0


@asynccontextmanager
async def connect(
    address: str, cluster: str, groups: int, timeout: float
) -> AsyncIterator[Brokers]:
    """An admin client on ``address`` for one pass over ``cluster``, closed after it."""
    async with AdminClient(address, timeout=timeout) as admin:
        yield Brokers(admin, cluster, groups)


class Brokers:
    """One pass's view of a cluster's brokers; groups ``0..groups-1`` are looked up."""

    def __init__(self, admin: AdminClient, cluster: str, groups: int) -> None:
        self.admin = admin
        self.cluster = cluster
        self.groups = groups
        self.errors: list[str] = []
        self._info: ClusterInfo | None = None
        self._info_read = False

    def _failed(self, what: str, exc: BaseException) -> None:
        self.errors.append(f"{what}: {exc or type(exc).__name__}")

    async def _cluster_info(self) -> ClusterInfo | None:
        if not self._info_read:
            self._info_read = True
            try:
                self._info = await self.admin.cluster_info()
            except ADMIN_ERRORS as exc:
                self._failed("the name servers did not answer", exc)
        return self._info

    async def group(self, group: int) -> BrokerData | None:
        """The brokers registered as broker group ``group``, or None."""
        info = await self._cluster_info()
        if info is None:
            return None
        name = names.broker_name(self.cluster, group)
        if name not in info.cluster_addr_table.get(names.broker_cluster_name(self.cluster), ()):
            return None
        return info.broker_addr_table.get(name)

    async def master(self, group: int) -> str | None:
        data = await self.group(group)
        return None if data is None else data.master_addr

    # -- readings -----------------------------------------------------------------------

    async def inventory(self, group: int) -> observed.Inventory | None:
        """What group ``group``'s master holds, or None when it did not answer."""
        return await self._on_master(group, self._everything)

    async def inventories(self, groups: Iterable[int]) -> dict[int, observed.Inventory | None]:
        return {group: await self.inventory(group) for group in groups}

    async def topic_inventories(
        self, groups: Iterable[int], topic: str
    ) -> dict[int, observed.Inventory | None]:
        """Each group master's state of ``topic`` alone (an Inventory holding it, or
        nothing when the master lacks it; None when it did not answer): a Topic's pass
        reads no subscription groups and turns no other topic into observed state."""

        async def read(address: str) -> observed.Inventory:
            found = await self.admin.topic_config(address, topic)
            return observed.Inventory(topics={} if found is None else {topic: _state(found)})

        return {group: await self._on_master(group, read) for group in groups}

    async def group_inventories(
        self, groups: Iterable[int], consumer_group: str
    ) -> dict[int, observed.Inventory | None]:
        """Each group master's settings of ``consumer_group`` alone, as
        :meth:`topic_inventories` for a topic: a ConsumerGroup's pass reads no topics and
        no other group."""

        async def read(address: str) -> observed.Inventory:
            found = await self.admin.subscription_group(address, consumer_group)
            held = {} if found is None else {consumer_group: _settings(found)}
            return observed.Inventory(consumer_groups=held)

        return {group: await self._on_master(group, read) for group in groups}

    async def _everything(self, address: str) -> observed.Inventory:
        topic_table = await self.admin.topic_configs(address)
        group_table = await self.admin.subscription_groups(address)
        return observed.Inventory(
            topics={name: _state(config) for name, config in topic_table.items()},
            consumer_groups={name: _settings(config) for name, config in group_table.items()},
        )

    async def _on_master(
        self, group: int, read: Callable[[str], Awaitable[observed.Inventory]]
    ) -> observed.Inventory | None:
        """``read`` from group ``group``'s master, or None (the reason kept in
        :attr:`errors`) when it is not registered or does not answer."""
        address = await self.master(group)
        if address is None:
            if self._info is not None:
                self.errors.append(f"{names.broker_name(self.cluster, group)} is not registered")
            return None
        try:
            return await read(address)
        except ADMIN_ERRORS as exc:
            self._failed(f"{names.broker_name(self.cluster, group)} did not answer", exc)
            return None

    async def replication_lag(self, group: int, replicas: int) -> int | None:
        """Bytes the furthest slave of ``group`` is behind its master (None: unknown)."""
        data = await self.group(group)
        if data is None or len(data.broker_addrs) < replicas or MASTER_ID not in data.broker_addrs:
            return None
        try:
            offsets = {
                broker_id: int(
                    (await self.admin.broker_runtime_info(address))["commitLogMaxOffset"]
                )
                for broker_id, address in data.broker_addrs.items()
            }
        except (*ADMIN_ERRORS, KeyError, ValueError) as exc:
            self._failed(f"{data.broker_name} runtime info", exc)
            return None
        master = offsets.pop(MASTER_ID)
        return max((master - offset for offset in offsets.values()), default=0)

    async def write_revoked(self, group: int) -> bool | None:
        """Whether the name servers route group ``group`` read-only (None: unknown)."""
        broker = names.broker_name(self.cluster, group)
        try:
            route = await self.admin.topic_route(broker)
        except TopicNotExistError:
            return None
        except ADMIN_ERRORS as exc:
            self._failed("the name servers did not answer", exc)
            return None
        perms = [queue.perm for queue in route.queue_datas if queue.broker_name == broker]
        if not perms:
            return None
        return not any(perm & permission.PERM_WRITE for perm in perms)

    async def lag_on(self, group: int) -> list[observed.Lag] | None:
        """Every consumer group's unconsumed messages on group ``group`` (None: unknown)."""
        address = await self.master(group)
        if address is None:
            return None
        broker = names.broker_name(self.cluster, group)
        try:
            subscriptions = await self.admin.subscription_groups(address)
            found: list[observed.Lag] = []
            for consumer_group in sorted(subscriptions):
                stats = await self.admin.consume_stats(consumer_group)
                per_topic = _lag_by_topic(
                    (queue.topic, wrapper.broker_offset - wrapper.consumer_offset)
                    for queue, wrapper in stats.offset_table.items()
                    if queue.broker_name == broker
                )
                found += [observed.Lag(consumer_group, t, n) for t, n in per_topic.items()]
        except ADMIN_ERRORS as exc:
            self._failed(f"{broker} consume stats", exc)
            return None
        return found

    async def consumer_lag(self, consumer_group: str) -> dict[TopicName, int] | None:
        """``consumer_group``'s unconsumed messages per topic on this cluster's brokers."""
        brokers = {names.broker_name(self.cluster, group) for group in range(self.groups)}
        try:
            stats = await self.admin.consume_stats(consumer_group)
        except ADMIN_ERRORS as exc:
            self._failed(f"consume stats of {consumer_group}", exc)
            return None
        return _lag_by_topic(
            (queue.topic, wrapper.broker_offset - wrapper.consumer_offset)
            for queue, wrapper in stats.offset_table.items()
            if queue.broker_name in brokers
        )

    async def routes(self, topic: str) -> dict[str, topics.Queues] | None:
        """The queue counts the name servers route ``topic`` with, per brokerName."""
        try:
            route = await self.admin.topic_route(topic)
        except TopicNotExistError:
            return {}
        except ADMIN_ERRORS as exc:
            self._failed("the name servers did not answer", exc)
            return None
        return {
            queue.broker_name: topics.Queues(queue.read_queue_nums, queue.write_queue_nums)
            for queue in route.queue_datas
        }

    # -- writes (errors propagate: the caller reports them) -----------------------------

    async def put_topic(self, step: topics.TopicAction) -> None:
        address = await self._master_or_raise(step.group)
        state = step.state
        await self.admin.create_topic(
            step.topic,
            broker_addr=address,
            read_queue_nums=state.read_queues,
            write_queue_nums=state.write_queues,
            perm=state.perm,
            order=state.order,
        )

    async def put_consumer_group(self, step: consumer_groups.GroupAction) -> None:
        address = await self._master_or_raise(step.group)
        settings = step.settings
        await self.admin.create_subscription_group(
            step.consumer_group,
            broker_addr=address,
            retry_max_times=settings.retry_max_times,
            consume_broadcast_enable=settings.consume_broadcast_enable,
            consume_from_min_enable=settings.consume_from_min_enable,
            retry_queue_nums=settings.retry_queue_nums,
            which_broker_when_consume_slowly=settings.which_broker_when_consume_slowly,
        )

    async def _master_or_raise(self, group: int) -> str:
        address = await self.master(group)
        if address is None:
            raise MQClientError(
                f"{names.broker_name(self.cluster, group)} has no master registered"
            )
        return address


def _state(config: TopicConfig) -> observed.TopicState:
    return observed.TopicState(
        config.read_queue_nums, config.write_queue_nums, config.perm, config.order
    )


def _settings(config: SubscriptionGroupConfig) -> observed.GroupSettings:
    return observed.GroupSettings(
        retry_max_times=config.retry_max_times,
        consume_broadcast_enable=config.consume_broadcast_enable,
        consume_from_min_enable=config.consume_from_min_enable,
        retry_queue_nums=config.retry_queue_nums,
        which_broker_when_consume_slowly=config.which_broker_when_consume_slowly,
    )


def _lag_by_topic(pairs: Iterable[tuple[str, int]]) -> dict[TopicName, int]:
    out: dict[TopicName, int] = {}
    for topic, lag in pairs:
        name = TopicName(topic)
        out[name] = out.get(name, 0) + max(0, lag)
    return dict(sorted(out.items()))
