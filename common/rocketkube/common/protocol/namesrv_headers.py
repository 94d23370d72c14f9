"""Custom headers of the name server's requests and responses."""

from __future__ import annotations

from dataclasses import dataclass

from rocketkube.common.remoting.header import CommandHeader


@dataclass(frozen=True, slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    compressed: bool = False
    body_crc32: int = 0


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRequestHeader(CommandHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


#: QUERY_DATA_VERSION carries the same four fields.
QueryDataVersionRequestHeader = UnregisterBrokerRequestHeader


@dataclass(frozen=True, slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool


@dataclass(frozen=True, slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str
    accept_standard_json_only: bool | None = None


@dataclass(frozen=True, slots=True)
class BrokerNameRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER."""

    broker_name: str


@dataclass(frozen=True, slots=True)
class WipeWritePermResponseHeader(CommandHeader):
    wipe_topic_count: int


@dataclass(frozen=True, slots=True)
class AddWritePermResponseHeader(CommandHeader):
    add_topic_count: int


@dataclass(frozen=True, slots=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    topic: str
    cluster_name: str | None = None


@dataclass(frozen=True, slots=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str


@dataclass(frozen=True, slots=True)
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class KVConfigKeyRequestHeader(CommandHeader):
    """GET_KV_CONFIG and DELETE_KV_CONFIG."""

    namespace: str
    key: str


@dataclass(frozen=True, slots=True)
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = None


@dataclass(frozen=True, slots=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str
