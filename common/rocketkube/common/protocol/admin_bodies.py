"""Bodies of the broker's admin and client-management answers, encode and decode.

Written as fastjson writes them (fields sorted, enums by name), including the
object-keyed maps Java admin tools (mqadmin ``consumerProgress``, ``topicStatus``)
need; read leniently, so the Python admin SDK parses Java brokers' answers too::

    ConsumeStats (208)       {"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,
                              "topic":"t"}:{"brokerOffset":10,"consumerOffset":8,
                              "lastTimestamp":1700000000000},...}}
    TopicStatsTable (202)    {"offsetTable":{{MessageQueue}:{"lastUpdateTimestamp":..,
                              "maxOffset":..,"minOffset":..},...}}
    ConsumerConnection (203) {"connectionSet":[{"clientAddr":"ip:port","clientId":"..",
                              "language":"JAVA","version":409}],"consumeFromWhere":"..",
                              "consumeType":"..","messageModel":"..",
                              "subscriptionTable":{"topic":SubscriptionData}}
    ProducerConnection (204) {"connectionSet":[Connection]}
    ConsumerIdList (38)      {"consumerIdList":["clientId",...]}
    GroupList (300)          {"groupList":["group",...]}

KVTable (28) is :func:`rocketkube.common.protocol.route.encode_kv_table`. Decoders raise
:class:`~rocketkube.common.errors.ProtocolError` on a body of the wrong shape.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rocketkube.common import errors, fastjson
from rocketkube.common.names import ClientId, GroupName
from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)

Body = bytes | bytearray | memoryview
T = TypeVar("T")
E = TypeVar("E", bound=enum.IntEnum)

_SHAPE_ERRORS = (ValueError, KeyError, TypeError, AttributeError)


def load_object(body: Body, what: str) -> dict[Any, Any]:
    """A JSON (fastjson-lenient) object body; ProtocolError naming ``what`` otherwise."""
    try:
        data = fastjson.loads(body)
    except ValueError as exc:
        raise errors.ProtocolError(f"malformed {what}: {exc}") from None
    if not isinstance(data, dict):
        raise errors.ProtocolError(f"malformed {what}: not a JSON object")
    return data


def _decoding(what: str, build: Callable[[], T]) -> T:
    try:
        return build()
    except errors.ProtocolError:
        raise
    except _SHAPE_ERRORS as exc:
        raise errors.ProtocolError(f"malformed {what}: {exc!r}") from None


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on a broker; sorts by topic, broker, queue id."""

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict[str, Any]:
        """The queue as Java's fastjson writes it (field names in alphabetical order)."""
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    def as_key(self) -> fastjson.ObjectKey:
        """The fastjson object-key form of this queue."""
        return fastjson.ObjectKey(self.to_json())

    @classmethod
    def from_json(cls, data: Mapping[Any, Any]) -> MessageQueue:
        """The queue from its JSON object form."""
        return cls(str(data["topic"]), str(data["brokerName"]), int(data["queueId"]))

    @classmethod
    def from_key(cls, key: Any) -> MessageQueue:
        """A map key as fastjson wrote it (an object), or as JSON text in a string key."""
        if isinstance(key, str):
            key = fastjson.loads(key)
        if not isinstance(key, Mapping):
            raise TypeError(f"a MessageQueue key must be an object, not {key!r}")
        return cls.from_json(key)


# -- ConsumeStats (GET_CONSUME_STATS) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetWrapper:
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OffsetWrapper:
        return cls(
            int(data.get("brokerOffset", 0)),
            int(data.get("consumerOffset", 0)),
            int(data.get("lastTimestamp", 0)),
        )


@dataclass(slots=True)
class ConsumeStats:
    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    @property
    def diff_total(self) -> int:
        """Messages not yet consumed, over every queue (mqadmin's "Diff Total")."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def encode(self) -> bytes:
        table = {mq.as_key(): self.offset_table[mq].to_json() for mq in sorted(self.offset_table)}
        return fastjson.dumps({"consumeTps": float(self.consume_tps), "offsetTable": table})

    @classmethod
    def decode(cls, body: Body) -> ConsumeStats:
        data = load_object(body, "ConsumeStats")
        return _decoding(
            "ConsumeStats",
            lambda: cls(
                {
                    MessageQueue.from_key(k): OffsetWrapper.from_json(v)
                    for k, v in (data.get("offsetTable") or {}).items()
                },
                float(data.get("consumeTps") or 0.0),
            ),
        )


# -- TopicStatsTable (GET_TOPIC_STATS_INFO) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicOffset:
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "lastUpdateTimestamp": self.last_update_timestamp,
            "maxOffset": self.max_offset,
            "minOffset": self.min_offset,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicOffset:
        return cls(
            int(data.get("minOffset", 0)),
            int(data.get("maxOffset", 0)),
            int(data.get("lastUpdateTimestamp", 0)),
        )


@dataclass(slots=True)
class TopicStatsTable:
    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def encode(self) -> bytes:
        table = {mq.as_key(): self.offset_table[mq].to_json() for mq in sorted(self.offset_table)}
        return fastjson.dumps({"offsetTable": table})

    @classmethod
    def decode(cls, body: Body) -> TopicStatsTable:
        data = load_object(body, "TopicStatsTable")
        return _decoding(
            "TopicStatsTable",
            lambda: cls(
                {
                    MessageQueue.from_key(k): TopicOffset.from_json(v)
                    for k, v in (data.get("offsetTable") or {}).items()
                }
            ),
        )


# -- connections (GET_CONSUMER_CONNECTION_LIST / GET_PRODUCER_CONNECTION_LIST) --------------


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """Java ``Connection``: one client channel as admin tools list it."""

    client_id: str
    client_addr: str
    language: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "clientAddr": self.client_addr,
            "clientId": self.client_id,
            "language": self.language,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientConnection:
        return cls(
            str(data.get("clientId") or ""),
            str(data.get("clientAddr") or ""),
            str(data.get("language") or ""),
            int(data.get("version") or 0),
        )


def _connections_json(connections: list[ClientConnection]) -> list[dict[str, Any]]:
    return [c.to_json() for c in sorted(connections, key=lambda c: (c.client_id, c.client_addr))]


def _enum_name(cls: type[E], value: Any, default: E) -> E:
    """Enum by name (Java) or ordinal (C++); ``default`` when neither."""
    if isinstance(value, str) and value in cls.__members__:
        return cls.__members__[value]
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            return default
    return default


@dataclass(slots=True)
class ConsumerConnection:
    connections: list[ClientConnection] = field(default_factory=list)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET

    def encode(self) -> bytes:
        return fastjson.dumps(
            {
                "connectionSet": _connections_json(self.connections),
                "consumeFromWhere": self.consume_from_where.name,
                "consumeType": self.consume_type.name,
                "messageModel": self.message_model.name,
                "subscriptionTable": {
                    topic: self.subscriptions[topic].to_json()
                    for topic in sorted(self.subscriptions)
                },
            }
        )

    @classmethod
    def decode(cls, body: Body) -> ConsumerConnection:
        data = load_object(body, "ConsumerConnection")
        return _decoding(
            "ConsumerConnection",
            lambda: cls(
                [ClientConnection.from_json(c) for c in data.get("connectionSet") or []],
                {
                    str(topic): SubscriptionData.from_json(sub)
                    for topic, sub in (data.get("subscriptionTable") or {}).items()
                },
                _enum_name(ConsumeType, data.get("consumeType"), ConsumeType.CONSUME_PASSIVELY),
                _enum_name(MessageModel, data.get("messageModel"), MessageModel.CLUSTERING),
                _enum_name(
                    ConsumeFromWhere,
                    data.get("consumeFromWhere"),
                    ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                ),
            ),
        )


@dataclass(slots=True)
class ProducerConnection:
    connections: list[ClientConnection] = field(default_factory=list)

    def encode(self) -> bytes:
        return fastjson.dumps({"connectionSet": _connections_json(self.connections)})

    @classmethod
    def decode(cls, body: Body) -> ProducerConnection:
        data = load_object(body, "ProducerConnection")
        return _decoding(
            "ProducerConnection",
            lambda: cls([ClientConnection.from_json(c) for c in data.get("connectionSet") or []]),
        )


# -- string lists ---------------------------------------------------------------------------


def _encode_list(name: str, items: list[str]) -> bytes:
    return fastjson.dumps({name: items})


def _decode_list(name: str, body: Body, kind: Callable[[str], T]) -> list[T]:
    """The strings of list ``name``, each made a ``kind`` (a name type)."""
    data = load_object(body, name)
    return _decoding(name, lambda: [kind(str(item)) for item in data.get(name) or []])


def encode_consumer_id_list(client_ids: list[str]) -> bytes:
    """GET_CONSUMER_LIST_BY_GROUP body (GetConsumerListByGroupResponseBody)."""
    return _encode_list("consumerIdList", client_ids)


def decode_consumer_id_list(body: Body) -> list[ClientId]:
    return _decode_list("consumerIdList", body, ClientId)


def encode_group_list(groups: list[str]) -> bytes:
    """QUERY_TOPIC_CONSUME_BY_WHO body (GroupList)."""
    return _encode_list("groupList", groups)


def decode_group_list(body: Body) -> list[GroupName]:
    return _decode_list("groupList", body, GroupName)
