"""Custom headers of the broker's client-management, message-lookup and admin requests.

One frozen dataclass per Java header class (``common/.../protocol/header``); fields
without a default are Java's ``@CFNotNull`` ones. Shared by the broker and the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketkube.common.remoting.header import CommandHeader, wire

#: ext field the Java client adds to QUERY_MESSAGE when it looks a message up by UNIQ_KEY
#: (``MixAll.UNIQUE_MSG_QUERY_FLAG``); ``"true"`` makes the broker use its default maxNum.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"

# -- client management (34/35/38/40) --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35). C++ sends unused groups as ``""``: treat that as absent."""

    client_id: str = field(metadata=wire("clientID"))
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38)."""

    consumer_group: str


@dataclass(frozen=True, slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker to client, oneway."""

    consumer_group: str


# -- message lookup (33/12) -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): the commit log offset decoded from an offset msgId."""

    offset: int


@dataclass(frozen=True, slots=True)
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12)."""

    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int


@dataclass(frozen=True, slots=True)
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


# -- topics (17/215/202/300) ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    order: bool
    topic_sys_flag: int | None = None


@dataclass(frozen=True, slots=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str


@dataclass(frozen=True, slots=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO (202)."""

    topic: str


@dataclass(frozen=True, slots=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO (300)."""

    topic: str


# -- subscription groups (207) and consumers/producers (208/203/204) -------------------------


@dataclass(frozen=True, slots=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207); ``removeOffset`` is a Java primitive: false if absent."""

    group_name: str
    remove_offset: bool = False


@dataclass(frozen=True, slots=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208); a blank topic means every topic the group has offsets on."""

    consumer_group: str
    topic: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST (203)."""

    consumer_group: str


@dataclass(frozen=True, slots=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str


# -- broker config (26) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """GET_BROKER_CONFIG (26): ``version`` is the configuration's DataVersion as JSON."""

    version: str
