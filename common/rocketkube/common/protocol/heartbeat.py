"""HEART_BEAT bodies and subscriptions, as every 4.x client family writes them.

Java/ali-ons write enum names, C++ writes ordinals and omits empty sets, Go writes
``codeSet`` as strings and ``subVersion`` in nanoseconds: all parse to one model.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from rocketkube.common import errors, fastjson
from rocketkube.common.message.hashing import tags_code

SUB_ALL = "*"
EXPRESSION_TAG = "TAG"


class ConsumeType(enum.IntEnum):
    """Push consumers are CONSUME_PASSIVELY, pull (lite) consumers CONSUME_ACTIVELY."""

    CONSUME_ACTIVELY = 0
    CONSUME_PASSIVELY = 1


class MessageModel(enum.IntEnum):
    """CLUSTERING: each message to one consumer of the group, offsets on the broker;
    BROADCASTING: every message to every consumer, offsets kept by each consumer."""

    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(enum.IntEnum):
    """Where a group with no stored offset starts (Java's names and numbers)."""

    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1
    CONSUME_FROM_MIN_OFFSET = 2
    CONSUME_FROM_MAX_OFFSET = 3
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


def _enum(cls: type[enum.IntEnum], value: Any, default: enum.IntEnum) -> Any:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        try:
            return cls(value)
        except ValueError:
            return default
    if isinstance(value, str):
        if value.isdigit():
            return _enum(cls, int(value), default)
        return cls.__members__.get(value.upper(), default)
    return default


@dataclass(slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = 0
    expression_type: str = EXPRESSION_TAG
    class_filter_mode: bool = False

    @property
    def matches_all(self) -> bool:
        return self.sub_string in ("", SUB_ALL) and self.expression_type == EXPRESSION_TAG

    def to_json(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": self.code_set,
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": self.tags_set,
            "topic": self.topic,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubscriptionData:
        sub_string = str(data.get("subString") or SUB_ALL)
        tags = [str(t) for t in data.get("tagsSet") or []]
        codes = [int(c) for c in data.get("codeSet") or []]
        expression = str(data.get("expressionType") or EXPRESSION_TAG)
        if expression == EXPRESSION_TAG and not tags and sub_string != SUB_ALL:
            parsed = parse_subscription(str(data["topic"]), sub_string)
            tags, codes = parsed.tags_set, parsed.code_set
        return cls(
            topic=str(data["topic"]),
            sub_string=sub_string,
            tags_set=tags,
            code_set=codes,
            sub_version=int(data.get("subVersion") or 0),
            expression_type=expression,
            class_filter_mode=bool(data.get("classFilterMode", False)),
        )


def parse_subscription(
    topic: str, expression: str | None, sub_version: int = 0
) -> SubscriptionData:
    """A TAG expression ``"TagA || TagB"`` (or ``*``/empty for all) into SubscriptionData."""
    text = (expression or "").strip()
    if text in ("", SUB_ALL):
        return SubscriptionData(topic, SUB_ALL, sub_version=sub_version)
    tags = [t.strip() for t in text.split("||") if t.strip()]
    return SubscriptionData(
        topic, text, tags, [tags_code(t) for t in tags], sub_version=sub_version
    )


@dataclass(slots=True)
class ConsumerData:
    group_name: str
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    subscriptions: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConsumerData:
        return cls(
            group_name=str(data["groupName"]),
            consume_type=_enum(ConsumeType, data.get("consumeType"), ConsumeType.CONSUME_PASSIVELY),
            message_model=_enum(MessageModel, data.get("messageModel"), MessageModel.CLUSTERING),
            consume_from_where=_enum(
                ConsumeFromWhere,
                data.get("consumeFromWhere"),
                ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            ),
            subscriptions=[
                SubscriptionData.from_json(s) for s in data.get("subscriptionDataSet") or []
            ],
            unit_mode=bool(data.get("unitMode", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where.name,
            "consumeType": self.consume_type.name,
            "groupName": self.group_name,
            "messageModel": self.message_model.name,
            "subscriptionDataSet": [s.to_json() for s in self.subscriptions],
            "unitMode": self.unit_mode,
        }


@dataclass(slots=True)
class HeartbeatData:
    client_id: str
    consumers: list[ConsumerData] = field(default_factory=list)
    producer_groups: list[str] = field(default_factory=list)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> HeartbeatData:
        """Parse any client's heartbeat; ProtocolError when it is not one."""
        try:
            data = fastjson.loads(body)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return cls(
                client_id=str(data.get("clientID") or data.get("clientId") or ""),
                consumers=[ConsumerData.from_json(c) for c in data.get("consumerDataSet") or []],
                producer_groups=[str(p["groupName"]) for p in data.get("producerDataSet") or []],
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise errors.ProtocolError(f"malformed heartbeat body: {exc!r}") from None

    def encode(self) -> bytes:
        return fastjson.dumps(
            {
                "clientID": self.client_id,
                "consumerDataSet": [c.to_json() for c in self.consumers],
                "producerDataSet": [{"groupName": g} for g in self.producer_groups],
            }
        )
