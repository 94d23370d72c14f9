"""The typed asyncio admin client: what ``mqadmin`` does, for programs (the K8s operator).

::

    async with AdminClient("127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", write_queue_nums=4)
        route = await admin.topic_route("Orders")
        lag = (await admin.consume_stats("OrderGroup", "Orders")).diff_total

``namesrv_addr`` may list several name servers separated by ``;``. Reads go to the first
name server that answers; writes to name servers (write permission, KV config, topic
deletion) go to every one. Broker requests go to masters, found through the cluster info
or the topic's route. A non-zero response code raises the :class:`MQBrokerError`
subclass :func:`~rocketkube.client.errors.for_code` maps it to, with ``code``, ``remark``
and the answering address as ``broker``; transport failures raise the
:mod:`rocketkube.common.errors` remoting errors unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping

from rocketkube.client.admin.queues import TOOLS_CONSUMER_GROUP, AdminQueues
from rocketkube.client.errors import MQBrokerError, MQClientError
from rocketkube.common import errors as common_errors
from rocketkube.common import fastjson, properties_file
from rocketkube.common.names import GroupName
from rocketkube.common.protocol import admin_headers as ah
from rocketkube.common.protocol import namesrv_headers as nh
from rocketkube.common.protocol import route as rt
from rocketkube.common.protocol import subscription_group
from rocketkube.common.protocol.admin_bodies import (
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    TopicOffset,
    TopicStatsTable,
    decode_group_list,
)
from rocketkube.common.protocol.consumer_headers import ResetOffsetBody, ResetOffsetRequestHeader
from rocketkube.common.protocol.running_info import (
    CALL_CLIENT_TIMEOUT,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
)
from rocketkube.common.protocol.subscription_group import SubscriptionGroupConfig
from rocketkube.common.protocol.topic_config import TopicConfig, TopicConfigWrapper
from rocketkube.common.remoting.codes import RequestCode, ResponseCode

__all__ = ["DEFAULT_TOPIC", "TOOLS_CONSUMER_GROUP", "AdminClient"]

#: Prefix of a group's retry topic, whose route leads to the brokers its clients use.
RETRY_PREFIX = "%RETRY%"
#: The template topic brokers create new topics from (``TBW102``).
DEFAULT_TOPIC = "TBW102"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class AdminClient(AdminQueues):
    """An admin connection to a RocketMQ 4.x name server (or several) and their brokers.

    Use as ``async with AdminClient(addr) as admin`` or call :meth:`start` and
    :meth:`close`. ``timeout`` (seconds) bounds each connect and each request; its
    default, 5 s, is mqadmin's (``DefaultMQAdminExt``): a broker answers a config change
    only once it is on disk, and one fsync on a busy disk can take seconds. ``tls``:
    ``True`` or a :class:`~rocketkube.common.remoting.tls.TlsConfig` connects with TLS.
    ``credentials``: ``(access_key, secret_key)`` or a
    :class:`~rocketkube.common.acl.Credentials` signs every request (admin requests need
    an admin account). The same options come as one
    :class:`~rocketkube.client.admin.settings.AdminSettings` with ``settings=`` (then
    neither ``namesrv_addr`` nor another option is given); :attr:`settings` holds them.
    """

    # -- topics -------------------------------------------------------------------------

    async def create_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queue_nums: int = 8,
        write_queue_nums: int = 8,
        perm: int = 6,
        order: bool = False,
        topic_sys_flag: int = 0,
    ) -> TopicConfig:
        """UPDATE_AND_CREATE_TOPIC (17) on every master of ``cluster``, or on ``broker_addr``.

        Give exactly one of the two; ``topic_sys_flag`` carries the unit flags
        (:data:`~rocketkube.common.protocol.permission.FLAG_UNIT`, ``FLAG_UNIT_SUB``).
        Creates or updates the topic; a broker answers once the name servers route it
        (as Apache's does), so a client started after the return finds the route.
        Returns the configuration sent.
        """
        self._targets(cluster, broker_addr)
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums,
            perm=perm,
            order=order,
            topic_sys_flag=topic_sys_flag,
        )
        header = ah.CreateTopicRequestHeader(
            topic=topic,
            default_topic=DEFAULT_TOPIC,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=config.topic_filter_type,
            order=config.order,
            topic_sys_flag=config.topic_sys_flag,
        )
        addrs = [broker_addr] if broker_addr is not None else []
        if cluster is not None:
            addrs = await self._cluster_masters(cluster)
        ext = header.encode()
        await self._each(
            addrs, lambda addr: self._invoke(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext)
        )
        return config

    async def delete_topic(self, topic: str, cluster: str) -> None:
        """DELETE_TOPIC_IN_BROKER (215) on every master of ``cluster``, then
        DELETE_TOPIC_IN_NAMESRV (216) on every name server."""
        masters = await self._cluster_masters(cluster)
        ext = ah.DeleteTopicRequestHeader(topic=topic).encode()
        await self._each(
            masters, lambda addr: self._invoke(addr, RequestCode.DELETE_TOPIC_IN_BROKER, ext)
        )
        ns_ext = nh.DeleteTopicFromNamesrvRequestHeader(topic=topic).encode()
        await self._every_namesrv(RequestCode.DELETE_TOPIC_IN_NAMESRV, ns_ext)

    async def topic_stats(self, topic: str) -> TopicStatsTable:
        """GET_TOPIC_STATS_INFO (202) on every master of the topic's route, merged:
        min/max offset and last store time of each queue."""
        ext = ah.GetTopicStatsInfoRequestHeader(topic=topic).encode()
        answers = await self._each(
            await self._route_brokers(topic),
            lambda addr: self._invoke(addr, RequestCode.GET_TOPIC_STATS_INFO, ext),
        )
        table: dict[MessageQueue, TopicOffset] = {}
        for response in answers.values():
            table.update(TopicStatsTable.decode(response.body).offset_table)
        return TopicStatsTable(dict(sorted(table.items())))

    # -- subscription groups and consumers ----------------------------------------------

    async def create_subscription_group(
        self,
        group: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        consume_enable: bool = True,
        consume_from_min_enable: bool = True,
        consume_broadcast_enable: bool = True,
        retry_queue_nums: int = 1,
        retry_max_times: int = 16,
        broker_id: int = 0,
        which_broker_when_consume_slowly: int = 1,
        notify_consumer_ids_changed_enable: bool = True,
    ) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) on every master of ``cluster``, or on
        ``broker_addr`` (exactly one of the two): creates or replaces the group's config."""
        self._targets(cluster, broker_addr)
        config = SubscriptionGroupConfig(
            group,
            consume_enable=consume_enable,
            consume_from_min_enable=consume_from_min_enable,
            consume_broadcast_enable=consume_broadcast_enable,
            retry_queue_nums=retry_queue_nums,
            retry_max_times=retry_max_times,
            broker_id=broker_id,
            which_broker_when_consume_slowly=which_broker_when_consume_slowly,
            notify_consumer_ids_changed_enable=notify_consumer_ids_changed_enable,
        )
        body = fastjson.dumps(config.to_json())
        addrs = [broker_addr] if broker_addr is not None else []
        if cluster is not None:
            addrs = await self._cluster_masters(cluster)
        await self._each(
            addrs,
            lambda addr: self._invoke(
                addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body
            ),
        )

    async def delete_subscription_group(
        self,
        group: str,
        cluster: str | None = None,
        *,
        broker_addr: str | None = None,
        remove_offset: bool = False,
    ) -> None:
        """DELETE_SUBSCRIPTIONGROUP (207) on every master of ``cluster``, or on
        ``broker_addr`` (exactly one of the two); with ``remove_offset`` the group's
        consumer offsets go too."""
        self._targets(cluster, broker_addr)
        ext = ah.DeleteSubscriptionGroupRequestHeader(
            group_name=group, remove_offset=remove_offset
        ).encode()
        addrs = [broker_addr] if broker_addr is not None else []
        if cluster is not None:
            addrs = await self._cluster_masters(cluster)
        await self._each(
            addrs, lambda addr: self._invoke(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext)
        )

    async def reset_offset_by_timestamp(
        self, topic: str, group: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET (222) on every master of ``topic``'s route, merged:
        the group's offset of each queue moved to the one at ``timestamp_ms`` (``-1``: the
        max offset). Without ``force`` an offset only moves back. The brokers commit the
        new offsets and tell the group's online consumers (220). Returns queue -> offset.
        """
        ext = ResetOffsetRequestHeader(
            topic=topic, group=group, timestamp=timestamp_ms, is_force=force
        ).encode()
        answers = await self._each(
            await self._route_brokers(topic),
            lambda addr: self._invoke(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext),
        )
        table: dict[MessageQueue, int] = {}
        for response in answers.values():
            table.update(ResetOffsetBody.decode(response.body).offset_table)
        return dict(sorted(table.items()))

    async def topic_consumed_by(self, topic: str) -> list[GroupName]:
        """QUERY_TOPIC_CONSUME_BY_WHO (300) on every master of ``topic``'s route, merged:
        the groups subscribed to it or holding offsets on it."""
        ext = ah.QueryTopicConsumeByWhoRequestHeader(topic=topic).encode()
        answers = await self._each(
            await self._route_brokers(topic),
            lambda addr: self._invoke(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, ext),
        )
        groups: set[GroupName] = set()
        for response in answers.values():
            groups.update(decode_group_list(response.body))
        return sorted(groups)

    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """GET_CONSUME_STATS (208) per broker, merged: broker and consumer offset per queue.

        With ``topic``, the masters of its route are asked about that topic only; without,
        every master of every cluster about every topic the group has offsets on. The
        total lag is the result's ``diff_total``; ``consume_tps`` is summed.
        """
        ext = ah.GetConsumeStatsRequestHeader(consumer_group=group, topic=topic).encode()
        addrs = await self._route_brokers(topic) if topic else await self._all_masters()
        answers = await self._each(
            addrs, lambda addr: self._invoke(addr, RequestCode.GET_CONSUME_STATS, ext)
        )
        table: dict[MessageQueue, OffsetWrapper] = {}
        tps = 0.0
        for response in answers.values():
            stats = ConsumeStats.decode(response.body)
            table.update(stats.offset_table)
            tps += stats.consume_tps
        return ConsumeStats(dict(sorted(table.items())), tps)

    async def consumer_connections(
        self, group: str, *, broker_addr: str | None = None
    ) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST (203): the group's online consumers and their
        subscriptions, from the first master that knows them (or from ``broker_addr``).

        Raises the broker's error (CONSUMER_NOT_ONLINE) when no master does.
        """
        ext = ah.GetConsumerConnectionListRequestHeader(consumer_group=group).encode()
        last: Exception | None = None
        addrs = [broker_addr] if broker_addr is not None else await self._all_masters()
        for addr in addrs:
            try:
                response = await self._invoke(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, ext)
            except MQClientError as exc:
                last = exc
                continue
            return ConsumerConnection.decode(response.body)
        raise last if last is not None else MQClientError("no master broker known")

    async def consumer_running_info(
        self, group: str, client_id: str, *, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (307): what consumer ``client_id`` of ``group`` reports
        about itself (its properties, subscriptions, queues and figures; with ``jstack``,
        its stacks), relayed by a broker it is connected to.

        Brokers are tried as Java's admin does, the masters of ``%RETRY%<group>``'s route
        first, then every other master; the first answer wins. Raises the broker's error
        (SYSTEM_ERROR "The Consumer <group> <clientId> not online", CONSUME_MSG_TIMEOUT)
        when none has the client. Each broker gets this client's timeout plus the time a
        broker waits for the consumer (:data:`CALL_CLIENT_TIMEOUT`).
        """
        header = GetConsumerRunningInfoRequestHeader(
            consumer_group=group, client_id=client_id, jstack_enable=jstack
        )
        try:
            preferred = await self._route_brokers(RETRY_PREFIX + group)
        except MQClientError:
            preferred = []
        addrs = preferred + [a for a in await self._all_masters() if a not in preferred]
        last: Exception | None = None
        for addr in addrs:
            try:
                response = await self._invoke(
                    addr,
                    RequestCode.GET_CONSUMER_RUNNING_INFO,
                    header.encode(),
                    timeout=self.timeout + CALL_CLIENT_TIMEOUT,
                )
            except MQClientError as exc:
                last = exc
                continue
            return ConsumerRunningInfo.decode(response.body_bytes())
        raise last if last is not None else MQClientError("no master broker known")

    async def consumers_running_info(
        self, group: str, client_ids: Iterable[str], *, jstack: bool = False
    ) -> dict[str, ConsumerRunningInfo | MQBrokerError]:
        """:meth:`consumer_running_info` of each of ``client_ids``, asked all at once: a
        client that never answers costs the broker's wait for it (10 s) once, not once per
        client. A client's broker error (not online, no answer) is its entry; any other
        error is raised."""
        ids = list(dict.fromkeys(client_ids))
        results = await asyncio.gather(
            *(self.consumer_running_info(group, cid, jstack=jstack) for cid in ids),
            return_exceptions=True,
        )
        out: dict[str, ConsumerRunningInfo | MQBrokerError] = {}
        for cid, result in zip(ids, results, strict=True):
            if isinstance(result, ConsumerRunningInfo | MQBrokerError):
                out[cid] = result
            else:
                raise result
        return out

    async def producer_connections(self, group: str, topic: str) -> ProducerConnection:
        """GET_PRODUCER_CONNECTION_LIST (204) on every master of ``topic``'s route: the
        group's producer connections, merged (one entry per client id)."""
        ext = ah.GetProducerConnectionListRequestHeader(producer_group=group).encode()
        answers = await self._each(
            await self._route_brokers(topic),
            lambda addr: self._invoke(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, ext),
        )
        seen: set[str] = set()
        out = ProducerConnection()
        for response in answers.values():
            for conn in ProducerConnection.decode(response.body).connections:
                if conn.client_id not in seen:
                    seen.add(conn.client_id)
                    out.connections.append(conn)
        return out

    # -- brokers ------------------------------------------------------------------------

    async def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the broker's runtime KVTable under Java's key
        names (``msgPutTotalTodayNow``, ``commitLogDiskRatio``, ...)."""
        response = await self._invoke(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return rt.decode_kv_table(response.body)

    async def topic_configs(self, broker_addr: str) -> dict[str, TopicConfig]:
        """GET_ALL_TOPIC_CONFIG (21): every topic the broker holds, system ones included,
        by name (what a slave copies, and the operator compares with its Topics)."""
        response = await self._invoke(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        wrapper = TopicConfigWrapper.from_json(fastjson.loads(response.body_bytes()))
        return wrapper.topic_config_table

    async def topic_config(self, broker_addr: str, topic: str) -> TopicConfig | None:
        """``topic``'s entry of the broker's GET_ALL_TOPIC_CONFIG (21) table, None when the
        broker lacks it. RocketMQ 4.x has no request for one topic; decoding this entry
        alone keeps checking one topic from costing what decoding thousands does."""
        response = await self._invoke(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        table = fastjson.loads(response.body_bytes()).get("topicConfigTable") or {}
        found = table.get(topic)
        return None if found is None else TopicConfig.from_json(found, topic)

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): every consumer group's settings on the
        broker, by name."""
        response = await self._invoke(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return subscription_group.decode_table(fastjson.loads(response.body_bytes()))

    async def subscription_group(
        self, broker_addr: str, group: str
    ) -> SubscriptionGroupConfig | None:
        """``group``'s entry of the broker's GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) table,
        None when the broker lacks it; decoded alone, as :meth:`topic_config`."""
        response = await self._invoke(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = fastjson.loads(response.body_bytes()).get("subscriptionGroupTable") or {}
        found = table.get(group)
        return None if found is None else SubscriptionGroupConfig.from_json(found)

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG (26): every setting of the broker, as strings under
        RocketMQ's property names."""
        response = await self._invoke(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return properties_file.parse_properties(response.body_bytes().decode("utf-8"))

    async def update_broker_config(self, broker_addr: str, changes: Mapping[str, object]) -> None:
        """UPDATE_BROKER_CONFIG (25): apply ``changes`` (property name to value) in memory.

        The broker validates them as a whole and refuses settings fixed at start.
        """
        text = properties_file.format_properties(dict(changes))
        await self._invoke(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, None, text.encode())

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        """WIPE_WRITE_PERM_OF_BROKER (205) on every name server: routes stop offering the
        broker's queues for writing. Returns the topic count affected per name server."""
        ext = nh.BrokerNameRequestHeader(broker_name=broker_name).encode()
        answers = await self._every_namesrv(RequestCode.WIPE_WRITE_PERM_OF_BROKER, ext)
        return {
            addr: nh.WipeWritePermResponseHeader.decode(r.ext_fields).wipe_topic_count
            for addr, r in answers.items()
        }

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        """ADD_WRITE_PERM_OF_BROKER (327) on every name server: undoes
        :meth:`wipe_write_perm`. Returns the topic count affected per name server."""
        ext = nh.BrokerNameRequestHeader(broker_name=broker_name).encode()
        answers = await self._every_namesrv(RequestCode.ADD_WRITE_PERM_OF_BROKER, ext)
        return {
            addr: nh.AddWritePermResponseHeader.decode(r.ext_fields).add_topic_count
            for addr, r in answers.items()
        }

    # -- name server KV config ----------------------------------------------------------

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """PUT_KV_CONFIG (100) on every name server."""
        ext = nh.PutKVConfigRequestHeader(namespace=namespace, key=key, value=value).encode()
        await self._every_namesrv(RequestCode.PUT_KV_CONFIG, ext)

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """GET_KV_CONFIG (101) from the first name server that answers; None if unset."""
        ext = nh.KVConfigKeyRequestHeader(namespace=namespace, key=key).encode()
        last: common_errors.RemotingError | None = None
        for address in self.namesrv_addrs:
            try:
                response = await self._invoke(
                    address,
                    RequestCode.GET_KV_CONFIG,
                    ext,
                    allow=frozenset({ResponseCode.QUERY_NOT_FOUND}),
                )
            except common_errors.RemotingError as exc:
                last = exc
                continue
            if response.code == ResponseCode.QUERY_NOT_FOUND:
                return None
            return nh.GetKVConfigResponseHeader.decode(response.ext_fields).value
        assert last is not None
        raise last

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        """DELETE_KV_CONFIG (102) on every name server."""
        ext = nh.KVConfigKeyRequestHeader(namespace=namespace, key=key).encode()
        await self._every_namesrv(RequestCode.DELETE_KV_CONFIG, ext)
