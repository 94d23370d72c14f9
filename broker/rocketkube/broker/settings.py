"""Broker settings under RocketMQ's property names (BrokerConfig, MessageStoreConfig,
NettyServerConfig, and TLS's: :mod:`rocketkube.common.tls_settings`), and their
translation into the store's :class:`StoreConfig`.

Disk use, in percent as in RocketMQ's ``MessageStoreConfig``: ``diskMaxUsedSpaceRatio``
(75) is where retention starts deleting expired segments whatever the hour,
``diskSpaceCleanForciblyRatio`` (85) where it deletes the oldest even unexpired, and
``diskSpaceWarningLevelRatio`` (90) where the broker refuses sends (SERVICE_NOT_AVAILABLE)
until retention or an operator frees space. The last two are held to RocketMQ's ranges
(30-85 and 35-90) as its store holds them."""

from __future__ import annotations

import enum
import socket
from pathlib import Path
from typing import Final

from pydantic import ConfigDict, Field, field_validator

from rocketkube.broker.store import FlushDiskType, StoreConfig
from rocketkube.common.server_settings import RemotingServerSettings
from rocketkube.common.tls_settings import TlsClientSettings

_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(text: str) -> tuple[int, ...]:
    """The delay in ms of each level of ``messageDelayLevel`` (index 0 is level 1).

    Tokens are ``<count><unit>``, units ``s m h d``, separated by spaces, as in RocketMQ
    (``"1s 5s 10s 30s 1m ... 2h"``). Raises ``ValueError`` naming the bad token.
    """
    levels: list[int] = []
    for token in text.split():
        count, unit = token[:-1], token[-1:]
        if unit not in _UNIT_MS or not count.isdigit():
            raise ValueError(f"messageDelayLevel: bad level {token!r} (want e.g. 5s, 1m, 2h, 1d)")
        levels.append(int(count) * _UNIT_MS[unit])
    if not levels:
        raise ValueError("messageDelayLevel has no levels")
    return tuple(levels)


class BrokerRole(enum.StrEnum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


def _default_ip() -> str:
    """RocketMQ advertises the host's address; fall back to loopback when it has none."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _default_store() -> str:
    return str(Path.home() / "store")


class BrokerSettings(TlsClientSettings, RemotingServerSettings):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    broker_cluster_name: str = Field("DefaultCluster", alias="brokerClusterName", min_length=1)
    broker_name: str = Field("broker-a", alias="brokerName", min_length=1)
    broker_id: int = Field(0, alias="brokerId", ge=0, description="0 is the master")
    broker_role: BrokerRole = Field(BrokerRole.ASYNC_MASTER, alias="brokerRole")
    namesrv_addr: str | None = Field(None, alias="namesrvAddr", description="a:9876;b:9876")
    listen_port: int = Field(10911, alias="listenPort", ge=0, le=65535)
    bind_address: str = Field("0.0.0.0", alias="bindAddress")
    broker_ip1: str = Field(default_factory=_default_ip, alias="brokerIP1")
    broker_ip2: str | None = Field(None, alias="brokerIP2", description="HA address")
    ha_listen_port: int | None = Field(
        None, alias="haListenPort", ge=0, le=65535, description="replication; listenPort+1"
    )
    ha_master_address: str | None = Field(
        None, alias="haMasterAddress", description="a slave's master HA host:port (else learnt)"
    )
    ha_send_heartbeat_interval: int = Field(5_000, alias="haSendHeartbeatInterval", gt=0)
    ha_housekeeping_interval: int = Field(20_000, alias="haHousekeepingInterval", gt=0)
    ha_reconnect_interval: int = Field(
        5_000, alias="haReconnectInterval", gt=0, description="a slave's retry of its master, ms"
    )
    ha_transfer_batch_size: int = Field(32 * 1024, alias="haTransferBatchSize", gt=0)
    ha_slave_fallbehind_max: int = Field(256 * 1024 * 1024, alias="haSlaveFallbehindMax", gt=0)
    slave_timeout: int = Field(
        3_000, alias="slaveTimeout", gt=0, description="SYNC_MASTER wait for a slave, ms"
    )
    http_port: int | None = Field(
        None, alias="httpPort", ge=0, le=65535, description="metrics/health; listenPort+3"
    )
    broker_permission: int = Field(6, alias="brokerPermission", ge=0, le=7)
    region_id: str = Field("DefaultRegion", alias="regionId")
    trace_on: bool = Field(True, alias="traceOn")
    auto_create_topic_enable: bool = Field(True, alias="autoCreateTopicEnable")
    auto_create_subscription_group: bool = Field(True, alias="autoCreateSubscriptionGroup")
    default_topic_queue_nums: int = Field(8, alias="defaultTopicQueueNums", ge=1, le=1024)
    cluster_topic_enable: bool = Field(True, alias="clusterTopicEnable")
    broker_topic_enable: bool = Field(True, alias="brokerTopicEnable")
    reject_transaction_message: bool = Field(False, alias="rejectTransactionMessage")
    register_name_server_period: int = Field(30_000, alias="registerNameServerPeriod", gt=0)
    register_broker_timeout_mills: int = Field(6_000, alias="registerBrokerTimeoutMills", gt=0)
    long_polling_enable: bool = Field(True, alias="longPollingEnable")
    short_polling_time_mills: int = Field(1_000, alias="shortPollingTimeMills", gt=0)
    slave_read_enable: bool = Field(
        False, alias="slaveReadEnable", description="slow consumers read from a slave"
    )
    enable_property_filter: bool = Field(
        False, alias="enablePropertyFilter", description="serve SQL92 subscriptions"
    )
    notify_consumer_ids_changed_enable: bool = Field(True, alias="notifyConsumerIdsChangedEnable")
    channel_expired_timeout: int = Field(120_000, alias="channelExpiredTimeout", gt=0)
    flush_consumer_offset_interval: int = Field(5_000, alias="flushConsumerOffsetInterval", gt=0)
    rebalance_lock_max_live_time: int = Field(
        60_000, alias="rebalanceLockMaxLiveTime", gt=0, description="queue lock life, ms"
    )
    transaction_check_interval: int = Field(
        60_000, alias="transactionCheckInterval", gt=0, description="ms between half scans"
    )
    transaction_timeout: int = Field(
        6_000, alias="transactionTimeOut", ge=0, description="ms before a half is checked"
    )
    transaction_check_max: int = Field(15, alias="transactionCheckMax", ge=0)

    # Plain ACL (rocketkube.broker.acl). The file's property is RocketMQ's system property.
    acl_enable: bool = Field(False, alias="aclEnable", description="check every request")
    acl_plain_file: str | None = Field(
        None, alias="rocketmq.acl.plain.file", description="plain_acl.yml (default: beside -c)"
    )

    # Message store (MessageStoreConfig)
    store_path_root_dir: str = Field(default_factory=_default_store, alias="storePathRootDir")
    flush_disk_type: FlushDiskType = Field(FlushDiskType.ASYNC_FLUSH, alias="flushDiskType")
    mapped_file_size_commit_log: int = Field(1 << 30, alias="mappedFileSizeCommitLog", gt=4096)
    mapped_file_size_consume_queue: int = Field(6_000_000, alias="mappedFileSizeConsumeQueue", gt=0)
    sync_flush_timeout: int = Field(5_000, alias="syncFlushTimeout", gt=0)
    flush_interval_commit_log: int = Field(500, alias="flushIntervalCommitLog", gt=0)
    flush_interval_consume_queue: int = Field(1000, alias="flushIntervalConsumeQueue", gt=0)
    file_reserved_time: int = Field(72, alias="fileReservedTime", gt=0)
    delete_when: str = Field("04", alias="deleteWhen")
    disk_max_used_space_ratio: int = Field(75, alias="diskMaxUsedSpaceRatio", ge=10, le=95)
    disk_space_warning_level_ratio: int = Field(90, alias="diskSpaceWarningLevelRatio")
    disk_space_clean_forcibly_ratio: int = Field(85, alias="diskSpaceCleanForciblyRatio")
    max_message_size: int = Field(4 * 1024 * 1024, alias="maxMessageSize", gt=0)
    message_delay_level: str = Field(
        "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", alias="messageDelayLevel"
    )
    flush_delay_offset_interval: int = Field(10_000, alias="flushDelayOffsetInterval", gt=0)
    max_hash_slot_num: int = Field(5_000_000, alias="maxHashSlotNum", gt=0)
    max_index_num: int = Field(20_000_000, alias="maxIndexNum", gt=0)
    access_message_in_memory_max_ratio: int = Field(
        40, alias="accessMessageInMemoryMaxRatio", ge=0, le=100
    )

    @field_validator("disk_space_warning_level_ratio")
    @classmethod
    def _warning_level_range(cls, value: int) -> int:
        return min(max(value, 35), 90)

    @field_validator("disk_space_clean_forcibly_ratio")
    @classmethod
    def _clean_forcibly_range(cls, value: int) -> int:
        return min(max(value, 30), 85)

    @field_validator("message_delay_level")
    @classmethod
    def _delay_levels_parse(cls, value: str) -> str:
        parse_delay_levels(value)  # a ValueError names the bad level
        return value

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``: what clients connect to and msgIds carry."""
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def effective_ha_port(self) -> int:
        """listenPort+1 when unset, as RocketMQ derives it (0 with an ephemeral listenPort)."""
        if self.ha_listen_port is not None:
            return self.ha_listen_port
        return 0 if self.listen_port == 0 else self.listen_port + 1

    def ha_server_addr(self, port: int | None = None) -> str:
        """``brokerIP2:haPort`` (brokerIP1 when no brokerIP2); ``port``: as bound."""
        bound = self.effective_ha_port if port is None else port
        return f"{self.broker_ip2 or self.broker_ip1}:{bound}"

    @property
    def effective_http_port(self) -> int:
        """Derived from listenPort when unset, so brokers on one machine never collide."""
        if self.http_port is not None:
            return self.http_port
        return 0 if self.listen_port == 0 else self.listen_port + 3

    def acl_file(self) -> Path | None:
        """The ACL file when ``aclEnable``; ValueError when none is named (no ``-c`` file
        for it to sit beside, no ``rocketmq.acl.plain.file``)."""
        if not self.acl_enable:
            return None
        if self.acl_plain_file is None:
            raise ValueError("aclEnable=true needs rocketmq.acl.plain.file (or a -c file)")
        return Path(self.acl_plain_file)

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in (self.namesrv_addr or "").split(";") if a.strip()]

    @property
    def is_master(self) -> bool:
        return self.broker_role is not BrokerRole.SLAVE

    def store_config(self, listen_port: int | None = None) -> StoreConfig:
        port = self.listen_port if listen_port is None else listen_port
        return StoreConfig(
            store_path_root_dir=Path(self.store_path_root_dir),
            store_host=f"{self.broker_ip1}:{port}",
            mapped_file_size_commit_log=self.mapped_file_size_commit_log,
            mapped_file_size_consume_queue=self.mapped_file_size_consume_queue,
            flush_disk_type=self.flush_disk_type,
            sync_flush_timeout=self.sync_flush_timeout,
            flush_interval_commit_log=self.flush_interval_commit_log,
            flush_interval_consume_queue=self.flush_interval_consume_queue,
            file_reserved_time=self.file_reserved_time,
            delete_when=self.delete_when,
            disk_max_used_space_ratio=self.disk_max_used_space_ratio,
            disk_space_warning_level_ratio=self.disk_space_warning_level_ratio / 100,
            disk_space_clean_forcibly_ratio=self.disk_space_clean_forcibly_ratio / 100,
            max_message_size=self.max_message_size,
            message_delay_level=self.message_delay_level,
            max_hash_slot_num=self.max_hash_slot_num,
            max_index_num=self.max_index_num,
            access_message_in_memory_max_ratio=self.access_message_in_memory_max_ratio,
        )
