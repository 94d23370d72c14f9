"""The route tables of a name server, and the rules that keep them (RouteInfoManager).

Pure state, no I/O: time comes in as ``now_ms`` arguments and channels are opaque
objects, so every rule is tested directly.

- clusterAddrTable: cluster -> broker names
- brokerAddrTable:  broker name -> BrokerData (brokerId -> address; 0 is the master)
- brokerLiveTable:  broker address -> last update, data version, HA address, channel
- topicQueueTable:  topic -> broker name -> QueueData (only master registrations write it)
- filterServerTable: broker address -> filter server addresses
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rocketkube.common.names import BrokerName, ClusterName
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.route import MASTER_ID, BrokerData, QueueData, TopicRouteData
from rocketkube.common.protocol.topic_config import DataVersion, TopicConfigWrapper

log = logging.getLogger(__name__)

#: A broker that has not registered for this long is removed (brokerChannelExpiredTime).
BROKER_EXPIRED_MS = 120_000


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update_ms: int
    data_version: DataVersion
    ha_server_addr: str
    channel: object | None = None


@dataclass(frozen=True, slots=True)
class RegisterResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str
    topic_config: TopicConfigWrapper | None = None
    filter_server_list: list[str] = field(default_factory=list)


class RouteTables:
    """The name server's view of brokers and topics."""

    def __init__(self, broker_expired_ms: int = BROKER_EXPIRED_MS) -> None:
        self.broker_expired_ms = broker_expired_ms
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.filter_server_table: dict[str, list[str]] = {}

    # -- registration -------------------------------------------------------------

    def register_broker(
        self, reg: BrokerRegistration, now_ms: int, channel: object | None = None
    ) -> RegisterResult:
        self.cluster_addr_table.setdefault(reg.cluster_name, set()).add(reg.broker_name)
        broker = self.broker_addr_table.get(reg.broker_name)
        first = broker is None
        if broker is None:
            broker = BrokerData(ClusterName(reg.cluster_name), BrokerName(reg.broker_name))
            self.broker_addr_table[reg.broker_name] = broker
        # One address, one id: a slave promoted to master (or the reverse) re-registers.
        for broker_id in [k for k, v in broker.broker_addrs.items() if v == reg.broker_addr]:
            if broker_id != reg.broker_id:
                del broker.broker_addrs[broker_id]
        first = broker.broker_addrs.get(reg.broker_id) is None or first
        broker.broker_addrs[reg.broker_id] = reg.broker_addr

        version = reg.topic_config.data_version if reg.topic_config else DataVersion()
        if (
            reg.topic_config is not None
            and reg.broker_id == MASTER_ID
            and (first or self.is_topic_config_changed(reg.broker_addr, version))
        ):
            for config in reg.topic_config.topic_config_table.values():
                self.topic_queue_table.setdefault(config.topic_name, {})[reg.broker_name] = (
                    QueueData(
                        broker_name=BrokerName(reg.broker_name),
                        read_queue_nums=config.read_queue_nums,
                        write_queue_nums=config.write_queue_nums,
                        perm=config.perm,
                        topic_sys_flag=config.topic_sys_flag,
                    )
                )
        previous = self.broker_live_table.get(reg.broker_addr)
        self.broker_live_table[reg.broker_addr] = BrokerLiveInfo(
            now_ms, version, reg.ha_server_addr, channel
        )
        if previous is None:
            log.info(
                "new broker registered: %s %s id=%d",
                reg.broker_name,
                reg.broker_addr,
                reg.broker_id,
            )
        if reg.filter_server_list:
            self.filter_server_table[reg.broker_addr] = list(reg.filter_server_list)
        else:
            self.filter_server_table.pop(reg.broker_addr, None)

        if reg.broker_id != MASTER_ID:
            master = broker.master_addr
            if master is not None:
                live = self.broker_live_table.get(master)
                return RegisterResult(live.ha_server_addr if live else None, master)
        return RegisterResult()

    def is_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self.broker_live_table.get(broker_addr)
        return live is None or live.data_version != version

    def data_version(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live else None

    def touch(self, broker_addr: str, now_ms: int) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_ms = now_ms

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker = self.broker_addr_table.get(broker_name)
        if broker is not None and broker.broker_addrs.get(broker_id) == broker_addr:
            del broker.broker_addrs[broker_id]
        log.info("broker unregistered: %s %s id=%d", broker_name, broker_addr, broker_id)
        if broker is not None and not broker.broker_addrs:
            self._remove_broker_name(cluster_name, broker_name)

    def _remove_broker_name(self, cluster_name: str, broker_name: str) -> None:
        """The last address of a broker name is gone: drop it and its topic routes."""
        self.broker_addr_table.pop(broker_name, None)
        names = self.cluster_addr_table.get(cluster_name)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster_name]
        for topic in list(self.topic_queue_table):
            queues = self.topic_queue_table[topic]
            queues.pop(broker_name, None)
            if not queues:
                del self.topic_queue_table[topic]
        log.info("broker %s removed with its topic routes", broker_name)

    def remove_broker_addr(self, broker_addr: str) -> None:
        """Forget a broker address wherever it appears (channel closed or expired)."""
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for name, broker in list(self.broker_addr_table.items()):
            for broker_id in [k for k, v in broker.broker_addrs.items() if v == broker_addr]:
                del broker.broker_addrs[broker_id]
            if not broker.broker_addrs:
                self._remove_broker_name(broker.cluster, name)

    def on_channel_closed(self, channel: object) -> str | None:
        """A broker's connection closed: remove the broker registered through it."""
        for addr, live in self.broker_live_table.items():
            if live.channel is channel:
                log.info("connection of broker %s closed: removing it", addr)
                self.remove_broker_addr(addr)
                return addr
        return None

    def expire(self, now_ms: int) -> list[tuple[str, object | None]]:
        """Remove brokers silent for longer than the expiry; returns (addr, channel) pairs."""
        expired = [
            (addr, live.channel)
            for addr, live in self.broker_live_table.items()
            if live.last_update_ms + self.broker_expired_ms < now_ms
        ]
        for addr, _ in expired:
            log.warning(
                "broker %s expired: no registration for %d ms", addr, self.broker_expired_ms
            )
            self.remove_broker_addr(addr)
        return expired

    # -- queries --------------------------------------------------------------------

    def pickup_topic_route(self, topic: str) -> TopicRouteData | None:
        queues = self.topic_queue_table.get(topic)
        if not queues:
            return None
        route = TopicRouteData()
        for broker_name, queue_data in queues.items():
            route.queue_datas.append(
                QueueData(
                    queue_data.broker_name,
                    queue_data.read_queue_nums,
                    queue_data.write_queue_nums,
                    queue_data.perm,
                    queue_data.topic_sys_flag,
                )
            )
            broker = self.broker_addr_table.get(broker_name)
            if broker is None:
                continue
            route.broker_datas.append(
                BrokerData(broker.cluster, broker.broker_name, dict(broker.broker_addrs))
            )
            for addr in broker.broker_addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers:
                    route.filter_server_table[addr] = list(servers)
        if not route.broker_datas:
            return None
        return route

    def all_topics(self) -> list[str]:
        return sorted(self.topic_queue_table)

    def topics_of_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster, set())
        return sorted(t for t, queues in self.topic_queue_table.items() if names & queues.keys())

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster and broker names (RocketMQ's system topics) and one broker address."""
        topics = set(self.cluster_addr_table)
        for names in self.cluster_addr_table.values():
            topics |= names
        addr = None
        for broker in self.broker_addr_table.values():
            if broker.broker_addrs:
                addr = broker.broker_addrs[min(broker.broker_addrs)]
                break
        return sorted(topics), addr

    def unit_topics(self, *, unit: bool | None, unit_sub: bool) -> list[str]:
        """Topics whose sys flag has (or, for ``unit=False``, lacks) FLAG_UNIT / FLAG_UNIT_SUB."""
        out = []
        for topic, queues in self.topic_queue_table.items():
            flags = [q.topic_sys_flag for q in queues.values()]
            if not flags:
                continue
            flag = flags[0]
            has_unit = bool(flag & permission.FLAG_UNIT)
            has_sub = bool(flag & permission.FLAG_UNIT_SUB)
            if unit is not None and has_unit != unit:
                continue
            if unit_sub and not has_sub:
                continue
            out.append(topic)
        return sorted(out)

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        if cluster is None:
            self.topic_queue_table.pop(topic, None)
            return
        queues = self.topic_queue_table.get(topic)
        if queues is None:
            return
        for broker_name in self.cluster_addr_table.get(cluster, set()):
            queues.pop(broker_name, None)
        if not queues:
            del self.topic_queue_table[topic]

    def change_write_perm(self, broker_name: str, *, writable: bool) -> int:
        """Wipe or add the write bit on every topic of a broker; returns how many changed."""
        count = 0
        for queues in self.topic_queue_table.values():
            queue = queues.get(broker_name)
            if queue is None:
                continue
            if writable:
                queue.perm |= permission.PERM_WRITE
            else:
                queue.perm &= ~permission.PERM_WRITE
            count += 1
        return count
